// Phase 1: element-wise kernels, one thread per element.
#include "../../kernels/backend/backend.h"
#include "../../kernels/backend/wave.h"
#include "../../kernels/decay.h"
#include "ladder.h"

static const int kBlock = 256;

__device__ __forceinline__ int global_index(void) { return (int)(blockIdx.x * blockDim.x + threadIdx.x); }

// One kernel per unary op keeps each launch as small as the seed ladder's.
#define KDN_UNARY(name, expr)                                                     \
    __global__ void kernel_##name(const float *x, float *y, float s, int n) {    \
        int i = global_index();                                                   \
        if (i < n) {                                                              \
            float v = x[i];                                                       \
            (void)s;                                                              \
            y[i] = (expr);                                                        \
        }                                                                         \
    }
#define KDN_BINARY(name, op)                                                      \
    __global__ void kernel_##name(const float *a, const float *b, float *y, int n) { \
        int i = global_index();                                                   \
        if (i < n) y[i] = a[i] op b[i];                                           \
    }

KDN_UNARY(sigmoid, 1.0f / (1.0f + expf(-v)))
KDN_UNARY(exp, expf(v))
KDN_UNARY(decay, kdn_decay(v))
KDN_UNARY(neg, -v)
KDN_UNARY(scale, v *s)
KDN_BINARY(add, +)
KDN_BINARY(sub, -)
KDN_BINARY(mul, *)

__global__ void kernel_broadcast_mul_rows(const float *a, const float *v, float *y, int rows, int cols) {
    int i = global_index();
    if (i < rows * cols) y[i] = a[i] * v[i / cols];
}

// One thread per segment: the plain reference-style scan.
__global__ void kernel_cumsum_sequential(const float *x, float *y, int n, int count) {
    int seg = global_index();
    if (seg >= count) return;
    float acc = 0.0f;
    for (int i = 0; i < n; i++) {
        acc += x[seg * n + i];
        y[seg * n + i] = acc;
    }
}

// One wave per segment: each pass scans KDN_WAVE elements with wave shuffles
// and carries the running total to the next pass.
__global__ void kernel_cumsum_wave_scan(const float *x, float *y, int n, int count) {
    int seg = (int)blockIdx.x;
    int lane = (int)threadIdx.x;
    float carry = 0.0f;
    for (int base = 0; base < n; base += KDN_WAVE) {
        int i = base + lane;
        float v = i < n ? x[seg * n + i] : 0.0f;
        v = kdn_wave_inclusive_sum(v) + carry;
        if (i < n) y[seg * n + i] = v;
        carry = kdn_shfl(v, KDN_WAVE - 1);
    }
    (void)count;
}

static dim3 grid_for(int n) { return dim3((unsigned)KDN_CEIL_DIV(n, kBlock)); }

extern "C" {

void kdn_sigmoid(const float *x, float *y, int n) { KDN_LAUNCH(kernel_sigmoid, grid_for(n), dim3(kBlock), 0, x, y, 0.0f, n); }
void kdn_exp(const float *x, float *y, int n) { KDN_LAUNCH(kernel_exp, grid_for(n), dim3(kBlock), 0, x, y, 0.0f, n); }
void kdn_decay_factors(const float *g, float *y, int n) {
    KDN_LAUNCH(kernel_decay, grid_for(n), dim3(kBlock), 0, g, y, 0.0f, n);
}
void kdn_neg(const float *x, float *y, int n) { KDN_LAUNCH(kernel_neg, grid_for(n), dim3(kBlock), 0, x, y, 0.0f, n); }
void kdn_scale(const float *x, float *y, float s, int n) { KDN_LAUNCH(kernel_scale, grid_for(n), dim3(kBlock), 0, x, y, s, n); }
void kdn_add(const float *a, const float *b, float *y, int n) { KDN_LAUNCH(kernel_add, grid_for(n), dim3(kBlock), 0, a, b, y, n); }
void kdn_sub(const float *a, const float *b, float *y, int n) { KDN_LAUNCH(kernel_sub, grid_for(n), dim3(kBlock), 0, a, b, y, n); }
void kdn_mul(const float *a, const float *b, float *y, int n) { KDN_LAUNCH(kernel_mul, grid_for(n), dim3(kBlock), 0, a, b, y, n); }

void kdn_broadcast_mul_rows(const float *a, const float *v, float *y, int rows, int cols) {
    KDN_LAUNCH(kernel_broadcast_mul_rows, grid_for(rows * cols), dim3(kBlock), 0, a, v, y, rows, cols);
}

void kdn_cumsum_sequential(const float *x, float *y, int n, int count) {
    KDN_LAUNCH(kernel_cumsum_sequential, grid_for(count), dim3(kBlock), 0, x, y, n, count);
}

void kdn_cumsum_wave_scan(const float *x, float *y, int n, int count) {
    KDN_LAUNCH(kernel_cumsum_wave_scan, dim3((unsigned)count), dim3(KDN_WAVE), 0, x, y, n, count);
}

}  // extern "C"

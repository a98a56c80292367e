// Kernels for the harness's unit tests (tests/test_harness.c). The broken
// ones are broken on purpose: each is a bug the executor or the guards must
// report instead of computing garbage.
#include "../kernels/backend/backend.h"
#include "../kernels/backend/wave.h"
#include "executor_kernels.h"

__global__ void kernel_wave_sum(float *out) {
    float s = kdn_wave_sum((float)kdn_lane());
    if (kdn_lane() == 0) out[threadIdx.x / KDN_WAVE] = s;
}

// The DPP row primitives as the executor runs them: a rotation by 3 (the
// direction and the wrap inside a row of 16), the row sum, and the xor
// butterfly it must equal bitwise.
__global__ void kernel_row_ops(const float *x, float *ror3, float *sum, float *butterfly) {
    const int t = (int)threadIdx.x;
    ror3[t] = kdn_row_ror<3>(x[t]);
    sum[t] = kdn_row_sum16(x[t]);
    float v = x[t];
    for (int m = 8; m > 0; m >>= 1) v += kdn_shfl_xor(v, m);
    butterfly[t] = v;
}

// The 64-bit row primitives: a shift by 3 (zero for the first 3 lanes of a
// row), the row scan and the row sum, each half of a double moved intact.
__global__ void kernel_row_ops_f64(const double *x, double *shr3, double *scan, double *sum) {
    const int t = (int)threadIdx.x;
    shr3[t] = kdn_row_shr_f64<3>(x[t]);
    scan[t] = kdn_row_scan16_f64(x[t]);
    sum[t] = kdn_row_sum16(x[t]);
}

__global__ void kernel_lds_reverse(const float *x, float *y, int n) {
    __shared__ float buf[1024];
    int t = (int)threadIdx.x;
    buf[t] = x[t];
    __syncthreads();
    y[t] = buf[n - 1 - t];
}

__global__ void kernel_divergent_barrier(float *y) {
    if (threadIdx.x >= 32) return;
    __syncthreads();
    y[threadIdx.x] = 1.0f;
}

__global__ void kernel_partial_wave(float *y) {
    if (kdn_lane() < 10) y[threadIdx.x] = kdn_wave_sum(1.0f);
}

__global__ void kernel_write_past_end(float *y, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i <= n) y[i] = 0.0f; // the bug: <= instead of <
}

__global__ void kernel_read_unwritten_lds(float *y) {
    KDN_DYNAMIC_SHARED(float, lds);
    y[threadIdx.x] = lds[threadIdx.x];
}

// Both halves of the workgroup wait at a barrier, but not the same one.
__global__ void kernel_split_barrier(float *y) {
    if (threadIdx.x & 1)
        __syncthreads();
    else
        __syncthreads();
    y[threadIdx.x] = 1.0f;
}

// The race: thread t reads what thread t - 1 wrote, with no barrier between.
__global__ void kernel_missing_barrier(const float *x, float *y) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = x[t];
    y[t] = buf[t > 0 ? t - 1 : 0];
}

// Workgroup b reads what workgroup b - 1 wrote: no order between workgroups.
__global__ void kernel_reads_other_workgroup(float *y) {
    int b = (int)blockIdx.x, t = (int)threadIdx.x;
    y[b * 64 + t] = (float)b;
    if (b > 0) y[b * 64 + t] += y[(b - 1) * 64 + t];
}

extern "C" {

int exec_set_schedule(const char *name) { return kdn_cpu_set_schedule(name); }
void exec_split_barrier(float *y) { KDN_LAUNCH(kernel_split_barrier, dim3(1), dim3(64), 0, y); }
void exec_missing_barrier(const float *x, float *y, int n) {
    KDN_LAUNCH(kernel_missing_barrier, dim3(1), dim3(n), n * sizeof(float), x, y);
}
void exec_reads_other_workgroup(float *y, int blocks) { KDN_LAUNCH(kernel_reads_other_workgroup, dim3(blocks), dim3(64), 0, y); }

void exec_wave_sum(float *out, int threads) { KDN_LAUNCH(kernel_wave_sum, dim3(1), dim3(threads), 0, out); }
void exec_row_ops(const float *x, float *ror3, float *sum, float *butterfly, int n) {
    KDN_LAUNCH(kernel_row_ops, dim3(1), dim3(n), 0, x, ror3, sum, butterfly);
}
void exec_row_ops_f64(const double *x, double *shr3, double *scan, double *sum, int n) {
    KDN_LAUNCH(kernel_row_ops_f64, dim3(1), dim3(n), 0, x, shr3, scan, sum);
}
void exec_lds_reverse(const float *x, float *y, int n) { KDN_LAUNCH(kernel_lds_reverse, dim3(1), dim3(n), 0, x, y, n); }
void exec_divergent_barrier(float *y) { KDN_LAUNCH(kernel_divergent_barrier, dim3(1), dim3(64), 0, y); }
void exec_partial_wave(float *y) { KDN_LAUNCH(kernel_partial_wave, dim3(1), dim3(64), 0, y); }
void exec_write_past_end(float *y, int n) {
    KDN_LAUNCH(kernel_write_past_end, dim3(KDN_CEIL_DIV(n + 1, 64)), dim3(64), 0, y, n);
}
void exec_read_unwritten_lds(float *y, int n) {
    KDN_LAUNCH(kernel_read_unwritten_lds, dim3(1), dim3(n), n * sizeof(float), y);
}
void exec_too_many_threads(float *y) { KDN_LAUNCH(kernel_wave_sum, dim3(1), dim3(1025), 0, y); }
void exec_too_much_lds(float *y) { KDN_LAUNCH(kernel_read_unwritten_lds, dim3(1), dim3(64), 64 * 1024 + 4, y); }

}  // extern "C"

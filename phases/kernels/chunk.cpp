// Phases 4-8, unfused: the chunk-level steps that are not plain element-wise
// or GEMM kernels, and the strided copies between ggml's tensors and the
// contiguous per-chunk matrices the small kernels work on.
#include "../../kernels/backend/backend.h"
#include "../../kernels/decay.h"
#include "ladder.h"

static const int kTile = 16;
static const int kBlock = 256;

static dim3 grid2d(int rows, int cols, int count) {
    return dim3((unsigned)KDN_CEIL_DIV(cols, kTile), (unsigned)KDN_CEIL_DIV(rows, kTile), (unsigned)count);
}

// mask[i][j] = exp(gamma_i - gamma_j) for j <= i, else 0; one n x n mask per
// segment (blockIdx.z). The exponent is a difference <= 0, never exp(-gamma_j)
// alone, which would overflow under strong decay.
__global__ void kernel_decay_mask(const float *gamma, float *mask, int n) {
    int i = (int)(blockIdx.y * blockDim.y + threadIdx.y), j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || j >= n) return;
    const float *g = gamma + (size_t)blockIdx.z * n;
    mask[(size_t)blockIdx.z * n * n + i * n + j] = j <= i ? expf(g[i] - g[j]) : 0.0f;
}

// A = -(K_beta K^T) * mask, strictly lower triangular: the fused form of
// gemm_nt + mul + causal mask + neg. K_beta, K: n x d; mask, A: n x n.
__global__ void kernel_attn_matrix(const float *k_beta, const float *k, const float *mask, float *A, int n, int d) {
    int i = (int)(blockIdx.y * blockDim.y + threadIdx.y), j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n || j >= n) return;
    float acc = 0.0f;
    if (j < i)
        for (int p = 0; p < d; p++) acc += k_beta[i * d + p] * k[j * d + p];
    A[i * n + j] = j < i ? -acc * mask[i * n + j] : 0.0f;
}

// For a chunk's cumulative log-decay gamma (n): exp(gamma_i), the decay from
// token i to the chunk's end exp(gamma_last - gamma_i), and exp(gamma_last).
__global__ void kernel_chunk_decays(const float *gamma, float *exp_gamma, float *to_end, float *total, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    float last = gamma[n - 1];
    exp_gamma[i] = expf(gamma[i]);
    to_end[i] = expf(last - gamma[i]);
    if (i == n - 1) total[0] = kdn_decay(last); // the state's decay once per chunk: decay.h
}

// y = x * s[0], with the factor on the device (a decay computed by a kernel).
__global__ void kernel_scale_by(const float *x, const float *s, float *y, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) y[i] = x[i] * s[0];
}

// dst (rows x cols, contiguous) <- rows of src spaced `stride` floats apart.
__global__ void kernel_gather_rows(const float *src, float *dst, int rows, int cols, long stride) {
    int r = (int)(blockIdx.y * blockDim.y + threadIdx.y), c = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (r < rows && c < cols) dst[r * cols + c] = src[r * stride + c];
}

__global__ void kernel_scatter_rows(const float *src, float *dst, int rows, int cols, long stride) {
    int r = (int)(blockIdx.y * blockDim.y + threadIdx.y), c = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (r < rows && c < cols) dst[r * stride + c] = src[r * cols + c];
}

extern "C" {

void kdn_decay_mask(const float *gamma, float *mask, int n, int count) {
    KDN_LAUNCH(kernel_decay_mask, grid2d(n, n, count), dim3(kTile, kTile), 0, gamma, mask, n);
}

void kdn_attn_matrix(const float *k_beta, const float *k, const float *mask, float *A, int n, int d) {
    KDN_LAUNCH(kernel_attn_matrix, grid2d(n, n, 1), dim3(kTile, kTile), 0, k_beta, k, mask, A, n, d);
}

void kdn_chunk_decays(const float *gamma, float *exp_gamma, float *to_end, float *total, int n) {
    KDN_LAUNCH(kernel_chunk_decays, dim3((unsigned)KDN_CEIL_DIV(n, kBlock)), dim3(kBlock), 0, gamma, exp_gamma, to_end, total, n);
}

void kdn_scale_by(const float *x, const float *s, float *y, int n) {
    KDN_LAUNCH(kernel_scale_by, dim3((unsigned)KDN_CEIL_DIV(n, kBlock)), dim3(kBlock), 0, x, s, y, n);
}

void kdn_gather_rows(const float *src, float *dst, int rows, int cols, long stride) {
    KDN_LAUNCH(kernel_gather_rows, grid2d(rows, cols, 1), dim3(kTile, kTile), 0, src, dst, rows, cols, stride);
}

void kdn_scatter_rows(const float *src, float *dst, int rows, int cols, long stride) {
    KDN_LAUNCH(kernel_scatter_rows, grid2d(rows, cols, 1), dim3(kTile, kTile), 0, src, dst, rows, cols, stride);
}

}  // extern "C"

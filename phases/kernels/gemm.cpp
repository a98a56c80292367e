// Phase 3: the small GEMMs of the unfused pipeline, C (M x N) = op(A) op(B).
// Row-major throughout; n/t says whether an operand is used as stored or
// transposed. The naive kernels share one body that reads operands through
// strides, so nn, nt and tn differ only in their launchers.
#include "../../kernels/backend/backend.h"
#include "ladder.h"

static const int kTile = 16;

static dim3 grid_for(int M, int N) { return dim3((unsigned)KDN_CEIL_DIV(N, kTile), (unsigned)KDN_CEIL_DIV(M, kTile)); }

// One thread per output element; A(i,p) = A[i*a_i + p*a_p], B(p,j) = B[p*b_p + j*b_j].
__global__ void kernel_gemm_naive(const float *A, const float *B, float *C, int M, int N, int K, int a_i, int a_p,
                                  int b_p, int b_j) {
    int i = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    int j = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int p = 0; p < K; p++) acc += A[i * a_i + p * a_p] * B[p * b_p + j * b_j];
    C[i * N + j] = acc;
}

// C = A B^T with A (M x K) and B (N x K) staged through LDS in kTile-wide
// slices of K; the +1 column keeps the transposed reads off one bank.
__global__ void kernel_gemm_nt_tiled(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float a_tile[kTile][kTile + 1];
    __shared__ float b_tile[kTile][kTile + 1];
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y;
    int i = (int)blockIdx.y * kTile + ty;
    int j = (int)blockIdx.x * kTile + tx;
    int b_row = (int)blockIdx.x * kTile + ty;
    float acc = 0.0f;
    for (int p0 = 0; p0 < K; p0 += kTile) {
        a_tile[ty][tx] = i < M && p0 + tx < K ? A[i * K + p0 + tx] : 0.0f;
        b_tile[ty][tx] = b_row < N && p0 + tx < K ? B[b_row * K + p0 + tx] : 0.0f;
        __syncthreads();
        for (int p = 0; p < kTile; p++) acc += a_tile[ty][p] * b_tile[tx][p];
        __syncthreads();
    }
    if (i < M && j < N) C[i * N + j] = acc;
}

static void gemm_naive(const float *A, const float *B, float *C, int M, int N, int K, int a_i, int a_p, int b_p, int b_j) {
    KDN_LAUNCH(kernel_gemm_naive, grid_for(M, N), dim3(kTile, kTile), 0, A, B, C, M, N, K, a_i, a_p, b_p, b_j);
}

extern "C" {

void kdn_gemm_nn_naive(const float *A, const float *B, float *C, int M, int N, int K) { gemm_naive(A, B, C, M, N, K, K, 1, N, 1); }
void kdn_gemm_nt_naive(const float *A, const float *B, float *C, int M, int N, int K) { gemm_naive(A, B, C, M, N, K, K, 1, 1, K); }
void kdn_gemm_tn_naive(const float *A, const float *B, float *C, int M, int N, int K) { gemm_naive(A, B, C, M, N, K, 1, M, N, 1); }

void kdn_gemm_nt_tiled(const float *A, const float *B, float *C, int M, int N, int K) {
    KDN_LAUNCH(kernel_gemm_nt_tiled, grid_for(M, N), dim3(kTile, kTile), 0, A, B, C, M, N, K);
}

}  // extern "C"

// Phase 2: masks, transposition and the one-thread-per-column triangular solve.
#include "backend/backend.h"
#include "kdn.h"

static const int kTile = 16;

// 2-D grid of kTile x kTile threads over a rows x cols matrix.
static dim3 grid2d(int rows, int cols) { return dim3((unsigned)KDN_CEIL_DIV(cols, kTile), (unsigned)KDN_CEIL_DIV(rows, kTile)); }

__device__ __forceinline__ int row_index(void) { return (int)(blockIdx.y * blockDim.y + threadIdx.y); }
__device__ __forceinline__ int col_index(void) { return (int)(blockIdx.x * blockDim.x + threadIdx.x); }

__global__ void kernel_tril(const float *x, float *y, int n, int diag) {
    int r = row_index(), c = col_index();
    if (r < n && c < n) y[r * n + c] = c - r <= diag ? x[r * n + c] : 0.0f;
}

__global__ void kernel_causal_mask(float *y, int n) {
    int r = row_index(), c = col_index();
    if (r < n && c < n) y[r * n + c] = c < r ? 1.0f : 0.0f;
}

__global__ void kernel_eye(float *y, int n) {
    int r = row_index(), c = col_index();
    if (r < n && c < n) y[r * n + c] = c == r ? 1.0f : 0.0f;
}

__global__ void kernel_causal_identity(const float *x, float *y, int n) {
    int r = row_index(), c = col_index();
    if (r < n && c < n) y[r * n + c] = c < r ? x[r * n + c] : (c == r ? 1.0f : 0.0f);
}

__global__ void kernel_transpose(const float *x, float *y, int rows, int cols) {
    int r = row_index(), c = col_index();
    if (r < rows && c < cols) y[c * rows + r] = x[r * cols + c];
}

// Forward substitution, one thread per right-hand side: row i of X needs
// rows 0..i-1 of the same column only, so columns are independent.
__global__ void kernel_solve_tri_sequential(const float *A, const float *B, float *X, int n, int k) {
    int col = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (col >= k) return;
    for (int i = 0; i < n; i++) {
        float acc = B[i * k + col];
        for (int j = 0; j < i; j++) acc += A[i * n + j] * X[j * k + col];
        X[i * k + col] = acc;
    }
}

extern "C" {

void kdn_tril(const float *x, float *y, int n, int diag) { KDN_LAUNCH(kernel_tril, grid2d(n, n), dim3(kTile, kTile), 0, x, y, n, diag); }
void kdn_causal_mask(float *y, int n) { KDN_LAUNCH(kernel_causal_mask, grid2d(n, n), dim3(kTile, kTile), 0, y, n); }
void kdn_eye(float *y, int n) { KDN_LAUNCH(kernel_eye, grid2d(n, n), dim3(kTile, kTile), 0, y, n); }
void kdn_causal_identity(const float *x, float *y, int n) {
    KDN_LAUNCH(kernel_causal_identity, grid2d(n, n), dim3(kTile, kTile), 0, x, y, n);
}
void kdn_transpose(const float *x, float *y, int rows, int cols) {
    KDN_LAUNCH(kernel_transpose, grid2d(rows, cols), dim3(kTile, kTile), 0, x, y, rows, cols);
}
void kdn_solve_tri_sequential(const float *A, const float *B, float *X, int n, int k) {
    KDN_LAUNCH(kernel_solve_tri_sequential, dim3((unsigned)KDN_CEIL_DIV(k, 64)), dim3(64), 0, A, B, X, n, k);
}

}  // extern "C"

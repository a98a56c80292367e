// Phase 2: masks, transposition and the one-thread-per-column triangular solve.
#include "../../kernels/backend/backend.h"
#include "ladder.h"

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

// The same solve by a whole workgroup, for n <= kSolveN: A and a 64-column
// tile of B sit in LDS (2 x 16.6 KB). Right-looking sweep: once row j of X is
// final, every later row takes its term A[i][j] X[j][:] in parallel, one
// barrier per row. Each element still sums its terms in order j = 0, 1, ...,
// exactly as the sequential solver does. Lanes run along columns, so the
// loads and stores of X are coalesced and A[i][j] is a broadcast.
static const int kSolveN = 64;
static const int kSolveThreads = 256;

__global__ void __launch_bounds__(256) kernel_solve_tri_parallel(const float *A, const float *B, float *X, int n, int k) {
    __shared__ float a[kSolveN][kSolveN + 1];
    __shared__ float x[kSolveN][kSolveN];
    int tid = (int)threadIdx.x, c0 = (int)blockIdx.x * kSolveN;
    int cols = k - c0 < kSolveN ? k - c0 : kSolveN;
    for (int e = tid; e < n * n; e += kSolveThreads) a[e / n][e % n] = A[e];
    for (int e = tid; e < n * kSolveN; e += kSolveThreads) {
        int i = e / kSolveN, c = e % kSolveN;
        x[i][c] = c < cols ? B[i * k + c0 + c] : 0.0f;
    }
    __syncthreads();
    for (int j = 0; j + 1 < n; j++) {
        for (int e = tid; e < (n - 1 - j) * kSolveN; e += kSolveThreads) {
            int i = j + 1 + e / kSolveN, c = e % kSolveN;
            x[i][c] += a[i][j] * x[j][c];
        }
        __syncthreads();
    }
    for (int e = tid; e < n * kSolveN; e += kSolveThreads) {
        int i = e / kSolveN, c = e % kSolveN;
        if (c < cols) X[i * k + c0 + c] = x[i][c];
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

void kdn_solve_tri_parallel(const float *A, const float *B, float *X, int n, int k) {
    if (n > kSolveN) {
        kdn_launch_refused("kernel_solve_tri_parallel", "n > 64");
        return;
    }
    KDN_LAUNCH(kernel_solve_tri_parallel, dim3((unsigned)KDN_CEIL_DIV(k, kSolveN)), dim3(kSolveThreads), 0, A, B, X, n, k);
}

}  // extern "C"

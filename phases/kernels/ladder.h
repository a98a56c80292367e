/* The ladder's kernels (phases 1-7): the steps the
 * tests build the layer from, which the library's entry point never reaches.
 * Matrices are row-major; "rows x cols" below. Launchers only enqueue work:
 * errors (launch or execution) surface at kdn_sync(). */
#ifndef KDN_LADDER_H
#define KDN_LADDER_H

#include "../../kernels/kdn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- phase 1: element-wise (n elements; elementwise.cpp) -------------- */
void kdn_sigmoid(const float *x, float *y, int n);
void kdn_exp(const float *x, float *y, int n);
/* y = e^g as every layer kernel computes a decay factor (decay.h: kdn_decay) */
void kdn_decay_factors(const float *g, float *y, int n);
void kdn_neg(const float *x, float *y, int n);
void kdn_scale(const float *x, float *y, float s, int n);
void kdn_add(const float *a, const float *b, float *y, int n);
void kdn_sub(const float *a, const float *b, float *y, int n);
void kdn_mul(const float *a, const float *b, float *y, int n);
/* y[r][c] = a[r][c] * v[r]   (rows x cols; one factor per row) */
void kdn_broadcast_mul_rows(const float *a, const float *v, float *y, int rows, int cols);
/* Inclusive prefix sums of `count` independent segments of length n. */
void kdn_cumsum_sequential(const float *x, float *y, int n, int count);
void kdn_cumsum_wave_scan(const float *x, float *y, int n, int count);

/* ---- phase 2: triangular (n x n unless stated; triangular.cpp) -------- */
/* y = x with entries above diagonal `diag` zeroed (diag 0 keeps the diagonal) */
void kdn_tril(const float *x, float *y, int n, int diag);
void kdn_causal_mask(float *y, int n);   /* 1 where col < row, else 0 */
void kdn_eye(float *y, int n);
/* Solve (I - A) X = B, A strictly lower triangular n x n, B and X n x k. */
void kdn_solve_tri_sequential(const float *A, const float *B, float *X, int n, int k);
/* The same solve by one workgroup per 64 right-hand sides; n <= 64. */
void kdn_solve_tri_parallel(const float *A, const float *B, float *X, int n, int k);
/* y = strict lower part of x plus the identity */
void kdn_causal_identity(const float *x, float *y, int n);
void kdn_transpose(const float *x, float *y, int rows, int cols);

/* ---- phase 3: GEMMs  C (M x N; gemm.cpp) ------------------------------ */
void kdn_gemm_nn_naive(const float *A, const float *B, float *C, int M, int N, int K); /* A MxK, B KxN */
void kdn_gemm_nt_naive(const float *A, const float *B, float *C, int M, int N, int K); /* A MxK, B NxK */
void kdn_gemm_tn_naive(const float *A, const float *B, float *C, int M, int N, int K); /* A KxM, B KxN */
void kdn_gemm_nt_tiled(const float *A, const float *B, float *C, int M, int N, int K);

/* ---- phases 4-7: chunk-level steps (n tokens, d features; chunk.cpp) -- */
/* mask[i][j] = exp(gamma_i - gamma_j) for j <= i, else 0; `count` masks. */
void kdn_decay_mask(const float *gamma, float *mask, int n, int count);
/* A = -(K_beta K^T) * mask below the diagonal, 0 elsewhere (n x n). */
void kdn_attn_matrix(const float *k_beta, const float *k, const float *mask, float *A, int n, int d);
/* exp(gamma_i), exp(gamma_last - gamma_i) (n each) and exp(gamma_last) (1). */
void kdn_chunk_decays(const float *gamma, float *exp_gamma, float *to_end, float *total, int n);
void kdn_scale_by(const float *x, const float *s, float *y, int n); /* y = x * s[0] */
/* Strided rows <-> contiguous rows x cols: row r of the strided side starts at r*stride. */
void kdn_gather_rows(const float *src, float *dst, int rows, int cols, long stride);
void kdn_scatter_rows(const float *src, float *dst, int rows, int cols, long stride);


#ifdef __cplusplus
}
#endif
#endif

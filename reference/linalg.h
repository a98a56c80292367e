/* The host reference's element-wise ops and small linear algebra: plain C in double precision, independent of the
 * kernels. Matrices are row-major, as in kernels/kdn.h. Inputs are the
 * float values the kernels see, widened to double. */
#ifndef REF_LINALG_H
#define REF_LINALG_H

#include <stddef.h>

/* ---- element-wise and small linear algebra ------------------------------ */
void ref_widen(const float *x, double *y, size_t n);
void ref_sigmoid(const float *x, double *y, size_t n);
void ref_exp(const float *x, double *y, size_t n);
void ref_cumsum(const float *x, double *y, int n, int count);
void ref_tril(const float *x, double *y, int n, int diag);
void ref_causal_mask(double *y, int n);
void ref_eye(double *y, int n);
/* Solve (I - A) X = B by forward substitution: A n x n strictly lower, B n x k. */
void ref_solve_tri(const double *A, const double *B, double *X, int n, int k);
/* C = op(A) op(B); ta/tb: operand stored transposed (see kdn.h shapes). */
void ref_gemm(const double *A, const double *B, double *C, int M, int N, int K, int ta, int tb);
void ref_transpose(const double *x, double *y, int rows, int cols);

#endif

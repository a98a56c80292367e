/* Reference element-wise ops and small dense linear algebra, in double. */
#include "linalg.h"

#include <math.h>

void ref_widen(const float *x, double *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = x[i];
}

void ref_sigmoid(const float *x, double *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = 1.0 / (1.0 + exp(-(double)x[i]));
}

void ref_exp(const float *x, double *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = exp((double)x[i]);
}

void ref_cumsum(const float *x, double *y, int n, int count) {
    for (int s = 0; s < count; s++) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) y[s * n + i] = acc += x[s * n + i];
    }
}

void ref_tril(const float *x, double *y, int n, int diag) {
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) y[r * n + c] = c - r <= diag ? x[r * n + c] : 0.0;
}

void ref_causal_mask(double *y, int n) {
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) y[r * n + c] = c < r;
}

void ref_eye(double *y, int n) {
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) y[r * n + c] = c == r;
}

void ref_solve_tri(const double *A, const double *B, double *X, int n, int k) {
    for (int i = 0; i < n; i++)
        for (int col = 0; col < k; col++) {
            double acc = B[i * k + col];
            for (int j = 0; j < i; j++) acc += A[i * n + j] * X[j * k + col];
            X[i * k + col] = acc;
        }
}

void ref_gemm(const double *A, const double *B, double *C, int M, int N, int K, int ta, int tb) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int p = 0; p < K; p++) acc += (ta ? A[p * M + i] : A[i * K + p]) * (tb ? B[j * K + p] : B[p * N + j]);
            C[i * N + j] = acc;
        }
}

void ref_transpose(const double *x, double *y, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) y[c * rows + r] = x[r * cols + c];
}

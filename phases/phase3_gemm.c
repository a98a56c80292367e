/* Phase 3: GEMMs, C (M x N) = op(A) op(B) with K-term dot products. */
#include "phases.h"

#include "kernels/ladder.h"
#include "../reference/linalg.h"

typedef void (*GemmKernel)(const float *, const float *, float *, int, int, int);

/* Operands uniform in [-1, 1), so each dot product's terms sum to at most K
 * in magnitude: TOL_ACCUM(K, K). */
static void gemm(const Test *t, Ctx *c, GemmKernel k, int ta, int tb) {
    int M = t->shape->rows, N = t->shape->cols, K = t->shape->inner;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *A = host_f(c, na), *B = host_f(c, nb);
    double *Ad = host_d(c, na), *Bd = host_d(c, nb), *want = host_d(c, nc);
    fill_uniform(c, A, na, -1.0, 1.0);
    fill_uniform(c, B, nb, -1.0, 1.0);
    ref_widen(A, Ad, na);
    ref_widen(B, Bd, nb);
    ref_gemm(Ad, Bd, want, M, N, K, ta, tb);
    float *dA = dev_in(c, "A", A, na), *dB = dev_in(c, "B", B, nb), *dC = dev_out(c, "C", nc);
    k(dA, dB, dC, M, N, K);
    set_shape_desc(c, "M=%d N=%d K=%d", M, N, K);
    if (dev_sync(c) == 0) expect_close(c, "C", dC, want, M, N, t->tol);
}

static void t_nn_naive(const Test *t, Ctx *c) { gemm(t, c, kdn_gemm_nn_naive, 0, 0); }
static void t_nt_naive(const Test *t, Ctx *c) { gemm(t, c, kdn_gemm_nt_naive, 0, 1); }
static void t_tn_naive(const Test *t, Ctx *c) { gemm(t, c, kdn_gemm_tn_naive, 1, 0); }
static void t_nt_tiled(const Test *t, Ctx *c) { gemm(t, c, kdn_gemm_nt_tiled, 0, 1); }

static const Test tests[] = {
    {3, "gemm_nt_naive_small", "unfused", TOL_ACCUM(16, 16), CASE(.rows = 16, .cols = 16, .inner = 16), t_nt_naive},
    {3, "gemm_nt_naive_64", "unfused", TOL_ACCUM(64, 64), CASE(.rows = 64, .cols = 64, .inner = 64), t_nt_naive},
    {3, "gemm_tn_naive", "unfused", TOL_ACCUM(128, 128), CASE(.rows = 64, .cols = 64, .inner = 128), t_tn_naive},
    {3, "gemm_nt_tiled", "unfused", TOL_ACCUM(100, 100), CASE(.rows = 60, .cols = 72, .inner = 100), t_nt_tiled},
    {3, "gemm_nt_tiled_128", "unfused", TOL_ACCUM(128, 128), CASE(.rows = 128, .cols = 128, .inner = 128), t_nt_tiled},
    {3, "gemm_nn_naive", "unfused", TOL_ACCUM(64, 64), CASE(.rows = 64, .cols = 128, .inner = 64), t_nn_naive},
};

const TestList phase3_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL}; /* fixed shapes: no time estimate */

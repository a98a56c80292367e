/* Phase 2: masks and the unit lower-triangular solve (I - A) X = B. */
#include "phases.h"

#include "kernels/ladder.h"
#include "../reference/linalg.h"

static void t_tril(const Test *t, Ctx *c) {
    int n = t->shape->order;
    float *x = host_f(c, (size_t)n * n);
    double *want = host_d(c, (size_t)n * n);
    fill_uniform(c, x, (size_t)n * n, -1.0, 1.0);
    ref_tril(x, want, n, 0);
    float *dx = dev_in(c, "x", x, (size_t)n * n), *dy = dev_out(c, "y", (size_t)n * n);
    kdn_tril(dx, dy, n, 0);
    set_shape_desc(c, "%dx%d", n, n);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, n, n, t->tol);
}

static void generated(const Test *t, Ctx *c, void (*k)(float *, int), void (*ref)(double *, int)) {
    int n = t->shape->order;
    double *want = host_d(c, (size_t)n * n);
    ref(want, n);
    float *dy = dev_out(c, "y", (size_t)n * n);
    k(dy, n);
    set_shape_desc(c, "%dx%d", n, n);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, n, n, t->tol);
}

static void t_causal_mask(const Test *t, Ctx *c) { generated(t, c, kdn_causal_mask, ref_causal_mask); }
static void t_eye(const Test *t, Ctx *c) { generated(t, c, kdn_eye, ref_eye); }

/* A strictly lower with entries of Delta-Net's size: |A_ij| = beta_i*|k_i.k_j|*decay
 * < 1, scaled by 1/n so that (I - A)^-1 stays well conditioned, as the
 * solve of a chunk is in practice. */
static void solve(const Test *t, Ctx *c, void (*kernel)(const float *, const float *, float *, int, int)) {
    int n = t->shape->order, k = t->shape->rhs;
    float *A = host_f(c, (size_t)n * n), *B = host_f(c, (size_t)n * k);
    double *Ad = host_d(c, (size_t)n * n), *Bd = host_d(c, (size_t)n * k), *want = host_d(c, (size_t)n * k);
    fill_uniform(c, A, (size_t)n * n, -4.0 / n, 4.0 / n);
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) A[i * n + j] = 0.0f;
    fill_uniform(c, B, (size_t)n * k, -1.0, 1.0);
    ref_widen(A, Ad, (size_t)n * n);
    ref_widen(B, Bd, (size_t)n * k);
    ref_solve_tri(Ad, Bd, want, n, k);
    float *dA = dev_in(c, "A", A, (size_t)n * n), *dB = dev_in(c, "B", B, (size_t)n * k);
    float *dX = dev_out(c, "X", (size_t)n * k);
    kernel(dA, dB, dX, n, k);
    set_shape_desc(c, "n=%d rhs=%d", n, k);
    if (dev_sync(c) == 0) expect_close(c, "X", dX, want, n, k, t->tol);
}

static void t_solve(const Test *t, Ctx *c) { solve(t, c, kdn_solve_tri_sequential); }
static void t_solve_parallel(const Test *t, Ctx *c) { solve(t, c, kdn_solve_tri_parallel); }

static void t_transpose(const Test *t, Ctx *c) {
    int rows = t->shape->rows, cols = t->shape->cols;
    size_t n = (size_t)rows * cols;
    float *x = host_f(c, n);
    double *xd = host_d(c, n), *want = host_d(c, n);
    fill_uniform(c, x, n, -1.0, 1.0);
    ref_widen(x, xd, n);
    ref_transpose(xd, want, rows, cols);
    float *dx = dev_in(c, "x", x, n), *dy = dev_out(c, "y", n);
    kdn_transpose(dx, dy, rows, cols);
    set_shape_desc(c, "%dx%d", rows, cols);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, cols, rows, t->tol);
}

/* The solve's error: each X_i sums i products of |A| <= 4/n with earlier X,
 * and the growth of X through the recursion is at most (1+4/n)^n < e^4 ~ 55;
 * docs/tolerances.md turns this into the bound below. */
static const Test tests[] = {
    {2, "tril", "unfused", TOL_EXACT, CASE(.order = 64), t_tril},
    {2, "causal_mask", "unfused", TOL_EXACT, CASE(.order = 64), t_causal_mask},
    {2, "eye", "unfused", TOL_EXACT, CASE(.order = 64), t_eye},
    {2, "solve_tri_small", "unfused", TOL_ACCUM(16, 55), CASE(.order = 16, .rhs = 16), t_solve},
    {2, "solve_tri_64", "unfused", TOL_ACCUM(64, 55), CASE(.order = 64, .rhs = 64), t_solve},
    {2, "solve_tri_parallel", "unfused", TOL_ACCUM(64, 55), CASE(.order = 64, .rhs = 64), t_solve_parallel},
    {2, "transpose", "unfused", TOL_EXACT, CASE(.rows = 64, .cols = 128), t_transpose},
};

const TestList phase2_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL}; /* fixed shapes: no time estimate */

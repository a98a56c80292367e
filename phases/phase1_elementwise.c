/* Phase 1: element-wise kernels and the chunk cumsum. */
#include "phases.h"

#include "../kernels/kdn.h"
#include "../reference/ref.h"

typedef void (*UnaryKernel)(const float *, float *, int);
typedef void (*BinaryKernel)(const float *, const float *, float *, int);

/* Runs y = op(x) for inputs uniform in [lo, hi). */
static void unary(const Test *t, Ctx *c, UnaryKernel k, void (*ref)(const float *, double *, size_t), double lo, double hi) {
    int n = t->shape.len;
    float *x = host_f(c, n);
    double *want = host_d(c, n);
    fill_uniform(c, x, n, lo, hi);
    ref(x, want, n);
    float *dx = dev_in(c, "x", x, n), *dy = dev_out(c, "y", n);
    k(dx, dy, n);
    set_shape_desc(c, "n=%d", n);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, 1, n, t->tol);
}

static void ref_neg(const float *x, double *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = -(double)x[i];
}

static void binary(const Test *t, Ctx *c, BinaryKernel k, double (*op)(double, double)) {
    int n = t->shape.len;
    float *a = host_f(c, n), *b = host_f(c, n);
    double *want = host_d(c, n);
    fill_uniform(c, a, n, -4.0, 4.0);
    fill_uniform(c, b, n, -4.0, 4.0);
    for (int i = 0; i < n; i++) want[i] = op(a[i], b[i]);
    float *da = dev_in(c, "a", a, n), *db = dev_in(c, "b", b, n), *dy = dev_out(c, "y", n);
    k(da, db, dy, n);
    set_shape_desc(c, "n=%d", n);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, 1, n, t->tol);
}

static double op_add(double a, double b) { return a + b; }
static double op_sub(double a, double b) { return a - b; }
static double op_mul(double a, double b) { return a * b; }

static void t_sigmoid(const Test *t, Ctx *c) { unary(t, c, kdn_sigmoid, ref_sigmoid, -10.0, 10.0); }
static void t_exp(const Test *t, Ctx *c) { unary(t, c, kdn_exp, ref_exp, -10.0, 2.0); }
static void t_neg(const Test *t, Ctx *c) { unary(t, c, kdn_neg, ref_neg, -4.0, 4.0); }
static void t_add(const Test *t, Ctx *c) { binary(t, c, kdn_add, op_add); }
static void t_sub(const Test *t, Ctx *c) { binary(t, c, kdn_sub, op_sub); }
static void t_mul(const Test *t, Ctx *c) { binary(t, c, kdn_mul, op_mul); }

static void t_scale(const Test *t, Ctx *c) {
    int n = t->shape.len;
    const float s = -0.3125f;
    float *x = host_f(c, n);
    double *want = host_d(c, n);
    fill_uniform(c, x, n, -4.0, 4.0);
    for (int i = 0; i < n; i++) want[i] = (double)s * x[i];
    float *dx = dev_in(c, "x", x, n), *dy = dev_out(c, "y", n);
    kdn_scale(dx, dy, s, n);
    set_shape_desc(c, "n=%d s=%g", n, s);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, 1, n, t->tol);
}

/* Rows scaled by one factor each, as beta scales the keys of a chunk. */
static void t_broadcast_mul(const Test *t, Ctx *c) {
    int rows = t->shape.rows, cols = t->shape.cols;
    float *a = host_f(c, (size_t)rows * cols), *v = host_f(c, rows);
    double *want = host_d(c, (size_t)rows * cols);
    fill_uniform(c, a, (size_t)rows * cols, -2.0, 2.0);
    fill_uniform(c, v, rows, 0.0, 1.0);
    for (int i = 0; i < rows * cols; i++) want[i] = (double)a[i] * v[i / cols];
    float *da = dev_in(c, "a", a, (size_t)rows * cols), *dv = dev_in(c, "v", v, rows);
    float *dy = dev_out(c, "y", (size_t)rows * cols);
    kdn_broadcast_mul_rows(da, dv, dy, rows, cols);
    set_shape_desc(c, "%dx%d", rows, cols);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, rows, cols, t->tol);
}

/* Log-decays g <= 0 of `count` chunks of n tokens, scanned per chunk. */
static void cumsum(const Test *t, Ctx *c, void (*k)(const float *, float *, int, int)) {
    int n = t->shape.len, count = t->shape.count;
    float *x = host_f(c, (size_t)n * count);
    double *want = host_d(c, (size_t)n * count);
    fill_uniform(c, x, (size_t)n * count, -1.0, 0.0);
    ref_cumsum(x, want, n, count);
    float *dx = dev_in(c, "x", x, (size_t)n * count), *dy = dev_out(c, "y", (size_t)n * count);
    k(dx, dy, n, count);
    set_shape_desc(c, "n=%d segments=%d", n, count);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, count, n, t->tol);
}

static void t_cumsum(const Test *t, Ctx *c) { cumsum(t, c, kdn_cumsum_sequential); }
static void t_cumsum_wave(const Test *t, Ctx *c) { cumsum(t, c, kdn_cumsum_wave_scan); }

/* ---- footprints: the arrays above, by test ---- */
static void footprint(const Test *t, Footprint *f) {
    size_t n = (size_t)t->shape.len, rows = (size_t)t->shape.rows, cols = (size_t)t->shape.cols;
    int inputs = t->run == t_add || t->run == t_sub || t->run == t_mul ? 2 : 1;
    if (t->run == t_broadcast_mul) {
        fp_host_f(f, rows * cols), fp_host_f(f, rows), fp_host_d(f, rows * cols);
        fp_dev(f, rows * cols), fp_dev(f, rows), fp_dev(f, rows * cols), fp_compare(f, rows * cols);
        return;
    }
    if (t->run == t_cumsum || t->run == t_cumsum_wave) n *= (size_t)t->shape.count;
    for (int i = 0; i < inputs; i++) fp_host_f(f, n), fp_dev(f, n);
    fp_host_d(f, n), fp_dev(f, n), fp_compare(f, n);
}

static const Test tests[] = {
    {1, "sigmoid", "unfused", TOL_TRANSC, {.len = 1024}, t_sigmoid},
    {1, "exp", "unfused", TOL_TRANSC, {.len = 1024}, t_exp},
    {1, "mul", "unfused", TOL_ARITH, {.len = 1024}, t_mul},
    {1, "cumsum", "unfused", TOL_ACCUM(64, 64), {.len = 64, .count = 1}, t_cumsum},
    {1, "cumsum_wave_scan", "unfused", TOL_ACCUM(160, 160), {.len = 160, .count = 4}, t_cumsum_wave},
    {1, "add", "unfused", TOL_ARITH, {.len = 1024}, t_add},
    {1, "sub", "unfused", TOL_ARITH, {.len = 1024}, t_sub},
    {1, "neg", "unfused", TOL_EXACT, {.len = 1024}, t_neg},
    {1, "scale", "unfused", TOL_ARITH, {.len = 1024}, t_scale},
    {1, "broadcast_mul", "unfused", TOL_ARITH, {.rows = 64, .cols = 128}, t_broadcast_mul},
};

const TestList phase1_tests = {tests, sizeof tests / sizeof tests[0], footprint};

/* Phase 1: element-wise kernels and the chunk cumsum. */
#include "phases.h"

#include "kernels/ladder.h"
#include "../reference/linalg.h"

#include <float.h>
#include <math.h>

typedef void (*UnaryKernel)(const float *, float *, int);
typedef void (*BinaryKernel)(const float *, const float *, float *, int);

/* Runs y = op(x) for inputs uniform in [lo, hi). */
static void unary(const Test *t, Ctx *c, UnaryKernel k, void (*ref)(const float *, double *, size_t), double lo, double hi) {
    int n = t->shape->len;
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
    int n = t->shape->len;
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
    int n = t->shape->len;
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
    int rows = t->shape->rows, cols = t->shape->cols;
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
    int n = t->shape->len, count = t->shape->count;
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

/* ---- the decay factor of the layer kernels (kernels/decay.h) ------------
 * A state multiplied by a factor once per token carries T times the
 * factor's mean error and sqrt(T) times its spread. Near g = 0, where a weak
 * decay lets the state remember all T tokens, the factor must therefore be
 * rounded as well as a float allows: at most DECAY_ULP_WEAK ulp off e^g and a
 * mean error within DECAY_MEAN_WEAK ulp of 0 (CUDA's expf, 2 ulp by its
 * documentation, moved a T = 1000 weak-decay grid case to 1.2e-5 normwise on
 * the H100, against its 1e-5 bound: docs/tolerances.md). A strong decay
 * forgets within a few tokens: there DECAY_ULP. kdn_decay measured over
 * every float g with |g| <= 104: 0.531 ulp for |g| <= 1/16, 0.874 elsewhere. */
static const double DECAY_ULP_WEAK = 0.55, DECAY_MEAN_WEAK = 0.01, DECAY_ULP = 1.0;
static const float DECAY_WEAK_G = 0.0625f;
enum { DECAY_EDGES = 15 };

/* |got - e| in ulps of e's binade, signed; a result below FLT_MIN that is
 * within FLT_MIN of e counts as exact (a GPU may flush it to 0; no state can
 * tell a factor of 1e-38 from 0). */
static double decay_ulps(float got, double e) {
    if (e < FLT_MIN) return fabs(got - e) <= FLT_MIN ? 0.0 : INFINITY;
    int ex;
    frexp(e, &ex);
    return ((double)got - e) / ldexp(1.0, ex - 24);
}

/* Every g the layer takes: the edges (+-0, +-inf, NaN, huge, a subnormal g,
 * results that underflow or overflow), then weak decays log-uniform in
 * |g| = 2^-30 .. 1/16 of both signs, then g uniform in [-104, 88.7] (e^g from
 * below the smallest float to near the largest). Returns the weak count. */
static int fill_decay_inputs(Ctx *c, float *g, int n) {
    const float edges[DECAY_EDGES] = {0.0f,   -0.0f,  -INFINITY, INFINITY, NAN,    -1e30f, 1e30f, -FLT_MAX,
                                      FLT_MAX, -88.8f, -103.9f,  88.72f,   89.0f, 1e-40f, -1e-45f};
    const int weak = (n - DECAY_EDGES) / 2;
    for (int i = 0; i < n; i++) {
        if (i < DECAY_EDGES)
            g[i] = edges[i];
        else if (i < DECAY_EDGES + weak)
            g[i] = (float)((rng_uniform(c) < 0.5 ? -1.0 : 1.0) * exp2(-30.0 + 26.0 * rng_uniform(c)));
        else
            g[i] = (float)(-104.0 + 192.7 * rng_uniform(c));
    }
    return weak;
}

static void t_decay(const Test *t, Ctx *c) {
    const int n = t->shape->len;
    if (n < DECAY_EDGES + 2) {
        test_skip(c, "decay_factor needs len >= %d", DECAY_EDGES + 2);
        return;
    }
    float *g = host_f(c, n), *got = host_f(c, n);
    double *want = host_d(c, n);
    const int weak = fill_decay_inputs(c, g, n);
    for (int i = 0; i < n; i++) want[i] = exp((double)g[i]);
    float *dg = dev_in(c, "g", g, n), *dy = dev_out(c, "y", n);
    kdn_decay_factors(dg, dy, n);
    if (dev_sync(c) != 0) return;
    download(c, got, dy, n);
    double worst[2] = {0.0, 0.0}, sum = 0.0;
    int at[2] = {0, 0}, n_weak = 0;
    for (int i = 0; i < n; i++) {
        const int w = fabsf(g[i]) <= DECAY_WEAK_G;
        if (isnan(g[i]) || isinf((float)want[i])) { /* NaN stays NaN; e^g past FLT_MAX is +inf */
            if (!(isnan(g[i]) ? isnan(got[i]) : isinf(got[i]) && got[i] > 0)) {
                test_fail(c, "decay factor of g = %a is %a, e^g is %g", g[i], got[i], want[i]);
                return;
            }
            continue;
        }
        const double e = decay_ulps(got[i], want[i]);
        if (!(fabs(e) <= worst[w])) worst[w] = fabs(e), at[w] = i; /* NaN: worst */
        if (w) sum += e, n_weak++;
    }
    const double mean = sum / n_weak;
    set_shape_desc(c, "n=%d: |g| <= 1/16: max %.3f ulp (<= %.2f), mean %+.4f ulp (|.| <= %.2f); elsewhere max %.3f ulp (<= %.1f)",
                   n, worst[1], DECAY_ULP_WEAK, mean, DECAY_MEAN_WEAK, worst[0], DECAY_ULP);
    if (!(worst[1] <= DECAY_ULP_WEAK) || !(worst[0] <= DECAY_ULP)) {
        const int w = !(worst[1] <= DECAY_ULP_WEAK), i = at[w];
        test_fail(c, "decay factor of g = %a is %a, %.3f ulp from e^g = %.9g (bound %.2f ulp)", g[i], got[i],
                  worst[w], want[i], w ? DECAY_ULP_WEAK : DECAY_ULP);
    } else if (!(fabs(mean) <= DECAY_MEAN_WEAK)) {
        test_fail(c, "decay factors of weak decays are off by %+.4f ulp on average (bound %.2f): a state that "
                  "remembers T tokens drifts by T times that", mean, DECAY_MEAN_WEAK);
    }
    /* The usual metrics on the line, for the weak factors (all near 1). */
    expect_close_host(c, "weak", got + DECAY_EDGES, want + DECAY_EDGES, 1, weak, t->tol);
}

static const Test tests[] = {
    {1, "sigmoid", "unfused", TOL_TRANSC, CASE(.len = 1024), t_sigmoid},
    {1, "exp", "unfused", TOL_TRANSC, CASE(.len = 1024), t_exp},
    /* rtol: 0.55 ulp of a factor near 1, relative; the ulp checks decide */
    {1, "decay_factor", "all", {0.0, 0.55 * 0x1p-23, 0.0}, CASE(.len = 1 << 17), t_decay},
    {1, "mul", "unfused", TOL_ARITH, CASE(.len = 1024), t_mul},
    {1, "cumsum", "unfused", TOL_ACCUM(64, 64), CASE(.len = 64, .count = 1), t_cumsum},
    {1, "cumsum_wave_scan", "unfused", TOL_ACCUM(160, 160), CASE(.len = 160, .count = 4), t_cumsum_wave},
    {1, "add", "unfused", TOL_ARITH, CASE(.len = 1024), t_add},
    {1, "sub", "unfused", TOL_ARITH, CASE(.len = 1024), t_sub},
    {1, "neg", "unfused", TOL_EXACT, CASE(.len = 1024), t_neg},
    {1, "scale", "unfused", TOL_ARITH, CASE(.len = 1024), t_scale},
    {1, "broadcast_mul", "unfused", TOL_ARITH, CASE(.rows = 64, .cols = 128), t_broadcast_mul},
};

const TestList phase1_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL}; /* fixed shapes: no time estimate */

/* A phase-1 table for build/cpu/test_failing: the product's objects and its
 * main, with phases/phase1_elementwise.o replaced by this file. tests/cli.sh
 * runs it to prove that a test that fails makes the binary print [FAIL],
 * count it and exit 1 -- without a way to fail on purpose in test_deltanet. */
#include "../phases/phases.h"

#include "../phases/kernels/ladder.h"

/* y = -x on the device, compared with -x (passes) or with +x (fails). */
static void neg_against(const Test *t, Ctx *c, double sign) {
    int n = t->shape->len;
    float *x = host_f(c, n);
    double *want = host_d(c, n);
    fill_uniform(c, x, n, 1.0, 2.0);
    for (int i = 0; i < n; i++) want[i] = -sign * x[i];
    float *dx = dev_in(c, "x", x, n), *dy = dev_out(c, "y", n);
    kdn_neg(dx, dy, n);
    if (dev_sync(c) == 0) expect_close(c, "y", dy, want, 1, n, t->tol);
}

static void t_right(const Test *t, Ctx *c) { neg_against(t, c, 1.0); }
static void t_wrong(const Test *t, Ctx *c) { neg_against(t, c, -1.0); }

static const Test tests[] = {
    {1, "neg_right", "unfused", TOL_EXACT, CASE(.len = 256), t_right},
    {1, "neg_wrong_reference", "unfused", TOL_EXACT, CASE(.len = 256), t_wrong},
};

const TestList phase1_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL}; /* fixed, tiny shapes: no time estimate */

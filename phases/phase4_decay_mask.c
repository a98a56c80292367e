/* Phase 4: the decay mask exp(gamma_i - gamma_j), j <= i, of chunks. */
#include "phases.h"

#include "deltanet_data.h"
#include "kernels/ladder.h"

#include <math.h>

/* `count` heads of one chunk each; gamma is computed in double on the host
 * and rounded once, so the test sees the mask kernel alone. */
static void t_decay_mask(const Test *t, Ctx *c) {
    Shape sh = dn_chunk_shape(t->shape);
    int n = sh.chunk, count = t->shape->count;
    sh.H_k = sh.H_v = count;
    DnData d;
    dn_generate(c, &sh, &d);
    float *gamma = host_f(c, (size_t)count * n);
    double *want = host_d(c, (size_t)count * n * n);
    for (int h = 0; h < count; h++) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) gamma[h * n + i] = (float)(acc += d.g[i * count + h]);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                want[((size_t)h * n + i) * n + j] = j <= i ? exp((double)gamma[h * n + i] - gamma[h * n + j]) : 0.0;
    }
    float *dg = dev_in(c, "gamma", gamma, (size_t)count * n), *dm = dev_out(c, "mask", (size_t)count * n * n);
    kdn_decay_mask(dg, dm, n, count);
    set_shape_desc(c, "C=%d chunks=%d decay=qwen", n, count);
    if (dev_sync(c) == 0) expect_close(c, "mask", dm, want, count * n, n, t->tol);
}

static const Test tests[] = {
    {4, "decay_mask_small", "unfused", TOL_TRANSC, CASE(.chunk = 16, .count = 1, .D_k = 16, .D_v = 16), t_decay_mask},
    {4, "decay_mask_64", "unfused", TOL_TRANSC, CASE(.chunk = 64, .count = 8, .D_k = 16, .D_v = 16), t_decay_mask},
};

const TestList phase4_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL}; /* one chunk whatever the shape: no time estimate */

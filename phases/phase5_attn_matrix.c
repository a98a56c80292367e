/* Phase 5: the strictly lower attention matrix A = -(K_beta K^T) * decay. */
#include "phases.h"

#include "deltanet_data.h"
#include "kernels/ladder.h"

/* Inputs are the float values the kernel sees: K (normalised rows), K_beta =
 * beta * K rounded once, and the reference decay mask rounded once. */
static void t_attn_matrix(const Test *t, Ctx *c) {
    Shape sh = dn_chunk_shape(t->shape);
    int n = sh.chunk, dk = sh.D_k;
    DnData d;
    dn_generate(c, &sh, &d);
    RefChunk r = dn_ref_chunk(c, n, dk, sh.D_v);
    ref_chunk_intra(n, dk, sh.D_v, dn_widen(c, d.k, d.n_qk), dn_widen(c, d.v, d.n_v), dn_widen(c, d.g, d.n_gb),
                    dn_widen(c, d.beta, d.n_gb), &r);
    float *k_beta = host_f(c, (size_t)n * dk), *mask = host_f(c, (size_t)n * n);
    double *want = host_d(c, (size_t)n * n);
    for (int i = 0; i < n * dk; i++) k_beta[i] = d.k[i] * d.beta[i / dk];
    for (int i = 0; i < n * n; i++) mask[i] = (float)r.decay[i];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int p = 0; p < dk; p++) acc += (double)k_beta[i * dk + p] * d.k[j * dk + p];
            want[i * n + j] = j < i ? -acc * mask[i * n + j] : 0.0;
        }
    float *dkb = dev_in(c, "k_beta", k_beta, (size_t)n * dk), *dk_ = dev_in(c, "k", d.k, (size_t)n * dk);
    float *dm = dev_in(c, "mask", mask, (size_t)n * n), *dA = dev_out(c, "A", (size_t)n * n);
    kdn_attn_matrix(dkb, dk_, dm, dA, n, dk);
    set_shape_desc(c, "C=%d Dk=%d", n, dk);
    if (dev_sync(c) == 0) expect_close(c, "A", dA, want, n, n, t->tol);
}

/* |beta_i k_i . k_j| <= 1 for unit keys: TOL_ACCUM(Dk, 1) plus one rounding
 * of the product with the mask. */
static const Test tests[] = {
    {5, "attn_matrix_small", "unfused", TOL_ACCUM(16, 1), CASE(.chunk = 16, .D_k = 16, .D_v = 16), t_attn_matrix},
    {5, "attn_matrix_64", "unfused", TOL_ACCUM(128, 1), CASE(.chunk = 64, .D_k = 128, .D_v = 128), t_attn_matrix},
};

const TestList phase5_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL}; /* one chunk whatever the shape: no time estimate */

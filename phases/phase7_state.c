/* Phase 7: a chunk's interaction with the state, from the reference's
 * intra-chunk quantities rounded to float, so only the state step runs:
 * D = U - W S0, the outputs, and the state carried to the chunk's end. */
#include "phases.h"

#include "deltanet_data.h"
#include "pipeline.h"

#include "../reference/ref.h"

#include <math.h>

/* Uploads a rounded copy of a reference array and replaces the reference
 * array with the widened rounded values, so both sides see the same input. */
static void round_trip(Ctx *c, float *dev, double *ref, size_t n) {
    float *f = host_f(c, n);
    for (size_t i = 0; i < n; i++) f[i] = (float)ref[i];
    ref_widen(f, ref, n);
    kdn_upload(dev, f, n * sizeof(float));
}

/* Runs the state step; leaves the kernel's outputs in w->o and St, the
 * reference's in O and St1. Returns 0 when the kernels ran cleanly. */
static int state_case(const Test *t, Ctx *c, ChunkWork *w, float **St, double **O, double **St1, int *n_out) {
    Shape sh = dn_chunk_shape(&t->shape);
    sh.state = 1;
    int n = sh.chunk, dk = sh.D_k, dv = sh.D_v;
    DnData d;
    dn_generate(c, &sh, &d);
    RefChunk r = dn_ref_chunk(c, n, dk, dv);
    ref_chunk_intra(n, dk, dv, dn_widen(c, d.k, d.n_qk), dn_widen(c, d.v, d.n_v), dn_widen(c, d.g, d.n_gb),
                    dn_widen(c, d.beta, d.n_gb), &r);
    chunk_work_alloc(c, w, n, dk, dv);
    kdn_upload(w->q, d.q, d.n_qk * sizeof(float));
    kdn_upload(w->k, d.k, d.n_qk * sizeof(float));
    round_trip(c, w->gamma, r.gamma, n);
    round_trip(c, w->U, r.U, (size_t)n * dv);
    round_trip(c, w->W, r.W, (size_t)n * dk);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) r.decay[i * n + j] = j <= i ? exp(r.gamma[i] - r.gamma[j]) : 0.0;
    *St = dev_in(c, "state", d.state, d.n_state);
    *O = host_d(c, (size_t)n * dv);
    *St1 = host_d(c, d.n_state);
    ref_chunk_state(n, dk, dv, dn_widen(c, d.q, d.n_qk), dn_widen(c, d.k, d.n_qk), &r, dn_widen(c, d.state, d.n_state),
                    *O, *St1);
    kdn_decay_mask(w->gamma, w->mask, n, 1);
    kdn_chunk_decays(w->gamma, w->exp_gamma, w->to_end, w->total, n);
    step_state(w, *St, n);
    *n_out = n;
    set_shape_desc(c, "C=%d Dk=%d Dv=%d decay=qwen s0=rand", n, dk, dv);
    return dev_sync(c);
}

static void t_state_update(const Test *t, Ctx *c) {
    ChunkWork w;
    float *St;
    double *O, *St1;
    int n;
    if (state_case(t, c, &w, &St, &O, &St1, &n) == 0) expect_close(c, "state", St, St1, w.D_v, w.D_k, t->tol);
}

static void t_output_with_state(const Test *t, Ctx *c) {
    ChunkWork w;
    float *St;
    double *O, *St1;
    int n;
    if (state_case(t, c, &w, &St, &O, &St1, &n) == 0) expect_close(c, "o", w.o, O, n, w.D_v, t->tol);
}

static const Test tests[] = {
    {7, "state_update", "unfused", TOL_CHUNK, {.chunk = 64, .D_k = 128, .D_v = 128}, t_state_update},
    {7, "output_with_state", "unfused", TOL_CHUNK, {.chunk = 64, .D_k = 128, .D_v = 128}, t_output_with_state},
};

const TestList phase7_tests = {tests, sizeof tests / sizeof tests[0]};

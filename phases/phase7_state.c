/* Phase 7: a chunk's interaction with the state, from the reference's
 * intra-chunk quantities rounded to float, so only the state step runs:
 * D = U - W S0, the outputs, and the state carried to the chunk's end. */
#include "phases.h"

#include "deltanet_data.h"
#include "kernels/ladder.h"
#include "library_paths.h"
#include "pipeline.h"

#include "../reference/linalg.h"

#include <math.h>
#include <string.h>

/* Rounds a reference array to float in place, so that the kernel (fed the
 * floats) and the reference see the same input. */
static void round_to_float(double *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = (float)x[i];
}

/* Uploads a rounded copy of a reference array and replaces the reference
 * array with the widened rounded values. */
static void round_trip(Ctx *c, float *dev, double *ref, size_t n) {
    float *f = host_f(c, n);
    round_to_float(ref, n);
    for (size_t i = 0; i < n; i++) f[i] = (float)ref[i];
    kdn_upload(dev, f, n * sizeof(float));
}

/* The decay mask of a reference chunk from its (rounded) gamma. */
static void decay_from_gamma(RefChunk *r, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) r->decay[i * n + j] = j <= i ? exp(r->gamma[i] - r->gamma[j]) : 0.0;
}

/* Runs the state step; leaves the kernel's outputs in w->o and St, the
 * reference's in O and St1. Returns 0 when the kernels ran cleanly. */
static int state_case(const Test *t, Ctx *c, ChunkWork *w, float **St, double **O, double **St1, int *n_out) {
    Shape sh = dn_chunk_shape(t->shape);
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
    decay_from_gamma(&r, n);
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

/* Chunk c0 = shape.chunk_index of every head and sequence through the chunked state
 * kernel (c1 = c0 + 1) from random states, fed the reference's gamma, U, W and P
 * rounded to float: the chunk's outputs and the state after it against
 * ref_chunk_state. */
static void t_chunked_state_chunk(const Test *t, Ctx *c) {
    int c0 = t->shape->chunk_index, C = t->shape->chunk;
    if ((long)c0 * C >= t->shape->T) { /* --set T: the chunk checked must exist */
        test_skip(c, "the test checks chunk %d, tokens %d..%d, and T = %d ends before it", c0, c0 * C,
                  (c0 + 1) * C - 1, t->shape->T);
        return;
    }
    DnData d;
    DnDevice dd;
    Shape sh = dn_setup(c, t->shape, &d, &dd);
    const KdnShape *s = &d.ks;
    int nch = chunk_count(s), dk = s->D_k, dv = s->D_v;
    size_t chunks = (size_t)nch * s->n_seqs * s->H_v, head = (size_t)dk * dv;
    double *gamma = host_d(c, chunks * C), *to_end = host_d(c, chunks * C), *U = host_d(c, chunks * C * dv), *W = host_d(c, chunks * C * dk);
    double *P = host_d(c, chunks * C * C);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state), *s0 = dn_widen(c, d.state, d.n_state);
    RefChunkWork rw = ref_chunk_work(c, s);
    size_t row = (size_t)s->H_v * dv; /* o's stride between tokens */
    double *O = host_d(c, (size_t)C * dv);
    for (int seq = 0; seq < s->n_seqs; seq++)
        for (int h = 0; h < s->H_v; h++) {
            ref_chunk_of(&rw, &d, seq, h, c0);
            int n = rw.n;
            round_to_float(rw.r.gamma, n);
            round_to_float(rw.r.U, (size_t)n * dv);
            round_to_float(rw.r.W, (size_t)n * dk);
            decay_from_gamma(&rw.r, n);
            ref_chunk_place(&rw, s, ((size_t)seq * s->H_v + h) * nch + c0, gamma, to_end, NULL, U, W, P);
            size_t st = ((size_t)seq * s->H_v + h) * head;
            ref_chunk_state(n, dk, dv, rw.q, rw.k, &rw.r, s0 + st, O, s_ref + st);
            for (int i = 0; i < n; i++)
                memcpy(o_ref + ((size_t)seq * s->T + (size_t)c0 * C + i) * row + (size_t)h * dv, O + (size_t)i * dv,
                       dv * sizeof(double));
        }
    ChunkQuantities *w = chunked_prepare(c, s);
    int widest = C > dv ? C : dv;
    float *f = host_f(c, chunks * C * (widest > dk ? widest : dk));
    float *dev[5] = {w->gamma, w->to_end, w->U, w->W, w->P};
    double *ref[5] = {gamma, to_end, U, W, P};
    size_t len[5] = {chunks * C, chunks * C, chunks * C * dv, chunks * C * dk, chunks * C * C};
    for (int a = 0; a < 5; a++) {
        for (size_t i = 0; i < len[a]; i++) f[i] = (float)ref[a][i];
        kdn_upload(dev[a], f, len[a] * sizeof(float));
    }
    float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
    const KdnLayerCall call = kdn_layer_contiguous(s, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, s_out);
    kdn_chunked_state(&call, c0, c0 + 1, w);
    dn_describe(c, &sh);
    if (dev_sync(c) != 0) return;
    int n = s->T - c0 * C < C ? s->T - c0 * C : C;
    for (int seq = 0; seq < s->n_seqs && !test_failed(c); seq++) {
        size_t at = ((size_t)seq * s->T + (size_t)c0 * C) * row;
        expect_close(c, "o (chunk c0)", o + at, o_ref + at, n * s->H_v, dv, t->tol);
    }
    expect_close(c, "state", s_out, s_ref, s->n_seqs * s->H_v * dv, dk, t->tol);
}

/* The whole layer by deltanet_chunked against the reference chunked form, each
 * grouped-head mapping in turn. */
static void t_state_chunks_all(const Test *t, Ctx *c) {
    Shape sh = dn_backend_shape(t->shape);
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK && !test_failed(c); map++) {
        sh.head_map = map;
        DnData d;
        DnDevice dd;
        dn_generate(c, &sh, &d);
        dn_upload(c, &d, &dd);
        double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
        RefInputs in = dn_ref_inputs(&d);
        ref_deltanet_chunked(&d.rs, &in, o_ref, s_ref);
        float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
        const KdnLayerCall call = kdn_layer_contiguous(&d.ks, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, s_out);
        deltanet_chunked(chunked_prepare(c, &d.ks), &call);
        if (dev_sync(c) != 0) return;
        dn_expect_layer(c, &sh, o, o_ref, s_out, s_ref, t->tol);
    }
    sh.head_map = HEAD_MAP_BOTH;
    dn_describe(c, &sh);
}

static const Test tests[] = {
    {7, "state_update", "unfused", TOL_CHUNK, CASE(.chunk = 64, .D_k = 128, .D_v = 128), t_state_update},
    {7, "output_with_state", "unfused", TOL_CHUNK, CASE(.chunk = 64, .D_k = 128, .D_v = 128), t_output_with_state},
    /* 4 heads x 2 sequences: the state pass's 8-column slab (16 x 4 x 2 = 128 workgroups fit the 180 of a
     * round of the 16-column slab on the MI50, which the CPU build reports); phase 8's 32-head rows take
     * the 16-column one */
    {7, "chunked_state_chunk", "chunked", TOL_CHUNK,
     CASE(.chunk_index = 1, .T = 150, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 128, .D_v = 72, .chunk = 64, .state = 1),
     t_chunked_state_chunk},
    {7, "chunked_state_all", "chunked", TOL_CHUNK,
     CASE(.T = 150, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 128, .D_v = 128, .chunk = 64, .state = 1), t_state_chunks_all},
};

/* The chunked rows run the layer (state_chunk's reference checks one
 * chunk of it); the others one chunk whatever the shape. */
static Work least_work(const Test *t) {
    Work w = {0, 0};
    if (t->run == t_chunked_state_chunk || t->run == t_state_chunks_all) w = dn_layer_work(t->shape);
    if (t->run == t_chunked_state_chunk) w.ref_flops = 0;
    return w;
}

const TestList phase7_tests = {tests, sizeof tests / sizeof tests[0], least_work, false, NULL};

/* Phase 6: the intra-chunk quantities, step by step through the unfused
 * pipeline: the attention matrix from raw inputs, the solve, and the WY
 * products U and W. */
#include "phases.h"

#include "deltanet_data.h"
#include "kernels/ladder.h"
#include "library_paths.h"
#include "pipeline.h"

#include "../reference/linalg.h"

#include <math.h>
#include <stdbool.h>

typedef struct {
    Shape sh;
    int n, dk, dv;
    DnData d;
    RefChunk r;
    ChunkWork w;
} ChunkCase;

/* One realistic chunk, its reference intermediates and the device scratch
 * with k, v, g and beta uploaded. */
static void chunk_case(const Test *t, Ctx *c, ChunkCase *cc) {
    cc->sh = dn_chunk_shape(t->shape);
    cc->n = cc->sh.chunk;
    cc->dk = cc->sh.D_k;
    cc->dv = cc->sh.D_v;
    dn_generate(c, &cc->sh, &cc->d);
    cc->r = dn_ref_chunk(c, cc->n, cc->dk, cc->dv);
    ref_chunk_intra(cc->n, cc->dk, cc->dv, dn_widen(c, cc->d.k, cc->d.n_qk), dn_widen(c, cc->d.v, cc->d.n_v),
                    dn_widen(c, cc->d.g, cc->d.n_gb), dn_widen(c, cc->d.beta, cc->d.n_gb), &cc->r);
    chunk_work_alloc(c, &cc->w, cc->n, cc->dk, cc->dv);
    kdn_upload(cc->w.k, cc->d.k, cc->d.n_qk * sizeof(float));
    kdn_upload(cc->w.v, cc->d.v, cc->d.n_v * sizeof(float));
    kdn_upload(cc->w.g, cc->d.g, cc->d.n_gb * sizeof(float));
    kdn_upload(cc->w.beta, cc->d.beta, cc->d.n_gb * sizeof(float));
    set_shape_desc(c, "C=%d Dk=%d Dv=%d decay=qwen", cc->n, cc->dk, cc->dv);
}

/* From raw inputs as the layer receives them before its sigmoid: beta
 * passes through the sigmoid kernel, then the attention steps. */
static void t_attn_pre(const Test *t, Ctx *c) {
    ChunkCase cc;
    chunk_case(t, c, &cc);
    int n = cc.n;
    float *raw = host_f(c, n);
    double *beta = host_d(c, n);
    fill_normal(c, raw, n, 0.0, 1.0);
    ref_sigmoid(raw, beta, n);
    ref_chunk_intra(n, cc.dk, cc.dv, dn_widen(c, cc.d.k, cc.d.n_qk), dn_widen(c, cc.d.v, cc.d.n_v),
                    dn_widen(c, cc.d.g, cc.d.n_gb), beta, &cc.r);
    float *draw = dev_in(c, "beta_raw", raw, n);
    kdn_sigmoid(draw, cc.w.beta, n);
    step_attn_pre(&cc.w, n);
    if (dev_sync(c) == 0) expect_close(c, "A", cc.w.A, cc.r.A, n, n, t->tol);
}

/* The solve alone, on the reference A rounded to float. */
static void t_solve_causal_identity(const Test *t, Ctx *c) {
    ChunkCase cc;
    chunk_case(t, c, &cc);
    int n = cc.n;
    float *A = host_f(c, (size_t)n * n);
    double *Ad = host_d(c, (size_t)n * n), *eye = host_d(c, (size_t)n * n), *want = host_d(c, (size_t)n * n);
    for (int i = 0; i < n * n; i++) A[i] = (float)cc.r.A[i];
    ref_widen(A, Ad, (size_t)n * n);
    ref_eye(eye, n);
    ref_solve_tri(Ad, eye, want, n, n);
    kdn_upload(cc.w.A, A, (size_t)n * n * sizeof(float));
    step_solve(&cc.w, n);
    if (dev_sync(c) == 0) expect_close(c, "Tinv", cc.w.Tinv, want, n, n, t->tol);
}

static void t_intra_chunk(const Test *t, Ctx *c) {
    ChunkCase cc;
    chunk_case(t, c, &cc);
    int n = cc.n;
    step_attn_pre(&cc.w, n);
    step_solve(&cc.w, n);
    step_wy(&cc.w, n);
    if (dev_sync(c) != 0) return;
    expect_close(c, "A", cc.w.A, cc.r.A, n, n, t->tol);
    expect_close(c, "Tinv", cc.w.Tinv, cc.r.Tinv, n, n, t->tol);
    expect_close(c, "U", cc.w.U, cc.r.U, n, cc.dv, t->tol);
    expect_close(c, "W", cc.w.W, cc.r.W, n, cc.dk, t->tol);
}

/* The chunked intra-chunk kernel launched on every chunk of every head
 * and sequence of the shape at once, and host arrays of the same layout for
 * what it is compared with (P only `with_p`). */
typedef struct {
    DnData d;
    DnDevice dd;
    Shape sh;
    int nch, C;
    size_t chunks;
    ChunkQuantities *got;
    double *gamma, *to_end, *Tinv, *U, *W, *P;
} IntraRun;

static void intra_run(Ctx *c, const Shape *shape, bool with_p, IntraRun *r) {
    r->sh = dn_setup(c, shape, &r->d, &r->dd);
    const KdnShape *s = &r->d.ks;
    const DnDevice *dd = &r->dd;
    r->nch = chunk_count(s), r->C = s->chunk;
    r->chunks = (size_t)r->nch * s->n_seqs * s->H_v;
    ChunkQuantities *w = r->got = chunked_prepare(c, s);
    const KdnLayerCall dense = kdn_layer_contiguous(s, dd->q, dd->k, dd->v, dd->g, dd->beta, NULL, NULL, NULL);
    kdn_chunked_intra(&dense, w);
    size_t rows = r->chunks * r->C;
    r->gamma = host_d(c, rows), r->to_end = host_d(c, rows), r->Tinv = host_d(c, rows * r->C);
    r->U = host_d(c, rows * s->D_v), r->W = host_d(c, rows * s->D_k);
    r->P = with_p ? host_d(c, rows * r->C) : NULL;
}

/* The kernel's quantities against the host arrays (P where they hold it). */
static void intra_compare(Ctx *c, const IntraRun *r, Tol tol) {
    const ChunkQuantities *w = r->got;
    int rows = (int)(r->chunks * r->C);
    expect_close(c, "gamma", w->gamma, r->gamma, (int)r->chunks, r->C, tol);
    expect_close(c, "to_end", w->to_end, r->to_end, (int)r->chunks, r->C, tol);
    expect_close(c, "Tinv", w->Tinv, r->Tinv, rows, r->C, tol);
    expect_close(c, "U", w->U, r->U, rows, r->d.ks.D_v, tol);
    expect_close(c, "W", w->W, r->W, rows, r->d.ks.D_k, tol);
    if (r->P) expect_close(c, "P", w->P, r->P, rows, r->C, tol);
}

/* The kernel against ref_chunk_intra on each chunk's inputs (padded rows
 * and columns must be exactly 0). */
static void check_chunked_intra(const Test *t, Ctx *c, const Shape *shape) {
    IntraRun r;
    intra_run(c, shape, true, &r);
    const KdnShape *s = &r.d.ks;
    RefChunkWork rw = ref_chunk_work(c, s);
    for (int seq = 0; seq < s->n_seqs; seq++)
        for (int h = 0; h < s->H_v; h++)
            for (int ch = 0; ch < r.nch; ch++) {
                ref_chunk_of(&rw, &r.d, seq, h, ch);
                ref_chunk_place(&rw, s, ((size_t)seq * s->H_v + h) * r.nch + ch, r.gamma, r.to_end, r.Tinv, r.U, r.W,
                                r.P);
            }
    dn_describe(c, &r.sh);
    if (dev_sync(c) != 0) return;
    intra_compare(c, &r, t->tol);
}

/* The row's shape with each grouped-head mapping in turn. */
static void t_chunked_intra_maps(const Test *t, Ctx *c) {
    Shape sh = *t->shape;
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK && !test_failed(c); map++) {
        sh.head_map = map;
        check_chunked_intra(t, c, &sh);
    }
    sh = dn_backend_shape(t->shape);
    sh.head_map = HEAD_MAP_BOTH;
    dn_describe(c, &sh);
}

static void t_chunked_intra(const Test *t, Ctx *c) { check_chunked_intra(t, c, t->shape); }

/* Gathers chunk ch of (seq, h) from the device tensors into the unfused
 * pipeline's contiguous scratch, as its run_chunk does. Returns n. */
static int gather_chunk(ChunkWork *w, const DnData *d, const DnDevice *dd, int seq, int h, int ch) {
    const KdnShape *s = &d->ks;
    int t0 = ch * s->chunk, n = s->T - t0 < s->chunk ? s->T - t0 : s->chunk;
    long tok = (long)seq * s->T + t0, kq = (tok * s->H_k + ref_key_head(&d->rs, h)) * s->D_k;
    long v_off = (tok * s->H_v + h) * s->D_v;
    kdn_gather_rows(dd->k + kq, w->k, n, s->D_k, (long)s->H_k * s->D_k);
    kdn_gather_rows(dd->v + v_off, w->v, n, s->D_v, (long)s->H_v * s->D_v);
    kdn_gather_rows(dd->g + tok * s->H_v + h, w->g, n, 1, s->H_v);
    kdn_gather_rows(dd->beta + tok * s->H_v + h, w->beta, n, 1, s->H_v);
    return n;
}

/* The unfused pipeline's gamma, Tinv, U and W of the chunk just run, widened
 * into rw (whose n becomes the chunk's) for ref_chunk_place. */
static void take_unfused(Ctx *c, const ChunkWork *w, int n, float *buf, RefChunkWork *rw) {
    const float *dev[4] = {w->gamma, w->Tinv, w->U, w->W};
    double *dst[4] = {rw->r.gamma, rw->r.Tinv, rw->r.U, rw->r.W};
    size_t len[4] = {(size_t)n, (size_t)n * n, (size_t)n * w->D_v, (size_t)n * w->D_k};
    for (int a = 0; a < 4; a++) {
        download(c, buf, dev[a], len[a]);
        ref_widen(buf, dst[a], len[a]);
    }
    rw->n = n;
}

/* The chunked intra-chunk kernel against the unfused phase-6 steps
 * (step_attn_pre, step_solve, step_wy) run chunk by chunk on the same device
 * inputs: two float computations of the same quantities. */
static void t_intra_fused_vs_unfused(const Test *t, Ctx *c) {
    IntraRun r;
    intra_run(c, t->shape, false, &r);
    const KdnShape *s = &r.d.ks;
    int C = r.C;
    ChunkWork w;
    chunk_work_alloc(c, &w, C, s->D_k, s->D_v);
    RefChunkWork uw = ref_chunk_work(c, s);
    int widest = C > s->D_v ? C : s->D_v;
    float *buf = host_f(c, (size_t)C * (widest > s->D_k ? widest : s->D_k));
    for (int seq = 0; seq < s->n_seqs; seq++)
        for (int h = 0; h < s->H_v; h++)
            for (int ch = 0; ch < r.nch; ch++) {
                int n = gather_chunk(&w, &r.d, &r.dd, seq, h, ch);
                step_attn_pre(&w, n);
                step_solve(&w, n);
                step_wy(&w, n);
                if (dev_sync(c) != 0) return;
                take_unfused(c, &w, n, buf, &uw);
                ref_chunk_place(&uw, s, ((size_t)seq * s->H_v + h) * r.nch + ch, r.gamma, r.to_end, r.Tinv, r.U, r.W,
                                NULL);
            }
    dn_describe(c, &r.sh);
    intra_compare(c, &r, t->tol);
}

static const Test tests[] = {
    {6, "attn_pre_computation", "unfused", TOL_CHUNK, CASE(.chunk = 64, .D_k = 128, .D_v = 128), t_attn_pre},
    {6, "solve_causal_identity", "unfused", TOL_CHUNK, CASE(.chunk = 64, .D_k = 128, .D_v = 128), t_solve_causal_identity},
    {6, "intra_chunk_small", "unfused", TOL_CHUNK, CASE(.chunk = 16, .D_k = 16, .D_v = 16), t_intra_chunk},
    {6, "intra_chunk", "unfused", TOL_CHUNK, CASE(.chunk = 64, .D_k = 128, .D_v = 128), t_intra_chunk},
    {6, "chunked_intra", "chunked", TOL_CHUNK,
     CASE(.T = 101, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 128, .D_v = 80, .chunk = 64), t_chunked_intra_maps},
    {6, "chunked_intra_c32_strong", "chunked", TOL_CHUNK,
     CASE(.T = 80, .n_seqs = 1, .H_k = 1, .H_v = 2, .D_k = 64, .D_v = 64, .chunk = 32, .decay = DECAY_STRONG),
     t_chunked_intra},
    {6, "chunked_intra_vs_unfused", "chunked", TOL_CHUNK,
     CASE(.T = 71, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 128, .D_v = 80, .chunk = 64, .head_map = HEAD_MAP_BLOCK),
     t_intra_fused_vs_unfused},
};

/* The chunked rows run the layer; the others one chunk whatever the shape. */
static Work least_work(const Test *t) {
    bool one_chunk = t->run == t_attn_pre || t->run == t_solve_causal_identity || t->run == t_intra_chunk;
    return one_chunk ? (Work){0, 0} : dn_layer_work(t->shape);
}

const TestList phase6_tests = {tests, sizeof tests / sizeof tests[0], least_work, false, NULL};

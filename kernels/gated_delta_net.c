/* libkdn's entry point: ggml's GATED_DELTA_NET (gated_delta_net.h) on the
 * project's kernels. Checks the call, picks the path, stages inputs the
 * chunked kernels cannot read as they are, and enqueues the kernels on the
 * caller's stream. docs/api.md describes the dispatch and what each route
 * costs. Host C: the kernels are reached through kdn.h's launchers only. */
#include "gated_delta_net.h"

#include "kdn.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* ---- status messages ------------------------------------------------------ */
static const char *const messages[KDN_STATUS_COUNT] = {
    [KDN_OK] = "ok",
    [KDN_ERR_NULL_POINTER] = "null pointer: the call, a tensor's data or dst is NULL",
    [KDN_ERR_KEY_DIM] = "key dimension: q and k must have the same shape and S_k (q/k ne[0]) must equal S_v (v ne[0])",
    [KDN_ERR_HEADS] = "heads: H_v (v ne[1]) must be a multiple of H_k (q/k ne[1])",
    [KDN_ERR_GATE_SHAPE] = "gate shape: g must be [1, H_v, T, n_seqs] (scalar) or [S_v, H_v, T, n_seqs] (KDA)",
    [KDN_ERR_BETA_SHAPE] = "beta shape: beta must be [1, H_v, T, n_seqs]",
    [KDN_ERR_STATE_SHAPE] = "state shape: state must be a contiguous [S_v, S_v, H_v, n_seqs]",
    [KDN_ERR_TOKENS_SEQS] = "tokens/sequences: q, k and v must agree on T (ne[2]) and n_seqs (ne[3])",
    [KDN_ERR_SNAPSHOTS] = "snapshots: K must be >= 1",
    [KDN_ERR_WORKSPACE] = "workspace: NULL or smaller than kdn_gdn_workspace_size()",
    [KDN_ERR_ROW_STRIDE] = "row stride: every tensor needs nb[0] == 4 (contiguous float32 rows) and "
                           "strides that are multiples of 4 bytes",
    [KDN_ERR_CHUNK] = "chunk: must be 0 (library default), 32 or 64",
    [KDN_ERR_OPTION] = "option: head_map must be TILED or BLOCK, path AUTO, RECURRENT or CHUNKED",
    [KDN_ERR_UNSUPPORTED_SHAPE] = "unsupported shape: a dimension < 1, S_v > 256, H_v or n_seqs > 65535, "
                                  "or a tensor of 2^31 elements or more",
};

const char *kdn_status_message(kdn_status status) {
    return (unsigned)status < KDN_STATUS_COUNT ? messages[status] : "unknown status";
}

/* ---- dispatch thresholds, per backend and batch ---------------------------
 * KDN_PATH_AUTO runs the token-recurrent kernel up to max_t tokens per
 * sequence and the two-launch chunked form past it. The recurrent kernel's
 * time grows with all tokens of the batch (n_seqs * T) while the chunked
 * form's grows less than linearly in n_seqs (it fills the GPU with chunks), so
 * the crossover in T falls as the batch grows: one row per measured batch,
 * rows by increasing n_seqs. A batch between two rows takes the larger
 * measured batch's row (the lower threshold: never recurrent past a measured
 * crossover of a larger total token count); one past the last row takes the
 * last row. docs/api.md has the table and where each row comes from. */
typedef struct {
    int n_seqs, max_t;
} CrossoverRow;

enum { kMaxCrossoverRows = 4 };

typedef struct {
    const char *backend;
    int n_rows;
    CrossoverRow rows[kMaxCrossoverRows];
} Crossover;

/* H100, tools/crossover.sh, results/h100-crossover.tsv (docs/performance.md):
 * recurrent faster up to T = 160 at B = 1 (two-launch from 192), up to 32 at
 * B = 4 (two-launch from 64) */
#define H100_ROWS 2, {{1, 160}, {4, 32}}

static const Crossover crossovers[] = {
    {"cuda", H100_ROWS},
    /* not yet measured on an MI50: the H100 rows until tools/crossover.sh runs there */
    {"hip", H100_ROWS},
    /* emulation, no speed to measure: the GPUs' rows, so CI runs both sides of the same splits */
    {"cpu", H100_ROWS},
};

static const Crossover *backend_crossover(void) {
    for (size_t i = 0; i < sizeof crossovers / sizeof crossovers[0]; i++)
        if (strcmp(crossovers[i].backend, kdn_backend()) == 0) return &crossovers[i];
    return &crossovers[0];
}

int kdn_gdn_recurrent_max_t(int n_seqs) {
    const Crossover *c = backend_crossover();
    int i = 0;
    while (i < c->n_rows - 1 && n_seqs > c->rows[i].n_seqs) i++; /* past the last row: the last row */
    return c->rows[i].max_t;
}

int kdn_auto_recurrent_max_t(int n_seqs) { return kdn_gdn_recurrent_max_t(n_seqs); }

const char *kdn_gdn_backend(void) { return kdn_backend(); }

/* ---- the two-launch chunked form and the automatic choice (internal C face) */
static size_t n_chunks_total(const KdnShape *s) {
    return (size_t)CEIL_DIV(s->T, s->chunk) * s->n_seqs * s->H_v;
}

/* Buffers 64 floats apart at least: every one 256-byte aligned when base is. */
static float *take(float **at, size_t floats) {
    float *p = *at;
    *at += (floats + 63) / 64 * 64;
    return p;
}

static size_t aligned_floats(size_t floats) { return (floats + 63) / 64 * 64; }

size_t kdn_chunk_buffers_bytes(const KdnShape *s) {
    size_t n = n_chunks_total(s), C = (size_t)s->chunk;
    return sizeof(float) * (aligned_floats(n * C) + 2 * aligned_floats(n * C * C) + aligned_floats(n * C * s->D_v) +
                            aligned_floats(n * C * s->D_k));
}

void kdn_chunk_buffers_carve(void *workspace, const KdnShape *s, KdnChunkBuffers *b) {
    size_t n = n_chunks_total(s), C = (size_t)s->chunk;
    float *at = workspace;
    b->gamma = take(&at, n * C);
    b->Tinv = take(&at, n * C * C);
    b->U = take(&at, n * C * s->D_v);
    b->W = take(&at, n * C * s->D_k);
    b->P = take(&at, n * C * C);
}

typedef void (*IntraLaunch)(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                            const float *beta, float *gamma, float *Tinv, float *U, float *W, float *P);

/* intra for every chunk, then the state pass over all chunks */
static void two_launch_with(IntraLaunch intra, const KdnShape *s, const KdnChunkBuffers *b, const float *q,
                            const float *k, const float *v, const float *g, const float *beta, const float *state_in,
                            float *o, float *state_out) {
    intra(s, q, k, v, g, beta, b->gamma, b->Tinv, b->U, b->W, b->P);
    kdn_two_launch_state(s, 0, CEIL_DIV(s->T, s->chunk), q, k, b->gamma, b->U, b->W, b->P, state_in, state_out,
                           o);
}

void kdn_deltanet_two_launch(const KdnShape *s, const KdnChunkBuffers *b, const float *q, const float *k,
                             const float *v, const float *g, const float *beta, const float *state_in, float *o,
                             float *state_out) {
    two_launch_with(kdn_two_launch_intra, s, b, q, k, v, g, beta, state_in, o, state_out);
}

void kdn_deltanet_two_launch_f16dot(const KdnShape *s, const KdnChunkBuffers *b, const float *q, const float *k,
                                    const float *v, const float *g, const float *beta, const float *state_in,
                                    float *o, float *state_out) {
    two_launch_with(kdn_two_launch_intra_f16dot, s, b, q, k, v, g, beta, state_in, o, state_out);
}

void kdn_deltanet_auto(const KdnShape *s, const KdnChunkBuffers *b, const float *q, const float *k, const float *v,
                       const float *g, const float *beta, const float *state_in, float *o, float *state_out) {
    if (s->T <= kdn_auto_recurrent_max_t(s->n_seqs))
        kdn_deltanet_recurrent(s, q, k, v, g, beta, state_in, o, state_out);
    else
        kdn_deltanet_two_launch(s, b, q, k, v, g, beta, state_in, o, state_out);
}

/* ---- checking a call ---------------------------------------------------- */
/* The largest S_v and the chunk sizes are the kernels' (kdn.h's KdnLimits):
 * the recurrent kernel takes every call, the chunked form what it is built for. */
enum { kDefaultChunk = 64 };

/* One input as the kernels see it: strides of dims 1..3 in floats and
 * whether it is already the contiguous ggml layout. */
typedef struct {
    long st[3];
    int contiguous;
} View;

/* A checked call: sizes, gate kind, route and the inputs' views. */
typedef struct {
    KdnShape s;
    int kda, chunked;
    View q, k, v, g, beta;
} Plan;

static const kdn_tensor *inputs(const kdn_gdn_call *c, int i) {
    const kdn_tensor *all[] = {&c->q, &c->k, &c->v, &c->g, &c->beta, &c->state};
    return all[i];
}
enum { N_INPUTS = 6 };

static int same_ne(const kdn_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return t->ne[0] == a && t->ne[1] == b && t->ne[2] == c && t->ne[3] == d;
}

static int is_contiguous(const kdn_tensor *t) {
    size_t want = sizeof(float);
    for (int d = 0; d < 4; d++) {
        if (t->ne[d] > 1 && t->nb[d] != want) return 0;
        want *= (size_t)t->ne[d];
    }
    return 1;
}

static View view_of(const kdn_tensor *t) {
    View v;
    for (int d = 0; d < 3; d++) v.st[d] = (long)(t->nb[d + 1] / sizeof(float));
    v.contiguous = is_contiguous(t);
    return v;
}

static kdn_status check_pointers_and_options(const kdn_gdn_call *c) {
    if (!c || !c->dst) return KDN_ERR_NULL_POINTER;
    for (int i = 0; i < N_INPUTS; i++)
        if (!inputs(c, i)->data) return KDN_ERR_NULL_POINTER;
    if (c->head_map != KDN_HEAD_MAP_TILED && c->head_map != KDN_HEAD_MAP_BLOCK) return KDN_ERR_OPTION;
    if (c->path != KDN_PATH_AUTO && c->path != KDN_PATH_RECURRENT && c->path != KDN_PATH_CHUNKED)
        return KDN_ERR_OPTION;
    if (c->chunk != 0 && !kdn_takes_chunk(&kdn_two_launch_limits, c->chunk)) return KDN_ERR_CHUNK;
    if (c->K < 1) return KDN_ERR_SNAPSHOTS;
    return KDN_OK;
}

static kdn_status check_layout(const kdn_gdn_call *c) {
    for (int i = 0; i < N_INPUTS; i++) {
        const kdn_tensor *t = inputs(c, i);
        int64_t elements = 1;
        for (int d = 0; d < 4; d++) {
            if (t->ne[d] < 1) return KDN_ERR_UNSUPPORTED_SHAPE;
            if (t->ne[d] >= INT_MAX / elements) return KDN_ERR_UNSUPPORTED_SHAPE;
            elements *= t->ne[d];
        }
        if (t->nb[0] != sizeof(float)) return KDN_ERR_ROW_STRIDE;
        for (int d = 1; d < 4; d++)
            if (t->nb[d] % sizeof(float) != 0) return KDN_ERR_ROW_STRIDE;
    }
    return KDN_OK;
}

static kdn_status check_shapes(const kdn_gdn_call *c) {
    const kdn_tensor *q = &c->q, *k = &c->k, *v = &c->v;
    if (!same_ne(k, q->ne[0], q->ne[1], q->ne[2], q->ne[3]) || q->ne[0] != v->ne[0]) return KDN_ERR_KEY_DIM;
    int64_t S = v->ne[0], H_k = q->ne[1], H_v = v->ne[1], T = v->ne[2], n_seqs = v->ne[3];
    if (q->ne[2] != T || q->ne[3] != n_seqs) return KDN_ERR_TOKENS_SEQS;
    if (H_v % H_k != 0) return KDN_ERR_HEADS;
    if (!same_ne(&c->g, 1, H_v, T, n_seqs) && !same_ne(&c->g, S, H_v, T, n_seqs)) return KDN_ERR_GATE_SHAPE;
    if (!same_ne(&c->beta, 1, H_v, T, n_seqs)) return KDN_ERR_BETA_SHAPE;
    if (!same_ne(&c->state, S, S, H_v, n_seqs) || !is_contiguous(&c->state)) return KDN_ERR_STATE_SHAPE;
    if (S > kdn_recurrent_limits.max_D_k || H_v > 65535 || n_seqs > 65535) return KDN_ERR_UNSUPPORTED_SHAPE;
    /* dst: outputs plus K snapshots must stay indexable */
    if ((double)S * H_v * n_seqs * (T + (double)S * c->K) >= (double)INT_MAX * 4.0) return KDN_ERR_UNSUPPORTED_SHAPE;
    return KDN_OK;
}

/* The chunked kernels run the scalar gate, K == 1 and S <= 128; every other
 * call goes to the recurrent kernel whatever path asked for. */
static int takes_chunked(const kdn_gdn_call *c, const Plan *p) {
    int eligible = !p->kda && c->K == 1 && p->s.D_k <= kdn_two_launch_limits.max_D_k;
    if (c->path == KDN_PATH_RECURRENT || !eligible) return 0;
    return c->path == KDN_PATH_CHUNKED || p->s.T > kdn_gdn_recurrent_max_t(p->s.n_seqs);
}

static kdn_status plan_call(const kdn_gdn_call *c, Plan *p) {
    kdn_status st = check_pointers_and_options(c);
    if (st == KDN_OK) st = check_layout(c);
    if (st == KDN_OK) st = check_shapes(c);
    if (st != KDN_OK) return st;
    memset(p, 0, sizeof *p);
    p->s.T = (int)c->v.ne[2];
    p->s.n_seqs = (int)c->v.ne[3];
    p->s.H_k = (int)c->q.ne[1];
    p->s.H_v = (int)c->v.ne[1];
    p->s.D_k = p->s.D_v = (int)c->v.ne[0];
    p->s.chunk = c->chunk ? c->chunk : kDefaultChunk;
    p->s.head_map = c->head_map;
    p->kda = c->g.ne[0] != 1; /* S_v == 1: both readings of g are the same math */
    p->q = view_of(&c->q);
    p->k = view_of(&c->k);
    p->v = view_of(&c->v);
    p->g = view_of(&c->g);
    p->beta = view_of(&c->beta);
    p->chunked = takes_chunked(c, p);
    return KDN_OK;
}

/* ---- workspace ----------------------------------------------------------- */
/* The chunked path's staging: q always (scaled), k v g beta when they are
 * views; then the per-chunk buffers. Sizes in floats, each 64-aligned. */
typedef struct {
    size_t q, k, v, g, beta;
} Staging;

static Staging staging_of(const Plan *p) {
    const KdnShape *s = &p->s;
    size_t tok = (size_t)s->T * s->n_seqs;
    Staging st = {aligned_floats(tok * s->H_k * s->D_k), 0, 0, 0, 0};
    if (!p->k.contiguous) st.k = aligned_floats(tok * s->H_k * s->D_k);
    if (!p->v.contiguous) st.v = aligned_floats(tok * s->H_v * s->D_v);
    if (!p->g.contiguous) st.g = aligned_floats(tok * s->H_v);
    if (!p->beta.contiguous) st.beta = aligned_floats(tok * s->H_v);
    return st;
}

static size_t workspace_bytes(const Plan *p) {
    if (!p->chunked) return 0;
    Staging st = staging_of(p);
    return sizeof(float) * (st.q + st.k + st.v + st.g + st.beta) + kdn_chunk_buffers_bytes(&p->s) +
           256; /* room to align the caller's pointer */
}

kdn_status kdn_gdn_workspace_size(const kdn_gdn_call *call, size_t *bytes) {
    Plan p;
    if (!bytes) return KDN_ERR_NULL_POINTER;
    kdn_status st = plan_call(call, &p);
    *bytes = st == KDN_OK ? workspace_bytes(&p) : 0;
    return st;
}

kdn_status kdn_gdn_chosen_path(const kdn_gdn_call *call, kdn_path *path) {
    Plan p;
    if (!path) return KDN_ERR_NULL_POINTER;
    kdn_status st = plan_call(call, &p);
    if (st == KDN_OK) *path = p.chunked ? KDN_PATH_CHUNKED : KDN_PATH_RECURRENT;
    return st;
}

/* ---- running -------------------------------------------------------------- */
static float scale_of(const Plan *p) { return (float)(1.0 / sqrt((double)p->s.D_v)); }

static void run_recurrent(const kdn_gdn_call *c, const Plan *p) {
    KdnRecurrentCall r;
    memset(&r, 0, sizeof r);
    r.s = p->s;
    r.q = c->q.data, r.k = c->k.data, r.v = c->v.data, r.g = c->g.data, r.beta = c->beta.data;
    r.state_in = c->state.data;
    memcpy(r.q_st, p->q.st, sizeof r.q_st);
    memcpy(r.k_st, p->k.st, sizeof r.k_st);
    memcpy(r.v_st, p->v.st, sizeof r.v_st);
    memcpy(r.g_st, p->g.st, sizeof r.g_st);
    memcpy(r.beta_st, p->beta.st, sizeof r.beta_st);
    r.q_scale = scale_of(p);
    r.kda = p->kda;
    r.K = c->K;
    r.o = c->dst;
    r.snapshots = c->dst + (size_t)p->s.D_v * p->s.H_v * p->s.T * p->s.n_seqs;
    kdn_deltanet_recurrent_call(&r);
}

/* Copies a view into `to` (contiguous), scaled; returns the contiguous input. */
static const float *staged(const kdn_tensor *t, const View *v, float scale, float **at, size_t floats) {
    if (floats == 0) return t->data;
    float *to = take(at, floats);
    long ne[4] = {(long)t->ne[0], (long)t->ne[1], (long)t->ne[2], (long)t->ne[3]};
    kdn_gather_strided(t->data, ne, v->st, scale, to);
    return to;
}

static void run_chunked(const kdn_gdn_call *c, const Plan *p, void *workspace) {
    float *at = (float *)(((uintptr_t)workspace + 255) / 256 * 256);
    Staging st = staging_of(p);
    const float *q = staged(&c->q, &p->q, scale_of(p), &at, st.q);
    const float *k = staged(&c->k, &p->k, 1.0f, &at, st.k);
    const float *v = staged(&c->v, &p->v, 1.0f, &at, st.v);
    const float *g = staged(&c->g, &p->g, 1.0f, &at, st.g);
    const float *beta = staged(&c->beta, &p->beta, 1.0f, &at, st.beta);
    KdnChunkBuffers b;
    kdn_chunk_buffers_carve(at, &p->s, &b);
    float *o = c->dst, *state_out = c->dst + (size_t)p->s.D_v * p->s.H_v * p->s.T * p->s.n_seqs;
    kdn_deltanet_two_launch(&p->s, &b, q, k, v, g, beta, c->state.data, o, state_out);
}

kdn_status kdn_gated_delta_net(const kdn_gdn_call *call, void *workspace, size_t workspace_size) {
    Plan p;
    kdn_status st = plan_call(call, &p);
    if (st != KDN_OK) return st;
    size_t need = workspace_bytes(&p);
    if (need > 0 && (!workspace || workspace_size < need)) return KDN_ERR_WORKSPACE;
    void *previous = kdn_set_stream(call->stream);
    if (p.chunked)
        run_chunked(call, &p, workspace);
    else
        run_recurrent(call, &p);
    kdn_set_stream(previous);
    return KDN_OK;
}

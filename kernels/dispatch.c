/* libkdn's dispatch: which kernels a call runs and with what constants.
 * The recurrent/chunked choice (kdn_layer_chunked), the crossover per
 * backend and batch and the default chunk size (the built-in tuning), the
 * chunked path's buffers, and the split of a K > 1 call into chunked tokens
 * and recurrent last K (kdn_layer_run). "Why did my call take this path"
 * is answered here; gated_delta_net.c checks the call and stages its views
 * first. docs/api.md describes the dispatch and what each route costs. */
#include "dispatch.h"

#include <string.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

/* ---- dispatch, per backend: the chunk size and the thresholds ----------
 * The chunked path's default C (a call's chunk = 0) is the one its backend
 * runs fastest. KDN_PATH_AUTO runs the token-recurrent kernel up to max_t
 * tokens per sequence and the chunked form past it. The recurrent
 * kernel's time grows with all tokens of the batch (n_seqs * T) while the
 * chunked form's grows less than linearly in n_seqs (it fills the GPU with
 * chunks), so the crossover in T falls as the batch grows: one row per
 * measured batch, rows by increasing n_seqs. A batch between two rows takes
 * the larger measured batch's row (the lower threshold: never recurrent past a
 * measured crossover of a larger total token count); one past the last row
 * takes the last row. docs/api.md has the table and where each row comes
 * from. */
typedef struct {
    const char *backend;
    int chunk; /* 0: kdn_chunked_fewest_rounds_chunk, per shape */
    int n_rows;
    kdn_crossover rows[KDN_TUNING_MAX_ROWS];
} BackendDispatch;

/* H100: recurrent faster up to T = 160 at B = 1 (chunked from 192;
 * tools/gpu/crossover.sh, results/h100-crossover.tsv, docs/performance.md)
 * and at B = 4 up to 64 tokens (replayed graph, tools/gpu/decode_ref.sh,
 * results/h100-decode-ref-bounded.tsv: 71.3 against 86.7 us at T = 64,
 * 150.6 against 174.2 chunked's way at T = 128) */
#define H100_ROWS 2, {{1, 160}, {4, 64}}

/* gfx906, the product, from the calibrated simulator (lens/, the MI50 lens,
 * on the ROCm 6.4 objects, results/gfx906-sim.tsv, docs/performance.md); no
 * MI50 has measured it. Chunk: 64 while its state pass runs in one round of
 * the 60 CUs, else 32, three workgroups per CU (a rounds argument, not a
 * clock one). B = 1: set where an earlier state pass crossed; the present
 * one's recurrent is faster at T = 64 (79 against 90 us), chunked from 128
 * (151 against 156), all open within the bands. B = 4: recurrent faster
 * at T = 64, chunked from 512 at the lens's clock, open within the bands:
 * 32 until an MI50 measures it. */
#define GFX906_DISPATCH 0, 2, {{1, 256}, {4, 32}}

static const BackendDispatch dispatches[] = {
    {"cuda", 64, H100_ROWS},
    {"hip", GFX906_DISPATCH},
    /* emulation, no speed to measure: the product's choices, so CI runs the
     * MI50's kernels on both sides of the same splits (and lens/launches.cpp
     * records the launches an MI50 gets) */
    {"cpu", GFX906_DISPATCH},
};

static const BackendDispatch *backend_dispatch(void) {
    for (size_t i = 0; i < sizeof dispatches / sizeof dispatches[0]; i++)
        if (strcmp(dispatches[i].backend, kdn_backend()) == 0) return &dispatches[i];
    return &dispatches[0];
}

/* The built-in constants as a tuning (any device: device ""). */
void kdn_tuning_defaults(kdn_tuning *t) {
    const BackendDispatch *c = backend_dispatch();
    memset(t, 0, sizeof *t);
    t->version = KDN_TUNING_VERSION;
    strncpy(t->backend, c->backend, sizeof t->backend - 1);
    t->chunk = c->chunk;
    t->n_rows = c->n_rows;
    memcpy(t->rows, c->rows, sizeof t->rows);
}

int kdn_default_chunk(const KdnShape *s, const kdn_tuning *t) {
    const int chunk = t && t->chunk ? t->chunk : backend_dispatch()->chunk;
    return chunk ? chunk : kdn_chunked_fewest_rounds_chunk(s);
}

static int rows_max_t(const kdn_crossover *rows, int n_rows, int n_seqs) {
    int i = 0;
    while (i < n_rows - 1 && n_seqs > rows[i].n_seqs) i++; /* past the last row: the last row */
    return rows[i].max_t;
}

int kdn_tuning_recurrent_max_t(const kdn_tuning *t, int n_seqs) {
    if (t) return rows_max_t(t->rows, t->n_rows, n_seqs);
    const BackendDispatch *c = backend_dispatch();
    return rows_max_t(c->rows, c->n_rows, n_seqs);
}

int kdn_gdn_recurrent_max_t(int n_seqs) { return kdn_tuning_recurrent_max_t(NULL, n_seqs); }

const char *kdn_gdn_backend(void) { return kdn_backend(); }

/* ---- the dispatch (kdn.h) ------------------------------------------------ */
static size_t n_chunks_total(const KdnShape *s) {
    return (size_t)CEIL_DIV(s->T, s->chunk) * s->n_seqs * s->H_v;
}

size_t kdn_chunk_buffers_bytes(const KdnShape *s) {
    size_t n = n_chunks_total(s), C = (size_t)s->chunk;
    return sizeof(float) * (2 * aligned_floats(n * C) + 2 * aligned_floats(n * C * C) + aligned_floats(n * C * s->D_v) +
                            aligned_floats(n * C * s->D_k));
}

void kdn_chunk_buffers_carve(void *workspace, const KdnShape *s, KdnChunkBuffers *b) {
    size_t n = n_chunks_total(s), C = (size_t)s->chunk;
    float *at = workspace;
    b->gamma = take(&at, n * C);
    b->to_end = take(&at, n * C);
    b->Tinv = take(&at, n * C * C);
    b->U = take(&at, n * C * s->D_v);
    b->W = take(&at, n * C * s->D_k);
    b->P = take(&at, n * C * C);
    b->state_mid = NULL;
}

/* Strides of a contiguous [D, H, T, n_seqs] tensor for dims 1..3, in floats. */
static void contiguous_strides(long st[3], long D, long H, long T) {
    st[0] = D;
    st[1] = D * H;
    st[2] = D * H * T;
}

KdnLayerCall kdn_layer_contiguous(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                                  const float *beta, const float *state_in, float *o, float *state_out) {
    KdnLayerCall c;
    memset(&c, 0, sizeof c);
    c.s = *s;
    c.q = q, c.k = k, c.v = v, c.g = g, c.beta = beta, c.state_in = state_in;
    contiguous_strides(c.q_st, s->D_k, s->H_k, s->T);
    contiguous_strides(c.k_st, s->D_k, s->H_k, s->T);
    contiguous_strides(c.v_st, s->D_v, s->H_v, s->T);
    contiguous_strides(c.g_st, 1, s->H_v, s->T);
    contiguous_strides(c.beta_st, 1, s->H_v, s->T);
    c.q_scale = 1.0f;
    c.K = 1;
    c.o = o, c.snapshots = state_out;
    c.snap_stride = (long)s->D_k * s->D_v * s->H_v * s->n_seqs;
    return c;
}

/* The chunked kernels run the scalar gate and D_k <= 128, K > 1 when T > K
 * (below); every other call goes to the recurrent kernel whatever path
 * asked for. */
int kdn_layer_chunked(const KdnLayerCall *c, kdn_path path) {
    int eligible = !c->kda && (c->K == 1 || c->s.T > c->K) && c->s.D_k <= kdn_chunked_limits.max_D_k;
    if (path == KDN_PATH_RECURRENT || !eligible) return 0;
    return path == KDN_PATH_CHUNKED || c->s.T > kdn_tuning_recurrent_max_t(c->tuning, c->s.n_seqs);
}

static void run_chunked(const KdnLayerCall *c, const KdnChunkBuffers *b) {
    kdn_chunked_intra(c, b);
    kdn_chunked_state(c, 0, CEIL_DIV(c->s.T, c->s.chunk), b);
}

/* ---- K > 1 on the chunked path ---------------------------------------------
 * The snapshots are states after single tokens, which the chunked state
 * pass does not hold. So each sequence runs its first T - K tokens chunked,
 * the state after them into the workspace (state_mid), and its last K
 * tokens on the recurrent kernel from there, which stores each snapshot as
 * its loop passes it: 3 launches per sequence. One sequence at a time
 * because the kernels' o and inputs are [., H, T, n_seqs] with the call's
 * own T: a sequence's tokens [t0, t0 + n) are a call of one sequence. */
/* Sequence seq's tokens [t0, t0 + n) of c as a call of one sequence. */
static KdnLayerCall tokens_of(const KdnLayerCall *c, int seq, int t0, int n) {
    KdnLayerCall x = *c;
    x.s.T = n, x.s.n_seqs = 1;
    x.q += seq * c->q_st[2] + t0 * c->q_st[1];
    x.k += seq * c->k_st[2] + t0 * c->k_st[1];
    x.v += seq * c->v_st[2] + t0 * c->v_st[1];
    x.g += seq * c->g_st[2] + t0 * c->g_st[1];
    x.beta += seq * c->beta_st[2] + t0 * c->beta_st[1];
    x.state_in += seq * state_floats(&c->s);
    x.o += ((size_t)seq * c->s.T + t0) * c->s.H_v * c->s.D_v;
    x.snapshots += seq * state_floats(&c->s);
    /* one sequence: the sequence stride is not read; the dense one, as the chunked kernels check */
    x.q_st[2] = x.k_st[2] = (long)c->s.D_k * c->s.H_k * n;
    x.g_st[2] = x.beta_st[2] = (long)c->s.H_v * n;
    return x;
}

static void run_split(const KdnLayerCall *c, const KdnChunkBuffers *b) {
    const int T0 = c->s.T - c->K;
    for (int seq = 0; seq < c->s.n_seqs; seq++) {
        KdnLayerCall head = tokens_of(c, seq, 0, T0), tail = tokens_of(c, seq, T0, c->K);
        head.K = 1, head.snapshots = b->state_mid, head.snap_stride = (long)state_floats(&c->s);
        tail.state_in = b->state_mid;
        run_chunked(&head, b);
        kdn_deltanet_recurrent_call(&tail);
    }
}

void kdn_layer_run(const KdnLayerCall *c, kdn_path path, const KdnChunkBuffers *b) {
    if (!kdn_layer_chunked(c, path)) kdn_deltanet_recurrent_call(c);
    else if (splits_snapshots(c)) run_split(c, b);
    else run_chunked(c, b);
}

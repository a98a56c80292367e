/* libkdn's entry point: ggml's GATED_DELTA_NET (gated_delta_net.h) on the
 * project's kernels. Checks the call, sizes its workspace, stages inputs the
 * chunked kernels cannot read as they are, and hands the call to the
 * dispatch (dispatch.c: which path, which kernels), on the caller's stream.
 * Host C: the kernels are reached through kdn.h's launchers only. */
#include "dispatch.h"

#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <string.h>

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
                                  "a tensor of 2^31 elements or more, or dst of 2^33 or more",
    [KDN_ERR_ALIGNMENT] = "alignment: every tensor's data, dst and state_dst must be 4-byte aligned",
    [KDN_ERR_STRIDE] = "stride: a view or state_dst's slots must span less than 2^48 bytes and not wrap around "
                       "the address space; state_slot_stride >= 0, and a slot's size or more when K > 1",
    [KDN_ERR_ALIASING] = "aliasing: dst, state_dst and the workspace must not overlap each other or an input "
                         "(state_dst may be the state input itself)",
    [KDN_ERR_PENDING_ERROR] = "pending error: an error of earlier work waited on this host thread; nothing was "
                              "launched and the error was left in place",
    [KDN_ERR_LAUNCH_FAILED] = "launch failed: the runtime failed a kernel launch or the CPU executor stopped a kernel "
                              "(kdn_gdn_error_detail() says which and why)",
    [KDN_ERR_KERNEL_REFUSED] = "kernel refused: a kernel refused a shape the library's checks accepted (a library "
                               "defect; kdn_gdn_error_detail() names it)",
    [KDN_ERR_EXECUTOR_SETTINGS] = "executor settings: KDN_CPU_SCHEDULE or KDN_CPU_TIMEOUT holds a value the CPU "
                                  "executor does not understand; nothing ran",
    [KDN_ERR_TUNING_FILE] = "tuning file: it cannot be opened, read or written (errno says why)",
    [KDN_ERR_TUNING_MALFORMED] = "tuning malformed: not a complete libkdn tuning file, or a value out of its range "
                                 "(docs/api.md, \"Tuning\"); nothing of it was taken",
    [KDN_ERR_TUNING_VERSION] = "tuning version: the tuning is of another KDN_TUNING_VERSION; measure again "
                               "(kdn_tune)",
    [KDN_ERR_TUNING_DEVICE] = "tuning device: the tuning was measured on another device or for another backend "
                              "than the calling thread's; measure on this one (kdn_tune)",
};

const char *kdn_status_message(kdn_status status) {
    return (unsigned)status < KDN_STATUS_COUNT ? messages[status] : "unknown status";
}

/* ---- checking a call ---------------------------------------------------- */
/* The largest S_v and the chunk sizes are the kernels' (kdn.h's KdnLimits):
 * the recurrent kernel takes every call, the chunked form what it is built for. */
enum { N_INPUTS = 6, N_VIEWS = 5, INPUT_STATE = 5 }; /* q k v g beta state; the first five may be views */
static const uint64_t kMaxDstElements = (uint64_t)1 << 33;
enum { VIEW_V = 2 };

/* The bytes a call touches: each input's from its first element to the end
 * of its last, and what it writes besides its workspace (dst; state_dst's K
 * slots, empty without state_dst). Taken once per call: every decode call
 * checks them, its host time counts. */
typedef struct {
    uintptr_t begin, end;
} Span;
enum { WRITES_DST, WRITES_STATE, WRITES_WORKSPACE };
typedef struct {
    Span read[N_INPUTS], written[2]; /* written: WRITES_DST, WRITES_STATE */
} Spans;

/* A checked call: the layer call (views' strides, scale, K, outputs in dst),
 * which inputs the chunked kernels read in place, the route, and its spans. */
typedef struct {
    KdnLayerCall call;
    kdn_path path;
    int in_place[N_VIEWS];
    int chunked;
    Spans spans;
} Plan;

/* The inputs by index, through tables of offsets (an array of the members'
 * addresses built at each call cost decode a tenth of the checks' time). */
static const size_t input_at[N_INPUTS] = {offsetof(kdn_gdn_call, q), offsetof(kdn_gdn_call, k),
                                          offsetof(kdn_gdn_call, v), offsetof(kdn_gdn_call, g),
                                          offsetof(kdn_gdn_call, beta), offsetof(kdn_gdn_call, state)};
static const kdn_tensor *inputs(const kdn_gdn_call *c, int i) {
    return (const kdn_tensor *)((const char *)c + input_at[i]);
}

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

static kdn_status check_pointers_and_options(const kdn_gdn_call *c) {
    if (!c || !c->dst) return KDN_ERR_NULL_POINTER;
    for (int i = 0; i < N_INPUTS; i++)
        if (!inputs(c, i)->data) return KDN_ERR_NULL_POINTER;
    if (c->head_map != KDN_HEAD_MAP_TILED && c->head_map != KDN_HEAD_MAP_BLOCK) return KDN_ERR_OPTION;
    if (c->path != KDN_PATH_AUTO && c->path != KDN_PATH_RECURRENT && c->path != KDN_PATH_CHUNKED)
        return KDN_ERR_OPTION;
    if (c->chunk != 0 && !kdn_takes_chunk(&kdn_chunked_limits, c->chunk)) return KDN_ERR_CHUNK;
    if (c->K < 1) return KDN_ERR_SNAPSHOTS;
    return c->tuning ? kdn_tuning_check(c->tuning) : KDN_OK;
}

/* A view's bytes, from its first element to the end of its last; 0 when
 * that is kMaxViewBytes or more (no device addresses so much: a stride that
 * large is a wrapped negative one or garbage). */
static const uint64_t kMaxViewBytes = (uint64_t)1 << 48;

/* end stays below kMaxViewBytes: a dimension's span steps * nb is taken
 * only when it neither overflows nor passes the room left (no division:
 * every call checks six views, decode's host time counts). */
static uint64_t view_bytes(const kdn_tensor *t) {
    uint64_t end = sizeof(float);
    for (int d = 0; d < 4; d++) {
        uint64_t steps = (uint64_t)(t->ne[d] - 1), room = kMaxViewBytes - 1 - end, span;
        if (__builtin_mul_overflow(steps, (uint64_t)t->nb[d], &span) || span > room) return 0;
        end += span;
    }
    return end;
}

static Span span_of(const void *p, uint64_t bytes) { return (Span){(uintptr_t)p, (uintptr_t)p + (uintptr_t)bytes}; }

/* t's span, and whether t spans less than kMaxViewBytes and does not wrap
 * past the end of the address space. */
static int view_span(const kdn_tensor *t, Span *span) {
    uint64_t bytes = view_bytes(t);
    *span = span_of(t->data, bytes);
    return bytes != 0 && (uintptr_t)t->data <= UINTPTR_MAX - bytes;
}

/* Elements < 2^31 (INT_MAX at most): elements stays <= INT_MAX, so with
 * ne[d] <= INT_MAX the product fits in 64 bits (no division). */
static kdn_status check_tensor(const kdn_tensor *t, Span *span) {
    int64_t elements = 1;
    for (int d = 0; d < 4; d++) {
        if (t->ne[d] < 1 || t->ne[d] > INT_MAX || elements * t->ne[d] > INT_MAX) return KDN_ERR_UNSUPPORTED_SHAPE;
        elements *= t->ne[d];
    }
    if (t->nb[0] != sizeof(float)) return KDN_ERR_ROW_STRIDE;
    for (int d = 1; d < 4; d++)
        if (t->nb[d] % sizeof(float) != 0) return KDN_ERR_ROW_STRIDE;
    if ((uintptr_t)t->data % sizeof(float) != 0) return KDN_ERR_ALIGNMENT;
    return view_span(t, span) ? KDN_OK : KDN_ERR_STRIDE;
}

static kdn_status check_layout(const kdn_gdn_call *c, Spans *spans) {
    for (int i = 0; i < N_INPUTS; i++) {
        kdn_status st = check_tensor(inputs(c, i), &spans->read[i]);
        if (st != KDN_OK) return st;
    }
    return (uintptr_t)c->dst % sizeof(float) == 0 ? KDN_OK : KDN_ERR_ALIGNMENT;
}

/* ---- dst and the state slots --------------------------------------------- */
/* A snapshot slot's floats, [S_v, S_v, H_v, n_seqs], and the floats from
 * one slot to the next: a slot's size in dst's tail (state_slot_stride is
 * state_dst's alone), state_slot_stride in state_dst (0: a slot's size). */
static uint64_t slot_elements(const kdn_gdn_call *c) {
    return (uint64_t)c->v.ne[0] * (uint64_t)c->v.ne[0] * (uint64_t)c->v.ne[1] * (uint64_t)c->v.ne[3];
}
static uint64_t slot_stride(const kdn_gdn_call *c) {
    return c->state_dst && c->state_slot_stride ? (uint64_t)c->state_slot_stride : slot_elements(c);
}

/* state_dst's K slots as one view (a slot per step of dimension 1), so that
 * their span is judged as a view's; a stride of kMaxViewBytes or more is
 * clamped there (refused all the same with K > 1; unread with K = 1). */
static kdn_tensor state_slots(const kdn_gdn_call *c) {
    uint64_t stride = slot_stride(c);
    kdn_tensor t = {c->state_dst, {(int64_t)slot_elements(c), c->K, 1, 1}, {sizeof(float), 0, 0, 0}};
    t.nb[1] = stride < kMaxViewBytes / sizeof(float) ? stride * sizeof(float) : kMaxViewBytes;
    return t;
}

/* dst's floats: the outputs, then the K slots unless state_dst takes them. */
static uint64_t dst_elements(const kdn_gdn_call *c) {
    uint64_t outputs = (uint64_t)c->v.ne[0] * (uint64_t)c->v.ne[1] * (uint64_t)c->v.ne[2] * (uint64_t)c->v.ne[3];
    return outputs + (c->state_dst ? 0 : (uint64_t)c->K * slot_elements(c));
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
    /* dst below kMaxDstElements (v, the state and K each below 2^31 here: no overflow) */
    if (dst_elements(c) >= kMaxDstElements) return KDN_ERR_UNSUPPORTED_SHAPE;
    return KDN_OK;
}

/* What the call writes besides its workspace: dst (its size known once
 * the shapes are checked), and state_dst's K slots (none without it). */
static kdn_status check_written(const kdn_gdn_call *c, Spans *spans) {
    spans->written[WRITES_DST] = span_of(c->dst, dst_elements(c) * sizeof(float));
    spans->written[WRITES_STATE] = span_of(NULL, 0);
    if (!c->state_dst) return KDN_OK;
    if ((uintptr_t)c->state_dst % sizeof(float) != 0) return KDN_ERR_ALIGNMENT;
    if (c->state_slot_stride < 0 || (c->K > 1 && slot_stride(c) < slot_elements(c))) return KDN_ERR_STRIDE;
    kdn_tensor slots = state_slots(c);
    return view_span(&slots, &spans->written[WRITES_STATE]) ? KDN_OK : KDN_ERR_STRIDE;
}

/* ---- aliasing: byte spans that must not meet ----------------------------- */
static int meet(Span a, Span b) { return a.begin < b.end && b.begin < a.end; }

/* A region the call writes (`which`) against every input and the other
 * regions it writes. The inputs are only read: they may overlap each other;
 * state_dst may be the state input itself (each workgroup reads its part of
 * the state before it writes it). */
static kdn_status check_disjoint(const kdn_gdn_call *c, const Spans *spans, Span region, int which) {
    for (int i = 0; i < N_INPUTS; i++) {
        int in_place = which == WRITES_STATE && i == INPUT_STATE && c->state_dst == c->state.data;
        if (!in_place && meet(region, spans->read[i])) return KDN_ERR_ALIASING;
    }
    for (int w = WRITES_DST; w <= WRITES_STATE; w++)
        if (w != which && meet(region, spans->written[w])) return KDN_ERR_ALIASING;
    return KDN_OK;
}

/* The input i of a call (q k v g beta) and its strides in the layer call. */
static const size_t view_data_at[N_VIEWS] = {offsetof(KdnLayerCall, q), offsetof(KdnLayerCall, k),
                                             offsetof(KdnLayerCall, v), offsetof(KdnLayerCall, g),
                                             offsetof(KdnLayerCall, beta)};
static const size_t view_strides_at[N_VIEWS] = {offsetof(KdnLayerCall, q_st), offsetof(KdnLayerCall, k_st),
                                                offsetof(KdnLayerCall, v_st), offsetof(KdnLayerCall, g_st),
                                                offsetof(KdnLayerCall, beta_st)};
static const float **view_data(KdnLayerCall *l, int i) { return (const float **)((char *)l + view_data_at[i]); }
static long *view_strides(KdnLayerCall *l, int i) { return (long *)((char *)l + view_strides_at[i]); }

static kdn_status plan_call(const kdn_gdn_call *c, Plan *p) {
    Spans spans;
    kdn_status st = check_pointers_and_options(c);
    if (st == KDN_OK) st = check_layout(c, &spans);
    if (st == KDN_OK) st = check_shapes(c);
    if (st == KDN_OK) st = check_written(c, &spans);
    if (st == KDN_OK) st = check_disjoint(c, &spans, spans.written[WRITES_DST], WRITES_DST);
    if (st == KDN_OK && c->state_dst) st = check_disjoint(c, &spans, spans.written[WRITES_STATE], WRITES_STATE);
    if (st != KDN_OK) return st;
    memset(p, 0, sizeof *p);
    p->spans = spans;
    KdnLayerCall *l = &p->call;
    KdnShape *s = &l->s;
    s->T = (int)c->v.ne[2];
    s->n_seqs = (int)c->v.ne[3];
    s->H_k = (int)c->q.ne[1];
    s->H_v = (int)c->v.ne[1];
    s->D_k = s->D_v = (int)c->v.ne[0];
    s->head_map = c->head_map;
    for (int i = 0; i < N_VIEWS; i++) {
        const kdn_tensor *t = inputs(c, i);
        *view_data(l, i) = t->data;
        for (int d = 0; d < 3; d++) view_strides(l, i)[d] = (long)(t->nb[d + 1] / sizeof(float));
        p->in_place[i] = i == VIEW_V || is_contiguous(t); /* v: any view (kdn.h) */
    }
    l->state_in = c->state.data;
    l->q_scale = (float)(1.0 / sqrt((double)s->D_v)); /* ggml's scale of q, applied to o */
    l->kda = c->g.ne[0] != 1;                         /* S_v == 1: both readings of g are the same math */
    l->K = c->K;
    l->o = c->dst;
    float *tail = c->dst + (size_t)s->D_v * s->H_v * s->T * s->n_seqs; /* dst's snapshot slots */
    l->snapshots = c->state_dst ? c->state_dst : tail; // mutate: state_dst
    l->snap_stride = (long)slot_stride(c); // mutate: snap_stride
    l->tuning = c->tuning;
    p->path = c->path;
    p->chunked = kdn_layer_chunked(l, c->path);
    /* chunk 0: the backend's choice, made only where the chunked path runs
     * (on a GPU it asks the runtime for the state pass's occupancy); the
     * recurrent kernel reads no chunk size. */
    s->chunk = c->chunk ? c->chunk : p->chunked ? kdn_default_chunk(s, c->tuning) : 0;
    return KDN_OK;
}

/* ---- workspace ----------------------------------------------------------- */
/* The chunked path's workspace: a contiguous copy of each view the chunked
 * kernels do not read in place (q, k, g, beta; llama.cpp's are contiguous),
 * then the per-chunk buffers. Floats per input, 64-aligned; 0: read in place. */
static size_t staged_floats(const Plan *p, int i) {
    const KdnShape *s = &p->call.s;
    size_t tok = (size_t)s->T * s->n_seqs;
    size_t width[N_VIEWS] = {(size_t)s->H_k * s->D_k, (size_t)s->H_k * s->D_k, (size_t)s->H_v * s->D_v,
                             (size_t)s->H_v, (size_t)s->H_v};
    return p->in_place[i] ? 0 : aligned_floats(tok * width[i]);
}

static size_t workspace_bytes(const Plan *p) {
    if (!p->chunked) return 0;
    size_t floats = 0;
    for (int i = 0; i < N_VIEWS; i++) floats += staged_floats(p, i);
    const KdnShape bs = buffers_shape(&p->call);
    if (splits_snapshots(&p->call)) floats += aligned_floats(state_floats(&bs)); /* state_mid */
    return sizeof(float) * floats + kdn_chunk_buffers_bytes(&bs) + 256; /* room to align the caller's pointer */
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
/* The chunked path: each view but v copied into the workspace (one launch
 * each) unless it is contiguous already, then read as a contiguous tensor;
 * the per-chunk buffers after. A view read in place takes the dense strides
 * too: the stride of a dimension of size 1 is free in a contiguous view and
 * the kernels check for the dense one. */
static void stage_views(const kdn_gdn_call *c, Plan *p, void *workspace, KdnChunkBuffers *b) {
    float *at = (float *)(((uintptr_t)workspace + 255) / 256 * 256);
    KdnLayerCall *l = &p->call;
    KdnLayerCall dense = kdn_layer_contiguous(&l->s, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    for (int i = 0; i < N_VIEWS; i++) {
        if (i == VIEW_V) continue; /* read as any view (kdn.h) */
        size_t floats = staged_floats(p, i);
        if (floats > 0) {
            const kdn_tensor *t = inputs(c, i);
            float *to = take(&at, floats);
            long ne[4] = {(long)t->ne[0], (long)t->ne[1], (long)t->ne[2], (long)t->ne[3]};
            kdn_gather_strided(t->data, ne, view_strides(l, i), to);
            *view_data(l, i) = to;
        }
        memcpy(view_strides(l, i), view_strides(&dense, i), 3 * sizeof(long));
    }
    const KdnShape bs = buffers_shape(l);
    float *state_mid = splits_snapshots(l) ? take(&at, state_floats(&bs)) : NULL;
    kdn_chunk_buffers_carve(at, &bs, b);
    b->state_mid = state_mid;
}

/* ---- errors of the launch ------------------------------------------------
 * The backend keeps a launch failure per host thread from the launch that
 * failed until it is taken, and runs no later launch of that thread while
 * it stands. A call refuses to start while an error of earlier work waits
 * (it is not this call's to take, and its launches would not run), and
 * takes the failure of its own launches before returning. */
static _Thread_local char error_detail[512];

const char *kdn_gdn_error_detail(void) { return error_detail; }

static const kdn_status status_of_fault[] = {
    [KDN_FAULT_NONE] = KDN_OK,
    [KDN_FAULT_REFUSED] = KDN_ERR_KERNEL_REFUSED,
    [KDN_FAULT_LAUNCH] = KDN_ERR_LAUNCH_FAILED,
    [KDN_FAULT_SETTINGS] = KDN_ERR_EXECUTOR_SETTINGS,
};

kdn_status kdn_gated_delta_net(const kdn_gdn_call *call, void *workspace, size_t workspace_size) {
    Plan p;
    error_detail[0] = 0;
    kdn_status st = plan_call(call, &p);
    if (st != KDN_OK) return st;
    size_t need = workspace_bytes(&p);
    if (need > 0 && (!workspace || workspace_size < need)) return KDN_ERR_WORKSPACE;
    if (need > 0 && (st = check_disjoint(call, &p.spans, span_of(workspace, need), WRITES_WORKSPACE)) != KDN_OK)
        return st;
    if (kdn_error_pending(error_detail, sizeof error_detail)) return KDN_ERR_PENDING_ERROR;
    void *previous = kdn_set_stream(call->stream);
    KdnChunkBuffers b = {0};
    if (p.chunked) stage_views(call, &p, workspace, &b);
    kdn_layer_run(&p.call, p.path, &b);
    kdn_set_stream(previous);
    return status_of_fault[kdn_take_fault(error_detail, sizeof error_detail)];
}

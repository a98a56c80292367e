/* libFuzzer target over kdn_gated_delta_net's argument checks (CPU build).
 *
 * Each input is decoded into one call: a small valid call (shapes, gate,
 * views, options) and then a few edits that push one field each to a hostile
 * value (a dimension of 0, -1 or 2^31; a stride not a multiple of 4, of 2^60
 * or a wrapped -4; a pointer NULL or 2 bytes off; dst, state_dst or the
 * workspace inside an input or each other; a state slot stride negative,
 * under a slot, or past 2^46; K, chunk, head map or path out of range; the
 * workspace one byte short; a tuning of another version or backend, with no
 * row, too many, rows out of order, a negative threshold, a chunk size the
 * kernels lack or an unterminated name). The new state goes to dst's tail, to slots of
 * its own (state_dst, slots apart by their size or more) or over the state
 * input. Every buffer is exactly as long as its view says and ends at a
 * guard page, so a call that reads or writes past what it describes faults.
 *
 * The contract checked, docs/api.md being the specification (the model below
 * is written from it, not from the library's code):
 *   - the call is accepted (KDN_OK) exactly when docs/api.md allows it, and
 *     the workspace query agrees on everything but the workspace (also on
 *     the call with every buffer at an address of its own, far apart);
 *   - a refused call returns a named status (its own message), launches
 *     nothing and leaves every byte of the inputs, dst, state_dst and the
 *     workspace as it was;
 *   - an accepted call runs without a fault (a launch failure is one) and
 *     writes only dst, the state slots of the tokens it has (slot s < T)
 *     and the workspace: the inputs, the gaps between slots and the slots
 *     past T keep their bytes.
 * A violation prints what was called and aborts (libFuzzer saves the input).
 * A documented-valid call whose views would need more memory than the
 * fuzzer maps (a stride of 2^40 over a dimension of 2) is not made; the
 * query checks it at the far-apart addresses. */
#define _GNU_SOURCE
#include "../kernels/gated_delta_net.h"
#include "../kernels/backend/runtime.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the input, read a byte at a time ------------------------------------
 * Past its end, the bytes go on as a sequence seeded by what was read, so a
 * short input still makes a call with every field decided. */
typedef struct {
    const uint8_t *p;
    size_t n;
    uint32_t x;
} Bytes;

static unsigned next_byte(Bytes *b) {
    if (b->n == 0) {
        b->x = b->x * 1664525u + 1013904223u;
        return b->x >> 24;
    }
    b->n--;
    b->x = (b->x ^ *b->p) * 16777619u;
    return *b->p++;
}
static unsigned pick(Bytes *b, unsigned choices) { return next_byte(b) % choices; }

/* ---- docs/api.md as a model: what a call may be ------------------------- */
static const uint64_t kMaxElements = (uint64_t)1 << 31, kMaxDst = (uint64_t)1 << 33, kMaxSpan = (uint64_t)1 << 48;

/* Elements of a view, or 0 when a dimension is < 1 or the product reaches 2^31. */
static uint64_t elements_of(const kdn_tensor *t) {
    uint64_t n = 1;
    for (int d = 0; d < 4; d++) {
        if (t->ne[d] < 1 || (uint64_t)t->ne[d] >= kMaxElements) return 0;
        n *= (uint64_t)t->ne[d];
        if (n >= kMaxElements) return 0;
    }
    return n;
}

/* Bytes from a view's data to the end of its last element; 0 when that is
 * 2^48 or more (dimensions already valid). */
static uint64_t span_of(const kdn_tensor *t) {
    unsigned __int128 end = sizeof(float);
    for (int d = 0; d < 4; d++) end += (unsigned __int128)(uint64_t)(t->ne[d] - 1) * t->nb[d];
    return end >= kMaxSpan ? 0 : (uint64_t)end;
}

static int view_allowed(const kdn_tensor *t) {
    if (!t->data || !elements_of(t) || t->nb[0] != sizeof(float)) return 0;
    for (int d = 1; d < 4; d++)
        if (t->nb[d] % sizeof(float)) return 0;
    uint64_t span = span_of(t);
    return (uintptr_t)t->data % sizeof(float) == 0 && span && (uintptr_t)t->data <= UINTPTR_MAX - span;
}

static int same_shape(const kdn_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return t->ne[0] == a && t->ne[1] == b && t->ne[2] == c && t->ne[3] == d;
}

static int contiguous(const kdn_tensor *t) {
    uint64_t want = sizeof(float);
    for (int d = 0; d < 4; d++) {
        if (t->ne[d] > 1 && t->nb[d] != want) return 0;
        want *= (uint64_t)t->ne[d];
    }
    return 1;
}

static const kdn_tensor *input_of(const kdn_gdn_call *c, int i) {
    const kdn_tensor *all[] = {&c->q, &c->k, &c->v, &c->g, &c->beta, &c->state};
    return all[i];
}
enum { N_INPUTS = 6, STATE_INPUT = 5 };

/* A state slot's floats, [S_v, S_v, H_v, n_seqs], and the floats from one
 * slot to the next (0 asks for a slot's size); the shapes already valid. */
static uint64_t slot_floats(const kdn_gdn_call *c) {
    return (uint64_t)c->v.ne[0] * (uint64_t)c->v.ne[0] * (uint64_t)c->v.ne[1] * (uint64_t)c->v.ne[3];
}
static uint64_t slot_stride(const kdn_gdn_call *c) {
    return c->state_slot_stride ? (uint64_t)c->state_slot_stride : slot_floats(c);
}

/* Bytes from state_dst to the end of its last slot; 0 when the stride is
 * refused (< 0, or under a slot's size with K > 1) or the span is 2^48 or
 * more. A stride is never read with K = 1. */
static uint64_t slots_span(const kdn_gdn_call *c) {
    if (c->state_slot_stride < 0 || (c->K > 1 && slot_stride(c) < slot_floats(c))) return 0;
    unsigned __int128 floats = (unsigned __int128)(uint64_t)(c->K - 1) * slot_stride(c) + slot_floats(c);
    return floats * sizeof(float) >= kMaxSpan ? 0 : (uint64_t)(floats * sizeof(float));
}

/* dst's floats, the outputs and then the K slots unless state_dst takes
 * them (the shapes already valid); 0 when 2^33 or more. */
static uint64_t dst_floats(const kdn_gdn_call *c) {
    uint64_t outputs = (uint64_t)c->v.ne[0] * (uint64_t)c->v.ne[1] * (uint64_t)c->v.ne[2] * (uint64_t)c->v.ne[3];
    unsigned __int128 n = outputs + (c->state_dst ? 0 : (unsigned __int128)(uint64_t)c->K * slot_floats(c));
    return n >= kMaxDst ? 0 : (uint64_t)n;
}

static int overlap(const void *a, uint64_t a_len, const void *b, uint64_t b_len) {
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + b_len && b0 < a0 + a_len;
}

/* A call's tuning (docs/api.md, "Tuning"): none, or one of this version
 * and backend with names terminated, chunk 0, 32 or 64, 1..8 rows of
 * increasing n_seqs in 1..65535 and max_t >= 0. */
static int tuning_allowed(const kdn_tuning *t) {
    if (!t) return 1;
    if (t->version != KDN_TUNING_VERSION || !memchr(t->backend, 0, sizeof t->backend) ||
        !memchr(t->device, 0, sizeof t->device) || strcmp(t->backend, kdn_gdn_backend()) != 0)
        return 0;
    if ((t->chunk != 0 && t->chunk != 32 && t->chunk != 64) || t->n_rows < 1 || t->n_rows > 8) return 0;
    for (int i = 0; i < t->n_rows; i++)
        if (t->rows[i].n_seqs < 1 || t->rows[i].n_seqs > 65535 || t->rows[i].max_t < 0 ||
            (i > 0 && t->rows[i].n_seqs <= t->rows[i - 1].n_seqs))
            return 0;
    return 1;
}

/* Everything but the workspace: options, views, shapes, dst. */
static int call_allowed(const kdn_gdn_call *c) {
    if (!tuning_allowed(c->tuning)) return 0;
    if (c->head_map != KDN_HEAD_MAP_TILED && c->head_map != KDN_HEAD_MAP_BLOCK) return 0;
    if (c->path != KDN_PATH_AUTO && c->path != KDN_PATH_RECURRENT && c->path != KDN_PATH_CHUNKED) return 0;
    if (c->chunk != 0 && c->chunk != 32 && c->chunk != 64) return 0;
    if (c->K < 1 || !c->dst || (uintptr_t)c->dst % sizeof(float)) return 0;
    for (int i = 0; i < N_INPUTS; i++)
        if (!view_allowed(input_of(c, i))) return 0;
    const kdn_tensor *q = &c->q, *v = &c->v;
    int64_t S = v->ne[0], H_k = q->ne[1], H_v = v->ne[1], T = v->ne[2], B = v->ne[3];
    if (!same_shape(&c->k, q->ne[0], H_k, q->ne[2], q->ne[3]) || q->ne[0] != S) return 0;
    if (q->ne[2] != T || q->ne[3] != B || H_v % H_k) return 0;
    if (!same_shape(&c->g, 1, H_v, T, B) && !same_shape(&c->g, S, H_v, T, B)) return 0;
    if (!same_shape(&c->beta, 1, H_v, T, B)) return 0;
    if (!same_shape(&c->state, S, S, H_v, B) || !contiguous(&c->state)) return 0;
    if (S > 256 || H_v > 65535 || B > 65535) return 0;
    uint64_t dst_bytes = dst_floats(c) * sizeof(float), slots = c->state_dst ? slots_span(c) : 0;
    if (!dst_bytes || (uintptr_t)c->dst > UINTPTR_MAX - dst_bytes) return 0;
    if (c->state_dst && ((uintptr_t)c->state_dst % sizeof(float) || !slots || (uintptr_t)c->state_dst > UINTPTR_MAX - slots))
        return 0;
    for (int i = 0; i < N_INPUTS; i++) {
        const kdn_tensor *t = input_of(c, i);
        if (overlap(c->dst, dst_bytes, t->data, span_of(t))) return 0;
        int in_place = t == &c->state && c->state_dst == t->data; /* slot 0 may be exactly the state input */
        if (!in_place && overlap(c->state_dst, slots, t->data, span_of(t))) return 0;
    }
    return !overlap(c->dst, dst_bytes, c->state_dst, slots);
}

static int workspace_allowed(const kdn_gdn_call *c, const void *ws, size_t size, size_t need) {
    if (need == 0) return 1;
    if (!ws || size < need) return 0;
    if (overlap(ws, need, c->dst, dst_floats(c) * sizeof(float))) return 0;
    if (c->state_dst && overlap(ws, need, c->state_dst, slots_span(c))) return 0;
    for (int i = 0; i < N_INPUTS; i++)
        if (overlap(ws, need, input_of(c, i)->data, span_of(input_of(c, i)))) return 0;
    return 1;
}

/* ---- memory: one mapping per buffer, its end against a guard page -------- */
enum { N_BUFFERS = N_INPUTS + 3 }; /* the inputs, dst, state_dst, the workspace */
enum { DST = N_INPUTS, STATE_DST = N_INPUTS + 1, WORKSPACE = N_INPUTS + 2 };
static const uint64_t kMaxBuffer = (uint64_t)16 << 20;

typedef struct {
    uint8_t *map;    /* NULL: the buffer lies in another's mapping, or none */
    size_t usable;   /* bytes before the guard page */
    uint8_t *before; /* the usable bytes as they were before the call */
} Mapping;

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* A mapping whose last `len + short_by` usable bytes hold a buffer of len
 * bytes: the buffer's data pointer, short_by bytes before the guard page. */
static uint8_t *map_buffer(Mapping *m, uint64_t len, unsigned short_by) {
    size_t page = page_size();
    m->usable = (len + short_by + page - 1) / page * page;
    if (m->usable == 0) m->usable = page;
    m->map = mmap(NULL, m->usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->map == MAP_FAILED) abort();
    mprotect(m->map + m->usable, page, PROT_NONE);
    return m->map + m->usable - len - short_by;
}

static void unmap_all(Mapping *maps) {
    for (int i = 0; i < N_BUFFERS; i++)
        if (maps[i].map) munmap(maps[i].map, maps[i].usable + page_size()), free(maps[i].before);
}

/* Finite floats, the same for every run of one input. */
static void fill(Mapping *m, unsigned seed) {
    float *f = (float *)m->map;
    uint32_t x = 2654435761u * (seed + 1);
    for (size_t i = 0; i < m->usable / sizeof(float); i++) {
        x = x * 1664525u + 1013904223u;
        f[i] = (float)((int)(x >> 9) - (1 << 22)) / (float)(1 << 24); /* [-0.25, 0.25) */
    }
}

static void snapshot(Mapping *maps) {
    for (int i = 0; i < N_BUFFERS; i++) {
        if (!maps[i].map) continue;
        maps[i].before = malloc(maps[i].usable);
        if (!maps[i].before) abort();
        memcpy(maps[i].before, maps[i].map, maps[i].usable);
    }
}

static int unchanged(const Mapping *m) { return !m->map || memcmp(m->before, m->map, m->usable) == 0; }

/* ---- decoding a call ----------------------------------------------------- */
typedef struct {
    kdn_gdn_call call;
    kdn_tuning tuning; /* call.tuning points here, or is NULL */
    size_t ws_size;
    void *ws;
    Mapping maps[N_BUFFERS];
} Case;

static kdn_tensor *tensor_of(kdn_gdn_call *c, int i) { return (kdn_tensor *)input_of(c, i); }

/* A view of ne in the contiguous layout, or (layout 1) with dimensions 1 and
 * 2 swapped in memory (a permuted view, ggml's usual), or (layout 2) with
 * rows padded by 4 floats. */
static void view_of(kdn_tensor *t, int64_t n0, int64_t n1, int64_t n2, int64_t n3, unsigned layout) {
    int64_t ne[4] = {n0, n1, n2, n3};
    memcpy(t->ne, ne, sizeof ne);
    t->nb[0] = sizeof(float);
    if (layout == 1) {
        t->nb[2] = sizeof(float) * (size_t)n0;
        t->nb[1] = t->nb[2] * (size_t)n2;
        t->nb[3] = t->nb[1] * (size_t)n1;
    } else {
        t->nb[1] = sizeof(float) * (size_t)(n0 + (layout == 2 ? 4 : 0));
        t->nb[2] = t->nb[1] * (size_t)n1;
        t->nb[3] = t->nb[2] * (size_t)n2;
    }
}

static void valid_call(Bytes *b, kdn_gdn_call *c) {
    static const int64_t sizes[] = {16, 4, 1, 3, 8, 32, 5, 257}, tokens[] = {10, 1, 2, 65, 33, 64, 70, 7};
    int64_t S = sizes[pick(b, 8)], H_k = 1 + pick(b, 2), H_v = H_k * (1 + pick(b, 3)), T = tokens[pick(b, 8)];
    int64_t B = 1 + pick(b, 2);
    memset(c, 0, sizeof *c);
    unsigned layout = pick(b, 3), gate = pick(b, 2);
    view_of(&c->q, S, H_k, T, B, layout);
    view_of(&c->k, S, H_k, T, B, layout);
    view_of(&c->v, S, H_v, T, B, layout);
    view_of(&c->g, gate ? S : 1, H_v, T, B, 0);
    view_of(&c->beta, 1, H_v, T, B, 0);
    view_of(&c->state, S, S, H_v, B, 0);
    c->K = 1 + (int)pick(b, 3);
    c->head_map = (kdn_head_map)pick(b, 2);
    c->path = (kdn_path)pick(b, 3);
    static const int chunks[] = {0, 32, 64};
    c->chunk = chunks[pick(b, 3)];
}

/* No tuning (half the calls) or a valid one: 1..3 rows of thresholds
 * around the shapes' T, a chunk size or 0. */
static void tuning_of(Bytes *b, Case *k) {
    if (pick(b, 2)) return;
    kdn_tuning *t = &k->tuning;
    kdn_tuning_defaults(t);
    static const int chunks[] = {0, 32, 64}, max_t[] = {0, 1, 9, 64, 1000};
    t->chunk = chunks[pick(b, 3)];
    t->n_rows = 1 + (int)pick(b, 3);
    for (int i = 0; i < t->n_rows; i++) t->rows[i] = (kdn_crossover){1 + 2 * i, max_t[pick(b, 5)]};
    k->call.tuning = t;
}

/* A hostile tuning (valid_call's, or the defaults when the call had none). */
static void bad_tuning(Bytes *b, Case *k) {
    kdn_tuning *t = &k->tuning;
    if (!k->call.tuning) kdn_tuning_defaults(t);
    k->call.tuning = t;
    switch (pick(b, 8)) {
    case 0: t->version = pick(b, 2) ? 0 : KDN_TUNING_VERSION + 1; break;
    case 1: strcpy(t->backend, pick(b, 2) ? "hipx" : ""); break;
    case 2: memset(t->backend, 'c', sizeof t->backend); break;
    case 3: t->n_rows = pick(b, 2) ? 0 : KDN_TUNING_MAX_ROWS + 1; break;
    case 4: t->rows[0].max_t = -1 - (int)pick(b, 2) * (INT_MAX - 1); break;
    case 5: t->rows[0].n_seqs = pick(b, 2) ? 0 : 65536; break;
    case 6: t->chunk = pick(b, 2) ? 16 : -32; break;
    default: t->n_rows = 2, t->rows[1] = t->rows[0]; break; /* a batch twice */
    }
}

/* Where each buffer lies: its own mapping (short_by bytes before the guard:
 * 0, or 1..3 for a pointer off alignment) or inside another's (alias >= 0). */
typedef struct {
    int alias[N_BUFFERS];
    unsigned offset[N_BUFFERS]; /* bytes into the aliased buffer, or short of the guard */
    int null[N_BUFFERS];
} Placement;

/* Where the new state goes: dst's tail (state_dst NULL), slots of their own
 * or over the state input (slot 0 = the state: an update in place); slots
 * a slot's size apart (stride 0 or that size) or further. */
static void state_destination(Bytes *b, kdn_gdn_call *c, Placement *at) {
    switch (pick(b, 4)) {
    case 0: case 1: at->null[STATE_DST] = 1; break;
    case 2: at->alias[STATE_DST] = STATE_INPUT, at->offset[STATE_DST] = 0; break;
    default: break;
    }
    int64_t slot = (int64_t)slot_floats(c);
    const int64_t strides[] = {0, slot, slot + 1, slot + 4, slot + 61}; /* 0: a slot's size; gaps of 1, 4, 61 floats */
    c->state_slot_stride = strides[pick(b, 5)];
}

/* A hostile state slot stride: negative, under a slot, at and past the
 * stride whose K = 2 slots end at 2^48 bytes, 2^62 (4 bytes a float wrap
 * past 2^64). The slot's size may be garbage when a shape was edited. */
static int64_t bad_slot_stride(Bytes *b, const kdn_gdn_call *c) {
    uint64_t slot = slot_floats(c), at_limit = ((uint64_t)1 << 46) - slot;
    const int64_t bad[] = {-1, INT64_MIN, 1, (int64_t)(slot - 1), (int64_t)1 << 44, (int64_t)(at_limit - 1),
                           (int64_t)at_limit, (int64_t)1 << 62};
    return bad[pick(b, 8)];
}

static void edit(Bytes *b, Case *k, Placement *at) {
    static const int64_t bad_ne[] = {0, -1, INT64_MIN, (int64_t)1 << 31, ((int64_t)1 << 31) - 1,
                                     (int64_t)1 << 40, INT64_MAX, 3};
    static const size_t bad_nb[] = {0, 2, 6, 8, (size_t)1 << 40, (size_t)1 << 47, (size_t)1 << 60, SIZE_MAX - 3};
    kdn_gdn_call *c = &k->call;
    int i = (int)pick(b, N_BUFFERS);
    switch (pick(b, 10)) {
    case 0: if (i < N_INPUTS) tensor_of(c, i)->ne[pick(b, 4)] = bad_ne[pick(b, 8)]; break;
    case 1: if (i < N_INPUTS) tensor_of(c, i)->nb[pick(b, 4)] = bad_nb[pick(b, 8)]; break;
    case 2: at->null[i] = 1; break;
    case 3: at->alias[i] = -1, at->offset[i] = 1 + pick(b, 3); break; /* off alignment */
    case 4: at->alias[i] = (int)pick(b, N_BUFFERS), at->offset[i] = 4 * pick(b, 4); break;
    case 5: {
        static const int bad_k[] = {0, -1, INT_MIN, 1 << 30, 1000};
        c->K = bad_k[pick(b, 5)];
        break;
    }
    case 6: {
        static const int bad_chunk[] = {16, 1, -32, 128, 33};
        c->chunk = bad_chunk[pick(b, 5)];
        break;
    }
    case 7: c->state_slot_stride = bad_slot_stride(b, c); break;
    case 8: bad_tuning(b, k); break;
    default:
        if (pick(b, 2)) c->head_map = (kdn_head_map)(pick(b, 2) ? 2 : -1);
        else c->path = (kdn_path)(pick(b, 2) ? 3 : -1);
    }
}

/* Bytes a buffer covers: a view's span, dst's floats, state_dst's slots, the
 * workspace the query asked for; 0 for a buffer whose size the call's shapes
 * do not define (the call must not touch it). */
static uint64_t buffer_bytes(const kdn_gdn_call *c, int i, size_t ws_need) {
    if (i == WORKSPACE) return ws_need;
    if (i < N_INPUTS) {
        const kdn_tensor *t = input_of(c, i);
        return elements_of(t) ? span_of(t) : 0;
    }
    int shapes_ok = elements_of(&c->v) && c->K >= 1 && c->v.ne[0] <= 256;
    if (i == STATE_DST) return shapes_ok && c->state_dst ? slots_span(c) : 0;
    return shapes_ok ? dst_floats(c) * sizeof(float) : 0;
}

/* Whether buffer i lies inside buffer a = at->alias[i] (a has a mapping of
 * its own), rather than in a mapping of its own. */
static int inside_another(const Placement *at, int i) {
    int a = at->alias[i];
    return a >= 0 && a != i && at->alias[a] < 0 && !at->null[a];
}

/* The call with every view, dst and state_dst (unless NULL) at a
 * placeholder address of its own, 2^52 apart (no span documented as valid
 * reaches the next). */
static kdn_gdn_call at_placeholders(const kdn_gdn_call *c, const Placement *at) {
    kdn_gdn_call probe = *c;
    for (int i = 0; i < N_INPUTS; i++) tensor_of(&probe, i)->data = (void *)((uintptr_t)(i + 1) << 52);
    probe.dst = (float *)((uintptr_t)(DST + 1) << 52);
    probe.state_dst = at->null[STATE_DST] ? NULL : (float *)((uintptr_t)(STATE_DST + 1) << 52);
    return probe;
}

/* ---- the contract -------------------------------------------------------- */
static void describe(const Case *k, const char *what, kdn_status st) {
    const kdn_gdn_call *c = &k->call;
    fprintf(stderr, "fuzz_gdn_args: %s (status %d: %s)\n", what, (int)st, kdn_status_message(st));
    const char *names[] = {"q", "k", "v", "g", "beta", "state"};
    for (int i = 0; i < N_INPUTS; i++) {
        const kdn_tensor *t = input_of(c, i);
        fprintf(stderr, "  %-5s %p ne %lld %lld %lld %lld nb %zu %zu %zu %zu\n", names[i], t->data,
                (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], t->nb[0],
                t->nb[1], t->nb[2], t->nb[3]);
    }
    fprintf(stderr, "  dst %p state_dst %p slot stride %lld K %d head_map %d path %d chunk %d workspace %p of %zu\n",
            (void *)c->dst, (void *)c->state_dst, (long long)c->state_slot_stride, c->K, (int)c->head_map,
            (int)c->path, c->chunk, k->ws, k->ws_size);
    if (c->tuning)
        fprintf(stderr, "  tuning version %d chunk %d rows %d (first %d: %d)\n", c->tuning->version, c->tuning->chunk,
                c->tuning->n_rows, c->tuning->rows[0].n_seqs, c->tuning->rows[0].max_t);
}

static void require(int ok, const Case *k, const char *what, kdn_status st) {
    if (ok) return;
    describe(k, what, st);
    abort();
}

static int named(kdn_status st) {
    return st > KDN_OK && st < KDN_STATUS_COUNT && strcmp(kdn_status_message(st), "unknown status") != 0;
}

/* The workspace the call's shapes need (the query reads no data), asked on
 * the call at placeholder addresses, where the query must also agree with
 * docs/api.md; 0 if refused. */
static size_t workspace_need(const kdn_gdn_call *c, const Placement *at) {
    Case probe = {.call = at_placeholders(c, at)};
    size_t need = 0;
    kdn_status st = kdn_gdn_workspace_size(&probe.call, &need);
    int allowed = call_allowed(&probe.call);
    require(allowed ? st == KDN_OK : named(st), &probe,
            allowed ? "the query refused a valid call (buffers far apart)"
                    : "the query accepted an invalid call (buffers far apart)", st);
    return st == KDN_OK ? need : 0;
}

/* Every buffer: its own mapping, long enough for the buffers placed inside
 * it too, or a place inside another's. 0 when a buffer would need more
 * than kMaxBuffer and the call's shapes are documented as valid (not made:
 * its memory would not be there; workspace_need checked it). */
static int place(Case *k, const Placement *at, size_t ws_need) {
    kdn_gdn_call *c = &k->call, anywhere = at_placeholders(c, at);
    uint64_t len[N_BUFFERS], extent[N_BUFFERS];
    for (int i = 0; i < N_BUFFERS; i++) {
        len[i] = buffer_bytes(&anywhere, i, ws_need);
        if (len[i] > kMaxBuffer) {
            if (call_allowed(&anywhere)) return 0;
            len[i] = 0;
        }
        extent[i] = len[i];
    }
    for (int i = 0; i < N_BUFFERS; i++)
        if (inside_another(at, i) && at->offset[i] + len[i] > extent[at->alias[i]])
            extent[at->alias[i]] = at->offset[i] + len[i];
    uint8_t *data[N_BUFFERS];
    for (int i = 0; i < N_BUFFERS; i++) {
        if (inside_another(at, i)) continue;
        data[i] = map_buffer(&k->maps[i], extent[i], at->alias[i] < 0 ? at->offset[i] : 0);
        fill(&k->maps[i], (unsigned)i);
    }
    for (int i = 0; i < N_BUFFERS; i++) {
        if (inside_another(at, i)) data[i] = data[at->alias[i]] + at->offset[i];
        if (at->null[i]) data[i] = NULL;
    }
    for (int i = 0; i < N_INPUTS; i++) tensor_of(c, i)->data = data[i];
    c->dst = (float *)data[DST];
    c->state_dst = (float *)data[STATE_DST];
    k->ws = data[WORKSPACE];
    return 1;
}

/* Bytes [p, p + len) that the call may write: the mappings' copies from
 * before the call take them as they are now, so that a comparison finds
 * only writes elsewhere. */
static void may_write(Mapping *maps, const void *p, uint64_t len) {
    for (int i = 0; i < N_BUFFERS; i++) {
        if (!maps[i].map) continue;
        uintptr_t map = (uintptr_t)maps[i].map, lo = (uintptr_t)p, hi = lo + len;
        if (lo < map) lo = map;
        if (hi > map + maps[i].usable) hi = map + maps[i].usable;
        if (lo < hi) memcpy(maps[i].before + (lo - map), (const void *)lo, hi - lo);
    }
}

/* What an accepted call writes: dst, the workspace, and the state slots of
 * the tokens it has (slot s < T; the others keep their bytes). */
static void accepted_writes(Case *k, size_t ws_need) {
    const kdn_gdn_call *c = &k->call;
    may_write(k->maps, c->dst, dst_floats(c) * sizeof(float));
    may_write(k->maps, k->ws, ws_need);
    for (int64_t s = 0; c->state_dst && s < c->K && s < c->v.ne[2]; s++)
        may_write(k->maps, c->state_dst + s * (int64_t)slot_stride(c), slot_floats(c) * sizeof(float));
}

static void check_call(Case *k, size_t ws_need, kdn_status query) {
    const kdn_gdn_call *c = &k->call;
    int allowed = call_allowed(c);
    require(allowed ? query == KDN_OK : named(query), k,
            allowed ? "the workspace query refused a valid call" : "the workspace query accepted an invalid call", query);
    allowed = allowed && workspace_allowed(c, k->ws, k->ws_size, ws_need);
    snapshot(k->maps);
    long launches = kdn_launch_count();
    kdn_status st = kdn_gated_delta_net(c, k->ws, k->ws_size);
    if (st == KDN_OK) {
        require(allowed, k, "accepted a call docs/api.md refuses", st);
        accepted_writes(k, ws_need);
        for (int i = 0; i < N_BUFFERS; i++)
            require(unchanged(&k->maps[i]), k, "an accepted call wrote outside dst, its state slots and the workspace", st);
        return;
    }
    require(!allowed || st == KDN_ERR_LAUNCH_FAILED, k, "refused a call docs/api.md allows", st);
    require(st != KDN_ERR_LAUNCH_FAILED, k, "a launch failed (a fault)", st);
    require(named(st), k, "a refusal without a named status", st);
    require(kdn_launch_count() == launches, k, "a refused call launched a kernel", st);
    for (int i = 0; i < N_BUFFERS; i++) require(unchanged(&k->maps[i]), k, "a refused call wrote memory", st);
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    Bytes b = {input, size, 2166136261u};
    Case k;
    memset(&k, 0, sizeof k);
    valid_call(&b, &k.call);
    tuning_of(&b, &k);
    Placement at;
    memset(&at, 0, sizeof at);
    for (int i = 0; i < N_BUFFERS; i++) at.alias[i] = -1;
    state_destination(&b, &k.call, &at);
    for (unsigned n = pick(&b, 4); n > 0; n--) edit(&b, &k, &at);
    size_t need = workspace_need(&k.call, &at);
    if (!place(&k, &at, need)) {
        unmap_all(k.maps);
        return 0;
    }
    size_t got = 0;
    kdn_status query = kdn_gdn_workspace_size(&k.call, &got);
    require(query != KDN_OK || got == need, &k, "the workspace size changed with the addresses", query);
    k.ws_size = need > 0 && pick(&b, 4) == 0 ? need - 1 : need;
    check_call(&k, need, query);
    unmap_all(k.maps);
    return 0;
}

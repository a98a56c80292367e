/* Phase 8, golden cases: the layer's conventions pinned by hand. Each case
 * is a few tokens of S_k = S_v = 4 (the library's q scale 1/sqrt(4) = 1/2 is
 * exact) whose outputs and states are worked out below in exact binary
 * fractions and written as literal numbers, independent of reference/: which
 * key head a value head reads (tiled and block maps), the decay applied
 * before the delta, beta on the whole delta, the state's transposed layout
 * (S[i][j] at i + j*S) and the order of the K snapshots.
 *
 * Every case runs through the library's entry point (kdn_gated_delta_net,
 * the recurrent path and, where K = 1, the chunked path), through the layer
 * kernels on kdn.h's shape (recurrent, chunked; q given
 * pre-scaled by 1/2, as they do not scale it) and through the reference
 * (ref_gdn), and each result must equal the literals. With a convention
 * broken on purpose (a swapped head map, decay after the update, beta on v
 * alone, a row-major state, snapshots in token order), the numbers a broken
 * kernel would give are worked out next to the right ones: every one differs.
 *
 * Layouts (ggml, n_seqs = 1): q, k [S, H_k, T] at (t H_k + m) S + i; v, o
 * [S, H_v, T] at (t H_v + h) S + j; g, beta [1, H_v, T] at t H_v + h; state
 * and snapshot slots [S, S, H_v], S_h[i][j] (key row i, value column j) at
 * (h S + j) S + i. The recurrence per token: S <- e^g S; d = beta (v - S^T k);
 * S <- S + k d^T; o = (S^T q) / 2 (library) -- docs/algorithm.md. */
#include "phases.h"

#include "../kernels/gated_delta_net.h"
#include "deltanet_data.h"
#include "kernels/ladder.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { GS = 4 };           /* S_k = S_v = D_k = D_v of every case */
#define Q_SCALE 0.5        /* 1 / sqrt(GS), exact */
#define LN_HALF -0.69314718055994531 /* g = ln(1/2): e^g = 1/2 (to fp32 rounding, 2e-9) */
/* literals are exact binary fractions; only e^g rounds */
#define TOL_GOLDEN {1e-6, 1e-6, 1e-6}

typedef struct {
    int at;
    double value;
} Entry; /* a non-zero element of an expected array; the others are 0 */

enum { MAX_T = 3, MAX_HV = 4, MAX_HK = 2, MAX_K = 4, MAX_ENTRIES = 16 };
typedef struct {
    int H_k, H_v, T, K, head_map;
    float q[MAX_T * MAX_HK * GS], k[MAX_T * MAX_HK * GS], v[MAX_T * MAX_HV * GS];
    float g[MAX_T * MAX_HV], beta[MAX_T * MAX_HV], state[MAX_HV * GS * GS];
    Entry o[MAX_ENTRIES];              /* outputs [S, H_v, T] */
    Entry snap[MAX_K][MAX_ENTRIES];    /* slot s: the state after token T-1-s, for s < min(K, T) */
} Golden;

/* ---- the cases ------------------------------------------------------------ */

/* Head maps. H_k = 2, H_v = 4, T = 1, state 0, g = 0, beta = 1. Key head m
 * has k = e_m and q = (m+1) e_m; value head h has v = e_h. Value head h,
 * reading key head m: d = v - 0 = e_h, S = e_m e_h^T (S[m][h] = 1, at
 * (h 4 + h) 4 + m = 20 h + m), o = (S^T q) / 2 = (m+1)/2 e_h (at 5 h).
 * Tiled m = h % 2 = 0 1 0 1: o = .5 1 .5 1, state at 0 21 40 61.
 * Block m = h / 2 = 0 0 1 1: o = .5 .5 1 1, state at 0 20 41 61.
 * A kernel with the other map gives the other line: heads 1 and 2 differ. */
#define HEAD_MAP_INPUTS                                                                        \
    .H_k = 2, .H_v = 4, .T = 1, .K = 1,                                                        \
    .q = {1, 0, 0, 0, /* m = 1 */ 0, 2, 0, 0}, .k = {1, 0, 0, 0, /* m = 1 */ 0, 1, 0, 0},      \
    .v = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, .g = {0, 0, 0, 0}, .beta = {1, 1, 1, 1}
static const Golden head_map_tiled = {
    HEAD_MAP_INPUTS, .head_map = HEAD_MAP_TILED,
    .o = {{0, 0.5}, {5, 1.0}, {10, 0.5}, {15, 1.0}},
    .snap = {{{0, 1.0}, {21, 1.0}, {40, 1.0}, {61, 1.0}}},
};
static const Golden head_map_block = {
    HEAD_MAP_INPUTS, .head_map = HEAD_MAP_BLOCK,
    .o = {{0, 0.5}, {5, 0.5}, {10, 1.0}, {15, 1.0}},
    .snap = {{{0, 1.0}, {20, 1.0}, {41, 1.0}, {61, 1.0}}},
};

/* Decay before the delta, beta on the delta. One head, T = 2, g = ln(1/2)
 * (a = 1/2) and beta = 1/2 at both tokens, k = e0, q = e0 + e1; S0[0][0] = 4
 * (at 0), S0[1][1] = 8 (at 5), v0 = 3 e0, v1 = e0. Column 0 (d is 0 in the
 * others: v and S^T k vanish there):
 *   t0: S = a S0: S00 = 2;   d = (1/2)(3 - 2) = 1/2;       S00 = 2 + 1/2 = 5/2
 *   t1: S00 = 5/4;           d = (1/2)(1 - 5/4) = -1/8;    S00 = 5/4 - 1/8 = 9/8
 * and S11, only decayed: 4, then 2. o_t[j] = (S[0][j] + S[1][j]) / 2:
 *   o0 = (5/4, 2), o1 = (9/16, 1) at 0, 1 and 4, 5; final S00 = 9/8, S11 = 2.
 * Broken on purpose, t0's S00 and o0[0] would be: decay after the update
 * d = (1/2)(3 - 4), S00 = (4 - 1/2)/2 = 7/4, o 7/8; beta on v alone
 * d = 3/2 - 2, S00 = 3/2, o 3/4; the delta read from the undecayed state
 * d = (1/2)(3 - 4), S00 = 2 - 1/2 = 3/2, o 3/4; o before the update 1. */
static const Golden decay_beta = {
    .H_k = 1, .H_v = 1, .T = 2, .K = 1, .head_map = HEAD_MAP_TILED,
    .q = {1, 1, 0, 0, 1, 1, 0, 0}, .k = {1, 0, 0, 0, 1, 0, 0, 0}, .v = {3, 0, 0, 0, 1, 0, 0, 0},
    .g = {(float)LN_HALF, (float)LN_HALF}, .beta = {0.5f, 0.5f}, .state = {[0] = 4, [5] = 8},
    .o = {{0, 1.25}, {1, 2.0}, {4, 0.5625}, {5, 1.0}},
    .snap = {{{0, 1.125}, {5, 2.0}}},
};

/* The state's transposed layout. One head, T = 1, g = 0, beta = 1. The
 * state's memory holds 1 .. 16, so S[i][j] = mem[i + 4j] = i + 4j + 1;
 * k = e2, v = (1, 2, 3, 4), q = e0 + 2 e1 + e2.
 *   S^T k = S[2][j] = 4j + 3 = (3, 7, 11, 15);  d = v - S^T k = (-2, -5, -8, -11)
 *   S + e2 d^T: row 2 becomes v (1, 2, 3, 4), at 2, 6, 10, 14; the rest stays
 *   o[j] = (S[0][j] + 2 S[1][j] + v[j]) / 2 = ((4j+1) + 2(4j+2) + (j+1)) / 2
 *        = (13 j + 6) / 2 = (3, 9.5, 16, 22.5)
 * Read row-major (S[i][j] = mem[4i + j]), S^T k = mem[8..11] = (9 .. 12),
 * d = (-8, -8, -8, -8), o = (6, 8, 10, 12), and row 2 would land at 8..11. */
static const Golden state_layout = {
    .H_k = 1, .H_v = 1, .T = 1, .K = 1, .head_map = HEAD_MAP_TILED,
    .q = {1, 2, 1, 0}, .k = {0, 0, 1, 0}, .v = {1, 2, 3, 4}, .g = {0}, .beta = {1},
    .state = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
    .o = {{0, 3.0}, {1, 9.5}, {2, 16.0}, {3, 22.5}},
    .snap = {{{0, 1}, {1, 2}, {2, 1}, {3, 4}, {4, 5}, {5, 6}, {6, 2}, {7, 8}, {8, 9}, {9, 10}, {10, 3}, {11, 12},
              {12, 13}, {13, 14}, {14, 4}, {15, 16}}},
};

/* Snapshot order. H_k = 1, H_v = 2, T = 3, state 0, g = 0, beta = 1, k = q
 * = e0; value head 0 has v_t = (t+1) e0, head 1 v_t = -(t+1) e1. With beta 1
 * and a unit k, row 0 of the state becomes v_t: after token t head 0 has
 * S[0][0] = t+1 (at 0), head 1 S[0][1] = -(t+1) (at 16 + 4 = 20), and
 * o_t = v_t / 2: head 0 at 8t (0.5, 1, 1.5), head 1 at 8t + 5 (-0.5, -1, -1.5).
 * Slot s holds the state after token T-1-s (slots 32 floats apart):
 * K = 4: slots 0, 1, 2 = 3, 2, 1 (and -3, -2, -1); slot 3 keeps its bytes.
 * K = 2: slots 0, 1 = 3, 2. In token order slot 0 would hold 1. */
#define SNAPSHOT_INPUTS                                                                       \
    .H_k = 1, .H_v = 2, .T = 3, .head_map = HEAD_MAP_TILED,                                   \
    .q = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}, .k = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0},     \
    .v = {1, 0, 0, 0, 0, -1, 0, 0, 2, 0, 0, 0, 0, -2, 0, 0, 3, 0, 0, 0, 0, -3, 0, 0},          \
    .g = {0, 0, 0, 0, 0, 0}, .beta = {1, 1, 1, 1, 1, 1},                                       \
    .o = {{0, 0.5}, {5, -0.5}, {8, 1.0}, {13, -1.0}, {16, 1.5}, {21, -1.5}}
static const Golden snapshots_k4 = {
    SNAPSHOT_INPUTS, .K = 4,
    .snap = {{{0, 3.0}, {20, -3.0}}, {{0, 2.0}, {20, -2.0}}, {{0, 1.0}, {20, -1.0}}},
};
static const Golden snapshots_k2 = {
    SNAPSHOT_INPUTS, .K = 2,
    .snap = {{{0, 3.0}, {20, -3.0}}, {{0, 2.0}, {20, -2.0}}},
};

/* ---- running them ----------------------------------------------------------- */
static size_t n_qk(const Golden *x) { return (size_t)x->T * x->H_k * GS; }
static size_t n_v(const Golden *x) { return (size_t)x->T * x->H_v * GS; }
static size_t n_gb(const Golden *x) { return (size_t)x->T * x->H_v; }
static size_t n_state(const Golden *x) { return (size_t)x->H_v * GS * GS; }
static int written_slots(const Golden *x) { return x->K < x->T ? x->K : x->T; }

static double *expand(Ctx *c, const Entry *e, size_t n) {
    double *d = host_d(c, n);
    for (size_t i = 0; i < n; i++) d[i] = 0.0;
    for (int i = 0; i < MAX_ENTRIES && e[i].value != 0.0; i++) d[e[i].at] = e[i].value;
    return d;
}

/* got: outputs then written_slots states; slots past them must still be NaN. */
static void judge(Ctx *c, const char *who, const Golden *x, const float *o, const float *slots, int checked_slots,
                  int nan_slots, const Test *t) {
    char what[96];
    snprintf(what, sizeof what, "%s o", who);
    expect_close_host(c, what, o, expand(c, x->o, n_v(x)), x->T * x->H_v, GS, t->tol);
    for (int s = 0; s < checked_slots; s++) {
        snprintf(what, sizeof what, "%s state slot %d", who, s);
        expect_close_host(c, what, slots + s * n_state(x), expand(c, x->snap[s], n_state(x)), x->H_v * GS, GS,
                          t->tol);
    }
    for (int s = checked_slots; s < checked_slots + nan_slots; s++)
        for (size_t i = 0; i < n_state(x); i++)
            if (slots[s * n_state(x) + i] == slots[s * n_state(x) + i]) {
                test_fail(c, "%s: snapshot slot %d written with T = %d < K = %d", who, s, x->T, x->K);
                break;
            }
}

static void set_view(kdn_tensor *t, const float *data, int64_t n0, int64_t n1, int64_t n2) {
    t->data = data;
    t->ne[0] = n0, t->ne[1] = n1, t->ne[2] = n2, t->ne[3] = 1;
    t->nb[0] = sizeof(float), t->nb[1] = sizeof(float) * n0, t->nb[2] = t->nb[1] * n1, t->nb[3] = t->nb[2] * n2;
}

typedef struct {
    float *q, *k, *v, *g, *beta, *state;
} GoldenDev;

static GoldenDev upload(Ctx *c, const Golden *x, double q_scale) {
    float *q = host_f(c, n_qk(x));
    for (size_t i = 0; i < n_qk(x); i++) q[i] = (float)(x->q[i] * q_scale); /* exact: a power of two */
    GoldenDev d = {dev_in(c, "q", q, n_qk(x)),        dev_in(c, "k", x->k, n_qk(x)),
                   dev_in(c, "v", x->v, n_v(x)),      dev_in(c, "g", x->g, n_gb(x)),
                   dev_in(c, "beta", x->beta, n_gb(x)), dev_in(c, "state", x->state, n_state(x))};
    return d;
}

/* The library on path `path`: dst = outputs, then K slots (NaN to start). */
static void run_library(const Test *t, Ctx *c, const Golden *x, kdn_path path) {
    GoldenDev d = upload(c, x, 1.0);
    size_t n_dst = n_v(x) + (size_t)x->K * n_state(x);
    float *dst = dev_out(c, "dst", n_dst);
    kdn_gdn_call call;
    memset(&call, 0, sizeof call);
    set_view(&call.q, d.q, GS, x->H_k, x->T);
    set_view(&call.k, d.k, GS, x->H_k, x->T);
    set_view(&call.v, d.v, GS, x->H_v, x->T);
    set_view(&call.g, d.g, 1, x->H_v, x->T);
    set_view(&call.beta, d.beta, 1, x->H_v, x->T);
    set_view(&call.state, d.state, GS, GS, x->H_v);
    call.dst = dst, call.K = x->K, call.path = path;
    call.head_map = x->head_map == HEAD_MAP_BLOCK ? KDN_HEAD_MAP_BLOCK : KDN_HEAD_MAP_TILED;
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&call, &ws);
    float *workspace = ws ? dev_out(c, "workspace", ws / sizeof(float) + 1) : NULL;
    if (st == KDN_OK) st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) {
        test_fail(c, "library (%s): %s %s", path == KDN_PATH_CHUNKED ? "chunked" : "recurrent", kdn_status_message(st),
                  kdn_gdn_error_detail());
        return;
    }
    if (dev_sync(c) != 0) return;
    float *got = host_f(c, n_dst);
    download(c, got, dst, n_dst);
    judge(c, path == KDN_PATH_CHUNKED ? "library chunked" : "library recurrent", x, got, got + n_v(x),
          written_slots(x), x->K - written_slots(x), t);
}

typedef enum { LAYER_RECURRENT, LAYER_CHUNKED } LayerKind;
static const char *const layer_names[] = {"recurrent kernel", "chunked kernels"};

/* A layer kernel on kdn.h's shape (chunk 64, K = 1): q pre-scaled; o and the
 * final state, which is slot 0 of the case. */
static void run_layer(const Test *t, Ctx *c, const Golden *x, LayerKind kind) {
    GoldenDev d = upload(c, x, Q_SCALE);
    KdnShape s = {x->T, 1, x->H_k, x->H_v, GS, GS, 64, x->head_map == HEAD_MAP_BLOCK};
    float *o = dev_out(c, "o", n_v(x)), *state = dev_out(c, "state_out", n_state(x));
    if (kind == LAYER_RECURRENT)
        kdn_deltanet_recurrent(&s, d.q, d.k, d.v, d.g, d.beta, d.state, o, state);
    else {
        KdnChunkBuffers b;
        kdn_chunk_buffers_carve(dev_out(c, "chunk buffers", kdn_chunk_buffers_bytes(&s) / sizeof(float)), &s, &b);
        const KdnLayerCall call = kdn_layer_contiguous(&s, d.q, d.k, d.v, d.g, d.beta, d.state, o, state);
        kdn_layer_run(&call, KDN_PATH_CHUNKED, &b);
    }
    if (dev_sync(c) != 0) return;
    float *got = host_f(c, n_v(x) + n_state(x));
    download(c, got, o, n_v(x));
    download(c, got + n_v(x), state, n_state(x));
    judge(c, layer_names[kind], x, got, got + n_v(x), 1, 0, t);
}

/* The reference on the same inputs and the same literals. */
static void run_reference(const Test *t, Ctx *c, const Golden *x) {
    RefGdnShape gs = {{x->T, 1, x->H_k, x->H_v, GS, GS, 64, x->head_map == HEAD_MAP_BLOCK}, 0, x->K, Q_SCALE};
    RefInputs in = {x->q, x->k, x->v, x->g, x->beta, x->state};
    size_t n_snap = (size_t)x->K * n_state(x);
    double *o = host_d(c, n_v(x)), *snap = host_d(c, n_snap);
    for (size_t i = 0; i < n_snap; i++) snap[i] = NAN;
    ref_gdn(&gs, &in, o, snap);
    float *got = host_f(c, n_v(x) + n_snap);
    for (size_t i = 0; i < n_v(x); i++) got[i] = (float)o[i];
    for (size_t i = 0; i < n_snap; i++) got[n_v(x) + i] = (float)snap[i];
    judge(c, "reference", x, got, got + n_v(x), written_slots(x), x->K - written_slots(x), t);
}

static void run_golden(const Test *t, Ctx *c, const Golden *x, const char *what) {
    run_library(t, c, x, KDN_PATH_RECURRENT);
    if (x->K == 1) run_library(t, c, x, KDN_PATH_CHUNKED);
    for (int kind = LAYER_RECURRENT; kind <= LAYER_CHUNKED; kind++) run_layer(t, c, x, (LayerKind)kind);
    run_reference(t, c, x);
    set_shape_desc(c, "%s: S=%d Hk=%d Hv=%d T=%d K=%d map=%s; library %s, 2 kernels, reference", what, GS, x->H_k,
                   x->H_v, x->T, x->K, x->head_map == HEAD_MAP_BLOCK ? "block" : "tiled",
                   x->K == 1 ? "recurrent+chunked" : "recurrent");
}

static void t_head_map_tiled(const Test *t, Ctx *c) { run_golden(t, c, &head_map_tiled, "value head h reads key head h % H_k"); }
static void t_head_map_block(const Test *t, Ctx *c) { run_golden(t, c, &head_map_block, "value head h reads key head h / (H_v/H_k)"); }
static void t_decay_beta(const Test *t, Ctx *c) { run_golden(t, c, &decay_beta, "decay before the delta, beta on it"); }
static void t_state_layout(const Test *t, Ctx *c) { run_golden(t, c, &state_layout, "S[i][j] at i + j*S"); }
static void t_snapshots_k4(const Test *t, Ctx *c) { run_golden(t, c, &snapshots_k4, "slot s = state after token T-1-s"); }
static void t_snapshots_k2(const Test *t, Ctx *c) { run_golden(t, c, &snapshots_k2, "slot s = state after token T-1-s"); }

/* No chunk size: --set leaves these rows alone (their shapes are the literals'). */
static const Test tests[] = {
    {8, "golden_head_map_tiled", "all", TOL_GOLDEN, CASE(0), t_head_map_tiled},
    {8, "golden_head_map_block", "all", TOL_GOLDEN, CASE(0), t_head_map_block},
    {8, "golden_decay_beta", "all", TOL_GOLDEN, CASE(0), t_decay_beta},
    {8, "golden_state_layout", "all", TOL_GOLDEN, CASE(0), t_state_layout},
    {8, "golden_snapshots_K4", "all", TOL_GOLDEN, CASE(0), t_snapshots_k4},
    {8, "golden_snapshots_K2", "all", TOL_GOLDEN, CASE(0), t_snapshots_k2},
};

/* fixed, tiny shapes (--set does not apply): no time estimate */
const TestList phase8_golden_tests = {tests, sizeof tests / sizeof tests[0], NULL, false, NULL};

/* Phase 8, the paths the layer rows do not take (make coverage finds them):
 * the chunked kernels' scalar loads (kVec = false: D_k or D_v not a
 * multiple of 4, or a tensor not 16-byte aligned) against the reference on
 * every head; T = 0 (the state copied through, nothing else written); and
 * every refusal of every layer kernel: each returns its own message through
 * kdn_sync() naming the kernel, launches nothing and writes nothing (every
 * output still holds the NaN it started with). */
#include "phases.h"

#include "deltanet_data.h"
#include "deltanet_files.h"
#include "kernels/ladder.h"
#include "layer_variants.h"
#include "library_paths.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- layers against the reference -------------------------------------------- */
/* The two kernels' paths (layer variant ids, layer_variants.h), named as the lines say them. */
static const struct {
    int variant;
    const char *name;
} paths[] = {{LAYER_RECURRENT, "recurrent"}, {LAYER_CHUNKED, "chunked"}};
enum { N_PATHS = sizeof paths / sizeof paths[0] };

static void run_layer(Ctx *c, int variant, const KdnShape *s, const DnDevice *dd, float *o, float *state_out) {
    if (variant == LAYER_RECURRENT)
        kdn_deltanet_recurrent(s, dd->q, dd->k, dd->v, dd->g, dd->beta, dd->state, o, state_out);
    else {
        const KdnLayerCall call = kdn_layer_contiguous(s, dd->q, dd->k, dd->v, dd->g, dd->beta, dd->state, o, state_out);
        deltanet_chunked(chunked_prepare(c, s), &call);
    }
}


/* A copy of x on the device starting 4 bytes past a 16-byte boundary. */
static float *dev_in_unaligned(Ctx *c, const char *name, const float *x, size_t n) {
    float *h = host_f(c, n + 1);
    h[0] = 0.0f;
    memcpy(h + 1, x, n * sizeof(float));
    return dev_in(c, name, h, n + 1) + 1;
}

/* A layer against the recurrence on every head and both maps; `unaligned`:
 * q moved off its 16-byte alignment (the chunked kernels then load
 * scalars though D_k and D_v are multiples of 4, the recurrent kernel single
 * rows). */
static void check_layer(const Test *t, Ctx *c, int variant, int unaligned) {
    Shape row = *t->shape, sh = row;
    if (layer_variant_refuses(c, &layer_variants[variant], &row)) return;
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK && !test_failed(c); map++) {
        row.head_map = map;
        DnData d;
        DnDevice dd;
        sh = dn_setup(c, &row, &d, &dd);
        if (unaligned) dd.q = dev_in_unaligned(c, "q (unaligned)", d.q, d.n_qk);
        double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
        RefInputs in = dn_ref_inputs(&d);
        ref_deltanet_recurrent(&d.rs, &in, o_ref, s_ref);
        float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
        run_layer(c, variant, &d.ks, &dd, o, s_out);
        if (dev_sync(c) != 0) return;
        dn_expect_layer(c, &sh, o, o_ref, s_out, s_ref, t->tol);
    }
    sh.head_map = HEAD_MAP_BOTH;
    dn_describe_note(c, &sh, unaligned ? " q 4 bytes off 16-byte alignment" : "");
}

static void t_scalar_loads(const Test *t, Ctx *c) { check_layer(t, c, LAYER_CHUNKED, 0); }
static void t_unaligned(const Test *t, Ctx *c) { check_layer(t, c, LAYER_CHUNKED, 1); }
static void t_recurrent(const Test *t, Ctx *c) { check_layer(t, c, LAYER_RECURRENT, 0); }
static void t_recurrent_unaligned(const Test *t, Ctx *c) { check_layer(t, c, LAYER_RECURRENT, 1); }

/* ---- T = 0 ---------------------------------------------------------------------
 * No token: every layer kernel copies the state; o has no element. */

static void t_no_tokens(const Test *t, Ctx *c) {
    const Shape *sh = t->shape;
    KdnShape s = {0, sh->n_seqs, sh->H_k, sh->H_v, sh->D_k, sh->D_v, sh->chunk, sh->head_map};
    size_t n_state = (size_t)s.n_seqs * s.H_v * s.D_k * s.D_v;
    float *state = host_f(c, n_state), *one = host_f(c, 1);
    fill_normal(c, state, n_state, 0.0, 0.3);
    one[0] = 0.0f;
    DnDevice dd = {dev_in(c, "q", one, 1), dev_in(c, "k", one, 1), dev_in(c, "v", one, 1),
                   dev_in(c, "g", one, 1), dev_in(c, "beta", one, 1), dev_in(c, "state", state, n_state)};
    double *want = dn_widen(c, state, n_state);
    for (int l = 0; l < N_PATHS && !test_failed(c); l++) {
        float *o = dev_out(c, "o (no element)", 1), *s_out = dev_out(c, "state_out", n_state);
        run_layer(c, paths[l].variant, &s, &dd, o, s_out);
        if (dev_sync(c) != 0) return;
        char what[64];
        snprintf(what, sizeof what, "%s: state_out", paths[l].name);
        expect_close(c, what, s_out, want, s.n_seqs * s.H_v * s.D_v, s.D_k, t->tol);
        float o0;
        download(c, &o0, o, 1);
        if (o0 == o0) test_fail(c, "%s: T = 0 wrote o[0] = %g", paths[l].name, o0);
    }
    set_shape_desc(c, "T=0 B=%d Hk=%d Hv=%d Dk=%d Dv=%d C=%d: state copied by %s, %s", s.n_seqs, s.H_k, s.H_v,
                   s.D_k, s.D_v, s.chunk, paths[0].name, paths[1].name);
}

/* ---- refusals ----------------------------------------------------------------
 * A call of one kernel entry on a base shape with one field changed. */
typedef enum {
    ENTRY_RECURRENT,          /* kdn_deltanet_recurrent */
    ENTRY_RECURRENT_CALL,     /* kdn_deltanet_recurrent_call (K, strides) */
    ENTRY_RECURRENT_NO_SHAPE, /* kdn_deltanet_recurrent(NULL, ...) */
    ENTRY_RECURRENT_NO_CALL,  /* kdn_deltanet_recurrent_call(NULL) */
    ENTRY_INTRA,              /* kdn_chunked_intra */
    ENTRY_STATE,              /* kdn_chunked_state over chunks c0 .. c1 - 1 */
    ENTRY_STATE_NO_CALL,      /* kdn_chunked_state(NULL, ...) */
    ENTRY_GATHER,             /* kdn_gather_strided with ne = {ne0, 1, 1, 1} */
    ENTRY_SOLVE,              /* kdn_solve_tri_parallel, n x n, one right-hand side */
} Entry;
static const char *const entry_kernels[] = {
    "kernel_deltanet_recurrent", "kernel_deltanet_recurrent", "kernel_deltanet_recurrent", "kernel_deltanet_recurrent",
    "kernel_chunked_intra",   "kernel_chunked_state",   "kernel_chunked_state",   "kernel_gather_strided",
    "kernel_solve_tri_parallel",
};

typedef struct {
    KdnShape s;
    int K, c0, c1;
    long ne0;
    int n;     /* the solve's size */
    int kda;   /* the KDA gate */
    int q_st0; /* q's head stride, where not 0 (the call's otherwise contiguous) */
} Call;

/* The limits the kernel of an entry exports (kdn.h, ladder.h). */
static const KdnLimits *limits_of(Entry e) {
    return e == ENTRY_INTRA || e == ENTRY_STATE ? &kdn_chunked_limits : &kdn_recurrent_limits;
}
/* A value of s.D_k in the table below: one past the entry's kernel's max_D_k. */
enum { PAST_MAX_D_K = -1000 };

/* 10 tokens (one chunk of 32) of 2 value heads, 16 x 16 */
static const Call base_call = {{10, 1, 1, 2, 16, 16, 32, 0}, 1, 0, 1, 16, 16, 0, 0};
#define F(field) offsetof(Call, field)

static const struct {
    Entry entry;
    size_t field; /* the int (or long for ne0) of Call changed */
    long value;
    const char *why; /* part of the refusal's message */
} refusals[] = {
    {ENTRY_RECURRENT, F(s.T), -1, "empty or negative dimension"},
    {ENTRY_RECURRENT, F(s.D_v), 0, "empty or negative dimension"},
    {ENTRY_RECURRENT, F(s.D_k), PAST_MAX_D_K, "D_k > "},
    {ENTRY_RECURRENT, F(s.H_v), 65536, "H_v or n_seqs > 65535"},
    {ENTRY_RECURRENT, F(s.n_seqs), 65536, "H_v or n_seqs > 65535"},
    {ENTRY_RECURRENT, F(s.head_map), 2, "head_map must be 0 (tiled) or 1 (block)"},
    {ENTRY_RECURRENT, F(s.H_k), 3, "block head map needs H_v to be a multiple of H_k"}, /* with head_map 1, below */
    {ENTRY_RECURRENT_CALL, F(K), 0, "K (snapshots) < 1"},
    {ENTRY_RECURRENT_NO_SHAPE, 0, 0, "no shape"},
    {ENTRY_RECURRENT_NO_CALL, 0, 0, "no call"},
    {ENTRY_INTRA, F(s.n_seqs), 0, "empty or negative dimension"},
    {ENTRY_INTRA, F(s.D_k), PAST_MAX_D_K, "D_k > "},
    {ENTRY_INTRA, F(s.chunk), 48, "chunk must be 32 or 64"},
    {ENTRY_INTRA, F(s.n_seqs), 65536, "H_v or n_seqs > 65535"},
    {ENTRY_INTRA, F(s.head_map), -1, "head_map must be 0 (tiled) or 1 (block)"},
    {ENTRY_INTRA, F(s.H_k), 3, "block head map needs H_v to be a multiple of H_k"},
    {ENTRY_STATE, F(s.H_k), 0, "empty or negative dimension"},
    {ENTRY_STATE, F(s.D_k), PAST_MAX_D_K, "D_k > "},
    {ENTRY_STATE, F(s.chunk), 128, "chunk must be 32 or 64"},
    {ENTRY_STATE, F(s.H_v), 65536, "H_v or n_seqs > 65535"},
    {ENTRY_STATE, F(s.head_map), 3, "head_map must be 0 (tiled) or 1 (block)"},
    {ENTRY_STATE, F(s.H_k), 3, "block head map needs H_v to be a multiple of H_k"},
    {ENTRY_STATE, F(c0), -1, "chunk range outside 0..n_chunks"},
    {ENTRY_STATE, F(c1), 2, "chunk range outside 0..n_chunks"},
    {ENTRY_STATE, F(c0), 1, "chunk range outside 0..n_chunks"}, /* with c1 = 0 < c0, below */
    {ENTRY_INTRA, F(K), 2, "scalar gate and K = 1 only"},
    {ENTRY_STATE, F(K), 4, "scalar gate and K = 1 only"},
    {ENTRY_INTRA, F(kda), 1, "scalar gate and K = 1 only"},
    {ENTRY_STATE, F(kda), 1, "scalar gate and K = 1 only"},
    {ENTRY_INTRA, F(q_st0), 32, "q, k, g and beta must be contiguous"},
    {ENTRY_STATE, F(q_st0), 20, "q, k, g and beta must be contiguous"},
    {ENTRY_STATE_NO_CALL, 0, 0, "no call"},
    {ENTRY_GATHER, F(ne0), 0x80000000L, "tensor too large for one launch"},
    {ENTRY_SOLVE, F(n), 65, "n > 64"},
};
enum { N_REFUSALS = sizeof refusals / sizeof refusals[0] };

static Call broken_call(int i) {
    Call x = base_call;
    if (refusals[i].field == F(ne0))
        x.ne0 = refusals[i].value;
    else if (refusals[i].entry != ENTRY_RECURRENT_NO_SHAPE && refusals[i].entry != ENTRY_RECURRENT_NO_CALL &&
             refusals[i].entry != ENTRY_STATE_NO_CALL)
        *(int *)((char *)&x + refusals[i].field) = (int)refusals[i].value;
    if (refusals[i].field == F(s.H_k) && refusals[i].value == 3) x.s.head_map = 1; /* H_v = 2, H_k = 3, block map */
    if (refusals[i].field == F(c0) && refusals[i].value == 1) x.c1 = 0;          /* c1 < c0 */
    if (refusals[i].field == F(s.D_k) && refusals[i].value == PAST_MAX_D_K)
        x.s.D_k = limits_of(refusals[i].entry)->max_D_k + 1;
    return x;
}

/* Every buffer a kernel entry may write, NaN to start. */
typedef struct {
    float *o, *state_out, *gamma, *to_end, *Tinv, *U, *W, *P, *gathered;
    size_t n[9];
    float *host; /* room for the largest, to read them back */
} Outputs;

static Outputs alloc_outputs(Ctx *c, const KdnShape *s) {
    size_t chunks = (size_t)((s->T + s->chunk - 1) / s->chunk) * s->n_seqs * s->H_v, C = (size_t)s->chunk;
    Outputs w;
    size_t n[9] = {(size_t)s->T * s->n_seqs * s->H_v * s->D_v, (size_t)s->n_seqs * s->H_v * s->D_k * s->D_v,
                   chunks * C, chunks * C, chunks * C * C, chunks * C * s->D_v, chunks * C * s->D_k, chunks * C * C, 64};
    memcpy(w.n, n, sizeof n);
    w.o = dev_out(c, "o", n[0]), w.state_out = dev_out(c, "state_out", n[1]), w.gamma = dev_out(c, "gamma", n[2]);
    w.to_end = dev_out(c, "to_end", n[3]), w.Tinv = dev_out(c, "Tinv", n[4]), w.U = dev_out(c, "U", n[5]);
    w.W = dev_out(c, "W", n[6]), w.P = dev_out(c, "P", n[7]), w.gathered = dev_out(c, "gathered", n[8]);
    size_t most = 0;
    for (int b = 0; b < 9; b++) most = n[b] > most ? n[b] : most;
    w.host = host_f(c, most);
    return w;
}

/* Elements of the outputs that lost their NaN. */
static size_t written(Ctx *c, const Outputs *w) {
    float *const bufs[9] = {w->o, w->state_out, w->gamma, w->to_end, w->Tinv, w->U, w->W, w->P, w->gathered};
    size_t count = 0;
    for (int b = 0; b < 9; b++) {
        download(c, w->host, bufs[b], w->n[b]);
        for (size_t i = 0; i < w->n[b]; i++) count += w->host[i] == w->host[i];
    }
    return count;
}

typedef struct {
    const float *q, *k, *v, *g, *beta, *state;
} Inputs;

static void call_entry(Entry e, const Call *x, const Inputs *in, const Outputs *w) {
    const KdnShape *s = &x->s;
    KdnLayerCall r = kdn_layer_contiguous(s, in->q, in->k, in->v, in->g, in->beta, in->state, w->o, w->state_out);
    r.K = x->K, r.kda = x->kda;
    if (x->q_st0) r.q_st[0] = x->q_st0;
    long ne[4] = {x->ne0, 1, 1, 1}, st[3] = {x->ne0, x->ne0, x->ne0};
    const KdnChunkBuffers b = {w->gamma, w->to_end, w->Tinv, w->U, w->W, w->P, NULL};
    switch (e) {
    case ENTRY_RECURRENT: kdn_deltanet_recurrent(s, in->q, in->k, in->v, in->g, in->beta, in->state, w->o, w->state_out); break;
    case ENTRY_RECURRENT_CALL: kdn_deltanet_recurrent_call(&r); break;
    case ENTRY_RECURRENT_NO_SHAPE: kdn_deltanet_recurrent(NULL, in->q, in->k, in->v, in->g, in->beta, in->state, w->o, w->state_out); break;
    case ENTRY_RECURRENT_NO_CALL: kdn_deltanet_recurrent_call(NULL); break;
    case ENTRY_INTRA: kdn_chunked_intra(&r, &b); break;
    case ENTRY_STATE: kdn_chunked_state(&r, x->c0, x->c1, &b); break;
    case ENTRY_STATE_NO_CALL: kdn_chunked_state(NULL, x->c0, x->c1, &b); break;
    case ENTRY_GATHER: kdn_gather_strided(in->q, ne, st, w->gathered); break;
    case ENTRY_SOLVE: kdn_solve_tri_parallel(in->state, in->v, w->gathered, x->n, 1); break; /* A n x n, B n x 1 */
    }
}

static Inputs base_inputs(Ctx *c) {
    const KdnShape *s = &base_call.s;
    size_t tok = (size_t)s->T * s->n_seqs, nqk = tok * s->H_k * s->D_k, nv = tok * s->H_v * s->D_v;
    size_t ngb = tok * s->H_v, ns = (size_t)s->n_seqs * s->H_v * s->D_k * s->D_v;
    float *x = host_f(c, nqk + nqk + nv + ngb + ngb + ns);
    fill_uniform(c, x, nqk + nqk + nv, -0.5, 0.5);
    fill_uniform(c, x + 2 * nqk + nv, ngb, -1.0, -0.1); /* g */
    fill_uniform(c, x + 2 * nqk + nv + ngb, ngb + ns, 0.0, 0.5);
    Inputs in = {dev_in(c, "q", x, nqk), dev_in(c, "k", x + nqk, nqk), dev_in(c, "v", x + 2 * nqk, nv),
                 dev_in(c, "g", x + 2 * nqk + nv, ngb), dev_in(c, "beta", x + 2 * nqk + nv + ngb, ngb),
                 dev_in(c, "state", x + 2 * nqk + nv + 2 * ngb, ns)};
    return in;
}

/* Per refusal: message names the kernel and the reason (1 = yes), launches
 * and output elements written; want 1, 0, 0. Then the base call of each
 * entry runs: the refusals come from the changed field. */
static void t_refusals(const Test *t, Ctx *c) {
    Inputs in = base_inputs(c);
    float *got = host_f(c, 3 * N_REFUSALS);
    double *want = host_d(c, 3 * N_REFUSALS);
    Outputs w = alloc_outputs(c, &base_call.s); /* still all NaN after each refusal, or the test fails */
    for (int i = 0; i < N_REFUSALS && !test_failed(c); i++) {
        Call x = broken_call(i);
        long before = kdn_launch_count();
        call_entry(refusals[i].entry, &x, &in, &w);
        long launches = kdn_launch_count() - before;
        const char *msg = kdn_sync();
        int named = msg && strstr(msg, entry_kernels[refusals[i].entry]) && strstr(msg, refusals[i].why);
        if (!named)
            test_fail(c, "refusal %d (%s, %s): message '%s'", i, entry_kernels[refusals[i].entry], refusals[i].why,
                      msg ? msg : "(none: not refused)");
        if (dev_sync(c) != 0) return; /* guards */
        got[3 * i] = (float)named, got[3 * i + 1] = (float)launches, got[3 * i + 2] = (float)written(c, &w);
        want[3 * i] = 1.0, want[3 * i + 1] = 0.0, want[3 * i + 2] = 0.0;
    }
    if (!test_failed(c)) expect_close_host(c, "refused, launches, elements written", got, want, N_REFUSALS, 3, t->tol);
    static const Entry bases[] = {ENTRY_RECURRENT, ENTRY_RECURRENT_CALL, ENTRY_INTRA, ENTRY_GATHER,
                                  ENTRY_SOLVE};
    for (size_t b = 0; b < sizeof bases / sizeof bases[0] && !test_failed(c); b++) {
        w = alloc_outputs(c, &base_call.s);
        call_entry(bases[b], &base_call, &in, &w);
        if (dev_sync(c) == 0 && written(c, &w) == 0) test_fail(c, "base call of %s wrote nothing", entry_kernels[bases[b]]);
    }
    /* an empty gather is no error: nothing launched, nothing written */
    Call empty = base_call;
    empty.ne0 = 0;
    w = alloc_outputs(c, &base_call.s);
    long before = kdn_launch_count();
    call_entry(ENTRY_GATHER, &empty, &in, &w);
    if (kdn_launch_count() != before || dev_sync(c) != 0 || written(c, &w) != 0)
        test_fail(c, "kdn_gather_strided of 0 elements launched, failed or wrote");
    set_shape_desc(c, "%d refusals of 5 kernels, each: message, 0 launches, 0 elements written (T=%d Hk=%d Hv=%d "
                      "Dk=%d Dv=%d C=%d)",
                   N_REFUSALS, base_call.s.T, base_call.s.H_k, base_call.s.H_v, base_call.s.D_k, base_call.s.D_v,
                   base_call.s.chunk);
}

#define DIMS(T_, B_, Hk, Hv, Dk, Dv, C_) .T = T_, .n_seqs = B_, .H_k = Hk, .H_v = Hv, .D_k = Dk, .D_v = Dv, .chunk = C_

static const Test tests[] = {
    /* D_k 70 and D_v 33: neither a multiple of 4, partial quads in every load; the state pass's
     * 8-column slab (5 x 4 x 2 = 40 workgroups, one round), then its 16-column one (32 heads: 5 x 32 x 2 =
     * 320 8-column workgroups > the 180 of a round on the MI50, which the CPU build reports) */
    {8, "chunked_scalar_odd_dims", "chunked", TOL_CHUNK, CASE(DIMS(77, 2, 2, 4, 70, 33, 64), .state = 1), t_scalar_loads},
    {8, "chunked_scalar_wide_slab", "chunked", TOL_CHUNK, CASE(DIMS(77, 2, 2, 32, 70, 33, 64), .state = 1),
     t_scalar_loads},
    {8, "chunked_scalar_c32", "chunked", TOL_CHUNK, CASE(DIMS(45, 1, 1, 3, 33, 70, 32), .state = 1), t_scalar_loads},
    {8, "chunked_unaligned_q", "chunked", TOL_CHUNK, CASE(DIMS(70, 1, 2, 4, 64, 64, 64), .state = 1), t_unaligned},
    /* 128 < D_k <= 256: the recurrent kernel's 16 registers of state per lane, rows masked or not */
    {8, "recurrent_Dk200", "recurrent", TOL_CHUNK, CASE(DIMS(20, 1, 1, 2, 200, 40, 64), .state = 1), t_recurrent},
    {8, "recurrent_Dk256", "recurrent", TOL_CHUNK, CASE(DIMS(9, 1, 1, 1, 256, 20, 64), .state = 1), t_recurrent},
    /* q off 16-byte alignment: the recurrent kernel's single-row loads (no 16-byte row runs) */
    {8, "recurrent_unaligned_q", "recurrent", TOL_CHUNK, CASE(DIMS(20, 2, 2, 4, 64, 40, 64), .state = 1),
     t_recurrent_unaligned},
    {8, "layers_T0", "all", TOL_EXACT, CASE(DIMS(0, 2, 1, 2, 40, 36, 32)), t_no_tokens},
    {8, "kernel_refusals", "all", TOL_EXACT, CASE(0), t_refusals},
};

/* The layer rows run their shape (layers_T0: none); kernel_refusals a fixed one. */
static Work least_work(const Test *t) { return t->run == t_refusals ? (Work){0, 0} : dn_layer_work(t->shape); }

const TestList phase8_paths_tests = {tests, sizeof tests / sizeof tests[0], least_work, false, layer_shape_from_files};

/* Phase 8, the library's entry point (kernels/gated_delta_net.h) tested the
 * way ggml's test-backend-ops tests GATED_DELTA_NET: L2-normalised q and k,
 * g uniform in [-20, -1e-4] (scalar or KDA), beta uniform in [0, 1], permuted
 * q/k/v views, K snapshots; judged by NMSE = sum (a-b)^2 / sum b^2 against
 * the double reference (reference/deltanet.h ref_gdn), bound 1e-10 (ggml's
 * own gate is 1e-7), and elementwise by the row's tolerance. The NMSE of the
 * outputs and of the snapshots is printed on the test line. Then the bad
 * calls: each returns its own status, launches nothing and writes nothing. */
#include "phases.h"

#include "../kernels/gated_delta_net.h"
#include "deltanet_data.h"
#include "deltanet_files.h"

#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NMSE_BOUND 1e-10

/* A case is a Shape; the fields phase 8's layer rows leave unused say what
 * is special about it. */

/* One input: host copy in contiguous ggml order (the reference's), and the
 * view given to the library (on the device, maybe permuted). */
typedef struct {
    float *host;
    kdn_tensor view;
} Input;

static void set_view(kdn_tensor *t, const void *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    t->data = data;
    t->ne[0] = n0, t->ne[1] = n1, t->ne[2] = n2, t->ne[3] = n3;
    t->nb[0] = sizeof(float);
    for (int d = 1; d < 4; d++) t->nb[d] = t->nb[d - 1] * (size_t)t->ne[d - 1];
}

/* Uploads x [n0, n1, n2, n3]; permuted: stored as [n0, n2, n1, n3] (dims 1
 * and 2 swapped, as ggml_permute(0, 2, 1, 3) of a contiguous tensor), the
 * view keeping the logical shape. */
/* The library's view of x [n0, n1, n2, n3] at data, stored permuted or not. */
static kdn_tensor view_of(const void *data, const int64_t ne[4], int permuted) {
    kdn_tensor view;
    set_view(&view, data, ne[0], ne[1], ne[2], ne[3]);
    if (permuted) {
        view.nb[2] = sizeof(float) * (size_t)ne[0];
        view.nb[1] = view.nb[2] * (size_t)ne[2];
    }
    return view;
}

static Input upload_input(Ctx *c, const char *name, float *x, const int64_t ne[4], int permuted) {
    Input in = {x, {0}};
    size_t n = (size_t)(ne[0] * ne[1] * ne[2] * ne[3]);
    if (!permuted) {
        in.view = view_of(dev_in(c, name, x, n), ne, 0);
        return in;
    }
    float *p = host_f(c, n);
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                memcpy(p + ((i3 * ne[1] + i1) * ne[2] + i2) * ne[0], x + ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0],
                       (size_t)ne[0] * sizeof(float));
    in.view = view_of(dev_in(c, name, p, n), ne, 1);
    return in;
}

/* Each row of width d (every token and head) scaled to unit L2 norm. */
static void l2_normalise(float *x, size_t rows, int d) {
    for (size_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int i = 0; i < d; i++) ss += (double)x[r * d + i] * x[r * d + i];
        double inv = ss > 0.0 ? 1.0 / sqrt(ss) : 0.0;
        for (int i = 0; i < d; i++) x[r * d + i] = (float)(x[r * d + i] * inv);
    }
}

typedef struct {
    int S, H_k, H_v, T, B, kda, K;
    size_t n_qk, n_v, n_g, n_b, n_state, n_dst;
    Input q, k, v, g, beta, state;
} Case;

/* The case's dimensions and element counts (no arrays yet). */
static Case case_counts(const Shape *sh) {
    Case k;
    memset(&k, 0, sizeof k);
    k.S = sh->D_v, /* --set D_v sets S (S_k = S_v) */ k.H_k = sh->H_k, k.H_v = sh->H_v, k.T = sh->T, k.B = sh->n_seqs;
    k.kda = sh->kda, k.K = sh->snapshots;
    size_t tok = (size_t)k.T * k.B;
    k.n_qk = tok * k.H_k * k.S, k.n_v = tok * k.H_v * k.S, k.n_b = tok * k.H_v;
    k.n_g = k.kda ? k.n_v : k.n_b;
    k.n_state = (size_t)k.S * k.S * k.H_v * k.B;
    k.n_dst = k.n_v + (size_t)k.K * k.n_state;
    return k;
}

/* ne[4] of q, k, v, g, beta and state, in the order of Case's inputs */
static void case_dims(const Case *k, int64_t ne[6][4]) {
    const int64_t dims[6][4] = {{k->S, k->H_k, k->T, k->B}, {k->S, k->H_k, k->T, k->B}, {k->S, k->H_v, k->T, k->B},
                                {k->kda ? k->S : 1, k->H_v, k->T, k->B}, {1, k->H_v, k->T, k->B},
                                {k->S, k->S, k->H_v, k->B}};
    memcpy(ne, dims, sizeof dims);
}

static Case make_case(Ctx *c, const Shape *sh) {
    Case k = case_counts(sh);
    int perm = sh->permuted;
    size_t tok = (size_t)k.T * k.B;
    float *q = host_f(c, k.n_qk), *kk = host_f(c, k.n_qk), *v = host_f(c, k.n_v), *g = host_f(c, k.n_g),
          *beta = host_f(c, k.n_b), *state = host_f(c, k.n_state);
    fill_uniform(c, q, k.n_qk, -1.0, 1.0);
    fill_uniform(c, kk, k.n_qk, -1.0, 1.0);
    l2_normalise(q, tok * k.H_k, k.S);
    l2_normalise(kk, tok * k.H_k, k.S);
    fill_uniform(c, v, k.n_v, -1.0, 1.0);
    fill_uniform(c, g, k.n_g, -20.0, -1e-4);
    fill_uniform(c, beta, k.n_b, 0.0, 1.0);
    fill_uniform(c, state, k.n_state, -1.0, 1.0);
    int64_t ne[6][4];
    case_dims(&k, ne);
    k.q = upload_input(c, "q", q, ne[0], perm);
    k.k = upload_input(c, "k", kk, ne[1], perm);
    k.v = upload_input(c, "v", v, ne[2], perm);
    k.g = upload_input(c, "g", g, ne[3], 0);
    k.beta = upload_input(c, "beta", beta, ne[4], 0);
    k.state = upload_input(c, "state", state, ne[5], 0);
    return k;
}

static kdn_gdn_call call_of(const Case *k, const Shape *sh, float *dst) {
    kdn_gdn_call call;
    memset(&call, 0, sizeof call);
    call.q = k->q.view, call.k = k->k.view, call.v = k->v.view;
    call.g = k->g.view, call.beta = k->beta.view, call.state = k->state.view;
    call.dst = dst;
    call.K = k->K;
    call.head_map = sh->head_map == HEAD_MAP_BLOCK ? KDN_HEAD_MAP_BLOCK : KDN_HEAD_MAP_TILED;
    call.path = (kdn_path)sh->path;
    call.chunk = sh->chunk;
    return call;
}

/* NMSE of n floats against doubles; NaN when either side has one. */
static double nmse(const float *got, const double *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0.0 ? num / den : num;
}

/* The route the documentation promises (docs/api.md). */
static kdn_path promised_path(const Case *k, kdn_path asked) {
    int eligible = !k->kda && (k->K == 1 || k->T > k->K) && k->S <= 128;
    if (!eligible || asked == KDN_PATH_RECURRENT) return KDN_PATH_RECURRENT;
    if (asked == KDN_PATH_CHUNKED || k->T > kdn_gdn_recurrent_max_t(k->B)) return KDN_PATH_CHUNKED;
    return KDN_PATH_RECURRENT;
}

static const char *path_name(kdn_path p) {
    return p == KDN_PATH_CHUNKED ? "chunked" : p == KDN_PATH_RECURRENT ? "recurrent" : "auto";
}

static void judge(Ctx *c, const char *what, const float *got, const double *ref, int rows, int cols, Tol tol,
                  double *nmse_out) {
    size_t n = (size_t)rows * cols;
    double e = nmse(got, ref, n);
    *nmse_out = e;
    if (!(e <= NMSE_BOUND)) test_fail(c, "%s: NMSE %.3e > %.0e", what, e, NMSE_BOUND);
    expect_close_host(c, what, got, ref, rows, cols, tol);
}

/* Where a call's snapshots go (Shape.state_dst): dst's tail; a cache of
 * their own, slots kCacheGap floats further apart than their size (a gap
 * that must stay unwritten); over the state input itself (K = 1); dst's
 * tail with a cache's slot stride given all the same (state_slot_stride
 * is state_dst's: without it the slots stay a slot's size apart). */
enum { STATE_IN_DST = 0, STATE_TO_CACHE = 1, STATE_IN_PLACE = 2, STATE_IN_DST_STRIDE_SET = 3 };
enum { kCacheGap = 64 };

static int state_in_dst(const Shape *sh) {
    return sh->state_dst == STATE_IN_DST || sh->state_dst == STATE_IN_DST_STRIDE_SET;
}

typedef struct {
    float *dev;    /* where slot 0 starts on the device */
    size_t stride; /* floats between slots */
    size_t floats; /* floats from dev to download: every slot, and the gaps */
} Snapshots;

static Snapshots snapshots_of(Ctx *c, const Case *k, const Shape *sh, float *dst, kdn_gdn_call *call) {
    Snapshots s = {dst + k->n_v, k->n_state, (size_t)k->K * k->n_state};
    if (sh->state_dst == STATE_TO_CACHE) {
        s.stride = k->n_state + kCacheGap;
        s.floats = (size_t)(k->K - 1) * s.stride + k->n_state;
        s.dev = dev_out(c, "state_dst", s.floats);
        call->state_slot_stride = (int64_t)s.stride;
    } else if (sh->state_dst == STATE_IN_PLACE)
        s.dev = (float *)k->state.view.data;
    else if (sh->state_dst == STATE_IN_DST_STRIDE_SET)
        call->state_slot_stride = (int64_t)(k->n_state + kCacheGap);
    call->state_dst = state_in_dst(sh) ? NULL : s.dev;
    return s;
}

/* The outputs and the snapshot slots of a call against the reference. */
static void judge_call(const Test *t, Ctx *c, const Case *k, const float *dst, const Snapshots *snaps,
                       const double *o_ref, const double *snap_ref, double *e_o, double *e_s) {
    float *got = host_f(c, k->n_v), *slots = host_f(c, snaps->floats);
    download(c, got, dst, k->n_v);
    download(c, slots, snaps->dev, snaps->floats);
    double e;
    judge(c, "o", got, o_ref, k->T * k->B * k->H_v, k->S, t->tol, e_o);
    int written = k->K < k->T ? k->K : k->T;
    for (size_t i = 0; i < snaps->floats && !test_failed(c); i++)
        if (i % snaps->stride >= (size_t)k->n_state && slots[i] == slots[i])
            test_fail(c, "state_dst written between slots (float %zu)", i);
    for (int s = 0; s < k->K && !test_failed(c); s++) {
        char what[48];
        snprintf(what, sizeof what, "snapshot %d", s);
        const float *slot = slots + (size_t)s * snaps->stride;
        if (s < written) {
            judge(c, what, slot, snap_ref + (size_t)s * k->n_state, k->B * k->H_v * k->S, k->S, t->tol, &e);
            if (!(e <= *e_s)) *e_s = e;
        } else
            for (size_t i = 0; i < k->n_state; i++)
                if (slot[i] == slot[i]) {
                    test_fail(c, "%s written with T = %d < K = %d", what, k->T, k->K);
                    break;
                }
    }
}

static void t_gdn(const Test *t, Ctx *c) {
    const Shape *sh = t->shape;
    Case k = make_case(c, sh);
    float *dst = dev_out(c, "dst", state_in_dst(sh) ? k.n_dst : k.n_v);
    kdn_gdn_call call = call_of(&k, sh, dst);
    Snapshots snaps = snapshots_of(c, &k, sh, dst, &call);
    size_t ws = 0;
    kdn_path path = KDN_PATH_AUTO;
    kdn_status st = kdn_gdn_workspace_size(&call, &ws);
    if (st == KDN_OK) st = kdn_gdn_chosen_path(&call, &path);
    if (st != KDN_OK) {
        test_fail(c, "valid call refused: %s", kdn_status_message(st));
        return;
    }
    if (path != promised_path(&k, call.path))
        test_fail(c, "path %s, docs promise %s", path_name(path), path_name(promised_path(&k, call.path)));
    float *workspace = ws ? dev_out(c, "workspace", ws / sizeof(float) + 1) : NULL;
    st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) test_fail(c, "call failed: %s %s", kdn_status_message(st), kdn_gdn_error_detail());
    if (test_failed(c) || dev_sync(c) != 0) return;

    RefShape rs = {k.T, k.B, k.H_k, k.H_v, k.S, k.S, 64, sh->head_map == HEAD_MAP_BLOCK};
    RefGdnShape gs = {rs, k.kda, k.K, 1.0 / sqrt((double)k.S)};
    RefInputs in = {k.q.host, k.k.host, k.v.host, k.g.host, k.beta.host, k.state.host};
    double *o_ref = host_d(c, k.n_v), *snap_ref = host_d(c, (size_t)k.K * k.n_state);
    ref_gdn(&gs, &in, o_ref, snap_ref);
    double e_o = 0.0, e_s = 0.0;
    judge_call(t, c, &k, dst, &snaps, o_ref, snap_ref, &e_o, &e_s);
    static const char *const where[] = {"in dst", "to a cache", "in place", "in dst (stride unread)"};
    set_shape_desc(c, "S=%d Hk=%d Hv=%d T=%d B=%d gate=%s K=%d %s map=%s C=%d path=%s state %s nmse_o=%.1e "
                   "nmse_s=%.1e", k.S, k.H_k, k.H_v, k.T, k.B, k.kda ? "kda" : "scalar", k.K,
                   sh->permuted ? "permuted" : "contiguous", sh->head_map == HEAD_MAP_BLOCK ? "block" : "tiled",
                   sh->chunk, path_name(path), where[sh->state_dst], e_o, e_s);
}

/* ---- the library's chunk size ------------------------------------------
 * docs/api.md: chunk = 0 is 64 on cuda; on hip and the CPU emulation 64
 * while the C = 64 state pass's workgroups (ceil(S_v / 16) per value head
 * and sequence) fit one round of an MI50 (60 CUs x 3), else 32. */
static int documented_chunk(const Case *k) {
    if (strcmp(kdn_gdn_backend(), "cuda") == 0) return 64;
    return (long)((k->S + 15) / 16) * k->H_v * k->B <= 60 * 3 ? 64 : 32;
}

/* dst of the chunked path at `chunk` (state in dst), downloaded. */
static float *chunked_dst(Ctx *c, const Case *k, const Shape *sh, int chunk) {
    float *dst = dev_out(c, "dst", k->n_dst), *got = host_f(c, k->n_dst);
    kdn_gdn_call call = call_of(k, sh, dst);
    call.chunk = chunk;
    call.path = KDN_PATH_CHUNKED;
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&call, &ws);
    float *workspace = st == KDN_OK && ws ? dev_out(c, "workspace", ws / sizeof(float) + 1) : NULL;
    if (st == KDN_OK) st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) test_fail(c, "chunk %d: %s %s", chunk, kdn_status_message(st), kdn_gdn_error_detail());
    if (!test_failed(c) && dev_sync(c) == 0) download(c, got, dst, k->n_dst);
    return got;
}

/* chunk = 0 gives, bit for bit, what the documented chunk gives, and not
 * what the other one gives (the two round differently: the check can tell). */
static void t_gdn_default_chunk(const Test *t, Ctx *c) {
    Case k = make_case(c, t->shape);
    const int want = documented_chunk(&k);
    const float *dflt = chunked_dst(c, &k, t->shape, 0), *same = chunked_dst(c, &k, t->shape, want),
                *other = chunked_dst(c, &k, t->shape, want == 64 ? 32 : 64);
    if (test_failed(c)) return;
    if (memcmp(same, other, k.n_dst * sizeof(float)) == 0) {
        test_fail(c, "C = 32 and C = 64 give the same bits: the check cannot tell them apart");
        return;
    }
    double *want_bits = host_d(c, k.n_dst);
    for (size_t i = 0; i < k.n_dst; i++) want_bits[i] = same[i];
    char what[64];
    snprintf(what, sizeof what, "dst of chunk 0 against C = %d's", want);
    expect_close_host(c, what, dflt, want_bits, (int)(k.n_dst / k.S), k.S, t->tol);
    set_shape_desc(c, "S=%d Hv=%d T=%d B=%d: chunk 0 runs C=%d (%s)", k.S, k.H_v, k.T, k.B, want, kdn_gdn_backend());
}

/* ---- bad calls -------------------------------------------------------- */
typedef void (*Breaker)(kdn_gdn_call *call, size_t *ws, float **workspace);

static void null_call(kdn_gdn_call *x, size_t *ws, float **w) { (void)x, (void)ws, (void)w; }
static void null_q(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->q.data = NULL; }
static void null_dst(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->dst = NULL; }
static void key_dim(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->q.ne[0] = x->k.ne[0] = x->v.ne[0] / 2; }
static void heads(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->q.ne[1] = x->k.ne[1] = 3; }
static void gate(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->g.ne[0] = 2; }
static void beta_shape(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->beta.ne[1] = 1; }
static void state_shape(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->state.ne[2] = 1; }
static void tokens(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->q.ne[2] = x->k.ne[2] = x->v.ne[2] - 1; }
static void no_snapshot(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->K = 0; }
static void small_workspace(kdn_gdn_call *x, size_t *ws, float **w) { (void)x, (void)w, *ws -= 4; }
static void row_stride(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->v.nb[0] = 8; }
static void odd_stride(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->k.nb[2] += 2; }
static void chunk(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->chunk = 48; }
static void head_map(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->head_map = (kdn_head_map)7; }
static void path(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->path = (kdn_path)9; }
static void huge_T(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->q.ne[2] = x->k.ne[2] = x->v.ne[2] = INT_MAX; }
static void huge_K(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->K = INT_MAX / 2; }
static void big_head(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, (void)w;
    x->q.ne[0] = x->k.ne[0] = x->v.ne[0] = x->state.ne[0] = x->state.ne[1] = 512;
    set_view(&x->state, x->state.data, 512, 512, x->state.ne[2], x->state.ne[3]); /* a contiguous state of that size */
}
static void empty(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->beta.ne[3] = x->g.ne[3] = x->q.ne[3] = x->k.ne[3] = x->v.ne[3] = 0; }

static void q_misaligned(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, (void)w, x->q.data = (const char *)x->q.data + 2;
}
static void dst_misaligned(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, (void)w, x->dst = (float *)((char *)x->dst + 2);
}
static void huge_stride(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->k.nb[3] = (size_t)1 << 60; }
static void wrapped_stride(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->v.nb[2] = SIZE_MAX - 3; }
static void dst_on_state(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->dst = (float *)x->state.data; }
static void dst_on_v_end(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, (void)w, x->dst = (float *)x->v.data + x->v.ne[0] * x->v.ne[1] * x->v.ne[2] * x->v.ne[3] - 1;
}
static void workspace_on_dst(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, *w = x->dst + 64; }
/* state_dst breakers: the base call's dst is large enough to hold a slot past its outputs */
static void state_dst_misaligned(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, x->state_dst = (float *)((char *)*w + 2);
}
static void state_slots_overlap(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, x->state_dst = *w, x->K = 2, x->state_slot_stride = x->v.ne[0] * x->v.ne[0] - 4;
}
static void state_stride_negative(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, x->state_dst = *w, x->state_slot_stride = -4;
}
static void state_dst_on_q(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, (void)w, x->state_dst = (float *)x->q.data + 4;
}
static void state_dst_on_dst(kdn_gdn_call *x, size_t *ws, float **w) { (void)ws, (void)w, x->state_dst = x->dst + 8; }
static void state_dst_off_state(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, (void)w, x->state_dst = (float *)x->state.data + 4; /* overlaps the input, is not it */
}
static void workspace_on_state_dst(kdn_gdn_call *x, size_t *ws, float **w) {
    (void)ws, x->state_dst = *w + 64; /* inside the workspace the call gets */
}

static const struct {
    const char *what;
    Breaker breaker;
    kdn_status want;
} bad_calls[] = {
    {"no call", null_call, KDN_ERR_NULL_POINTER},
    {"q NULL", null_q, KDN_ERR_NULL_POINTER},
    {"dst NULL", null_dst, KDN_ERR_NULL_POINTER},
    {"S_k != S_v", key_dim, KDN_ERR_KEY_DIM},
    {"H_v % H_k != 0", heads, KDN_ERR_HEADS},
    {"g [2, H_v, T, B]", gate, KDN_ERR_GATE_SHAPE},
    {"beta [1, 1, T, B]", beta_shape, KDN_ERR_BETA_SHAPE},
    {"state [S, S, 1, B]", state_shape, KDN_ERR_STATE_SHAPE},
    {"q/k one token short", tokens, KDN_ERR_TOKENS_SEQS},
    {"K = 0", no_snapshot, KDN_ERR_SNAPSHOTS},
    {"workspace 4 bytes short", small_workspace, KDN_ERR_WORKSPACE},
    {"v nb[0] = 8", row_stride, KDN_ERR_ROW_STRIDE},
    {"k nb[2] not a multiple of 4", odd_stride, KDN_ERR_ROW_STRIDE},
    {"chunk 48", chunk, KDN_ERR_CHUNK},
    {"head_map 7", head_map, KDN_ERR_OPTION},
    {"path 9", path, KDN_ERR_OPTION},
    {"T = 2^31 - 1", huge_T, KDN_ERR_UNSUPPORTED_SHAPE},
    {"K = 2^30: dst past 2^31 floats", huge_K, KDN_ERR_UNSUPPORTED_SHAPE},
    {"S = 512", big_head, KDN_ERR_UNSUPPORTED_SHAPE},
    {"n_seqs = 0", empty, KDN_ERR_UNSUPPORTED_SHAPE},
    {"q 2 bytes off alignment", q_misaligned, KDN_ERR_ALIGNMENT},
    {"dst 2 bytes off alignment", dst_misaligned, KDN_ERR_ALIGNMENT},
    {"k nb[3] = 2^60", huge_stride, KDN_ERR_STRIDE},
    {"v nb[2] = SIZE_MAX - 3 (a wrapped -4)", wrapped_stride, KDN_ERR_STRIDE},
    {"dst = state", dst_on_state, KDN_ERR_ALIASING},
    {"dst from v's last element", dst_on_v_end, KDN_ERR_ALIASING},
    {"workspace inside dst", workspace_on_dst, KDN_ERR_ALIASING},
    {"state_dst 2 bytes off alignment", state_dst_misaligned, KDN_ERR_ALIGNMENT},
    {"K = 2, state slots 4 floats closer than a slot", state_slots_overlap, KDN_ERR_STRIDE},
    {"state_slot_stride < 0", state_stride_negative, KDN_ERR_STRIDE},
    {"state_dst inside q", state_dst_on_q, KDN_ERR_ALIASING},
    {"state_dst inside dst", state_dst_on_dst, KDN_ERR_ALIASING},
    {"state_dst 4 floats past the state input", state_dst_off_state, KDN_ERR_ALIASING},
    {"workspace over state_dst", workspace_on_state_dst, KDN_ERR_ALIASING},
};

/* Every message distinct, and none for a status past the range but one; the
 * library names the kernels' backend. */
static void check_messages(Ctx *c) {
    for (int a = 0; a < KDN_STATUS_COUNT; a++)
        for (int b = a + 1; b <= KDN_STATUS_COUNT; b++)
            if (strcmp(kdn_status_message((kdn_status)a), kdn_status_message((kdn_status)b)) == 0)
                test_fail(c, "statuses %d and %d share the message '%s'", a, b, kdn_status_message((kdn_status)a));
    kdn_gdn_call call;
    memset(&call, 0, sizeof call);
    if (kdn_gdn_workspace_size(&call, NULL) != KDN_ERR_NULL_POINTER || kdn_gdn_chosen_path(&call, NULL) != KDN_ERR_NULL_POINTER)
        test_fail(c, "a NULL bytes or path pointer is not KDN_ERR_NULL_POINTER");
    if (strcmp(kdn_gdn_backend(), kdn_backend()) != 0)
        test_fail(c, "kdn_gdn_backend() '%s', the kernels' backend '%s'", kdn_gdn_backend(), kdn_backend());
}

/* Counts elements of dst that lost the NaN they started with. */
static size_t written_elements(Ctx *c, const float *dst, size_t n) {
    float *h = host_f(c, n);
    download(c, h, dst, n);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += h[i] == h[i];
    return w;
}

static void t_gdn_bad_calls(const Test *t, Ctx *c) {
    enum { N_BAD = sizeof bad_calls / sizeof bad_calls[0] };
    Case k = make_case(c, t->shape);
    float *dst = dev_out(c, "dst", k.n_dst);
    check_messages(c);
    /* per bad call: status, launches and elements of dst written, against
     * the wanted status, 0 and 0 */
    float *got = host_f(c, 3 * N_BAD);
    double *want = host_d(c, 3 * N_BAD);
    for (int i = 0; i < N_BAD && !test_failed(c); i++) {
        kdn_gdn_call call = call_of(&k, t->shape, dst);
        call.path = KDN_PATH_CHUNKED; /* the route that needs a workspace */
        size_t ws = 0;
        if (kdn_gdn_workspace_size(&call, &ws) != KDN_OK || ws == 0) {
            test_fail(c, "the valid base call was refused or needs no workspace");
            return;
        }
        float *workspace = dev_out(c, "workspace", ws / sizeof(float) + 1);
        bad_calls[i].breaker(&call, &ws, &workspace);
        /* the queries check the call as the run does: the same status, 0 bytes, no path */
        const kdn_gdn_call *bad = bad_calls[i].breaker == null_call ? NULL : &call;
        size_t asked = 1;
        kdn_path path = KDN_PATH_AUTO;
        kdn_status q_ws = kdn_gdn_workspace_size(bad, &asked), q_path = kdn_gdn_chosen_path(bad, &path);
        int workspace_only = bad_calls[i].breaker == small_workspace || bad_calls[i].breaker == workspace_on_dst ||
                             bad_calls[i].breaker == workspace_on_state_dst;
        if (!workspace_only &&
            (q_ws != bad_calls[i].want || asked != 0 || q_path != bad_calls[i].want || path != KDN_PATH_AUTO))
            test_fail(c, "%s: workspace_size %d (%zu bytes), chosen_path %d", bad_calls[i].what, q_ws, asked, q_path);
        long before = kdn_launch_count();
        kdn_status st = kdn_gated_delta_net(bad, workspace, ws);
        long launches = kdn_launch_count() - before;
        if (st != bad_calls[i].want)
            test_fail(c, "%s: status %d (%s), want %d (%s)", bad_calls[i].what, st, kdn_status_message(st),
                      bad_calls[i].want, kdn_status_message(bad_calls[i].want));
        if (dev_sync(c) != 0) return;
        got[3 * i] = (float)st, got[3 * i + 1] = (float)launches;
        got[3 * i + 2] = (float)written_elements(c, dst, k.n_dst);
        want[3 * i] = bad_calls[i].want, want[3 * i + 1] = 0.0, want[3 * i + 2] = 0.0;
    }
    if (!test_failed(c)) expect_close_host(c, "status, launches, elements written", got, want, N_BAD, 3, t->tol);
    /* the base call itself runs: the refusals above come from the breakers */
    kdn_gdn_call call = call_of(&k, t->shape, dst);
    size_t ws = 0;
    kdn_gdn_workspace_size(&call, &ws);
    float *workspace = ws ? dev_out(c, "workspace", ws / sizeof(float) + 1) : NULL;
    kdn_status st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) test_fail(c, "base call: %s", kdn_status_message(st));
    if (!test_failed(c) && dev_sync(c) == 0 && written_elements(c, dst, k.n_dst) != k.n_dst)
        test_fail(c, "base call did not write all of dst");
    set_shape_desc(c, "%d bad calls, %d messages (S=%d Hk=%d Hv=%d T=%d B=%d)", N_BAD, (int)KDN_STATUS_COUNT, k.S,
                   k.H_k, k.H_v, k.T, k.B);
}

/* S_v, H_k, H_v, T, n_seqs (chunk C), then the extras; a chunk size makes the
 * row take --set like the other Delta-Net rows. */
#define GDNC(S_, Hk, Hv, T_, B_, C_) .D_k = S_, .D_v = S_, .H_k = Hk, .H_v = Hv, .T = T_, .n_seqs = B_, .chunk = C_
#define GDN(S_, Hk, Hv, T_, B_) GDNC(S_, Hk, Hv, T_, B_, 64)
#define KDA .kda = 1
#define PERM .permuted = 1
#define KDA_PERM .kda = 1, .permuted = 1
#define SNAP(K_) .snapshots = K_
#define PATH(p) .path = p
#define CACHE .state_dst = STATE_TO_CACHE
#define IN_PLACE .state_dst = STATE_IN_PLACE
#define STRIDE_UNREAD .state_dst = STATE_IN_DST_STRIDE_SET
#define TOL_GDN TOL_CHUNK

static const Test tests[] = {
    /* decode and short prompts (recurrent), T below, at and above K */
    {8, "gdn_decode", "library", TOL_GDN, CASE(GDN(128, 2, 4, 1, 3), SNAP(1)), t_gdn},
    {8, "gdn_T1_K4_kda", "library", TOL_GDN, CASE(GDN(32, 4, 4, 1, 2), KDA, SNAP(4)), t_gdn},
    {8, "gdn_T4_K4", "library", TOL_GDN, CASE(GDN(32, 2, 4, 4, 2), SNAP(4)), t_gdn},
    {8, "gdn_T33_K2_perm", "library", TOL_GDN, CASE(GDN(64, 2, 6, 33, 1), PERM, SNAP(2), .head_map = HEAD_MAP_BLOCK), t_gdn},
    {8, "gdn_T65_H32", "library", TOL_GDN, CASE(GDN(16, 16, 32, 65, 2), SNAP(1), PATH(KDN_PATH_RECURRENT)), t_gdn},
    {8, "gdn_T100_kda_K2", "library", TOL_GDN, CASE(GDN(16, 4, 8, 100, 2), KDA, SNAP(2)), t_gdn},
    {8, "gdn_T256_kda_K4_perm", "library", TOL_GDN, CASE(GDN(32, 2, 6, 256, 1), KDA_PERM, SNAP(4)), t_gdn},
    /* the chunked path: q scale and gathers of permuted views, both chunk sizes */
    {8, "gdn_T64_chunked", "library", TOL_GDN, CASE(GDN(128, 2, 4, 64, 1), SNAP(1), PATH(KDN_PATH_CHUNKED)), t_gdn},
    {8, "gdn_T33_c32_perm", "library", TOL_GDN,
     CASE(GDNC(64, 2, 6, 33, 1, 32), PERM, SNAP(1), PATH(KDN_PATH_CHUNKED)), t_gdn},
    {8, "gdn_T127_perm_block", "library", TOL_GDN,
     CASE(GDN(32, 2, 4, 127, 3), PERM, SNAP(1), .head_map = HEAD_MAP_BLOCK, PATH(KDN_PATH_CHUNKED)), t_gdn},
    {8, "gdn_T300_auto_perm", "library", TOL_GDN, CASE(GDN(64, 4, 8, 300, 1), PERM, SNAP(1)), t_gdn},
    /* one key head, permuted: q and k contiguous, their head stride not the dense one (unread) */
    {8, "gdn_T33_Hk1_perm_chunked", "library", TOL_GDN, CASE(GDN(16, 1, 2, 33, 1), PERM, SNAP(1), PATH(KDN_PATH_CHUNKED)),
     t_gdn},
    /* AUTO at B = 4 with T past B = 4's split and under B = 1's (32 and 256 on the gfx906 rows the CPU build
     * takes): chunked */
    {8, "gdn_T33_B4_auto", "library", TOL_GDN, CASE(GDN(32, 2, 4, 33, 4), SNAP(1)), t_gdn},
    {8, "gdn_T1000_c64", "library", TOL_GDN, CASE(GDN(32, 4, 4, 1000, 1), SNAP(1)), t_gdn},
    /* asked for chunked, routed to recurrent: KDA, K >= T */
    {8, "gdn_chunked_kda_routed", "library", TOL_GDN, CASE(GDN(16, 2, 4, 130, 1), KDA, SNAP(1), PATH(KDN_PATH_CHUNKED)), t_gdn},
    {8, "gdn_chunked_K4_T4_routed", "library", TOL_GDN, CASE(GDN(16, 2, 4, 4, 2), SNAP(4), PATH(KDN_PATH_CHUNKED)), t_gdn},
    /* K > 1 chunked: each sequence chunked up to its last K tokens, then recurrent */
    {8, "gdn_chunked_K2", "library", TOL_GDN, CASE(GDN(16, 2, 4, 130, 1), SNAP(2), PATH(KDN_PATH_CHUNKED)), t_gdn},
    {8, "gdn_chunked_K2_T3", "library", TOL_GDN, CASE(GDN(16, 2, 4, 3, 2), SNAP(2), PATH(KDN_PATH_CHUNKED)), t_gdn},
    {8, "gdn_T300_K4_auto", "library", TOL_GDN, CASE(GDN(32, 2, 4, 300, 1), SNAP(4)), t_gdn},
    {8, "gdn_cache_T100_B3_K3_perm", "library", TOL_GDN, CASE(GDN(32, 2, 4, 100, 3), PERM, SNAP(3), CACHE), t_gdn},
    /* snapshots to a cache (slots further apart than their size) or over the state input */
    {8, "gdn_cache_decode_K2", "library", TOL_GDN, CASE(GDN(128, 2, 4, 1, 3), SNAP(2), CACHE), t_gdn},
    {8, "gdn_cache_T40_K4_perm", "library", TOL_GDN, CASE(GDN(32, 2, 4, 40, 2), PERM, SNAP(4), CACHE), t_gdn},
    {8, "gdn_cache_T100_chunked", "library", TOL_GDN, CASE(GDN(64, 2, 4, 100, 2), SNAP(1), CACHE, PATH(KDN_PATH_CHUNKED)),
     t_gdn},
    {8, "gdn_T4_K4_stride_unread", "library", TOL_GDN, CASE(GDN(32, 2, 4, 4, 2), SNAP(4), STRIDE_UNREAD), t_gdn},
    {8, "gdn_in_place_decode", "library", TOL_GDN, CASE(GDN(128, 2, 4, 1, 2), SNAP(1), IN_PLACE), t_gdn},
    {8, "gdn_in_place_T130_chunked", "library", TOL_GDN,
     CASE(GDN(32, 2, 4, 130, 2), SNAP(1), IN_PLACE, PATH(KDN_PATH_CHUNKED)), t_gdn},
    /* chunk 0: one round of C = 64 state workgroups on an MI50 (32) or more (192) */
    {8, "gdn_default_chunk_one_round", "library", TOL_EXACT, CASE(GDNC(16, 8, 32, 70, 1, 0), SNAP(1)), t_gdn_default_chunk},
    {8, "gdn_default_chunk_rounds", "library", TOL_EXACT, CASE(GDNC(16, 8, 32, 70, 6, 0), SNAP(1)), t_gdn_default_chunk},
    /* chunk 0 (the library's): --set leaves the row alone, since each breaker
     * makes this shape's call invalid, not every shape's (a size-1 dimension's
     * stride is free; a 2^31 - 1 T or K is past the limits only with enough heads) */
    {8, "gdn_bad_calls", "library", TOL_EXACT, CASE(GDNC(16, 2, 4, 10, 2, 0), SNAP(1)), t_gdn_bad_calls},
};

/* Each row calls the entry point on its shape (gdn_bad_calls once more per bad call). */
static Work least_work(const Test *t) { return dn_layer_work(t->shape); }

const TestList phase8_gdn_tests = {tests, sizeof tests / sizeof tests[0], least_work, false, layer_shape_from_files};

/* Phase 8, the layer's numerics at the edges of its inputs, on every path:
 *   nonfinite_*   a NaN or Inf in q, k, v, beta or g at token t may reach
 *                 only what the recurrence lets it reach (outputs at t and
 *                 later, the state after t); every element the recurrence
 *                 keeps finite must be finite and accurate.
 *   decay_range_* huge log-decays (-1e3 .. -FLT_MAX, a whole chunk of them)
 *                 and g = -inf, a reset (exp(-inf) = 0: the result stays
 *                 finite): the accuracy must not depend on the cumulative
 *                 decay's magnitude.
 *   ggml_nmse_*   the library's NMSE promise (docs/tolerances.md) on
 *                 ggml's own input distribution, hundreds of draws per shape.
 *   native_context_T262144, library_limits: the documented limits are the true ones
 *                 (docs/api.md). */
#include "phases.h"

#include "../kernels/gated_delta_net.h"
#include "deltanet_data.h"
#include "layer_variants.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- a layer variant on inputs with one planted value -------------------- */

/* The variant's outputs and final state, and the recurrence's on the same
 * inputs. */
typedef struct {
    float *o, *s;
    double *o_ref, *s_ref;
} Run;

static Run run_variant(Ctx *c, const LayerVariant *layer, const DnData *d) {
    DnDevice dd;
    dn_upload(c, d, &dd);
    Run r = {host_f(c, d->n_v), host_f(c, d->n_state), host_d(c, d->n_v), host_d(c, d->n_state)};
    float *o = dev_out(c, "o", d->n_v), *s = dev_out(c, "state_out", d->n_state);
    const KdnLayerCall call = kdn_layer_contiguous(&d->ks, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, s);
    layer->run(layer->prepare ? layer->prepare(c, &d->ks) : NULL, &call);
    dn_reference(c, d, r.o_ref, r.s_ref);
    if (dev_sync(c) != 0) return r;
    download(c, r.o, o, d->n_v);
    download(c, r.s, s, d->n_state);
    return r;
}

/* Every element the recurrence keeps finite is finite in got; those elements
 * then judged as usual (the others, zeroed on both sides, drop out). `what`
 * names the planted value. */
static void expect_contained(Ctx *c, const char *what, const char *part, float *got, double *ref, size_t rows,
                             int cols, Tol tol) {
    size_t n = rows * (size_t)cols;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(ref[i])) {
            if (!isfinite(got[i])) {
                test_fail(c, "%s: %s[%zu, %d] = %g where the recurrence has %g", what, part, i / (size_t)cols,
                          (int)(i % (size_t)cols), got[i], ref[i]);
                return;
            }
        } else
            got[i] = 0.0f, ref[i] = 0.0;
    }
    char label[160];
    snprintf(label, sizeof label, "%s: %s", what, part);
    expect_close_host(c, label, got, ref, (int)rows, cols, tol);
}

/* Copies of the pristine inputs, so each case plants into clean data. */
typedef struct {
    float *x[5]; /* q k v beta g */
    size_t n[5];
} Pristine;

static const char *const planted_names[5] = {"q", "k", "v", "beta", "g"};

static float **input_slot(DnData *d, int which) {
    float **slots[5] = {&d->q, &d->k, &d->v, &d->beta, &d->g};
    return slots[which];
}

static Pristine keep_pristine(Ctx *c, DnData *d) {
    size_t n[5] = {d->n_qk, d->n_qk, d->n_v, d->n_gb, d->n_gb};
    Pristine p;
    for (int i = 0; i < 5; i++) {
        p.n[i] = n[i];
        p.x[i] = host_f(c, n[i]);
        memcpy(p.x[i], *input_slot(d, i), n[i] * sizeof(float));
    }
    return p;
}

static void restore(DnData *d, const Pristine *p) {
    for (int i = 0; i < 5; i++) memcpy(*input_slot(d, i), p->x[i], p->n[i] * sizeof(float));
}

/* Element of input `which` at token t of sequence 0: key head 0, component 5
 * (q, k); value head H_v - 1, column 7 (v) or that head (beta, g). */
static size_t planted_index(const DnData *d, int which, int t) {
    const KdnShape *s = &d->ks;
    if (which <= 1) return ((size_t)t * s->H_k + 0) * s->D_k + 5 % s->D_k;
    if (which == 2) return ((size_t)t * s->H_v + (s->H_v - 1)) * s->D_v + 7 % s->D_v;
    return (size_t)t * s->H_v + (s->H_v - 1);
}

/* Tokens where a value is planted: the first, inside the first chunk's last
 * 16-row block (51) and at its last token (63), the last token (inside the
 * second chunk of 64, the third of 32). */
static int planted_tokens(int T, int out[4]) {
    const int want[4] = {0, 51, 63, T - 1};
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (want[i] < T && (n == 0 || want[i] > out[n - 1])) out[n++] = want[i];
    return n;
}

/* A row's variant on its inputs, kept pristine so that each case plants
 * its values into clean data. */
typedef struct {
    const LayerVariant *layer;
    Shape sh;
    DnData d;
    Pristine clean;
} Planting;

static Planting start_planting(const Test *t, Ctx *c) {
    Planting p = {.layer = layer_variant(t->variant), .sh = dn_backend_shape(t->shape)};
    dn_generate(c, &p.sh, &p.d);
    p.clean = keep_pristine(c, &p.d);
    return p;
}

/* Runs the variant on the inputs as planted (`what` names the values);
 * outputs and final state judged against the recurrence's. */
static void run_planted(const Test *t, Ctx *c, const Planting *p, const char *what) {
    const Shape *sh = &p->sh;
    Run r = run_variant(c, p->layer, &p->d);
    if (test_failed(c)) return;
    expect_contained(c, what, "o", r.o, r.o_ref, (size_t)sh->T * sh->n_seqs * sh->H_v, sh->D_v, t->tol);
    expect_contained(c, what, "state", r.s, r.s_ref, (size_t)sh->n_seqs * sh->H_v * sh->D_v, sh->D_k, t->tol);
}

static void t_nonfinite(const Test *t, Ctx *c) {
    Planting p = start_planting(t, c);
    const float values[3] = {NAN, INFINITY, -INFINITY};
    int tokens[4], n_tokens = planted_tokens(p.sh.T, tokens), cases = 0;
    for (int which = 0; which < 5 && !test_failed(c); which++)
        for (int vi = 0; vi < 3 && !test_failed(c); vi++)
            for (int ti = 0; ti < n_tokens && !test_failed(c); ti++) {
                if (which == 4 && values[vi] < 0.0f) continue; /* g = -inf is a reset: decay_range_* */
                TestMark m = test_mark(c);
                restore(&p.d, &p.clean);
                (*input_slot(&p.d, which))[planted_index(&p.d, which, tokens[ti])] = values[vi];
                char what[64];
                snprintf(what, sizeof what, "%s = %g at token %d", planted_names[which], values[vi], tokens[ti]);
                run_planted(t, c, &p, what);
                test_release(c, m);
                cases++;
            }
    char note[96];
    snprintf(note, sizeof note, " %d cases: q k v beta g x {nan, inf, -inf (not g)} x tokens {0, 51, 63, T-1}", cases);
    dn_describe_note(c, &p.sh, note);
}

/* ---- huge log-decays ------------------------------------------------------ */
typedef struct {
    const char *what;
    float g;
    int first, count; /* tokens of sequence 0, value head H_v - 1 */
} DecayCase;

static const DecayCase decay_cases[] = {
    {"g = -1e3 at token 40", -1e3f, 40, 1},
    {"g = -1e6 at token 40", -1e6f, 40, 1},
    {"g = -1e8 at token 70", -1e8f, 70, 1},
    {"g = -FLT_MAX at token 10", -FLT_MAX, 10, 1},
    {"g = -inf at token 33", -INFINITY, 33, 1},
    {"g = -inf at tokens 0, 1", -INFINITY, 0, 2},
    {"g = -1e4 over the second chunk", -1e4f, 64, 64},
    {"g = -30 over the whole sequence", -30.0f, 0, 1 << 30},
};

static void t_decay_range(const Test *t, Ctx *c) {
    Planting p = start_planting(t, c);
    const int n_cases = (int)(sizeof decay_cases / sizeof decay_cases[0]);
    for (int i = 0; i < n_cases && !test_failed(c); i++) {
        TestMark m = test_mark(c);
        restore(&p.d, &p.clean);
        const DecayCase *dc = &decay_cases[i];
        for (int tok = dc->first; tok < p.sh.T && tok - dc->first < dc->count; tok++)
            p.d.g[planted_index(&p.d, 4, tok)] = dc->g;
        run_planted(t, c, &p, dc->what);
        test_release(c, m);
    }
    char note[64];
    snprintf(note, sizeof note, " %d decay cases", n_cases);
    dn_describe_note(c, &p.sh, note);
}

/* ---- the library on ggml's input distribution ------------------------------ */
#define NMSE_BOUND 1e-10
enum { kGgmlDraws = 300 }; /* a 1-in-30 event is missed with probability (29/30)^300 = 4e-5 */

/* One draw as ggml's test-backend-ops makes GATED_DELTA_NET's inputs: q, k
 * uniform in [-1, 1] then L2-normalised per head and token, v uniform in
 * [-0.3, 5], g in [-20, -1e-4], beta in [0, 1], state in [-1, 1]. */
static void ggml_draw(Ctx *c, DnData *d) {
    const KdnShape *s = &d->ks;
    fill_uniform(c, d->q, d->n_qk, -1.0, 1.0);
    fill_uniform(c, d->k, d->n_qk, -1.0, 1.0);
    for (size_t r = 0; r < d->n_qk / s->D_k; r++)
        for (int which = 0; which < 2; which++) {
            float *x = (which ? d->k : d->q) + r * s->D_k;
            double ss = 0.0;
            for (int i = 0; i < s->D_k; i++) ss += (double)x[i] * x[i];
            for (int i = 0; i < s->D_k; i++) x[i] = (float)(x[i] / sqrt(ss));
        }
    fill_uniform(c, d->v, d->n_v, -0.3, 5.0);
    fill_uniform(c, d->g, d->n_gb, -20.0, -1e-4);
    fill_uniform(c, d->beta, d->n_gb, 0.0, 1.0);
    fill_uniform(c, d->state, d->n_state, -1.0, 1.0);
}

static kdn_tensor contiguous(const void *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t = {data, {n0, n1, n2, n3}, {sizeof(float), 0, 0, 0}};
    for (int i = 1; i < 4; i++) t.nb[i] = t.nb[i - 1] * (size_t)t.ne[i - 1];
    return t;
}

/* The library call on d's device copies, dst written. */
static kdn_gdn_call library_call(const KdnShape *s, const DnDevice *dd, float *dst, kdn_path path) {
    kdn_gdn_call call;
    memset(&call, 0, sizeof call);
    call.q = contiguous(dd->q, s->D_k, s->H_k, s->T, s->n_seqs);
    call.k = contiguous(dd->k, s->D_k, s->H_k, s->T, s->n_seqs);
    call.v = contiguous(dd->v, s->D_v, s->H_v, s->T, s->n_seqs);
    call.g = contiguous(dd->g, 1, s->H_v, s->T, s->n_seqs);
    call.beta = contiguous(dd->beta, 1, s->H_v, s->T, s->n_seqs);
    call.state = contiguous(dd->state, s->D_k, s->D_v, s->H_v, s->n_seqs);
    call.dst = dst;
    call.K = 1;
    call.head_map = s->head_map ? KDN_HEAD_MAP_BLOCK : KDN_HEAD_MAP_TILED;
    call.path = path;
    call.chunk = s->chunk;
    return call;
}

/* Runs the library on d (q unscaled, as ggml passes it) into dst; 0 when enqueued. */
static int run_library(Ctx *c, const DnData *d, const DnDevice *dd, float *dst, kdn_path path) {
    kdn_gdn_call call = library_call(&d->ks, dd, dst, path);
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&call, &ws);
    float *workspace = st == KDN_OK && ws ? dev_out(c, "workspace", ws / sizeof(float) + 1) : NULL;
    if (st == KDN_OK) st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) test_fail(c, "call refused: %s", kdn_status_message(st));
    return st == KDN_OK ? 0 : -1;
}

static double nmse_of(const float *got, const double *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)got[i] - ref[i];
        num += e * e, den += ref[i] * ref[i];
    }
    return num / den; /* NaN when got has one */
}

/* One part of dst (outputs or state) of one draw: NMSE within the promise,
 * every element within the row's tolerance. */
static void judge_part(Ctx *c, const char *part, int draw, const float *got, const double *ref, size_t rows, int cols,
                       Tol tol) {
    double e = nmse_of(got, ref, rows * (size_t)cols);
    if (!(e <= NMSE_BOUND)) test_fail(c, "draw %d: %s NMSE %.3e above %.0e", draw, part, e, NMSE_BOUND);
    expect_close_host(c, part, got, ref, (int)rows, cols, tol);
}

static void t_ggml_nmse(const Test *t, Ctx *c) {
    DnData d;
    dn_generate(c, t->shape, &d);
    const KdnShape *s = &d.ks;
    RefGdnShape gs = {d.rs, 0, 1, 1.0 / sqrt((double)s->D_v)};
    for (int draw = 0; draw < kGgmlDraws && !test_failed(c); draw++) {
        TestMark m = test_mark(c);
        ggml_draw(c, &d);
        DnDevice dd;
        dn_upload(c, &d, &dd);
        float *dst = dev_out(c, "dst", d.n_v + d.n_state);
        if (run_library(c, &d, &dd, dst, (kdn_path)t->shape->path) == 0 && dev_sync(c) == 0) {
            float *got = host_f(c, d.n_v + d.n_state);
            double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
            RefInputs in = dn_ref_inputs(&d);
            ref_gdn(&gs, &in, o_ref, s_ref);
            download(c, got, dst, d.n_v + d.n_state);
            judge_part(c, "o", draw, got, o_ref, d.n_v / s->D_v, s->D_v, t->tol);
            judge_part(c, "state", draw, got + d.n_v, s_ref, d.n_state / s->D_k, s->D_k, t->tol);
        }
        test_release(c, m);
    }
    char note[96];
    snprintf(note, sizeof note, " library path %s, %d draws of ggml's inputs, NMSE <= %.0e each",
             t->shape->path == KDN_PATH_CHUNKED ? "chunked" : "recurrent", kGgmlDraws, NMSE_BOUND);
    dn_describe_note(c, t->shape, note);
}

/* ---- the native context length -------------------------------------------- */
/* Qwen3-Next's layer on one sequence of its native 262144 tokens (v then has
 * 2^30 elements) through the library, chunked (AUTO) and recurrent, against
 * each other. On the CPU build (emulation: the full shape would take hours)
 * the heads and head size shrink to one and 16, T stays, and both paths are
 * also judged against the double recurrence. */
static void t_native_context(const Test *t, Ctx *c) {
    Shape sh = *t->shape;
    const int cpu = is_cpu_backend();
    if (cpu) sh.H_k = sh.H_v = 1, sh.D_k = sh.D_v = 16;
    DnData d;
    dn_generate(c, &sh, &d);
    for (size_t i = 0; i < d.n_qk; i++) d.q[i] *= sqrtf((float)sh.D_k); /* the library scales q itself */
    DnDevice dd;
    dn_upload(c, &d, &dd);
    size_t n_dst = d.n_v + d.n_state;
    float *chunked = dev_out(c, "dst_chunked", n_dst), *recurrent = dev_out(c, "dst_recurrent", n_dst);
    kdn_path path = KDN_PATH_AUTO;
    kdn_gdn_call call = library_call(&d.ks, &dd, chunked, KDN_PATH_AUTO);
    if (kdn_gdn_chosen_path(&call, &path) != KDN_OK || path != KDN_PATH_CHUNKED)
        test_fail(c, "AUTO does not take the chunked path at T = %d", sh.T);
    if (test_failed(c) || run_library(c, &d, &dd, chunked, KDN_PATH_AUTO) != 0 ||
        run_library(c, &d, &dd, recurrent, KDN_PATH_RECURRENT) != 0 || dev_sync(c) != 0)
        return;
    float *got = host_f(c, n_dst);
    download(c, got, recurrent, n_dst);
    double *ref = dn_widen(c, got, n_dst);
    if (cpu) {
        RefGdnShape gs = {d.rs, 0, 1, 1.0 / sqrt((double)sh.D_v)};
        RefInputs in = dn_ref_inputs(&d);
        ref_gdn(&gs, &in, ref, ref + d.n_v);
        expect_close_host(c, "recurrent o", got, ref, (int)(d.n_v / sh.D_v), sh.D_v, t->tol);
        expect_close_host(c, "recurrent state", got + d.n_v, ref + d.n_v, (int)(d.n_state / sh.D_k), sh.D_k, t->tol);
    }
    download(c, got, chunked, n_dst);
    expect_close_host(c, cpu ? "chunked o" : "chunked o (reference: recurrent path)", got, ref,
                      (int)(d.n_v / sh.D_v), sh.D_v, t->tol);
    expect_close_host(c, cpu ? "chunked state" : "chunked state (reference: recurrent path)", got + d.n_v,
                      ref + d.n_v, (int)(d.n_state / sh.D_k), sh.D_k, t->tol);
    dn_describe_note(c, &sh, cpu ? " CPU: heads and head size reduced, both paths vs the recurrence"
                                 : " chunked vs the recurrent path");
}

/* ---- the limits, by status only --------------------------------------------- */
/* Shapes at each documented limit, just inside and just past it, checked by
 * the workspace query alone (it reads no data): placeholder addresses, the
 * inputs 2^40 bytes apart (a view spanning more overlaps the next: inputs
 * may), state_dst (when asked for) at 2^52 and dst at 2^53, clear of every
 * span under 2^48. */
typedef struct {
    const char *what;
    int64_t S, H_k, H_v, T, B;
    int K;
    kdn_status want;
    int to_state_dst;          /* the snapshots to state_dst, not dst's tail */
    int64_t state_slot_stride; /* with to_state_dst */
    size_t q_nb1;              /* q's nb[1] (0: q contiguous) */
} LimitCase;

#define IN_DST 0, 0, 0
#define STATE_DST(stride) 1, stride, 0
#define Q_NB1(nb) 0, 0, nb

static const LimitCase limit_cases[] = {
    {"Qwen3-Next, one sequence of 262144 tokens (v: 2^30 elements)", 128, 16, 32, 262144, 1, 1, KDN_OK, IN_DST},
    {"v of 2^31 - 1 elements", 1, 1, 1, 2147483647, 1, 1, KDN_OK, IN_DST},
    {"v of 2^31 elements", 2, 1, 1, 1073741824, 1, 1, KDN_ERR_UNSUPPORTED_SHAPE, IN_DST},
    {"dst of 2^33 - 128 elements", 128, 1, 1, 8388608, 1, 458751, KDN_OK, IN_DST},
    {"dst of 2^33 elements", 128, 1, 1, 8388608, 1, 458752, KDN_ERR_UNSUPPORTED_SHAPE, IN_DST},
    {"the same with state_dst: dst of 2^30 outputs", 128, 1, 1, 8388608, 1, 458752, KDN_OK, STATE_DST(0)},
    /* state_dst's slots (S = 128: 2^14 floats a slot) span less than 2^48 bytes; one slot reads no stride */
    {"K = 1, slot stride 2^62 (unread)", 128, 1, 1, 1, 1, 1, KDN_OK, STATE_DST((int64_t)1 << 62)},
    {"K = 2, slots end 4 bytes under 2^48", 128, 1, 1, 1, 1, 2, KDN_OK, STATE_DST(((int64_t)1 << 46) - 16385)},
    {"K = 2, slots end at 2^48", 128, 1, 1, 1, 1, 2, KDN_ERR_STRIDE, STATE_DST(((int64_t)1 << 46) - 16384)},
    /* a span of 12 + 5 nb bytes (5 steps of 3-float rows) just under 2^48 and past it: 5 does not divide
     * 2^48 - 12, so the largest stride that fits leaves 4 bytes to spare */
    {"q spans 2^48 - 4 bytes", 3, 6, 6, 1, 1, 1, KDN_OK, Q_NB1((((size_t)1 << 46) - 4) / 5 * 4)},
    {"q spans 2^48 + 16 bytes", 3, 6, 6, 1, 1, 1, KDN_ERR_STRIDE, Q_NB1((((size_t)1 << 46) - 4) / 5 * 4 + 4)},
    {"K = 6 slots of 3 floats end 4 bytes under 2^48", 1, 1, 3, 1, 1, 6, KDN_OK,
     STATE_DST((((int64_t)1 << 46) - 4) / 5)},
    {"K = 6 slots of 3 floats end 16 bytes past 2^48", 1, 1, 3, 1, 1, 6, KDN_ERR_STRIDE,
     STATE_DST((((int64_t)1 << 46) - 4) / 5 + 1)},
};

static kdn_gdn_call placeholder_call(const LimitCase *l) {
    const uintptr_t apart = (uintptr_t)1 << 40;
    kdn_gdn_call call;
    memset(&call, 0, sizeof call);
    call.q = contiguous((void *)(1 * apart), l->S, l->H_k, l->T, l->B);
    call.k = contiguous((void *)(2 * apart), l->S, l->H_k, l->T, l->B);
    call.v = contiguous((void *)(3 * apart), l->S, l->H_v, l->T, l->B);
    call.g = contiguous((void *)(4 * apart), 1, l->H_v, l->T, l->B);
    call.beta = contiguous((void *)(5 * apart), 1, l->H_v, l->T, l->B);
    call.state = contiguous((void *)(6 * apart), l->S, l->S, l->H_v, l->B);
    call.dst = (float *)((uintptr_t)1 << 53);
    call.K = l->K;
    if (l->to_state_dst) call.state_dst = (float *)((uintptr_t)1 << 52), call.state_slot_stride = l->state_slot_stride;
    if (l->q_nb1) call.q.nb[1] = l->q_nb1;
    return call;
}

static void t_limits(const Test *t, Ctx *c) {
    enum { N = sizeof limit_cases / sizeof limit_cases[0] };
    float got[N];
    double want[N];
    for (int i = 0; i < N; i++) {
        kdn_gdn_call call = placeholder_call(&limit_cases[i]);
        size_t ws = 0;
        kdn_status st = kdn_gdn_workspace_size(&call, &ws);
        got[i] = (float)st, want[i] = limit_cases[i].want;
        if (st != limit_cases[i].want)
            test_fail(c, "%s: status %d (%s), want %d (%s)", limit_cases[i].what, st, kdn_status_message(st),
                      limit_cases[i].want, kdn_status_message(limit_cases[i].want));
    }
    expect_close_host(c, "statuses", got, want, N, 1, t->tol);
    set_shape_desc(c, "%d shapes at the limits of docs/api.md, by kdn_gdn_workspace_size", (int)N);
}

/* ---- rows -------------------------------------------------------------------- */
#define LAYER(Dk, Dv, Hk, Hv, T_, B_, C_) \
    .D_k = Dk, .D_v = Dv, .H_k = Hk, .H_v = Hv, .T = T_, .n_seqs = B_, .chunk = C_, .state = 1
#define NONFINITE(name, variant, C_) {8, name, variant, TOL_CHUNK, CASE(LAYER(16, 16, 1, 2, 80, 1, C_)), t_nonfinite}
#define DECAY(name, variant, C_) {8, name, variant, TOL_CHUNK, CASE(LAYER(16, 16, 1, 2, 130, 1, C_)), t_decay_range}
#define GGML(name, S, Hk, Hv, T_, C_, path_) \
    {8, name, "library", TOL_CHUNK, CASE(LAYER(S, S, Hk, Hv, T_, 1, C_), .path = path_), t_ggml_nmse}

static const Test tests[] = {
    NONFINITE("nonfinite_recurrent", "recurrent", 64),
    NONFINITE("nonfinite_chunked", "chunked", 64),
    NONFINITE("nonfinite_chunked_c32", "chunked", 32),
    /* D_k = 4, not a multiple of 8: the state pass's guarded loads. A value
     * planted at component 1 of a token is what an unguarded 8-float batch
     * of the token before it would read (and multiply by zero slab rows). */
    {8, "nonfinite_chunked_dk4", "chunked", TOL_CHUNK, CASE(LAYER(4, 16, 1, 2, 80, 1, 64)), t_nonfinite},
    DECAY("decay_range_recurrent", "recurrent", 64),
    DECAY("decay_range_chunked", "chunked", 64),
    DECAY("decay_range_chunked_c32", "chunked", 32),
    GGML("ggml_nmse_T64", 64, 1, 1, 64, 64, KDN_PATH_CHUNKED),
    GGML("ggml_nmse_T100_c32", 32, 1, 2, 100, 32, KDN_PATH_CHUNKED),
    GGML("ggml_nmse_recurrent", 64, 1, 1, 64, 64, KDN_PATH_RECURRENT),
    {8, "library_limits", "library", TOL_EXACT, CASE(LAYER(16, 16, 1, 1, 1, 1, 64)), t_limits},
    {8, "native_context_T262144", "library", TOL_CHUNK, CASE(LAYER(128, 128, 16, 32, 262144, 1, 64)), t_native_context},
};

/* fixed shapes, --set does not reshape them: no least_work hook (native_context_T262144's
 * GPU shape, about 30 GB of device memory, runs with --max-mem raised) */
const TestList phase8_numerics_tests = {tests, sizeof tests / sizeof tests[0], NULL, true, NULL};

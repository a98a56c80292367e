/* Phase 8: the whole layer (all heads, sequences and chunks), final outputs
 * and final state against the token recurrence in double precision. */
#include "phases.h"

#include "deltanet_data.h"
#include "deltanet_files.h"
#include "grid.h"
#include "layer_variants.h"
#include "library_paths.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const LayerVariant *layer;
    void *scratch;
    KdnLayerCall call;
} LayerCall;

static void run_layer(void *arg) {
    LayerCall *l = arg;
    l->layer->run(l->scratch, &l->call);
}

/* Enqueues `layer` on the inputs through bench_work (timed under --bench). */
static void call_layer(Ctx *c, const LayerVariant *layer, const DnData *d, const DnDevice *dd, float *o, float *state_out) {
    LayerCall call = {layer, layer->prepare ? layer->prepare(c, &d->ks) : NULL,
                      kdn_layer_contiguous(&d->ks, dd->q, dd->k, dd->v, dd->g, dd->beta, dd->state, o, state_out)};
    double bytes, flops;
    dn_layer_cost(&d->ks, &bytes, &flops);
    bench_work(c, layer->name, run_layer, &call, bytes, flops);
}

/* Runs one layer implementation on one shape and compares with the
 * recurrence (the caller has asked variant_refuses). */
static void check_layer(const Test *t, Ctx *c, const Shape *shape, const LayerVariant *layer) {
    DnData d;
    DnDevice dd;
    Shape sh = dn_setup(c, shape, &d, &dd);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    dn_reference(c, &d, o_ref, s_ref);
    float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
    call_layer(c, layer, &d, &dd, o, s_out);
    dn_describe(c, &sh);
    if (dev_sync(c) != 0) return;
    dn_expect_layer(c, &sh, o, o_ref, s_out, s_ref, t->tol);
}

/* The row's shape with each grouped-head mapping in turn. */
static void check_both_maps(const Test *t, Ctx *c, const LayerVariant *layer) {
    Shape sh = *t->shape;
    if (layer_variant_refuses(c, layer, &sh)) return;
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK && !test_failed(c); map++) {
        sh.head_map = map;
        check_layer(t, c, &sh, layer);
    }
    sh = dn_backend_shape(t->shape);
    sh.head_map = HEAD_MAP_BOTH;
    dn_describe(c, &sh);
}

static void t_unfused_single(const Test *t, Ctx *c) {
    const LayerVariant *unfused = &layer_variants[LAYER_UNFUSED];
    if (!layer_variant_refuses(c, unfused, t->shape)) check_layer(t, c, t->shape, unfused);
}
/* The row's variant (its `variant` column names it in layer_variants.h) on
 * the row's shape, both head maps. */
static void t_layer(const Test *t, Ctx *c) { check_both_maps(t, c, layer_variant(t->variant)); }

/* Two implementations on identical inputs, compared with each other: the
 * second one's outputs are the reference (each is checked against the
 * recurrence by its own rows). */
static void agree(const Test *t, Ctx *c, const LayerVariant *first, const LayerVariant *second) {
    DnData d;
    DnDevice dd;
    if (layer_variant_refuses(c, first, t->shape) || layer_variant_refuses(c, second, t->shape)) return;
    Shape sh = dn_setup(c, t->shape, &d, &dd);
    float *o1 = dev_out(c, "o_first", d.n_v), *s1 = dev_out(c, "state_first", d.n_state);
    float *o2 = dev_out(c, "o_second", d.n_v), *s2 = dev_out(c, "state_second", d.n_state);
    call_layer(c, first, &d, &dd, o1, s1);
    call_layer(c, second, &d, &dd, o2, s2);
    dn_describe(c, &sh);
    if (dev_sync(c) != 0) return;
    float *h2 = host_f(c, d.n_v > d.n_state ? d.n_v : d.n_state);
    download(c, h2, o2, d.n_v);
    expect_close(c, "o", o1, dn_widen(c, h2, d.n_v), sh.T * sh.n_seqs * sh.H_v, sh.D_v, t->tol);
    download(c, h2, s2, d.n_state);
    expect_close(c, "state", s1, dn_widen(c, h2, d.n_state), sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
}

/* The row's variant against the one named here. */
static void t_vs_unfused(const Test *t, Ctx *c) { agree(t, c, layer_variant(t->variant), &layer_variants[LAYER_UNFUSED]); }
static void t_vs_chunked(const Test *t, Ctx *c) {
    agree(t, c, layer_variant(t->variant), &layer_variants[LAYER_CHUNKED]);
}
/* The automatic choice against the reference, then its launch count: one
 * (recurrent) up to kdn_gdn_recurrent_max_t(n_seqs) tokens, two (chunked)
 * past it. Rows at B = 1 and B = 4 on both sides of each batch's split: each
 * split lies between the other batch's two, so a dispatch that reads the
 * wrong batch's threshold runs the wrong path on one of them. */
/* The row's T is the split plus shape.past_split: the split is the backend's own. */
static int auto_T(const Shape *row) { return kdn_gdn_recurrent_max_t(row->n_seqs) + row->past_split; }

static void t_auto(const Test *row, Ctx *c) {
    Test copy = *row;
    Shape at_split = *row->shape;
    at_split.T = auto_T(row->shape);
    copy.shape = &at_split;
    const Test *t = &copy;
    const LayerVariant *automatic = &layer_variants[LAYER_AUTO];
    check_both_maps(t, c, automatic);
    if (test_failed(c)) return;
    DnData d;
    DnDevice dd;
    Shape sh = dn_setup(c, t->shape, &d, &dd);
    float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
    void *scratch = automatic->prepare(c, &d.ks);
    long before = kdn_launch_count();
    const KdnLayerCall call = kdn_layer_contiguous(&d.ks, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, s_out);
    automatic->run(scratch, &call);
    /* docs/api.md: chunked past the split, where D_k is one the chunked kernels take */
    int chunked = sh.T > kdn_gdn_recurrent_max_t(sh.n_seqs) && sh.D_k <= kdn_chunked_limits.max_D_k;
    long launches = kdn_launch_count() - before, want = chunked ? 2 : 1;
    if (dev_sync(c) == 0 && launches != want)
        test_fail(c, "T = %d: %ld launches, want %ld (%s)", sh.T, launches, want, want == 1 ? "recurrent" : "chunked");
}

/* Tokens t0 .. t0+n-1 of every sequence of a [width, T, n_seqs] tensor. */
static float *slice_tokens(Ctx *c, const float *x, size_t width, int T, int n_seqs, int t0, int n) {
    float *y = host_f(c, width * n * n_seqs);
    for (int s = 0; s < n_seqs; s++)
        for (int t = 0; t < n; t++)
            for (size_t i = 0; i < width; i++)
                y[((size_t)s * n + t) * width + i] = x[((size_t)s * T + t0 + t) * width + i];
    return y;
}

/* Uploads tokens t0 .. t0+n-1 of the inputs (the state is set separately). */
static void upload_tokens(Ctx *c, const DnData *d, int t0, int n, DnDevice *dd) {
    const KdnShape *s = &d->ks;
    size_t qk = (size_t)s->H_k * s->D_k, vw = (size_t)s->H_v * s->D_v, tok = (size_t)n * s->n_seqs;
    dd->q = dev_in(c, "q", slice_tokens(c, d->q, qk, s->T, s->n_seqs, t0, n), tok * qk);
    dd->k = dev_in(c, "k", slice_tokens(c, d->k, qk, s->T, s->n_seqs, t0, n), tok * qk);
    dd->v = dev_in(c, "v", slice_tokens(c, d->v, vw, s->T, s->n_seqs, t0, n), tok * vw);
    dd->g = dev_in(c, "g", slice_tokens(c, d->g, s->H_v, s->T, s->n_seqs, t0, n), tok * s->H_v);
    dd->beta = dev_in(c, "beta", slice_tokens(c, d->beta, s->H_v, s->T, s->n_seqs, t0, n), tok * s->H_v);
}

/* As a model serves a prompt: the product's chunked prefill (chunked) of
 * T - shape.decode_steps tokens, then shape.decode_steps decode steps of one
 * token each by the recurrent kernel, each starting from
 * the state the previous call left: the prefill outputs, every decode output
 * and the final state must equal the recurrence over all T tokens. */
static void t_prefill_then_decode(const Test *t, Ctx *c) {
    Shape sh = dn_backend_shape(t->shape);
    const LayerVariant *prefill_path = &layer_variants[LAYER_CHUNKED], *decode_path = &layer_variants[LAYER_RECURRENT];
    if (layer_variant_refuses(c, prefill_path, &sh)) return;
    DnData d;
    dn_generate(c, &sh, &d);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    dn_reference(c, &d, o_ref, s_ref);
    dn_describe(c, &sh);
    int decode = t->shape->decode_steps < sh.T ? t->shape->decode_steps : sh.T - 1, prefill = sh.T - decode; /* --set may shorten T */
    float *state = dev_in(c, "state_in", d.state, d.n_state);
    DnDevice dd;
    KdnShape ks = d.ks;
    ks.T = prefill;
    upload_tokens(c, &d, 0, prefill, &dd);
    float *o = dev_out(c, "o_prefill", (size_t)prefill * sh.n_seqs * sh.H_v * sh.D_v);
    float *next = dev_out(c, "state_prefill", d.n_state);
    const KdnLayerCall prefill_call = kdn_layer_contiguous(&ks, dd.q, dd.k, dd.v, dd.g, dd.beta, state, o, next);
    prefill_path->run(prefill_path->prepare(c, &ks), &prefill_call);
    size_t o_tok = (size_t)sh.H_v * sh.D_v;
    double *want_prefill = host_d(c, o_tok * prefill * sh.n_seqs);
    for (int s = 0; s < sh.n_seqs; s++)
        memcpy(want_prefill + (size_t)s * prefill * o_tok, o_ref + (size_t)s * sh.T * o_tok,
               o_tok * prefill * sizeof(double));
    if (dev_sync(c) != 0) return;
    expect_close(c, "o (prefill)", o, want_prefill, prefill * sh.n_seqs * sh.H_v, sh.D_v, t->tol);
    ks.T = 1;
    float *o_dec = host_f(c, o_tok * sh.n_seqs);
    double *want = host_d(c, o_tok * sh.n_seqs);
    for (int step = 0; step < decode && !test_failed(c); step++) {
        state = next;
        next = dev_out(c, "state_decode", d.n_state);
        float *o1 = dev_out(c, "o_decode", o_tok * sh.n_seqs);
        upload_tokens(c, &d, prefill + step, 1, &dd);
        const KdnLayerCall step_call = kdn_layer_contiguous(&ks, dd.q, dd.k, dd.v, dd.g, dd.beta, state, o1, next);
        decode_path->run(NULL, &step_call);
        if (dev_sync(c) != 0) return;
        download(c, o_dec, o1, o_tok * sh.n_seqs);
        for (int s = 0; s < sh.n_seqs; s++)
            for (size_t i = 0; i < o_tok; i++)
                want[s * o_tok + i] = o_ref[((size_t)s * sh.T + prefill + step) * o_tok + i];
        expect_close_host(c, "o (decode step)", o_dec, want, sh.n_seqs * sh.H_v, sh.D_v, t->tol);
    }
    if (!test_failed(c)) expect_close(c, "state", next, s_ref, sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
}

/* ---- the comparison view (--bench --test 'compare_*') --------------------
 * Every layer variant (layer_variants.h) on the same Qwen3-Next-sized inputs,
 * each timed through bench_work and each checked against the double-precision
 * recurrence on every head of every sequence (dn_reference: the pairs spread
 * over the host's cores; at T = 16384, B = 4 that is 3.4e10 multiply-adds).
 * A variant that refuses the shape is said so on the line and not run. */

/* Decode bandwidth references for the T = 1 rows (docs/performance.md):
 * state_copy is the runtime's device-to-device copy of the state (read and
 * write, the same bytes the recurrent kernel moves); recurrent_x36 is a
 * decode step of Qwen3-Next's 36 Delta-Net layers, back-to-back calls each
 * on its own state (36 states of B = 1 are 72 MB, more than an H100's L2),
 * its time for all 36 calls. */
enum { DECODE_LAYERS = 36 };

typedef struct {
    const KdnShape *s;
    DnDevice in;
    const float *state[DECODE_LAYERS];
    float *next[DECODE_LAYERS], *o;
    size_t state_bytes;
} DecodeCalls;

static void run_state_copy(void *arg) {
    DecodeCalls *d = arg;
    kdn_copy(d->next[0], d->in.state, d->state_bytes);
}

static void run_decode_layers(void *arg) {
    DecodeCalls *d = arg;
    for (int l = 0; l < DECODE_LAYERS; l++)
        kdn_deltanet_recurrent(d->s, d->in.q, d->in.k, d->in.v, d->in.g, d->in.beta, d->state[l], d->o, d->next[l]);
}

static void bench_decode_references(Ctx *c, const DnData *d, const DnDevice *dd) {
    DecodeCalls dc = {&d->ks, *dd, {NULL}, {NULL}, dev_out(c, "o", d->n_v), d->n_state * sizeof(float)};
    int layers = d->ks.n_seqs == 1 ? DECODE_LAYERS : 1;
    float *states = dev_out(c, "states", 2 * layers * d->n_state);
    for (int l = 0; l < layers; l++) {
        float *st = states + 2 * l * d->n_state;
        kdn_copy(st, dd->state, dc.state_bytes);
        dc.state[l] = st;
        dc.next[l] = st + d->n_state;
    }
    bench_work(c, "state_copy", run_state_copy, &dc, 2.0 * dc.state_bytes, 0.0);
    if (layers == DECODE_LAYERS) {
        double bytes, flops;
        dn_layer_cost(&d->ks, &bytes, &flops);
        bench_work(c, "recurrent_x36", run_decode_layers, &dc, DECODE_LAYERS * bytes, DECODE_LAYERS * flops);
    }
}

/* CPU build: the heads quartered, T capped at 64 and B at 4, said on the line. */
static Shape compare_shape(const Shape *row) {
    Shape sh = dn_backend_shape(row);
    if (is_cpu_backend() && sh.T > 64) sh.T = 64;
    if (is_cpu_backend() && sh.n_seqs > 4) sh.n_seqs = 4;
    return sh;
}

static void t_compare(const Test *t, Ctx *c) {
    Shape sh = compare_shape(t->shape);
    DnData d;
    DnDevice dd;
    dn_generate(c, &sh, &d);
    dn_upload(c, &d, &dd);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    dn_reference(c, &d, o_ref, s_ref);
    char refused[160] = "";
    for (int i = 0; i < LAYER_VARIANT_COUNT && !test_failed(c); i++) {
        const LayerVariant *v = &layer_variants[i];
        const char *why = v->refuses(&d.ks);
        if (why) {
            size_t used = strlen(refused);
            snprintf(refused + used, sizeof refused - used, "; %s refuses: %s", v->name, why);
            continue;
        }
        float *o = dev_out(c, "o", d.n_v), *st = dev_out(c, "state_out", d.n_state);
        call_layer(c, v, &d, &dd, o, st);
        if (dev_sync(c) != 0) return;
        char what[64];
        snprintf(what, sizeof what, "%s o", v->name);
        expect_close(c, what, o, o_ref, sh.T * sh.n_seqs * sh.H_v, sh.D_v, t->tol);
        snprintf(what, sizeof what, "%s state", v->name);
        expect_close(c, what, st, s_ref, sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
    }
    if (!test_failed(c) && sh.T == 1) bench_decode_references(c, &d, &dd);
    char note[256] = "";
    if (sh.T != t->shape->T || sh.n_seqs != t->shape->n_seqs)
        snprintf(note, sizeof note, " (CPU build; row: T=%d B=%d)", t->shape->T, t->shape->n_seqs);
    size_t used = strlen(note);
    snprintf(note + used, sizeof note - used, "%s", refused);
    dn_describe_note(c, &sh, note);
}

/* D_k = D_v = 128 as in Qwen3-Next, with the given heads and chunk size */
#define HEADS(T_, B_, Hk, Hv, C_) .T = T_, .n_seqs = B_, .H_k = Hk, .H_v = Hv, .D_k = 128, .D_v = 128, .chunk = C_
#define QWEN(T_, B_) HEADS(T_, B_, 16, 32, 64)

static const Test tests[] = {
    {8, "deltanet_single_chunk", "unfused", TOL_CHUNK, CASE(QWEN(64, 1), .state = 1), t_unfused_single},
    {8, "deltanet_full", "unfused", TOL_CHUNK, CASE(QWEN(200, 2), .state = 1), t_layer},
    /* token-recurrent kernel: decode (T = 1), a short prompt, odd sizes */
    {8, "recurrent_decode", "recurrent", TOL_CHUNK, CASE(QWEN(1, 4), .state = 1), t_layer},
    {8, "recurrent_prompt", "recurrent", TOL_CHUNK, CASE(QWEN(130, 2), .state = 1), t_layer},
    {8, "recurrent_odd_dims", "recurrent", TOL_CHUNK,
     CASE(.T = 37, .n_seqs = 3, .H_k = 2, .H_v = 6, .D_k = 72, .D_v = 40, .chunk = 64, .state = 1), t_layer},
    {8, "recurrent_strong_decay", "recurrent", TOL_CHUNK, CASE(QWEN(70, 1), .decay = DECAY_STRONG, .state = 1), t_layer},
    /* two state columns per group (more one-column workgroups than a round: 3 x 32 x 8 = 768 > 240
     * on the MI50, which the CPU build reports, and > 528 on the H100) with a partial second set of
     * columns (D_v = 40); H_k = 2 so that the CPU build keeps the heads */
    {8, "recurrent_two_cols_odd", "recurrent", TOL_CHUNK,
     CASE(.T = 5, .n_seqs = 8, .H_k = 2, .H_v = 32, .D_k = 72, .D_v = 40, .chunk = 64, .state = 1), t_layer},
    /* D_k not a multiple of 4: the single-row fallback of the 16-byte row runs */
    {8, "recurrent_dk_not4", "recurrent", TOL_CHUNK,
     CASE(.T = 9, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 70, .D_v = 24, .chunk = 64, .state = 1), t_layer},
    /* an initial state 1000x larger (outputs in the thousands): correct kernels
     * must pass, as the element bound scales with the output's RMS */
    {8, "recurrent_state_x1000", "recurrent", TOL_CHUNK, CASE(QWEN(70, 1), .state = 1000), t_layer},
    {8, "chunked_state_x1000", "chunked", TOL_CHUNK, CASE(QWEN(130, 1), .decay = DECAY_WEAK, .state = 1000), t_layer},
    /* the product's chunked path against the seed ladder's pipeline, and the library's two paths */
    {8, "chunked_vs_unfused", "chunked", TOL_CHUNK, CASE(QWEN(150, 2), .state = 1), t_vs_unfused},
    {8, "recurrent_vs_chunked", "recurrent", TOL_CHUNK, CASE(QWEN(64, 2), .state = 1), t_vs_chunked},
    {8, "prefill_then_decode", "chunked", TOL_CHUNK, CASE(QWEN(100, 2), .decode_steps = 4, .state = 1), t_prefill_then_decode},
    /* the chunked form: chunk-parallel intra-chunk kernel, then the state pass */
    {8, "chunked_ragged", "chunked", TOL_CHUNK, CASE(QWEN(200, 2), .state = 1), t_layer},
    {8, "chunked_T1", "chunked", TOL_CHUNK, CASE(QWEN(1, 2), .state = 1), t_layer},
    {8, "chunked_T64", "chunked", TOL_CHUNK, CASE(QWEN(64, 1), .state = 1), t_layer},
    {8, "chunked_gqa3_c32", "chunked", TOL_CHUNK, CASE(HEADS(100, 2, 2, 6, 32), .state = 1), t_layer},
    {8, "chunked_strong_decay", "chunked", TOL_CHUNK, CASE(QWEN(130, 1), .decay = DECAY_STRONG, .state = 1), t_layer},
    /* the automatic choice on each side of kdn_gdn_recurrent_max_t(B) (T = split + past_split) */
    {8, "auto_short_B1", "auto", TOL_CHUNK, CASE(QWEN(0, 1), .past_split = 0, .state = 1), t_auto},
    {8, "auto_long_B1", "auto", TOL_CHUNK, CASE(QWEN(0, 1), .past_split = 1, .state = 1), t_auto},
    {8, "auto_short_B4", "auto", TOL_CHUNK, CASE(QWEN(0, 4), .past_split = 0, .state = 1), t_auto},
    {8, "auto_long_B4", "auto", TOL_CHUNK, CASE(QWEN(0, 4), .past_split = 1, .state = 1), t_auto},
    /* the comparison view: every variant on Qwen3-Next shapes */
    {8, "compare_T1_B1", "all", TOL_CHUNK, CASE(QWEN(1, 1), .state = 1), t_compare},
    {8, "compare_T1_B4", "all", TOL_CHUNK, CASE(QWEN(1, 4), .state = 1), t_compare},
    {8, "compare_T1_B128", "all", TOL_CHUNK, CASE(QWEN(1, 128), .state = 1), t_compare},
    {8, "compare_T64_B1", "all", TOL_CHUNK, CASE(QWEN(64, 1), .state = 1), t_compare},
    {8, "compare_T64_B4", "all", TOL_CHUNK, CASE(QWEN(64, 4), .state = 1), t_compare},
    {8, "compare_T512_B1", "all", TOL_CHUNK, CASE(QWEN(512, 1), .state = 1), t_compare},
    {8, "compare_T512_B4", "all", TOL_CHUNK, CASE(QWEN(512, 4), .state = 1), t_compare},
    {8, "compare_T1024_B1", "all", TOL_CHUNK, CASE(QWEN(1024, 1), .state = 1), t_compare},
    {8, "compare_T4096_B1", "all", TOL_CHUNK, CASE(QWEN(4096, 1), .state = 1), t_compare},
    {8, "compare_T4096_B4", "all", TOL_CHUNK, CASE(QWEN(4096, 4), .state = 1), t_compare},
    {8, "compare_T16384_B1", "all", TOL_CHUNK, CASE(QWEN(16384, 1), .state = 1), t_compare},
    {8, "compare_T16384_B4", "all", TOL_CHUNK, CASE(QWEN(16384, 4), .state = 1), t_compare},
/* the generated grid (phases/grid.c), one row per variant */
#define GRID_ROW(id, name, tol) {8, "grid_" #name, #name, tol, CASE(.state = 1), t_grid},
    LAYER_VARIANTS(GRID_ROW)
#undef GRID_ROW
};

/* Each row runs at least one layer of its shape (the auto rows' T is the
 * split's, the compare rows' as t_compare caps it); the grid rows run fixed
 * shapes. */
static Work least_work(const Test *t) {
    Shape sh = *t->shape;
    if (t->run == t_grid) return (Work){0, 0};
    if (t->run == t_auto) sh.T = auto_T(t->shape);
    if (t->run == t_compare) sh = compare_shape(t->shape);
    return dn_layer_work(&sh);
}

const TestList phase8_tests = {tests, sizeof tests / sizeof tests[0], least_work, false, layer_shape_from_files};

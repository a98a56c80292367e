/* Phase 8: the whole layer (all heads, sequences and chunks), final outputs
 * and final state against the token recurrence in double precision. */
#include "phases.h"

#include "deltanet_data.h"
#include "pipeline.h"

#include <stdio.h>
#include <string.h>

/* One implementation of the layer: `prepare` allocates its scratch outside
 * the timed region (NULL: it needs none), `run` enqueues it. */
typedef struct {
    const char *label;
    void *(*prepare)(Ctx *c, const KdnShape *s);
    void (*prepare_footprint)(Footprint *f, const KdnShape *s); /* what prepare allocates */
    void (*run)(void *scratch, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                const float *beta, const float *state_in, float *o, float *state_out);
} Layer;

static void *unfused_prepare(Ctx *c, const KdnShape *s) {
    ChunkWork *w = (ChunkWork *)host_d(c, sizeof(ChunkWork) / sizeof(double) + 1);
    chunk_work_alloc(c, w, s->chunk, s->D_k, s->D_v);
    return w;
}

static void unfused_run(void *w, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                        const float *beta, const float *state_in, float *o, float *state_out) {
    deltanet_unfused(w, s, q, k, v, g, beta, state_in, o, state_out);
}

static void recurrent_run(void *w, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                          const float *beta, const float *state_in, float *o, float *state_out) {
    (void)w;
    kdn_deltanet_recurrent(s, q, k, v, g, beta, state_in, o, state_out);
}

static void one_launch_run(void *w, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                      const float *beta, const float *state_in, float *o, float *state_out) {
    (void)w;
    kdn_deltanet_one_launch(s, q, k, v, g, beta, state_in, o, state_out);
}

static void unfused_footprint(Footprint *f, const KdnShape *s) {
    fp_host_struct(f, sizeof(ChunkWork));
    fp_chunk_work(f, s->chunk, s->D_k, s->D_v);
}

static const Layer UNFUSED = {"unfused", unfused_prepare, unfused_footprint, unfused_run};
static const Layer RECURRENT = {"recurrent", NULL, NULL, recurrent_run};
static const Layer ONE_LAUNCH = {"one_launch", NULL, NULL, one_launch_run};
static const Layer TWO_LAUNCH = {"two_launch", two_launch_prepare, fp_two_launch_prepare, deltanet_two_launch};
static const Layer AUTO = {"auto", two_launch_prepare, fp_two_launch_prepare, deltanet_auto};

typedef struct {
    const Layer *layer;
    void *scratch;
    const KdnShape *s;
    DnDevice in;
    float *o, *state_out;
} LayerCall;

static void run_layer(void *arg) {
    LayerCall *l = arg;
    l->layer->run(l->scratch, l->s, l->in.q, l->in.k, l->in.v, l->in.g, l->in.beta, l->in.state, l->o, l->state_out);
}

/* Enqueues `layer` on the inputs through bench_work (timed under --bench). */
static void call_layer(Ctx *c, const Layer *layer, const DnData *d, const DnDevice *dd, float *o, float *state_out) {
    LayerCall call = {layer, layer->prepare ? layer->prepare(c, &d->ks) : NULL, &d->ks, *dd, o, state_out};
    double bytes, flops;
    dn_layer_cost(&d->ks, &bytes, &flops);
    bench_work(c, layer->label, run_layer, &call, bytes, flops);
}

/* Runs one layer implementation on one shape and compares with the recurrence. */
static void check_layer(const Test *t, Ctx *c, const Shape *shape, const Layer *layer) {
    DnData d;
    DnDevice dd;
    Shape sh = dn_setup(c, shape, &d, &dd);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    RefInputs in = dn_ref_inputs(&d);
    ref_deltanet_recurrent(&d.rs, &in, o_ref, s_ref);
    float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
    call_layer(c, layer, &d, &dd, o, s_out);
    dn_describe(c, &sh);
    if (dev_sync(c) != 0) return;
    int rows = sh.T * sh.n_seqs * sh.H_v;
    expect_close(c, sh.head_map ? "o (block map)" : "o (tiled map)", o, o_ref, rows, sh.D_v, t->tol);
    expect_close(c, sh.head_map ? "state (block map)" : "state (tiled map)", s_out, s_ref,
                 sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
}

/* The row's shape with each grouped-head mapping in turn. */
static void check_both_maps(const Test *t, Ctx *c, const Layer *layer) {
    Shape sh = t->shape;
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK && !test_failed(c); map++) {
        sh.head_map = map;
        check_layer(t, c, &sh, layer);
    }
    sh = dn_backend_shape(&t->shape);
    sh.head_map = HEAD_MAP_BOTH;
    dn_describe(c, &sh);
}

static void t_unfused_single(const Test *t, Ctx *c) { check_layer(t, c, &t->shape, &UNFUSED); }
static void t_unfused_full(const Test *t, Ctx *c) { check_both_maps(t, c, &UNFUSED); }
static void t_recurrent(const Test *t, Ctx *c) { check_both_maps(t, c, &RECURRENT); }
static void t_one_launch(const Test *t, Ctx *c) { check_both_maps(t, c, &ONE_LAUNCH); }
static void t_two_launch(const Test *t, Ctx *c) { check_both_maps(t, c, &TWO_LAUNCH); }

/* Two implementations on identical inputs, compared with each other: the
 * second one's outputs are the reference (each is checked against the
 * recurrence by its own rows). */
static void agree(const Test *t, Ctx *c, const Layer *first, const Layer *second) {
    DnData d;
    DnDevice dd;
    Shape sh = dn_setup(c, &t->shape, &d, &dd);
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

static void t_fused_vs_unfused(const Test *t, Ctx *c) { agree(t, c, &ONE_LAUNCH, &UNFUSED); }
static void t_recurrent_vs_one_launch(const Test *t, Ctx *c) { agree(t, c, &RECURRENT, &ONE_LAUNCH); }
static void t_two_launch_vs_one_launch(const Test *t, Ctx *c) { agree(t, c, &TWO_LAUNCH, &ONE_LAUNCH); }
/* The automatic choice against the reference, then its launch count: one
 * (recurrent) up to kdn_auto_recurrent_max_t() tokens, two (chunked) past it. */
static void t_auto(const Test *row, Ctx *c) {
    /* the row's T is the split plus shape.past_split: the split is the backend's own */
    Test copy = *row;
    copy.shape.T = kdn_auto_recurrent_max_t() + row->shape.past_split;
    const Test *t = &copy;
    check_both_maps(t, c, &AUTO);
    if (test_failed(c)) return;
    DnData d;
    DnDevice dd;
    Shape sh = dn_setup(c, &t->shape, &d, &dd);
    float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
    void *scratch = AUTO.prepare(c, &d.ks);
    long before = kdn_launch_count();
    AUTO.run(scratch, &d.ks, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, s_out);
    long launches = kdn_launch_count() - before, want = sh.T <= kdn_auto_recurrent_max_t() ? 1 : 2;
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

/* Chunked prefill of T - shape.decode_steps tokens by the one-launch kernel, then shape.decode_steps
 * decode steps of one token each by the recurrent kernel, each starting from
 * the state the previous call left: the prefill outputs, every decode output
 * and the final state must equal the recurrence over all T tokens. */
static void t_prefill_then_decode(const Test *t, Ctx *c) {
    Shape sh = dn_backend_shape(&t->shape);
    DnData d;
    dn_generate(c, &sh, &d);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    RefInputs in = dn_ref_inputs(&d);
    ref_deltanet_recurrent(&d.rs, &in, o_ref, s_ref);
    dn_describe(c, &sh);
    int decode = t->shape.decode_steps < sh.T ? t->shape.decode_steps : sh.T - 1, prefill = sh.T - decode; /* --set may shorten T */
    float *state = dev_in(c, "state_in", d.state, d.n_state);
    DnDevice dd;
    KdnShape ks = d.ks;
    ks.T = prefill;
    upload_tokens(c, &d, 0, prefill, &dd);
    float *o = dev_out(c, "o_prefill", (size_t)prefill * sh.n_seqs * sh.H_v * sh.D_v);
    float *next = dev_out(c, "state_prefill", d.n_state);
    kdn_deltanet_one_launch(&ks, dd.q, dd.k, dd.v, dd.g, dd.beta, state, o, next);
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
        kdn_deltanet_recurrent(&ks, dd.q, dd.k, dd.v, dd.g, dd.beta, state, o1, next);
        if (dev_sync(c) != 0) return;
        download(c, o_dec, o1, o_tok * sh.n_seqs);
        for (int s = 0; s < sh.n_seqs; s++)
            for (size_t i = 0; i < o_tok; i++)
                want[s * o_tok + i] = o_ref[((size_t)s * sh.T + prefill + step) * o_tok + i];
        expect_close_host(c, "o (decode step)", o_dec, want, sh.n_seqs * sh.H_v, sh.D_v, t->tol);
    }
    if (!test_failed(c)) expect_close(c, "state", next, s_ref, sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
}

/* Shapes the fused kernel cannot run must be refused with a message naming
 * it, and nothing written: C = 128 (its keys alone would need 66 KB of LDS),
 * a chunk that does not split into the kernel's tiles, D_k > 128. */
static void t_one_launch_refuses(const Test *t, Ctx *c) {
    static const int bad[][2] = {{128, 128}, {48, 64}, {64, 192}}; /* {chunk, D_k} */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0] && !test_failed(c); i++) {
        Shape sh = t->shape;
        sh.chunk = bad[i][0];
        sh.D_k = bad[i][1];
        DnData d;
        DnDevice dd;
        dn_generate(c, &sh, &d);
        dn_upload(c, &d, &dd);
        float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
        kdn_deltanet_one_launch(&d.ks, dd.q, dd.k, dd.v, dd.g, dd.beta, dd.state, o, s_out);
        const char *why = kdn_sync();
        if (!why || !strstr(why, "kernel_deltanet_one_launch")) {
            test_fail(c, "chunk %d, D_k %d: not refused", sh.chunk, sh.D_k);
            return;
        }
        /* written[e] = 1 where o[e] lost the NaN it started with; must be 0 */
        float *written = host_f(c, d.n_v);
        double *none = host_d(c, d.n_v);
        download(c, written, o, d.n_v);
        for (size_t e = 0; e < d.n_v; e++) {
            written[e] = written[e] == written[e];
            none[e] = 0.0;
        }
        expect_close_host(c, "o elements written", written, none, sh.T * sh.n_seqs * sh.H_v, sh.D_v, t->tol);
    }
    set_shape_desc(c, "C=128 Dk=128 | C=48 Dk=64 | C=64 Dk=192 (T=%d B=%d Hk=%d Hv=%d Dv=%d)", t->shape.T,
                   t->shape.n_seqs, t->shape.H_k, t->shape.H_v, t->shape.D_v);
}

/* ---- the comparison view (--bench --test 'compare_*') --------------------
 * The unfused pipeline, the recurrent and the fused kernel on the same
 * Qwen3-Next-sized inputs, each timed through bench_work. Each is checked
 * against the double-precision recurrence on two heads (the first of the
 * first sequence, the last of the last: the recurrence over every head of
 * T = 16384, B = 4 would take minutes on the host), and on every head against
 * the one-launch kernel, itself checked against the reference on all heads by the
 * rows above. */
static void check_heads(const Test *t, Ctx *c, const DnData *d, const char *label, const float *o_dev,
                        const float *s_dev) {
    const Shape one = {.T = d->ks.T, .n_seqs = 1, .H_k = 1, .H_v = 1, .D_k = d->ks.D_k, .D_v = d->ks.D_v,
                       .chunk = d->ks.chunk};
    const KdnShape *s = &d->ks;
    const int picks[2][2] = {{0, 0}, {s->n_seqs - 1, s->H_v - 1}};
    float *o = host_f(c, d->n_v), *st = host_f(c, d->n_state);
    download(c, o, o_dev, d->n_v);
    download(c, st, s_dev, d->n_state);
    size_t dk = s->D_k, dv = s->D_v, T = s->T, head = dk * dv;
    for (int p = 0; p < 2 && !test_failed(c); p++) {
        int seq = picks[p][0], h = picks[p][1], hk = ref_key_head(&d->rs, h);
        float *q = host_f(c, T * dk), *k = host_f(c, T * dk), *v = host_f(c, T * dv), *g = host_f(c, T),
              *beta = host_f(c, T), *got = host_f(c, T * dv);
        for (size_t t0 = 0; t0 < T; t0++) {
            size_t tok = (size_t)seq * T + t0;
            memcpy(q + t0 * dk, d->q + (tok * s->H_k + hk) * dk, dk * sizeof(float));
            memcpy(k + t0 * dk, d->k + (tok * s->H_k + hk) * dk, dk * sizeof(float));
            memcpy(v + t0 * dv, d->v + (tok * s->H_v + h) * dv, dv * sizeof(float));
            memcpy(got + t0 * dv, o + (tok * s->H_v + h) * dv, dv * sizeof(float));
            g[t0] = d->g[tok * s->H_v + h];
            beta[t0] = d->beta[tok * s->H_v + h];
        }
        RefShape rs = {one.T, 1, 1, 1, one.D_k, one.D_v, one.chunk, 0};
        RefInputs in = {q, k, v, g, beta, d->state + ((size_t)seq * s->H_v + h) * head};
        double *o_ref = host_d(c, T * dv), *s_ref = host_d(c, head);
        ref_deltanet_recurrent(&rs, &in, o_ref, s_ref);
        char what[64];
        snprintf(what, sizeof what, "%s o (seq %d, head %d)", label, seq, h);
        expect_close_host(c, what, got, o_ref, (int)T, (int)dv, t->tol);
        snprintf(what, sizeof what, "%s state (seq %d, head %d)", label, seq, h);
        expect_close_host(c, what, st + ((size_t)seq * s->H_v + h) * head, s_ref, (int)dv, (int)dk, t->tol);
    }
}

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
static void t_compare(const Test *t, Ctx *c) {
    Shape sh = dn_backend_shape(&t->shape);
    if (is_cpu_backend() && sh.T > 64) sh.T = 64;
    if (is_cpu_backend() && sh.n_seqs > 4) sh.n_seqs = 4;
    DnData d;
    DnDevice dd;
    dn_generate(c, &sh, &d);
    dn_upload(c, &d, &dd);
    static const Layer *const impls[] = {&UNFUSED, &RECURRENT, &TWO_LAUNCH, &AUTO, &ONE_LAUNCH};
    enum { N_IMPL = sizeof impls / sizeof impls[0] };
    float *o[N_IMPL], *st[N_IMPL];
    for (int i = 0; i < N_IMPL && !test_failed(c); i++) {
        o[i] = dev_out(c, "o", d.n_v);
        st[i] = dev_out(c, "state_out", d.n_state);
        call_layer(c, impls[i], &d, &dd, o[i], st[i]);
        if (dev_sync(c) == 0) check_heads(t, c, &d, impls[i]->label, o[i], st[i]);
    }
    double *o_one_launch = NULL, *s_one_launch = NULL;
    if (!test_failed(c)) {
        float *tmp = host_f(c, d.n_v > d.n_state ? d.n_v : d.n_state);
        download(c, tmp, o[N_IMPL - 1], d.n_v);
        o_one_launch = dn_widen(c, tmp, d.n_v);
        download(c, tmp, st[N_IMPL - 1], d.n_state);
        s_one_launch = dn_widen(c, tmp, d.n_state);
    }
    for (int i = 0; i < N_IMPL - 1 && o_one_launch; i++) {
        expect_close(c, impls[i]->label, o[i], o_one_launch, sh.T * sh.n_seqs * sh.H_v, sh.D_v, t->tol);
        expect_close(c, impls[i]->label, st[i], s_one_launch, sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
    }
    if (!test_failed(c) && sh.T == 1) bench_decode_references(c, &d, &dd);
    char note[64] = "";
    if (sh.T != t->shape.T || sh.n_seqs != t->shape.n_seqs)
        snprintf(note, sizeof note, " (CPU build; row: T=%d B=%d)", t->shape.T, t->shape.n_seqs);
    dn_describe_note(c, &sh, note);
}

/* D_k = D_v = 128 as in Qwen3-Next, with the given heads and chunk size */
#define HEADS(T_, B_, Hk, Hv, C_) .T = T_, .n_seqs = B_, .H_k = Hk, .H_v = Hv, .D_k = 128, .D_v = 128, .chunk = C_
#define QWEN(T_, B_) HEADS(T_, B_, 16, 32, 64)

static const Test tests[] = {
    {8, "deltanet_single_chunk", "unfused", TOL_CHUNK, {QWEN(64, 1), .state = 1}, t_unfused_single},
    {8, "deltanet_full", "unfused", TOL_CHUNK, {QWEN(200, 2), .state = 1}, t_unfused_full},
    /* token-recurrent kernel: decode (T = 1), a short prompt, odd sizes */
    {8, "recurrent_decode", "recurrent", TOL_CHUNK, {QWEN(1, 4), .state = 1}, t_recurrent},
    {8, "recurrent_prompt", "recurrent", TOL_CHUNK, {QWEN(130, 2), .state = 1}, t_recurrent},
    {8, "recurrent_odd_dims", "recurrent", TOL_CHUNK,
     {.T = 37, .n_seqs = 3, .H_k = 2, .H_v = 6, .D_k = 72, .D_v = 40, .chunk = 64, .state = 1}, t_recurrent},
    {8, "recurrent_strong_decay", "recurrent", TOL_CHUNK, {QWEN(70, 1), .decay = DECAY_STRONG, .state = 1}, t_recurrent},
    /* D_k not a multiple of 4: the single-row fallback of the 16-byte row runs */
    {8, "recurrent_dk_not4", "recurrent", TOL_CHUNK,
     {.T = 9, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 70, .D_v = 24, .chunk = 64, .state = 1}, t_recurrent},
    /* one-launch chunked kernel: T around the chunk size, ragged tails, grouped
     * heads H_v/H_k = 1..4, decay extremes, chunk 32, odd dimensions */
    {8, "one_launch_T1", "one_launch", TOL_CHUNK, {QWEN(1, 2), .state = 1}, t_one_launch},
    {8, "one_launch_T63", "one_launch", TOL_CHUNK, {QWEN(63, 1), .state = 1}, t_one_launch},
    {8, "one_launch_T64", "one_launch", TOL_CHUNK, {QWEN(64, 1), .state = 1}, t_one_launch},
    {8, "one_launch_T65", "one_launch", TOL_CHUNK, {QWEN(65, 1), .state = 1}, t_one_launch},
    {8, "one_launch_ragged", "one_launch", TOL_CHUNK, {QWEN(300, 3), .state = 1}, t_one_launch},
    {8, "one_launch_gqa1", "one_launch", TOL_CHUNK, {HEADS(100, 1, 8, 8, 64), .state = 1}, t_one_launch},
    {8, "one_launch_gqa3", "one_launch", TOL_CHUNK, {HEADS(100, 2, 2, 6, 64), .state = 1}, t_one_launch},
    {8, "one_launch_gqa4", "one_launch", TOL_CHUNK, {HEADS(100, 1, 4, 16, 64), .state = 1}, t_one_launch},
    {8, "one_launch_strong_decay", "one_launch", TOL_CHUNK, {QWEN(150, 1), .decay = DECAY_STRONG, .state = 1}, t_one_launch},
    {8, "one_launch_weak_decay", "one_launch", TOL_CHUNK, {QWEN(150, 1), .decay = DECAY_WEAK, .state = 1}, t_one_launch},
    {8, "one_launch_chunk32", "one_launch", TOL_CHUNK, {HEADS(150, 2, 16, 32, 32), .state = 1}, t_one_launch},
    {8, "one_launch_chunk32_T31", "one_launch", TOL_CHUNK, {HEADS(31, 1, 16, 32, 32), .state = 1}, t_one_launch},
    {8, "one_launch_chunk32_T32", "one_launch", TOL_CHUNK, {HEADS(32, 1, 16, 32, 32), .state = 1}, t_one_launch},
    {8, "one_launch_chunk32_T33", "one_launch", TOL_CHUNK, {HEADS(33, 2, 16, 32, 32), .state = 1}, t_one_launch},
    {8, "one_launch_c32_strong_decay", "one_launch", TOL_CHUNK,
     {HEADS(100, 1, 16, 32, 32), .decay = DECAY_STRONG, .state = 1}, t_one_launch},
    /* an initial state 1000x larger (outputs in the thousands): correct kernels
     * must pass, as the element bound scales with the output's RMS */
    {8, "recurrent_state_x1000", "recurrent", TOL_CHUNK, {QWEN(70, 1), .state = 1000}, t_recurrent},
    {8, "one_launch_state_x1000", "one_launch", TOL_CHUNK, {QWEN(150, 1), .decay = DECAY_WEAK, .state = 1000}, t_one_launch},
    {8, "two_launch_state_x1000", "two_launch", TOL_CHUNK, {QWEN(130, 1), .decay = DECAY_WEAK, .state = 1000}, t_two_launch},
    {8, "one_launch_odd_dims", "one_launch", TOL_CHUNK,
     {.T = 77, .n_seqs = 2, .H_k = 2, .H_v = 4, .D_k = 72, .D_v = 40, .chunk = 64, .state = 1}, t_one_launch},
    {8, "one_launch_vs_unfused", "one_launch", TOL_CHUNK, {QWEN(150, 2), .state = 1}, t_fused_vs_unfused},
    {8, "recurrent_vs_one_launch", "recurrent", TOL_CHUNK, {QWEN(64, 2), .state = 1}, t_recurrent_vs_one_launch},
    {8, "prefill_then_decode", "one_launch", TOL_CHUNK, {QWEN(100, 2), .decode_steps = 4, .state = 1}, t_prefill_then_decode},
    {8, "one_launch_refuses", "one_launch", TOL_EXACT, {.T = 10, .n_seqs = 1, .H_k = 1, .H_v = 2, .D_v = 16, .state = 1},
     t_one_launch_refuses},
    /* the two-launch form: chunk-parallel intra-chunk kernel, then the state pass */
    {8, "two_launch_ragged", "two_launch", TOL_CHUNK, {QWEN(200, 2), .state = 1}, t_two_launch},
    {8, "two_launch_T1", "two_launch", TOL_CHUNK, {QWEN(1, 2), .state = 1}, t_two_launch},
    {8, "two_launch_gqa3_c32", "two_launch", TOL_CHUNK, {HEADS(100, 2, 2, 6, 32), .state = 1}, t_two_launch},
    {8, "two_launch_strong_decay", "two_launch", TOL_CHUNK, {QWEN(130, 1), .decay = DECAY_STRONG, .state = 1}, t_two_launch},
    {8, "two_launch_vs_one_launch", "two_launch", TOL_CHUNK, {QWEN(150, 2), .state = 1}, t_two_launch_vs_one_launch},
    /* the automatic choice on each side of kdn_auto_recurrent_max_t() (T = split + past_split) */
    {8, "auto_short", "auto", TOL_CHUNK, {QWEN(0, 2), .past_split = 0, .state = 1}, t_auto},
    {8, "auto_long", "auto", TOL_CHUNK, {QWEN(0, 2), .past_split = 1, .state = 1}, t_auto},
    /* the comparison view: every variant on Qwen3-Next shapes */
    {8, "compare_T1_B1", "all", TOL_CHUNK, {QWEN(1, 1), .state = 1}, t_compare},
    {8, "compare_T1_B4", "all", TOL_CHUNK, {QWEN(1, 4), .state = 1}, t_compare},
    {8, "compare_T1_B128", "all", TOL_CHUNK, {QWEN(1, 128), .state = 1}, t_compare},
    {8, "compare_T64_B1", "all", TOL_CHUNK, {QWEN(64, 1), .state = 1}, t_compare},
    {8, "compare_T64_B4", "all", TOL_CHUNK, {QWEN(64, 4), .state = 1}, t_compare},
    {8, "compare_T512_B1", "all", TOL_CHUNK, {QWEN(512, 1), .state = 1}, t_compare},
    {8, "compare_T512_B4", "all", TOL_CHUNK, {QWEN(512, 4), .state = 1}, t_compare},
    {8, "compare_T1024_B1", "all", TOL_CHUNK, {QWEN(1024, 1), .state = 1}, t_compare},
    {8, "compare_T4096_B1", "all", TOL_CHUNK, {QWEN(4096, 1), .state = 1}, t_compare},
    {8, "compare_T4096_B4", "all", TOL_CHUNK, {QWEN(4096, 4), .state = 1}, t_compare},
    {8, "compare_T16384_B1", "all", TOL_CHUNK, {QWEN(16384, 1), .state = 1}, t_compare},
    {8, "compare_T16384_B4", "all", TOL_CHUNK, {QWEN(16384, 4), .state = 1}, t_compare},
};

/* ---- footprints: the arrays above, by test ---- */
static void fp_call_layer(Footprint *f, const Layer *layer, const DnData *d) {
    if (layer->prepare_footprint) layer->prepare_footprint(f, &d->ks);
    f->dev_flops += dn_layer_flops(d);
}

static size_t larger(size_t a, size_t b) { return a > b ? a : b; }

static void fp_check_layer(Footprint *f, const Shape *shape, const Layer *layer) {
    Shape sh;
    DnData d = fp_dn_setup(f, shape, &sh);
    fp_host_d(f, d.n_v), fp_host_d(f, d.n_state), fp_dev(f, d.n_v), fp_dev(f, d.n_state);
    fp_call_layer(f, layer, &d);
    fp_compare(f, larger(d.n_v, d.n_state));
    fp_ref_scratch(f, sh.chunk, sh.D_k, sh.D_v);
    f->ref_flops += dn_recurrence_flops(&d);
}

static void fp_both_maps(Footprint *f, const Shape *shape, const Layer *layer) {
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK; map++) fp_check_layer(f, shape, layer);
}

static void fp_agree(Footprint *f, const Test *t, const Layer *first, const Layer *second) {
    Shape sh;
    DnData d = fp_dn_setup(f, &t->shape, &sh);
    for (int i = 0; i < 4; i++) fp_dev(f, i % 2 ? d.n_state : d.n_v);
    fp_call_layer(f, first, &d), fp_call_layer(f, second, &d);
    fp_host_f(f, larger(d.n_v, d.n_state)), fp_host_d(f, d.n_v), fp_host_d(f, d.n_state);
    fp_compare(f, larger(d.n_v, d.n_state));
}

static void fp_auto(Footprint *f, const Test *t) {
    Shape shape = t->shape;
    shape.T = kdn_auto_recurrent_max_t() + t->shape.past_split;
    fp_both_maps(f, &shape, &AUTO);
    Shape sh;
    DnData d = fp_dn_setup(f, &shape, &sh);
    fp_dev(f, d.n_v), fp_dev(f, d.n_state);
    fp_call_layer(f, &AUTO, &d);
}

static void fp_upload_tokens(Footprint *f, const DnData *d, int n) {
    const KdnShape *s = &d->ks;
    size_t tok = (size_t)n * s->n_seqs, width[5] = {(size_t)s->H_k * s->D_k, (size_t)s->H_k * s->D_k,
                                                    (size_t)s->H_v * s->D_v, (size_t)s->H_v, (size_t)s->H_v};
    for (int i = 0; i < 5; i++) fp_host_f(f, tok * width[i]), fp_dev(f, tok * width[i]);
}

static void fp_prefill_then_decode(Footprint *f, const Test *t) {
    Shape sh = dn_backend_shape(&t->shape);
    DnData d = fp_dn_generate(f, &sh);
    fp_host_d(f, d.n_v), fp_host_d(f, d.n_state), fp_ref_scratch(f, sh.chunk, sh.D_k, sh.D_v);
    f->ref_flops = dn_recurrence_flops(&d), f->dev_flops = dn_layer_flops(&d);
    int decode = t->shape.decode_steps < sh.T ? t->shape.decode_steps : sh.T - 1, prefill = sh.T - decode;
    size_t o_tok = (size_t)sh.H_v * sh.D_v, seqs = (size_t)sh.n_seqs;
    fp_dev(f, d.n_state), fp_upload_tokens(f, &d, prefill);
    fp_dev(f, (size_t)prefill * seqs * o_tok), fp_dev(f, d.n_state), fp_host_d(f, o_tok * prefill * seqs);
    fp_host_f(f, o_tok * seqs), fp_host_d(f, o_tok * seqs);
    for (int step = 0; step < decode; step++) fp_dev(f, d.n_state), fp_dev(f, o_tok * seqs), fp_upload_tokens(f, &d, 1);
    fp_compare(f, larger((size_t)prefill * seqs * o_tok, d.n_state));
}

static void fp_fused_refuses(Footprint *f, const Test *t) {
    static const int bad[][2] = {{128, 128}, {48, 64}, {64, 192}}; /* t_one_launch_refuses' */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Shape sh = t->shape;
        sh.chunk = bad[i][0];
        sh.D_k = bad[i][1];
        DnData d = fp_dn_generate(f, &sh);
        fp_dn_upload(f, &d);
        fp_dev(f, d.n_v), fp_dev(f, d.n_state), fp_host_f(f, d.n_v), fp_host_d(f, d.n_v);
    }
}

static void fp_compare_view(Footprint *f, const Test *t) {
    Shape sh = dn_backend_shape(&t->shape);
    if (is_cpu_backend() && sh.T > 64) sh.T = 64;
    if (is_cpu_backend() && sh.n_seqs > 4) sh.n_seqs = 4;
    DnData d = fp_dn_generate(f, &sh);
    fp_dn_upload(f, &d);
    size_t T = (size_t)sh.T, dk = (size_t)sh.D_k, dv = (size_t)sh.D_v;
    for (int i = 0; i < 5; i++) { /* t_compare's impls[], each checked on two heads */
        static const Layer *const impls[] = {&UNFUSED, &RECURRENT, &TWO_LAUNCH, &AUTO, &ONE_LAUNCH};
        fp_dev(f, d.n_v), fp_dev(f, d.n_state);
        fp_call_layer(f, impls[i], &d);
        fp_host_f(f, d.n_v), fp_host_f(f, d.n_state);
        for (int p = 0; p < 2; p++) {
            fp_host_f(f, T * dk), fp_host_f(f, T * dk), fp_host_f(f, T * dv), fp_host_f(f, T), fp_host_f(f, T);
            fp_host_f(f, T * dv), fp_host_d(f, T * dv), fp_host_d(f, dk * dv);
            f->ref_flops += 8.0 * (double)(T * dk * dv);
        }
    }
    fp_host_f(f, larger(d.n_v, d.n_state)), fp_host_d(f, d.n_v), fp_host_d(f, d.n_state);
    fp_compare(f, larger(d.n_v, d.n_state));
    if (sh.T == 1) fp_dev(f, d.n_v), fp_dev(f, 2 * (size_t)(sh.n_seqs == 1 ? DECODE_LAYERS : 1) * d.n_state);
}

static void footprint(const Test *t, Footprint *f) {
    const struct {
        void (*run)(const Test *, Ctx *);
        const Layer *layer;
    } both_maps[] = {{t_unfused_full, &UNFUSED}, {t_recurrent, &RECURRENT}, {t_one_launch, &ONE_LAUNCH}, {t_two_launch, &TWO_LAUNCH}};
    for (size_t i = 0; i < sizeof both_maps / sizeof both_maps[0]; i++)
        if (t->run == both_maps[i].run) {
            fp_both_maps(f, &t->shape, both_maps[i].layer);
            return;
        }
    if (t->run == t_unfused_single) fp_check_layer(f, &t->shape, &UNFUSED);
    else if (t->run == t_fused_vs_unfused) fp_agree(f, t, &ONE_LAUNCH, &UNFUSED);
    else if (t->run == t_recurrent_vs_one_launch) fp_agree(f, t, &RECURRENT, &ONE_LAUNCH);
    else if (t->run == t_two_launch_vs_one_launch) fp_agree(f, t, &TWO_LAUNCH, &ONE_LAUNCH);
    else if (t->run == t_auto) fp_auto(f, t);
    else if (t->run == t_prefill_then_decode) fp_prefill_then_decode(f, t);
    else if (t->run == t_one_launch_refuses) fp_fused_refuses(f, t);
    else fp_compare_view(f, t);
}

const TestList phase8_tests = {tests, sizeof tests / sizeof tests[0], footprint};

/* Phase 8: the whole layer (all heads, sequences and chunks), final outputs
 * and final state against the token recurrence in double precision. */
#include "phases.h"

#include "deltanet_data.h"
#include "pipeline.h"

typedef void (*LayerFn)(Ctx *c, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                        const float *beta, const float *state_in, float *o, float *state_out);

typedef struct {
    Ctx *c;
    LayerFn layer;
    const KdnShape *s;
    DnDevice in;
    float *o, *state_out;
} LayerCall;

static void run_layer(void *arg) {
    LayerCall *l = arg;
    l->layer(l->c, l->s, l->in.q, l->in.k, l->in.v, l->in.g, l->in.beta, l->in.state, l->o, l->state_out);
}

/* Runs one layer implementation on one shape and compares with the recurrence. */
static void check_layer(const Test *t, Ctx *c, const Shape *shape, LayerFn layer) {
    Shape sh = dn_backend_shape(shape);
    DnData d;
    DnDevice dd;
    dn_generate(c, &sh, &d);
    dn_upload(c, &d, &dd);
    double *o_ref = host_d(c, d.n_v), *s_ref = host_d(c, d.n_state);
    RefInputs in = dn_ref_inputs(&d);
    ref_deltanet_recurrent(&d.rs, &in, o_ref, s_ref);
    float *o = dev_out(c, "o", d.n_v), *s_out = dev_out(c, "state_out", d.n_state);
    LayerCall call = {c, layer, &d.ks, dd, o, s_out};
    double bytes, flops;
    dn_layer_cost(&sh, &bytes, &flops);
    bench_work(c, t->variant, run_layer, &call, bytes, flops);
    dn_describe(c, &sh);
    if (dev_sync(c) != 0) return;
    int rows = sh.T * sh.n_seqs * sh.H_v;
    expect_close(c, sh.head_map ? "o (block map)" : "o (tiled map)", o, o_ref, rows, sh.D_v, t->tol);
    expect_close(c, sh.head_map ? "state (block map)" : "state (tiled map)", s_out, s_ref,
                 sh.n_seqs * sh.H_v * sh.D_v, sh.D_k, t->tol);
}

/* The row's shape with each grouped-head mapping in turn. */
static void check_both_maps(const Test *t, Ctx *c, LayerFn layer) {
    Shape sh = t->shape;
    for (int map = HEAD_MAP_TILED; map <= HEAD_MAP_BLOCK && !test_failed(c); map++) {
        sh.head_map = map;
        check_layer(t, c, &sh, layer);
    }
    sh = dn_backend_shape(&t->shape);
    sh.head_map = HEAD_MAP_BOTH;
    dn_describe(c, &sh);
}

/* The launchers take no test context; adapt them to LayerFn. */
static void recurrent(Ctx *c, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                      const float *beta, const float *state_in, float *o, float *state_out) {
    (void)c;
    kdn_deltanet_recurrent(s, q, k, v, g, beta, state_in, o, state_out);
}

static void t_unfused_single(const Test *t, Ctx *c) { check_layer(t, c, &t->shape, deltanet_unfused); }
static void t_unfused_full(const Test *t, Ctx *c) { check_both_maps(t, c, deltanet_unfused); }
static void t_recurrent(const Test *t, Ctx *c) { check_both_maps(t, c, recurrent); }

#define QWEN(T_, B_) .T = T_, .n_seqs = B_, .H_k = 16, .H_v = 32, .D_k = 128, .D_v = 128, .chunk = 64

static const Test tests[] = {
    {8, "deltanet_single_chunk", "unfused", {2e-4, 1e-3}, {QWEN(64, 1), .state = 1}, t_unfused_single},
    {8, "deltanet_full", "unfused", {2e-4, 1e-3}, {QWEN(200, 2), .state = 1}, t_unfused_full},
    /* token-recurrent kernel: decode (T = 1), a short prompt, odd sizes */
    {8, "recurrent_decode", "fused", {2e-4, 1e-3}, {QWEN(1, 4), .state = 1}, t_recurrent},
    {8, "recurrent_prompt", "fused", {2e-4, 1e-3}, {QWEN(130, 2), .state = 1}, t_recurrent},
    {8, "recurrent_odd_dims", "fused", {2e-4, 1e-3},
     {.T = 37, .n_seqs = 3, .H_k = 2, .H_v = 6, .D_k = 72, .D_v = 40, .chunk = 64, .state = 1}, t_recurrent},
    {8, "recurrent_strong_decay", "fused", {2e-4, 1e-3}, {QWEN(70, 1), .decay = DECAY_STRONG, .state = 1}, t_recurrent},
};

const TestList phase8_tests = {tests, sizeof tests / sizeof tests[0]};

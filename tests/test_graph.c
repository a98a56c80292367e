/* libkdn inside a captured stream, as ggml-cuda captures decode into CUDA
 * graphs (and ggml-hip into HIP graphs). For each call below, through the
 * public API only (a caller's view: libkdn.a):
 *   capture   kdn_gated_delta_net on a stream under capture in the strictest
 *             mode (global: a synchronisation, an allocation, a copy to the
 *             host or a launch on any other stream breaks the capture and
 *             fails here) returns KDN_OK, the capture ends cleanly with at
 *             least one node, and nothing ran (dst keeps its poison);
 *   replay    the graph's replay writes the same bytes as a direct call;
 *   new data  inputs changed in place between replays: the replay reads them
 *             (its bytes equal a direct call on the new inputs and differ
 *             from the old ones), so nothing of the first inputs was frozen
 *             into the graph by a host decision;
 *   streams   two calls on two streams, enqueued back to back and waited for
 *             together, each equal to its call run alone.
 * The first call of the process is made inside the capture, so the
 * library's first-use work (its cached runtime answers) happens there too.
 * The calls: decode at Qwen3-Next's heads (recurrent), a 300-token prompt
 * (chunked, with its workspace), the KDA gate, and an update in place
 * (state_dst = the state input) with 3 snapshots, whose replays advance the
 * state. Exit 0 every check passed, 1 one failed, 77 no device (the CPU
 * build has no streams to capture: it says so and exits 77). */
#include "../kernels/gated_delta_net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(KDN_BACKEND_CPU)
int main(void) {
    printf("test_graph: skipped: the cpu build runs kernels on the host, there is no stream to capture\n");
    return 77;
}
#else
#if defined(KDN_BACKEND_HIP)
#include <hip/hip_runtime_api.h>
#define G(name) hip##name
#else
#include <cuda_runtime_api.h>
#define G(name) cuda##name
#endif

#define CHECK_PROGRAM "test_graph"
#include "check.h"
/* A runtime call that must succeed (the test cannot go on without it). */
#define RT(call)                                                                                  \
    do {                                                                                          \
        G(Error_t) e_ = (call);                                                                   \
        if (e_ != G(Success)) {                                                                   \
            printf("test_graph: %s:%d: %s: %s\n", __FILE__, __LINE__, #call, G(GetErrorString)(e_)); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

typedef struct {
    const char *name;
    int S, H_k, H_v, T, B, K, kda, in_place;
} Shape;

static const Shape shapes[] = {
    {"decode", 128, 16, 32, 1, 2, 1, 0, 0},
    {"prompt", 128, 16, 32, 300, 1, 1, 0, 0},
    {"kda_decode", 128, 8, 16, 1, 1, 1, 1, 0},
    {"in_place_K3", 64, 4, 8, 5, 2, 3, 0, 1},
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

typedef struct {
    const Shape *s;
    size_t n[6], n_dst, n_state_dst; /* floats: q k v g beta state; dst; the snapshot cache (in place) */
    float *in[6], *dst, *state_dst;  /* device */
    float *host[6];                  /* the current inputs */
    void *ws;
    size_t ws_bytes;
    kdn_gdn_call call;
} Case;

static kdn_tensor view(const float *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t = {data, {n0, n1, n2, n3}, {sizeof(float), 0, 0, 0}};
    for (int d = 1; d < 4; d++) t.nb[d] = t.nb[d - 1] * (size_t)t.ne[d - 1];
    return t;
}

static float frand(unsigned *seed) {
    *seed = *seed * 1664525u + 1013904223u;
    return (float)(*seed >> 8) / 16777216.0f;
}

/* Fresh inputs from `seed` into the case's device buffers: q, k of size
 * 1/sqrt(S), v in (-1, 1), log-decays in (-0.5, -0.01), beta in (0.05, 0.95). */
static void fill_inputs(Case *c, unsigned seed) {
    const float a = 1.0f / sqrtf((float)c->s->S);
    const float lo[6] = {-a, -a, -1.0f, -0.5f, 0.05f, -0.1f}, hi[6] = {a, a, 1.0f, -0.01f, 0.95f, 0.1f};
    for (int i = 0; i < 6; i++) {
        for (size_t j = 0; j < c->n[i]; j++) c->host[i][j] = lo[i] + (hi[i] - lo[i]) * frand(&seed);
        RT(G(Memcpy)(c->in[i], c->host[i], c->n[i] * sizeof(float), G(MemcpyHostToDevice)));
    }
}

static void make_case(Case *c, const Shape *s, G(Stream_t) stream) {
    memset(c, 0, sizeof *c);
    c->s = s;
    const size_t tok = (size_t)s->T * s->B, state = (size_t)s->S * s->S * s->H_v * s->B;
    const size_t n[6] = {(size_t)s->S * s->H_k * tok, (size_t)s->S * s->H_k * tok, (size_t)s->S * s->H_v * tok,
                         (size_t)(s->kda ? s->S : 1) * s->H_v * tok, (size_t)s->H_v * tok, state};
    for (int i = 0; i < 6; i++) {
        c->n[i] = n[i];
        c->host[i] = malloc(n[i] * sizeof(float));
        RT(G(Malloc)((void **)&c->in[i], n[i] * sizeof(float)));
    }
    const size_t outputs = (size_t)s->S * s->H_v * tok;
    c->n_dst = s->in_place ? outputs : outputs + (size_t)s->K * state;
    RT(G(Malloc)((void **)&c->dst, c->n_dst * sizeof(float)));
    kdn_gdn_call *k = &c->call;
    k->q = view(c->in[0], s->S, s->H_k, s->T, s->B), k->k = view(c->in[1], s->S, s->H_k, s->T, s->B);
    k->v = view(c->in[2], s->S, s->H_v, s->T, s->B), k->g = view(c->in[3], s->kda ? s->S : 1, s->H_v, s->T, s->B);
    k->beta = view(c->in[4], 1, s->H_v, s->T, s->B), k->state = view(c->in[5], s->S, s->S, s->H_v, s->B);
    k->dst = c->dst, k->K = s->K, k->head_map = KDN_HEAD_MAP_TILED, k->path = KDN_PATH_AUTO;
    k->stream = stream;
    if (s->in_place) { /* slot 0 is the state input itself; slots 1.. follow it in a cache of K slots */
        c->n_state_dst = (size_t)s->K * state;
        RT(G(Free)(c->in[5]));
        RT(G(Malloc)((void **)&c->state_dst, c->n_state_dst * sizeof(float)));
        c->in[5] = c->state_dst;
        k->state.data = c->state_dst;
        k->state_dst = c->state_dst;
        k->state_slot_stride = (int64_t)state;
    }
    if (kdn_gdn_workspace_size(k, &c->ws_bytes) != KDN_OK) {
        printf("test_graph: %s: libkdn refused the call: %s\n", s->name, kdn_gdn_error_detail());
        exit(1);
    }
    if (c->ws_bytes) RT(G(Malloc)(&c->ws, c->ws_bytes));
}

static void free_case(Case *c) {
    for (int i = 0; i < 6; i++) {
        if (c->in[i] != c->state_dst) RT(G(Free)(c->in[i]));
        free(c->host[i]);
    }
    RT(G(Free)(c->dst));
    if (c->state_dst) RT(G(Free)(c->state_dst));
    if (c->ws) RT(G(Free)(c->ws));
}

/* What a call writes, as bytes: dst, then the snapshot cache (in place). */
typedef struct {
    unsigned char *bytes;
    size_t size;
} Out;

static Out read_out(const Case *c) {
    Out o;
    o.size = (c->n_dst + c->n_state_dst) * sizeof(float);
    o.bytes = malloc(o.size);
    RT(G(DeviceSynchronize)());
    RT(G(Memcpy)(o.bytes, c->dst, c->n_dst * sizeof(float), G(MemcpyDeviceToHost)));
    if (c->n_state_dst)
        RT(G(Memcpy)(o.bytes + c->n_dst * sizeof(float), c->state_dst, c->n_state_dst * sizeof(float),
                     G(MemcpyDeviceToHost)));
    return o;
}

static int all_finite(const Out *o) {
    const float *f = (const float *)o->bytes;
    for (size_t i = 0; i < o->size / sizeof(float); i++)
        if (!isfinite(f[i])) return 0;
    return 1;
}

static int same(const Out *a, const Out *b) { return a->size == b->size && memcmp(a->bytes, b->bytes, a->size) == 0; }

/* dst poisoned (NaN bytes): a replay or call that skipped an element shows. */
static void poison(const Case *c) {
    RT(G(Memset)(c->dst, 0xff, c->n_dst * sizeof(float)));
    RT(G(DeviceSynchronize)());
}

static void direct(const Case *c, G(Stream_t) stream) {
    kdn_gdn_call k = c->call;
    k.stream = stream;
    const kdn_status st = kdn_gated_delta_net(&k, c->ws, c->ws_bytes);
    if (st != KDN_OK) printf("test_graph: %s: direct call: %s %s\n", c->s->name, kdn_status_message(st), kdn_gdn_error_detail());
    CHECK(st == KDN_OK);
}

/* The snapshot cache back to the state of `seed`'s inputs (in place: the replays and calls advance it). */
static void reset_state(const Case *c) {
    if (c->n_state_dst)
        RT(G(Memcpy)(c->state_dst, c->host[5], c->n[5] * sizeof(float), G(MemcpyHostToDevice)));
}

static G(GraphExec_t) capture(const Case *c, G(Stream_t) stream) {
    G(Graph_t) graph = NULL;
    G(GraphExec_t) exec = NULL;
    poison(c);
    RT(G(StreamBeginCapture)(stream, G(StreamCaptureModeGlobal)));
    const kdn_status st = kdn_gated_delta_net(&c->call, c->ws, c->ws_bytes);
    const G(Error_t) end = G(StreamEndCapture)(stream, &graph);
    if (st != KDN_OK) printf("test_graph: %s: under capture: %s %s\n", c->s->name, kdn_status_message(st), kdn_gdn_error_detail());
    if (end != G(Success)) printf("test_graph: %s: the capture broke: %s\n", c->s->name, G(GetErrorString)(end));
    CHECK(st == KDN_OK);
    CHECK(end == G(Success));
    if (end != G(Success)) {
        (void)G(GetLastError)();
        return NULL;
    }
    size_t nodes = 0;
    RT(G(GraphGetNodes)(graph, NULL, &nodes));
    CHECK(nodes >= 1);
    Out before = read_out(c);
    const float *f = (const float *)before.bytes;
    int untouched = 1;
    for (size_t i = 0; i < c->n_dst; i++) untouched &= isnan(f[i]);
    CHECK(untouched); /* the capture ran nothing */
    free(before.bytes);
    RT(G(GraphInstantiateWithFlags)(&exec, graph, 0));
    RT(G(GraphDestroy)(graph));
    return exec;
}

/* One replay from the case's current inputs against a direct call on them; returns the replay's bytes. */
static Out replay_vs_direct(const Case *c, G(GraphExec_t) exec, G(Stream_t) stream, const char *when) {
    reset_state(c);
    poison(c);
    RT(G(GraphLaunch)(exec, stream));
    Out g = read_out(c);
    reset_state(c);
    poison(c);
    direct(c, stream);
    Out d = read_out(c);
    if (!same(&g, &d)) printf("test_graph: %s: %s: the replay's bytes differ from the direct call's\n", c->s->name, when);
    CHECK(same(&g, &d));
    CHECK(all_finite(&g));
    free(d.bytes);
    return g;
}

static void test_case(const Shape *s, G(Stream_t) stream) {
    Case c;
    make_case(&c, s, stream);
    fill_inputs(&c, 1u);
    G(GraphExec_t) exec = capture(&c, stream);
    if (exec) {
        Out first = replay_vs_direct(&c, exec, stream, "first inputs");
        fill_inputs(&c, 2u);
        Out second = replay_vs_direct(&c, exec, stream, "inputs changed in place");
        CHECK(!same(&first, &second)); /* the replay read the new inputs */
        if (s->in_place) { /* replays advance the state: two in a row equal two direct calls in a row */
            reset_state(&c);
            RT(G(GraphLaunch)(exec, stream));
            RT(G(GraphLaunch)(exec, stream));
            Out g = read_out(&c);
            reset_state(&c);
            direct(&c, stream);
            direct(&c, stream);
            Out d = read_out(&c);
            CHECK(same(&g, &d));
            free(g.bytes), free(d.bytes);
        }
        free(first.bytes), free(second.bytes);
        RT(G(GraphExecDestroy)(exec));
    }
    free_case(&c);
}

/* Two calls on two streams at once, each against the same call run alone. */
static void test_two_streams(G(Stream_t) s1, G(Stream_t) s2) {
    Case a, b;
    make_case(&a, &shapes[0], s1);
    make_case(&b, &shapes[1], s2);
    fill_inputs(&a, 3u), fill_inputs(&b, 4u);
    poison(&a), direct(&a, s1);
    Out alone_a = read_out(&a);
    poison(&b), direct(&b, s2);
    Out alone_b = read_out(&b);
    poison(&a), poison(&b);
    direct(&a, s1), direct(&b, s2);
    Out both_a = read_out(&a), both_b = read_out(&b);
    CHECK(same(&alone_a, &both_a) && all_finite(&both_a));
    CHECK(same(&alone_b, &both_b) && all_finite(&both_b));
    free(alone_a.bytes), free(alone_b.bytes), free(both_a.bytes), free(both_b.bytes);
    free_case(&a), free_case(&b);
}

int main(void) {
    int n = 0;
    if (G(GetDeviceCount)(&n) != G(Success) || n == 0) {
        printf("test_graph: no device\n");
        return 77;
    }
    G(Stream_t) s1, s2;
    RT(G(StreamCreateWithFlags)(&s1, G(StreamNonBlocking)));
    RT(G(StreamCreateWithFlags)(&s2, G(StreamNonBlocking)));
    for (int i = 0; i < N_SHAPES; i++) test_case(&shapes[i], s1);
    test_two_streams(s1, s2);
    RT(G(StreamDestroy)(s1));
    RT(G(StreamDestroy)(s2));
    if (failures) return 1;
    printf("test_graph (%s): %d calls captured (global mode), replayed equal to direct calls byte for byte, "
           "also after their inputs changed in place; two streams at once equal to each alone\n",
           kdn_gdn_backend(), N_SHAPES);
    return 0;
}
#endif

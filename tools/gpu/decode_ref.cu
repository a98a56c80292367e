// One layer call at a range of prompt lengths, five calls timed the same way
// in one process: a device-to-device copy of the state (the bytes a decode
// step must move), ggml's token-recurrent CUDA kernel (llama.cpp's, compiled
// from a ggml checkout by tools/gpu/decode_ref.sh: never kept in this
// repository) and libkdn's entry point kdn_gated_delta_net (ggml's
// semantics, q scaled by 1/sqrt(S_v) inside; every launch it makes is in the
// time) with the path forced to the recurrent kernel (kdn), to the two-launch
// chunked form (two_launch) and left to the library (auto, KDN_PATH_AUTO), on
// Qwen3-Next heads (H_k = 16, H_v = 32, D = 128, C = 64).
//
// usage: decode_ref LABEL [T:B ...]   (default shapes: 1:1 1:4 1:128 64:1 64:4)
//
// Each call is timed two ways, the L2 flushed (256 MB written) before each run:
//   sync    the harness's way (kdn_time_ms): wait for the flush, record the
//           start event, launch, record the stop event -- the host's launch
//           latency (a few us) is inside the interval, for every call alike;
//   queued  start event, call and stop event enqueued behind the flush with
//           no wait: the interval is the GPU's time for the call alone, what a
//           decode step costs inside a stream of launches (llama.cpp's graph).
// Prints one row per (shape, call, method): median and min over the runs, and
// the largest difference between ggml's and libkdn's o and state (both from
// the same inputs; a check that the two compute the same thing).
// Built by tools/gpu/decode_ref.sh; GGML_GDN_KERNEL names the file holding ggml's
// kernel template, cut out of src/ggml-cuda/gated_delta_net.cu.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gated_delta_net.h"
#include "kdn.h"

// Stand-ins for the few ggml helpers the kernel uses.
static constexpr __device__ __host__ int ggml_cuda_get_physical_warp_size() { return 32; }
__device__ __forceinline__ uint32_t fastmodulo(uint32_t n, uint3 d) { return n % d.x; }
__device__ __forceinline__ uint32_t fastdiv(uint32_t n, uint3 d) { return n / d.x; }
__device__ __forceinline__ void ggml_cuda_pdl_sync() {}
template <int width>
__device__ __forceinline__ float warp_reduce_sum(float x) {
    for (int m = width / 2; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m, width);
    return x;
}
#include GGML_GDN_KERNEL

enum { H_K = 16, H_V = 32, D = 128, CHUNK = 64, REPS = 50 };
static const size_t kFlushBytes = (size_t)256 << 20;

#define CHECK(x)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "decode_ref: %s: %s\n", #x, cudaGetErrorString(e_));            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

typedef struct {
    int T, B, reps;
    float *q, *k, *v, *g, *beta, *state, *o, *state_out, *copy_dst;
    size_t state_bytes;
    void *workspace; // the entry point's, for the largest call (kdn_gdn_workspace_size)
    size_t workspace_bytes;
} Problem;

static float *upload_random(size_t n, float lo, float hi, unsigned *seed) {
    float *h = (float *)malloc(n * sizeof(float)), *d = NULL;
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * (float)(*seed >> 8) / 16777216.0f;
    }
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

// A contiguous ggml tensor [n0, n1, n2, n3] at data.
static kdn_tensor tensor(const float *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t = {data, {n0, n1, n2, n3}, {sizeof(float), 0, 0, 0}};
    for (int d = 1; d < 4; d++) t.nb[d] = t.nb[d - 1] * (size_t)t.ne[d - 1];
    return t;
}

// The entry point's call on the problem: dst = o followed by the final state
// (make_problem allocates them adjacent), ggml's tiled heads, chunk 64.
static kdn_gdn_call call_of(const Problem *p, kdn_path path) {
    kdn_gdn_call c;
    memset(&c, 0, sizeof c);
    c.q = tensor(p->q, D, H_K, p->T, p->B), c.k = tensor(p->k, D, H_K, p->T, p->B);
    c.v = tensor(p->v, D, H_V, p->T, p->B), c.g = tensor(p->g, 1, H_V, p->T, p->B);
    c.beta = tensor(p->beta, 1, H_V, p->T, p->B), c.state = tensor(p->state, D, D, H_V, p->B);
    c.dst = p->o, c.K = 1, c.head_map = KDN_HEAD_MAP_TILED, c.path = path, c.chunk = CHUNK;
    return c;
}

// Unit-norm-ish k and q (entries of size 1/sqrt(D)), log-decays in [-0.5, 0), beta in (0, 1).
static void make_problem(Problem *p, int T, int B) {
    unsigned seed = 12345u;
    const float a = 1.0f / sqrtf((float)D);
    p->T = T, p->B = B;
    // fewer runs where one run is long (T = 16384, B = 4: ~50 ms for ggml's kernel)
    p->reps = (long)T * B >= 16384 ? 10 : (long)T * B >= 1024 ? 20 : REPS;
    p->q = upload_random((size_t)D * H_K * T * B, -a, a, &seed);
    p->k = upload_random((size_t)D * H_K * T * B, -a, a, &seed);
    p->v = upload_random((size_t)D * H_V * T * B, -1.0f, 1.0f, &seed);
    p->g = upload_random((size_t)H_V * T * B, -0.5f, -0.01f, &seed);
    p->beta = upload_random((size_t)H_V * T * B, 0.05f, 0.95f, &seed);
    p->state_bytes = (size_t)D * D * H_V * B * sizeof(float);
    p->state = upload_random(p->state_bytes / sizeof(float), -0.1f, 0.1f, &seed);
    const size_t o_bytes = (size_t)D * H_V * T * B * sizeof(float);
    CHECK(cudaMalloc(&p->o, o_bytes + p->state_bytes));
    p->state_out = p->o + o_bytes / sizeof(float);
    CHECK(cudaMalloc(&p->copy_dst, p->state_bytes));
    const kdn_gdn_call chunked = call_of(p, KDN_PATH_CHUNKED); // the path needing the most workspace
    if (kdn_gdn_workspace_size(&chunked, &p->workspace_bytes) != KDN_OK) {
        fprintf(stderr, "decode_ref: libkdn refused T=%d B=%d\n", T, B);
        exit(1);
    }
    CHECK(cudaMalloc(&p->workspace, p->workspace_bytes));
}

static void free_problem(Problem *p) {
    float *bufs[] = {p->q, p->k, p->v, p->g, p->beta, p->state, p->o, p->copy_dst};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
    cudaFree(p->workspace);
}

static void run_copy(const Problem *p) {
    CHECK(cudaMemcpyAsync(p->copy_dst, p->state, p->state_bytes, cudaMemcpyDeviceToDevice, 0));
}

// ggml's launch for S_v = 128, no KDA, no snapshots: grid (H, n_seqs, S_v / 4) x block (32, 4).
static void run_ggml(const Problem *p) {
    const int64_t T = p->T, sq1 = D, sq2 = (int64_t)D * H_K, sq3 = sq2 * T;
    const int64_t sv1 = D, sv2 = (int64_t)D * H_V, sv3 = sv2 * T, sb1 = 1, sb2 = H_V, sb3 = (int64_t)H_V * T;
    const uint3 neqk1 = make_uint3(H_K, 0, 0), rq3 = make_uint3(1, 0, 0);
    gated_delta_net_cuda<D, false, false><<<dim3(H_V, p->B, D / 4), dim3(32, 4)>>>(
        p->q, p->k, p->v, p->g, p->beta, p->state, p->o, p->state_out, H_V, T, p->B, sq1, sq2, sq3, sv1, sv2, sv3,
        sb1, sb2, sb3, neqk1, rq3, 1.0f / sqrtf((float)D), 0, 1);
    CHECK(cudaGetLastError());
}

static void run_entry(const Problem *p, kdn_path path) {
    const kdn_gdn_call c = call_of(p, path);
    const kdn_status st = kdn_gated_delta_net(&c, p->workspace, p->workspace_bytes);
    if (st != KDN_OK) {
        fprintf(stderr, "decode_ref: libkdn: %s\n", kdn_status_message(st));
        exit(1);
    }
}

static void run_kdn(const Problem *p) { run_entry(p, KDN_PATH_RECURRENT); }
static void run_two_launch(const Problem *p) { run_entry(p, KDN_PATH_CHUNKED); }
static void run_auto(const Problem *p) { run_entry(p, KDN_PATH_AUTO); }

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// Median and min (us) of p->reps cold runs of `call`; queued: no host wait between the flush and the start event.
static void time_call(void (*call)(const Problem *), const Problem *p, void *junk, int queued, float *median,
                      float *min) {
    float us[REPS];
    const int reps = p->reps;
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    call(p); // warm-up
    for (int i = 0; i < reps; i++) {
        CHECK(cudaMemsetAsync(junk, i & 0xff, kFlushBytes, 0));
        if (!queued) CHECK(cudaDeviceSynchronize());
        CHECK(cudaEventRecord(start, 0));
        call(p);
        CHECK(cudaEventRecord(stop, 0));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        us[i] = 1e3f * ms;
    }
    const char *err = kdn_sync();
    if (err) {
        fprintf(stderr, "decode_ref: libkdn: %s\n", err);
        exit(1);
    }
    qsort(us, reps, sizeof us[0], cmp_float);
    *median = 0.5f * (us[reps / 2 - 1] + us[reps / 2]);
    *min = us[0];
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

// Largest |a - b| over n floats of two device buffers, and the largest |b|.
static void max_diff(const float *a, const float *b, size_t n, double *diff, double *scale) {
    float *ha = (float *)malloc(n * sizeof(float)), *hb = (float *)malloc(n * sizeof(float));
    CHECK(cudaMemcpy(ha, a, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hb, b, n * sizeof(float), cudaMemcpyDeviceToHost));
    *diff = 0.0, *scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!(fabs((double)ha[i] - hb[i]) <= *diff)) *diff = fabs((double)ha[i] - hb[i]);
        if (fabs((double)hb[i]) > *scale) *scale = fabs((double)hb[i]);
    }
    free(ha);
    free(hb);
}

// ggml's and one libkdn call's o and state after one call each (relative to
// the largest of ggml's); NaN shows as nan.
static void agreement(Problem *p, void (*call)(const Problem *), double *o_rel, double *s_rel) {
    const size_t n_o = (size_t)D * H_V * p->T * p->B, n_s = p->state_bytes / sizeof(float);
    float *o_ggml, *s_ggml;
    CHECK(cudaMalloc(&o_ggml, n_o * sizeof(float)));
    CHECK(cudaMalloc(&s_ggml, n_s * sizeof(float)));
    run_ggml(p);
    CHECK(cudaMemcpy(o_ggml, p->o, n_o * sizeof(float), cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(s_ggml, p->state_out, n_s * sizeof(float), cudaMemcpyDeviceToDevice));
    CHECK(cudaMemset(p->o, 0xff, n_o * sizeof(float))); // NaN: a row libkdn missed shows
    CHECK(cudaMemset(p->state_out, 0xff, n_s * sizeof(float)));
    call(p);
    const char *err = kdn_sync();
    if (err) {
        fprintf(stderr, "decode_ref: libkdn: %s\n", err);
        exit(1);
    }
    double d, sc;
    max_diff(p->o, o_ggml, n_o, &d, &sc);
    *o_rel = d / sc;
    max_diff(p->state_out, s_ggml, n_s, &d, &sc);
    *s_rel = d / sc;
    cudaFree(o_ggml);
    cudaFree(s_ggml);
}

int main(int argc, char **argv) {
    const char *label = argc > 1 ? argv[1] : "libkdn";
    char msg[256];
    if (kdn_init(msg, sizeof msg)) {
        fprintf(stderr, "decode_ref: no device: %s\n", msg);
        return 77;
    }
    void *junk = NULL;
    CHECK(cudaMalloc(&junk, kFlushBytes));
    static const char *default_shapes[] = {"1:1", "1:4", "1:128", "64:1", "64:4"};
    const char *const *shapes = argc > 2 ? (const char *const *)argv + 2 : default_shapes;
    const int n_shapes = argc > 2 ? argc - 2 : (int)(sizeof default_shapes / sizeof default_shapes[0]);
    // kdn: the recurrent kernel (the name earlier result files use); the
    // libkdn calls' rows carry their own agreement with ggml, the copy's and
    // ggml's the recurrent kernel's
    static const struct {
        const char *name;
        void (*call)(const Problem *);
        int libkdn;
    } calls[] = {{"copy", run_copy, 0}, {"ggml", run_ggml, 0}, {"kdn", run_kdn, 1},
                 {"two_launch", run_two_launch, 1}, {"auto", run_auto, 1}};
    const int N_CALLS = (int)(sizeof calls / sizeof calls[0]);
    printf("build\tT\tB\tcall\tmethod\tmedian_us\tmin_us\to_rel_diff\tstate_rel_diff\n");
    for (int s = 0; s < n_shapes; s++) {
        int T = 0, B = 0;
        char end = 0;
        if (sscanf(shapes[s], "%d:%d%c", &T, &B, &end) != 2 || T < 1 || B < 1) {
            fprintf(stderr, "decode_ref: want T:B with T, B >= 1, got '%s'\n", shapes[s]);
            return 2;
        }
        Problem p;
        make_problem(&p, T, B);
        double o_rel[N_CALLS], s_rel[N_CALLS];
        for (int c = 0; c < N_CALLS; c++)
            agreement(&p, calls[c].libkdn ? calls[c].call : run_kdn, &o_rel[c], &s_rel[c]);
        for (int queued = 0; queued < 2; queued++)
            for (int c = 0; c < N_CALLS; c++) {
                float med, mn;
                time_call(calls[c].call, &p, junk, queued, &med, &mn);
                printf("%s\t%d\t%d\t%s\t%s\t%.2f\t%.2f\t%.2e\t%.2e\n", label, p.T, p.B, calls[c].name,
                       queued ? "queued" : "sync", med, mn, o_rel[c], s_rel[c]);
            }
        free_problem(&p);
    }
    cudaFree(junk);
    return 0;
}

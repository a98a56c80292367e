// One layer call at a range of prompt lengths, each call timed the same way
// in one process: a device-to-device copy of the state (the bytes a decode
// step must move), ggml's token-recurrent CUDA kernel (llama.cpp's, compiled
// from a ggml checkout by tools/gpu/decode_ref.sh: never kept in this
// repository) launched plainly (ggml, GGML_CUDA_PDL=0) and with programmatic
// dependent launch (ggml_pdl, ggml's default on sm_90: its kernel waits for
// the previous grid first), and libkdn's public entry point
// kdn_gated_delta_net (ggml's semantics, q scaled by 1/sqrt(S_v) inside;
// every launch it makes is in the time) with the path forced to the
// recurrent kernel (kdn), to the chunked form (chunked) and
// left to the library (auto), on Qwen3-Next heads (H_k = 16, H_v = 32,
// D = 128, C = 64). The "+nbr" calls follow each layer call with a small
// kernel as ggml's own element-wise kernels are built (it lets the next
// kernel start, then waits for the previous one), launched with PDL where
// the layer call stands for ggml's PDL on (ggml_pdl+nbr, kdn+nbr) and
// plainly where it stands for PDL off (ggml+nbr0, kdn+nbr0): a model's
// graph, where other kernels sit between the layer calls.
//
// usage: decode_ref LABEL [T:B ...]   (default shapes: 1:1 1:4 1:128 64:1 64:4)
//
// Methods (each a row):
//   sync    the L2 flushed (256 MB written), the host waits, start event,
//           call, stop event: the host's launch latency is inside the interval;
//   queued  the same with no wait after the flush: the GPU's time for the
//           call alone behind other work;
//   stream  a burst of calls back to back on one stream, the L2 warm (what
//           test-backend-ops perf times, without its graph): per call;
//   graph   the same burst captured into a CUDA graph (as ggml-cuda
//           captures decode), the replay timed: per call;
//   host    the host's time to enqueue one call (the stream method's
//           loop on the host clock; the GPU runs behind it).
// These three are bounded by time, as test_deltanet --bench is: a burst is
// kStream calls, fewer where they would take over kBurstUs by a probe call
// (at least one), timed up to kStreamReps times, fewer (at least 3) once
// kBudgetUs are spent; decode's calls keep the full bursts, a long prompt's
// shrink, so the whole sweep fits one device session.
// Prints one row per (shape, call, method): median and min over the runs, the
// largest difference between ggml's and libkdn's o and state (both from the
// same inputs; a check that the two compute the same thing), and how many ran:
// runs timed and calls per run (a burst's length; 1 for sync and queued).
// Built by tools/gpu/decode_ref.sh; GGML_GDN_KERNEL names the file holding ggml's
// kernel template, cut out of src/ggml-cuda/gated_delta_net.cu. Only
// libkdn's public API is used (gated_delta_net.h).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gated_delta_net.h"

// Stand-ins for the few ggml helpers the kernel uses.
static constexpr __device__ __host__ int ggml_cuda_get_physical_warp_size() { return 32; }
__device__ __forceinline__ uint32_t fastmodulo(uint32_t n, uint3 d) { return n % d.x; }
__device__ __forceinline__ uint32_t fastdiv(uint32_t n, uint3 d) { return n / d.x; }
// ggml's: wait for the previous grid (a no-op in a plain launch); lets the next one start.
__device__ __forceinline__ void ggml_cuda_pdl_sync() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void ggml_cuda_pdl_lc() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
template <int width>
__device__ __forceinline__ float warp_reduce_sum(float x) {
    for (int m = width / 2; m > 0; m >>= 1) x += __shfl_xor_sync(0xffffffffu, x, m, width);
    return x;
}
#include GGML_GDN_KERNEL

enum { H_K = 16, H_V = 32, D = 128, CHUNK = 64, REPS = 50, kStream = 500, kStreamReps = 7, kMinReps = 3 };
static const double kBurstUs = 25e3, kBudgetUs = 1e6; // a burst's GPU time at most; a method's, past which fewer run
static const size_t kFlushBytes = (size_t)256 << 20;

#define CHECK(x)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "decode_ref: %s: %s\n", #x, cudaGetErrorString(e_));            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

// The neighbour's buffer: one small element-wise op (a residual add's size at decode).
enum { kNbrFloats = 4096 };

typedef struct {
    int T, B, reps;
    float *q, *k, *v, *g, *beta, *state, *o, *state_out, *copy_dst, *nbr;
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
    CHECK(cudaMalloc(&p->nbr, kNbrFloats * sizeof(float)));
    CHECK(cudaMemset(p->nbr, 0, kNbrFloats * sizeof(float)));
    const kdn_gdn_call chunked = call_of(p, KDN_PATH_CHUNKED); // the path needing the most workspace
    if (kdn_gdn_workspace_size(&chunked, &p->workspace_bytes) != KDN_OK) {
        fprintf(stderr, "decode_ref: libkdn refused T=%d B=%d\n", T, B);
        exit(1);
    }
    CHECK(cudaMalloc(&p->workspace, p->workspace_bytes));
}

static void free_problem(Problem *p) {
    float *bufs[] = {p->q, p->k, p->v, p->g, p->beta, p->state, p->o, p->copy_dst, p->nbr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
    cudaFree(p->workspace);
}

static cudaStream_t stream; // every call and timing runs on it (a non-default stream, as ggml's)

static void run_copy(const Problem *p) {
    CHECK(cudaMemcpyAsync(p->copy_dst, p->state, p->state_bytes, cudaMemcpyDeviceToDevice, stream));
}

// A kernel launched with programmatic dependent launch (pdl) or plainly.
template <typename... Params, typename... Args>
static void launch(bool pdl, void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.stream = stream;
    cfg.attrs = &attr, cfg.numAttrs = pdl ? 1 : 0;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// ggml's launch for S_v = 128, no KDA, no snapshots: grid (H, n_seqs, S_v / 4) x block (32, 4).
static void ggml_launch(const Problem *p, bool pdl) {
    const int64_t T = p->T, sq1 = D, sq2 = (int64_t)D * H_K, sq3 = sq2 * T;
    const int64_t sv1 = D, sv2 = (int64_t)D * H_V, sv3 = sv2 * T, sb1 = 1, sb2 = H_V, sb3 = (int64_t)H_V * T;
    const uint3 neqk1 = make_uint3(H_K, 0, 0), rq3 = make_uint3(1, 0, 0);
    launch(pdl, gated_delta_net_cuda<D, false, false>, dim3(H_V, p->B, D / 4), dim3(32, 4), (const float *)p->q,
           (const float *)p->k, (const float *)p->v, (const float *)p->g, (const float *)p->beta,
           (const float *)p->state, p->o, p->state_out, (int64_t)H_V, T, (int64_t)p->B, sq1, sq2, sq3, sv1, sv2,
           sv3, sb1, sb2, sb3, neqk1, rq3, 1.0f / sqrtf((float)D), (int64_t)0, 1);
}
static void run_ggml(const Problem *p) { ggml_launch(p, false); }
static void run_ggml_pdl(const Problem *p) { ggml_launch(p, true); }

// A ggml element-wise kernel's shape: let the next kernel start, wait for the previous one, then work.
__global__ void neighbour(float *x, int n) {
    ggml_cuda_pdl_lc();
    ggml_cuda_pdl_sync();
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}
static void run_neighbour(const Problem *p, bool pdl) {
    launch(pdl, neighbour, dim3(kNbrFloats / 256), dim3(256), p->nbr, (int)kNbrFloats);
}

static void run_entry(const Problem *p, kdn_path path) {
    kdn_gdn_call c = call_of(p, path);
    c.stream = stream;
    const kdn_status st = kdn_gated_delta_net(&c, p->workspace, p->workspace_bytes);
    if (st != KDN_OK) {
        fprintf(stderr, "decode_ref: libkdn: %s (%s)\n", kdn_status_message(st), kdn_gdn_error_detail());
        exit(1);
    }
}

static void run_kdn(const Problem *p) { run_entry(p, KDN_PATH_RECURRENT); }
static void run_chunked(const Problem *p) { run_entry(p, KDN_PATH_CHUNKED); }
static void run_auto(const Problem *p) { run_entry(p, KDN_PATH_AUTO); }
static void run_ggml_pdl_nbr(const Problem *p) { run_ggml_pdl(p), run_neighbour(p, true); }
static void run_ggml_nbr0(const Problem *p) { run_ggml(p), run_neighbour(p, false); }
static void run_kdn_nbr(const Problem *p) { run_auto(p), run_neighbour(p, true); }
static void run_kdn_nbr0(const Problem *p) { run_auto(p), run_neighbour(p, false); }

static void sync_all(void) { CHECK(cudaDeviceSynchronize()); }

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void median_min(float *us, int n, float *median, float *min) {
    qsort(us, n, sizeof us[0], cmp_float);
    *median = n % 2 ? us[n / 2] : 0.5f * (us[n / 2 - 1] + us[n / 2]);
    *min = us[0];
}

static double host_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

enum Method { SYNC, QUEUED, STREAM, GRAPH, HOST, N_METHODS };
static const char *const method_names[N_METHODS] = {"sync", "queued", "stream", "graph", "host"};

// What a timing ran: runs timed, calls per run.
typedef struct {
    int runs, calls;
} Count;

// A burst's length for `call`: kStream calls, fewer where they would take
// over kBurstUs by the GPU time of one warm call, at least one. Once per
// call and shape, so its stream, graph and host rows time the same burst.
static int burst_length(void (*call)(const Problem *), const Problem *p) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    call(p); // warm-up
    CHECK(cudaEventRecord(start, stream));
    call(p);
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    const double us = 1e3 * ms;
    return us * kStream <= kBurstUs ? kStream : us >= kBurstUs ? 1 : (int)(kBurstUs / us);
}

// Bursts of n calls of `call` on the stream, into a graph when m is GRAPH
// (then replayed): per-call median and min, and how many ran.
static Count time_burst(void (*call)(const Problem *), const Problem *p, int n, Method m, float *median,
                        float *min) {
    float us[kStreamReps];
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    cudaGraphExec_t exec = NULL;
    if (m == GRAPH) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed)); // as ggml-cuda captures
        for (int i = 0; i < n; i++) call(p);
        CHECK(cudaStreamEndCapture(stream, &g));
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        CHECK(cudaGraphDestroy(g));
        CHECK(cudaGraphLaunch(exec, stream)); // warm-up
    } else {
        for (int i = 0; i < n; i++) call(p); // warm-up
    }
    sync_all();
    const double t0 = host_us();
    int r = 0;
    while (r < kStreamReps && (r < kMinReps || host_us() - t0 < kBudgetUs)) {
        const double h0 = host_us();
        CHECK(cudaEventRecord(start, stream));
        if (exec) CHECK(cudaGraphLaunch(exec, stream));
        else for (int i = 0; i < n; i++) call(p);
        const double h1 = host_us();
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        us[r++] = m == HOST ? (float)((h1 - h0) / n) : 1e3f * ms / n;
    }
    if (exec) CHECK(cudaGraphExecDestroy(exec));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    median_min(us, r, median, min);
    return (Count){r, n};
}

// Median and min (us) of p->reps cold runs of `call`; queued: no host wait between the flush and the start event.
static void time_cold(void (*call)(const Problem *), const Problem *p, void *junk, int queued, float *median,
                      float *min) {
    float us[REPS];
    const int reps = p->reps;
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    call(p); // warm-up
    for (int i = 0; i < reps; i++) {
        CHECK(cudaMemsetAsync(junk, i & 0xff, kFlushBytes, stream));
        if (!queued) sync_all();
        CHECK(cudaEventRecord(start, stream));
        call(p);
        CHECK(cudaEventRecord(stop, stream));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        us[i] = 1e3f * ms;
    }
    sync_all();
    median_min(us, reps, median, min);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

// burst: the burst's length for the stream, graph and host methods
static Count time_call(void (*call)(const Problem *), const Problem *p, void *junk, int burst, Method m,
                       float *median, float *min) {
    if (m != SYNC && m != QUEUED) return time_burst(call, p, burst, m, median, min);
    time_cold(call, p, junk, m == QUEUED, median, min);
    return (Count){p->reps, 1};
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
    sync_all();
    CHECK(cudaMemcpy(o_ggml, p->o, n_o * sizeof(float), cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(s_ggml, p->state_out, n_s * sizeof(float), cudaMemcpyDeviceToDevice));
    CHECK(cudaMemset(p->o, 0xff, n_o * sizeof(float))); // NaN: a row libkdn missed shows
    CHECK(cudaMemset(p->state_out, 0xff, n_s * sizeof(float)));
    sync_all();
    call(p);
    sync_all();
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
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        fprintf(stderr, "decode_ref: no CUDA device\n");
        return 77;
    }
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *junk = NULL;
    CHECK(cudaMalloc(&junk, kFlushBytes));
    static const char *default_shapes[] = {"1:1", "1:4", "1:128", "64:1", "64:4"};
    const char *const *shapes = argc > 2 ? (const char *const *)argv + 2 : default_shapes;
    const int n_shapes = argc > 2 ? argc - 2 : (int)(sizeof default_shapes / sizeof default_shapes[0]);
    // kdn: the recurrent kernel (the name earlier result files use); the
    // libkdn calls' rows carry their own agreement with ggml, the others the
    // recurrent kernel's; burst: timed by the stream, graph and host methods only
    static const struct {
        const char *name;
        void (*call)(const Problem *);
        int libkdn, burst;
    } calls[] = {{"copy", run_copy, 0, 0},           {"ggml", run_ggml, 0, 0},
                 {"ggml_pdl", run_ggml_pdl, 0, 0},   {"kdn", run_kdn, 1, 0},
                 {"chunked", run_chunked, 1, 0}, {"auto", run_auto, 1, 0},
                 {"ggml_pdl+nbr", run_ggml_pdl_nbr, 0, 1}, {"ggml+nbr0", run_ggml_nbr0, 0, 1},
                 {"kdn+nbr", run_kdn_nbr, 1, 1},     {"kdn+nbr0", run_kdn_nbr0, 1, 1}};
    const int N_CALLS = (int)(sizeof calls / sizeof calls[0]);
    printf("build\tT\tB\tcall\tmethod\tmedian_us\tmin_us\to_rel_diff\tstate_rel_diff\truns\tcalls_per_run\n");
    for (int s = 0; s < n_shapes; s++) {
        int T = 0, B = 0;
        char end = 0;
        if (sscanf(shapes[s], "%d:%d%c", &T, &B, &end) != 2 || T < 1 || B < 1) {
            fprintf(stderr, "decode_ref: want T:B with T, B >= 1, got '%s'\n", shapes[s]);
            return 2;
        }
        Problem p;
        make_problem(&p, T, B);
        // the recurrent kernel's agreement once, for it and every call of no libkdn
        double o_rel[N_CALLS], s_rel[N_CALLS], o_kdn, s_kdn;
        agreement(&p, run_kdn, &o_kdn, &s_kdn);
        for (int c = 0; c < N_CALLS; c++) {
            o_rel[c] = o_kdn, s_rel[c] = s_kdn;
            if (calls[c].libkdn && calls[c].call != run_kdn) agreement(&p, calls[c].call, &o_rel[c], &s_rel[c]);
        }
        int burst[N_CALLS];
        for (int c = 0; c < N_CALLS; c++) burst[c] = burst_length(calls[c].call, &p);
        for (int m = 0; m < N_METHODS; m++)
            for (int c = 0; c < N_CALLS; c++) {
                if (calls[c].burst && (m == SYNC || m == QUEUED)) continue;
                float med, mn;
                const Count n = time_call(calls[c].call, &p, junk, burst[c], (Method)m, &med, &mn);
                printf("%s\t%d\t%d\t%s\t%s\t%.2f\t%.2f\t%.2e\t%.2e\t%d\t%d\n", label, p.T, p.B, calls[c].name,
                       method_names[m], med, mn, o_rel[c], s_rel[c], n.runs, n.calls);
                fflush(stdout); // each row as it is timed: a run cut short keeps what it timed
            }
        free_problem(&p);
    }
    cudaFree(junk);
    return 0;
}

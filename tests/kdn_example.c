/* A caller of libkdn as a user writes one: compiled against the installed
 * header with `pkg-config --cflags --libs kdn` (tests/test_install.sh), it
 * runs one layer through kdn_gated_delta_net and checks the outputs and the
 * final state against a plain host recurrence written here.
 *
 * Built as it is, it runs on the cpu build (tensors in host memory). With
 * -DKDN_EXAMPLE_CUDA (or -DKDN_EXAMPLE_HIP) it is a GPU caller (`make
 * BACKEND=cuda example`): its own stream, and every tensor and the
 * workspace carved from its own allocator (one device arena it owns), the
 * inputs copied in and dst copied out on that stream, the stream
 * synchronised once at the end. Built for another backend than the
 * library's, it says which command builds it and exits 77. */
#include <gated_delta_net.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(KDN_EXAMPLE_CUDA) || defined(KDN_EXAMPLE_HIP)
#ifdef KDN_EXAMPLE_CUDA
#include <cuda_runtime_api.h>
#define GPU(name) cuda##name
#define EXAMPLE_BACKEND "cuda"
#else
#include <hip/hip_runtime_api.h>
#define GPU(name) hip##name
#define EXAMPLE_BACKEND "hip"
#endif
static GPU(Stream_t) stream;

static void gpu_check(GPU(Error_t) e, const char *what) {
    if (e == GPU(Success)) return;
    fprintf(stderr, "kdn_example: %s: %s\n", what, GPU(GetErrorString)(e));
    exit(1);
}
#else
#define EXAMPLE_BACKEND "cpu"
#endif

/* The caller's allocator: one block of device memory (host memory on the
 * cpu build), handed out in 256-byte aligned pieces, freed whole. */
typedef struct {
    char *base;
    size_t used, size;
} Arena;

static void arena_open(Arena *a, size_t size) {
    a->used = 0, a->size = size;
#ifdef GPU
    gpu_check(GPU(Malloc)((void **)&a->base, size), "device arena");
#else
    a->base = malloc(size);
#endif
    if (!a->base) exit(1);
}

static void *arena_take(Arena *a, size_t bytes) {
    size_t at = (a->used + 255) & ~(size_t)255;
    if (at + bytes > a->size) {
        fprintf(stderr, "kdn_example: arena of %zu bytes full\n", a->size);
        exit(1);
    }
    a->used = at + bytes;
    return a->base + at;
}

static void arena_close(Arena *a) {
#ifdef GPU
    gpu_check(GPU(Free)(a->base), "free");
#else
    free(a->base);
#endif
}

/* n floats of host memory copied into the arena (enqueued on the stream). */
static float *to_device(Arena *a, const float *host, size_t n) {
    float *d = arena_take(a, n * 4);
#ifdef GPU
    gpu_check(GPU(MemcpyAsync)(d, host, n * 4, GPU(MemcpyHostToDevice), stream), "copy in");
#else
    memcpy(d, host, n * 4);
#endif
    return d;
}

/* Device -> host on the stream, then waits for everything enqueued on it. */
static void from_device(float *host, const float *d, size_t n) {
#ifdef GPU
    gpu_check(GPU(MemcpyAsync)(host, d, n * 4, GPU(MemcpyDeviceToHost), stream), "copy out");
    gpu_check(GPU(StreamSynchronize)(stream), "synchronise");
#else
    memcpy(host, d, n * 4);
#endif
}

enum { S = 32, HK = 2, HV = 4, B = 2 };

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static kdn_tensor view(const float *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t = {data, {n0, n1, n2, n3}, {4, 4 * (size_t)n0, 4 * (size_t)(n0 * n1), 4 * (size_t)(n0 * n1 * n2)}};
    return t;
}

/* ggml's op on one (sequence, head): S_t = exp(g) S + k (beta (v - exp(g) S^T k))^T, o = S^T q / sqrt(S). */
static double check(int T, kdn_path path) {
    unsigned seed = 7u + (unsigned)T;
    size_t nqk = (size_t)S * HK * T * B, nv = (size_t)S * HV * T * B, ng = (size_t)HV * T * B, ns = (size_t)S * S * HV * B;
    float *q = malloc(nqk * 4), *k = malloc(nqk * 4), *v = malloc(nv * 4), *g = malloc(ng * 4), *beta = malloc(ng * 4),
          *state = malloc(ns * 4), *dst = malloc((nv + ns) * 4);
    for (size_t i = 0; i < nqk; i++) q[i] = frand(&seed) * 0.2f, k[i] = frand(&seed) * 0.2f;
    for (size_t i = 0; i < nv; i++) v[i] = frand(&seed);
    for (size_t i = 0; i < ng; i++) g[i] = -0.5f * (frand(&seed) + 1.0f), beta[i] = 0.5f * (frand(&seed) + 1.0f);
    for (size_t i = 0; i < ns; i++) state[i] = 0.1f * frand(&seed);
    Arena arena, scratch; /* the tensors; the workspace, sized when the call is known */
    arena_open(&arena, (2 * nqk + 2 * nv + 2 * ng + 2 * ns) * 4 + 8 * 256);
    float *d_dst = arena_take(&arena, (nv + ns) * 4);
    kdn_gdn_call call = {view(to_device(&arena, q, nqk), S, HK, T, B), view(to_device(&arena, k, nqk), S, HK, T, B),
                         view(to_device(&arena, v, nv), S, HV, T, B), view(to_device(&arena, g, ng), 1, HV, T, B),
                         view(to_device(&arena, beta, ng), 1, HV, T, B), view(to_device(&arena, state, ns), S, S, HV, B),
                         d_dst, 1, KDN_HEAD_MAP_TILED, path, 0, NULL, NULL, 0, NULL};
#ifdef GPU
    call.stream = stream;
#endif
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&call, &ws);
    arena_open(&scratch, ws + 256);
    void *workspace = ws ? arena_take(&scratch, ws) : NULL;
    if (st == KDN_OK) st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) {
        fprintf(stderr, "kdn_example: %s %s\n", kdn_status_message(st), kdn_gdn_error_detail());
        exit(1);
    }
    from_device(dst, d_dst, nv + ns);
    arena_close(&arena);
    arena_close(&scratch);
    double worst = 0.0, Sd[S * S];
    for (int seq = 0; seq < B; seq++)
        for (int h = 0; h < HV; h++) {
            int hk = h % HK;
            for (int e = 0; e < S * S; e++) Sd[e] = state[((size_t)seq * HV + h) * S * S + e]; /* Sd[j*S + i] = S[i][j] */
            for (int t = 0; t < T; t++) {
                const float *qt = q + (((size_t)seq * T + t) * HK + hk) * S, *kt = k + (((size_t)seq * T + t) * HK + hk) * S;
                const float *vt = v + (((size_t)seq * T + t) * HV + h) * S;
                double a = exp(g[((size_t)seq * T + t) * HV + h]), b = beta[((size_t)seq * T + t) * HV + h];
                for (int j = 0; j < S; j++) {
                    double sk = 0.0, o = 0.0;
                    for (int i = 0; i < S; i++) sk += (Sd[j * S + i] *= a) * kt[i];
                    double d = b * (vt[j] - sk);
                    for (int i = 0; i < S; i++) o += (Sd[j * S + i] += kt[i] * d) * qt[i];
                    o /= sqrt((double)S);
                    double got = dst[(((size_t)seq * T + t) * HV + h) * S + j];
                    worst = fmax(worst, fabs(got - o) / (1.0 + fabs(o)));
                }
            }
            for (int e = 0; e < S * S; e++)
                worst = fmax(worst, fabs(dst[nv + ((size_t)seq * HV + h) * S * S + e] - Sd[e]) / (1.0 + fabs(Sd[e])));
        }
    free(q), free(k), free(v), free(g), free(beta), free(state), free(dst);
    return worst;
}

int main(void) {
    if (strcmp(kdn_gdn_backend(), EXAMPLE_BACKEND) != 0) {
        printf("kdn_example: built for the %s library, linked with the %s one: build it with `make BACKEND=%s "
               "example`, skipped\n", EXAMPLE_BACKEND, kdn_gdn_backend(), kdn_gdn_backend());
        return 77;
    }
#ifdef GPU
    int devices = 0;
    GPU(Error_t) e = GPU(GetDeviceCount)(&devices);
    if (e != GPU(Success) || devices == 0) {
        printf("kdn_example: no %s device (%s), skipped\n", EXAMPLE_BACKEND, GPU(GetErrorString)(e));
        return 77;
    }
    gpu_check(GPU(StreamCreate)(&stream), "stream");
#endif
    const struct { int T; kdn_path path; const char *name; } runs[] = {
        {5, KDN_PATH_AUTO, "auto"}, {150, KDN_PATH_AUTO, "auto"}, {40, KDN_PATH_CHUNKED, "chunked"}};
    int bad = 0;
    for (int r = 0; r < 3; r++) {
        double e = check(runs[r].T, runs[r].path);
        int ok = e <= 1e-5; /* fp32 layer of <= 150 tokens against double; NaN fails */
        printf("kdn_example: T=%d path=%s max rel error %.2e %s\n", runs[r].T, runs[r].name, e, ok ? "ok" : "FAIL");
        bad += !ok;
    }
#ifdef GPU
    gpu_check(GPU(StreamDestroy)(stream), "stream");
#endif
    return bad ? 1 : 0;
}

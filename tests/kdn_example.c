/* A caller of libkdn as a user writes one: compiled against the installed
 * header with `pkg-config --cflags --libs kdn` (tests/test_install.sh), it
 * runs one layer through kdn_gated_delta_net and checks the outputs and the
 * final state against a plain host recurrence written here. CPU build only:
 * on the GPU builds the tensors would have to be device memory (exit 77). */
#include <gated_delta_net.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    kdn_gdn_call call = {view(q, S, HK, T, B), view(k, S, HK, T, B), view(v, S, HV, T, B), view(g, 1, HV, T, B),
                         view(beta, 1, HV, T, B), view(state, S, S, HV, B), dst, 1, KDN_HEAD_MAP_TILED, path, 0, NULL,
                         NULL, 0, NULL};
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&call, &ws);
    void *workspace = ws ? malloc(ws) : NULL;
    if (st == KDN_OK) st = kdn_gated_delta_net(&call, workspace, ws);
    if (st != KDN_OK) {
        fprintf(stderr, "kdn_example: %s\n", kdn_status_message(st));
        exit(1);
    }
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
    free(q), free(k), free(v), free(g), free(beta), free(state), free(dst), free(workspace);
    return worst;
}

int main(void) {
    if (strcmp(kdn_gdn_backend(), "cpu") != 0) {
        printf("kdn_example: %s build: needs device memory, skipped\n", kdn_gdn_backend());
        return 77;
    }
    const struct { int T; kdn_path path; const char *name; } runs[] = {
        {5, KDN_PATH_AUTO, "auto"}, {150, KDN_PATH_AUTO, "auto"}, {40, KDN_PATH_CHUNKED, "chunked"}};
    int bad = 0;
    for (int r = 0; r < 3; r++) {
        double e = check(runs[r].T, runs[r].path);
        int ok = e <= 1e-5; /* fp32 layer of <= 150 tokens against double; NaN fails */
        printf("kdn_example: T=%d path=%s max rel error %.2e %s\n", runs[r].T, runs[r].name, e, ok ? "ok" : "FAIL");
        bad += !ok;
    }
    return bad ? 1 : 0;
}

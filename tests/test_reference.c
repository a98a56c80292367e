/* Proves the reference: the chunked (WY) form equals the token recurrence
 * on many shapes, (I - A) Tinv = I, and one token against a closed form
 * written out here independently of reference/deltanet.c; ggml's op
 * (ref_gdn): the KDA gate against a matrix form written out here, K snapshots
 * against the recurrence over prefixes, q scale. */
#include "../reference/deltanet.h"
#include "../reference/linalg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int checks, failures;
static double largest; /* error of any check, for the closing line */

static void check(int ok, const char *what, const char *shape, double err) {
    checks++;
    if (!(err <= largest)) largest = err;
    if (!ok) {
        failures++;
        printf("test_reference: FAIL %s (%s): error %.3e\n", what, shape, err);
    }
}

/* splitmix64: the test's own deterministic inputs */
static uint64_t rng = 12345;
static double uniform(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}
static float sym(double scale) { return (float)((2.0 * uniform() - 1.0) * scale); }

enum { DECAY_MILD, DECAY_STRONG, DECAY_NONE };

typedef struct {
    float *q, *k, *v, *g, *beta, *state;
} Inputs;

static float *fill(size_t n, double scale) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = sym(scale);
    return x;
}

static Inputs make_inputs(const RefShape *s, int decay) {
    size_t tok = (size_t)s->T * s->n_seqs, gb = tok * s->H_v;
    Inputs in = {fill(tok * s->H_k * s->D_k, 1.0 / sqrt(s->D_k)), fill(tok * s->H_k * s->D_k, 1.0 / sqrt(s->D_k)),
                 fill(tok * s->H_v * s->D_v, 1.0), malloc(gb * sizeof(float)), malloc(gb * sizeof(float)),
                 fill((size_t)s->n_seqs * s->H_v * s->D_v * s->D_k, 0.5)};
    for (size_t i = 0; i < gb; i++) {
        in.beta[i] = (float)uniform();
        in.g[i] = decay == DECAY_STRONG ? (float)(-5.0 - 25.0 * uniform())
                  : decay == DECAY_NONE  ? (float)(-1e-4 * uniform())
                                         : (float)(-0.5 * uniform());
    }
    return in;
}

static void free_inputs(Inputs *in) {
    free(in->q), free(in->k), free(in->v), free(in->g), free(in->beta), free(in->state);
}

static double max_rel_diff(const double *a, const double *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / (1.0 + fabs(b[i]));
        if (!(d <= worst)) worst = d; /* NaN propagates as a failure */
    }
    return worst;
}

static void chunked_equals_recurrent(RefShape s, int decay) {
    char shape[128];
    snprintf(shape, sizeof shape, "T=%d B=%d Hk=%d Hv=%d Dk=%d Dv=%d C=%d map=%d decay=%d", s.T, s.n_seqs, s.H_k,
             s.H_v, s.D_k, s.D_v, s.chunk, s.head_map, decay);
    Inputs in = make_inputs(&s, decay);
    RefInputs ri = {in.q, in.k, in.v, in.g, in.beta, in.state};
    size_t no = (size_t)s.T * s.n_seqs * s.H_v * s.D_v, ns = (size_t)s.n_seqs * s.H_v * s.D_v * s.D_k;
    double *o1 = malloc(no * sizeof *o1), *o2 = malloc(no * sizeof *o2);
    double *s1 = malloc(ns * sizeof *s1), *s2 = malloc(ns * sizeof *s2);
    ref_deltanet_recurrent(&s, &ri, o1, s1);
    ref_deltanet_chunked(&s, &ri, o2, s2);
    double eo = max_rel_diff(o2, o1, no), es = max_rel_diff(s2, s1, ns);
    check(eo <= 1e-12, "chunked o == recurrent o", shape, eo);
    check(es <= 1e-12, "chunked state == recurrent state", shape, es);
    free(o1), free(o2), free(s1), free(s2);
    free_inputs(&in);
}

/* Largest |(X Y)_ij - I_ij| over n x n row-major X, Y. */
static double distance_from_identity(const double *X, const double *Y, int n) {
    double worst = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int p = 0; p < n; p++) acc += X[i * n + p] * Y[p * n + j];
            double d = fabs(acc - (i == j));
            if (!(d <= worst)) worst = d;
        }
    return worst;
}

/* Tinv is the inverse of I - A on both sides, for the Tinv of a realistic chunk. */
static void solve_is_inverse(int n, int dk, int dv, int decay) {
    RefShape s = {n, 1, 1, 1, dk, dv, n, 0};
    Inputs in = make_inputs(&s, decay);
    double *k = malloc(sizeof(double) * n * dk), *v = malloc(sizeof(double) * n * dv), *g = malloc(sizeof(double) * n),
           *b = malloc(sizeof(double) * n), *IA = malloc(sizeof(double) * n * n);
    ref_widen(in.k, k, (size_t)n * dk);
    ref_widen(in.v, v, (size_t)n * dv);
    ref_widen(in.g, g, n);
    ref_widen(in.beta, b, n);
    RefChunk ch = {malloc(sizeof(double) * n), malloc(sizeof(double) * n * n), malloc(sizeof(double) * n * n),
                   malloc(sizeof(double) * n * n), malloc(sizeof(double) * n * dv), malloc(sizeof(double) * n * dk)};
    ref_chunk_intra(n, dk, dv, k, v, g, b, &ch);
    for (int i = 0; i < n * n; i++) IA[i] = (i / n == i % n) - ch.A[i];
    char shape[64];
    snprintf(shape, sizeof shape, "C=%d Dk=%d decay=%d", n, dk, decay);
    double left = distance_from_identity(IA, ch.Tinv, n), right = distance_from_identity(ch.Tinv, IA, n);
    check(left <= 1e-13, "(I - A) Tinv == I", shape, left);
    check(right <= 1e-13, "Tinv (I - A) == I", shape, right);
    free(k), free(v), free(g), free(b), free(IA);
    free(ch.gamma), free(ch.decay), free(ch.A), free(ch.Tinv), free(ch.U), free(ch.W);
    free_inputs(&in);
}

/* One token per sequence, every head, written out from docs/algorithm.md:
 *   S1 = a S0 + k d^T with d = beta (v - a S0^T k), o = S1^T q, a = exp(g),
 * with the ggml layout and the head maps indexed here, not by the reference. */
static void one_token_closed_form(RefShape s) {
    int dk = s.D_k, dv = s.D_v, group = s.H_v / s.H_k;
    Inputs in = make_inputs(&s, DECAY_MILD);
    RefInputs ri = {in.q, in.k, in.v, in.g, in.beta, in.state};
    size_t no = (size_t)s.n_seqs * s.H_v * dv, ns = no * dk;
    double *o = malloc(sizeof(double) * no), *st = malloc(sizeof(double) * ns), worst = 0.0;
    ref_deltanet_recurrent(&s, &ri, o, st);
    for (int seq = 0; seq < s.n_seqs; seq++)
        for (int h = 0; h < s.H_v; h++) {
            int hk = s.head_map == REF_HEAD_MAP_BLOCK ? h / group : h % s.H_k;
            size_t vh = (size_t)seq * s.H_v + h;
            const float *q = in.q + ((size_t)seq * s.H_k + hk) * dk, *k = in.k + ((size_t)seq * s.H_k + hk) * dk;
            const float *v = in.v + vh * dv, *S0 = in.state + vh * dv * dk;
            double a = exp((double)in.g[vh]);
            for (int b = 0; b < dv; b++) {
                /* column b of S is row b of the ggml state */
                double s0k = 0.0, out = 0.0;
                for (int i = 0; i < dk; i++) s0k += (double)S0[b * dk + i] * k[i];
                double d = in.beta[vh] * (v[b] - a * s0k);
                for (int i = 0; i < dk; i++) {
                    double s1 = a * S0[b * dk + i] + (double)k[i] * d;
                    out += s1 * q[i];
                    double e = fabs(s1 - st[vh * dv * dk + (size_t)b * dk + i]);
                    if (!(e <= worst)) worst = e;
                }
                double e = fabs(out - o[vh * dv + b]);
                if (!(e <= worst)) worst = e;
            }
        }
    char shape[96];
    snprintf(shape, sizeof shape, "T=1 B=%d Hk=%d Hv=%d Dk=%d Dv=%d map=%d", s.n_seqs, s.H_k, s.H_v, dk, dv,
             s.head_map);
    check(worst <= 1e-14, "one token == closed form", shape, worst);
    free(o), free(st);
    free_inputs(&in);
}

/* ---- ggml's op (ref_gdn): KDA gate, snapshots, q scale ------------------ */
static double *snapshot_buffer(size_t n) {
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = NAN;
    return x;
}

/* A KDA gate whose rows all equal the scalar gate is the scalar gate. */
static void kda_uniform_is_scalar(RefShape s) {
    Inputs in = make_inputs(&s, DECAY_MILD);
    size_t gb = (size_t)s.T * s.n_seqs * s.H_v, no = gb * s.D_v, ns = (size_t)s.n_seqs * s.H_v * s.D_v * s.D_k;
    float *g_kda = malloc(gb * s.D_k * sizeof *g_kda);
    for (size_t e = 0; e < gb * s.D_k; e++) g_kda[e] = in.g[e / s.D_k];
    RefInputs scalar = {in.q, in.k, in.v, in.g, in.beta, in.state}, kda = scalar;
    kda.g = g_kda;
    double *o1 = malloc(no * sizeof *o1), *o2 = malloc(no * sizeof *o2), *s1 = malloc(ns * 8), *s2 = malloc(ns * 8);
    RefGdnShape a = {s, 0, 1, 0.5}, b = {s, 1, 1, 0.5};
    ref_gdn(&a, &scalar, o1, s1);
    ref_gdn(&b, &kda, o2, s2);
    double e = fmax(max_rel_diff(o2, o1, no), max_rel_diff(s2, s1, ns));
    check(e == 0.0, "KDA gate with equal rows == scalar gate", "T=9 B=2 Hk=1 Hv=2 Dk=8 Dv=4", e);
    free(o1), free(o2), free(s1), free(s2), free(g_kda);
    free_inputs(&in);
}

/* The KDA recurrence as matrices, indexed here: S (D_k x D_v, plain row-major)
 *   S <- (I - beta k k^T) diag(a) S + beta k v^T,   o = q_scale S^T q
 * against ref_gdn on one head (n_seqs = H = 1). */
static void kda_matrix_form(int T, int dk, int dv) {
    RefShape s = {T, 1, 1, 1, dk, dv, 64, REF_HEAD_MAP_TILED};
    Inputs in = make_inputs(&s, DECAY_MILD);
    float *g = fill((size_t)T * dk, 1.0);
    for (int e = 0; e < T * dk; e++) g[e] = (float)(-fabs(g[e]) * 2.0); /* per-row log-decay in [-2, 0] */
    RefInputs ri = {in.q, in.k, in.v, g, in.beta, in.state};
    double q_scale = 1.0 / sqrt(dv), *o = malloc(sizeof(double) * T * dv), *snap = malloc(sizeof(double) * dk * dv);
    RefGdnShape gs = {s, 1, 1, q_scale};
    ref_gdn(&gs, &ri, o, snap);
    double *S = malloc(sizeof(double) * dk * dv), *M = malloc(sizeof(double) * dk * dk),
           *N = malloc(sizeof(double) * dk * dv), worst = 0.0;
    for (int i = 0; i < dk; i++)
        for (int j = 0; j < dv; j++) S[i * dv + j] = in.state[j * dk + i]; /* ggml: S[i][j] at i + j*dk */
    for (int t = 0; t < T; t++) {
        const float *q = in.q + t * dk, *k = in.k + t * dk, *v = in.v + t * dv;
        double beta = in.beta[t];
        for (int i = 0; i < dk; i++)
            for (int p = 0; p < dk; p++) M[i * dk + p] = ((i == p) - beta * k[i] * k[p]) * exp((double)g[t * dk + p]);
        for (int i = 0; i < dk; i++)
            for (int j = 0; j < dv; j++) {
                double acc = beta * k[i] * v[j];
                for (int p = 0; p < dk; p++) acc += M[i * dk + p] * S[p * dv + j];
                N[i * dv + j] = acc;
            }
        double *swap = S;
        S = N, N = swap;
        for (int j = 0; j < dv; j++) {
            double out = 0.0;
            for (int i = 0; i < dk; i++) out += S[i * dv + j] * q[i];
            double e = fabs(q_scale * out - o[t * dv + j]) / (1.0 + fabs(o[t * dv + j]));
            if (!(e <= worst)) worst = e;
        }
    }
    for (int i = 0; i < dk; i++)
        for (int j = 0; j < dv; j++) {
            double e = fabs(S[i * dv + j] - snap[j * dk + i]) / (1.0 + fabs(S[i * dv + j]));
            if (!(e <= worst)) worst = e;
        }
    char shape[64];
    snprintf(shape, sizeof shape, "T=%d Dk=%d Dv=%d", T, dk, dv);
    check(worst <= 1e-12, "KDA recurrence == matrix form", shape, worst);
    free(o), free(snap), free(S), free(M), free(N), free(g);
    free_inputs(&in);
}

/* Snapshot slot j == the final state of the first T - j tokens (j < min(K, T));
 * slots past T untouched; the outputs do not depend on K. */
static void snapshots_are_prefix_states(int T, int K, int kda) {
    RefShape s = {T, 1, 2, 4, 8, 6, 64, REF_HEAD_MAP_BLOCK};
    Inputs in = make_inputs(&s, DECAY_MILD);
    float *g_kda = fill((size_t)T * s.H_v * s.D_k, 0.5);
    for (int e = 0; e < T * s.H_v * s.D_k; e++) g_kda[e] = -fabsf(g_kda[e]);
    RefInputs ri = {in.q, in.k, in.v, kda ? g_kda : in.g, in.beta, in.state};
    size_t no = (size_t)T * s.H_v * s.D_v, slot = (size_t)s.H_v * s.D_v * s.D_k;
    double *o = malloc(no * 8), *o1 = malloc(no * 8), *snaps = snapshot_buffer(K * slot), *one = malloc(slot * 8);
    RefGdnShape gs = {s, kda, K, 0.25};
    ref_gdn(&gs, &ri, o, snaps);
    double worst = 0.0;
    for (int j = 0; j < K; j++) {
        if (j >= T) { /* never written: still NaN */
            for (size_t e = 0; e < slot; e++)
                if (snaps[j * slot + e] == snaps[j * slot + e]) worst = INFINITY;
            continue;
        }
        RefGdnShape prefix = {s, kda, 1, 0.25};
        prefix.s.T = T - j; /* n_seqs = 1: the first T - j tokens are a prefix of every tensor */
        ref_gdn(&prefix, &ri, o1, one);
        worst = fmax(worst, max_rel_diff(snaps + j * slot, one, slot));
        if (j == 0) worst = fmax(worst, max_rel_diff(o, o1, no));
    }
    char shape[64];
    snprintf(shape, sizeof shape, "T=%d K=%d kda=%d", T, K, kda);
    check(worst == 0.0, "snapshot slot j == state of the first T-j tokens", shape, worst);
    free(o), free(o1), free(snaps), free(one), free(g_kda);
    free_inputs(&in);
}

/* o is linear in q: o(q_scale) == q_scale * o(1), the state unchanged. */
static void q_scale_scales_outputs(void) {
    RefShape s = {20, 2, 2, 4, 16, 8, 64, REF_HEAD_MAP_TILED};
    Inputs in = make_inputs(&s, DECAY_MILD);
    RefInputs ri = {in.q, in.k, in.v, in.g, in.beta, in.state};
    size_t no = (size_t)s.T * s.n_seqs * s.H_v * s.D_v, ns = (size_t)s.n_seqs * s.H_v * s.D_v * s.D_k;
    double *o1 = malloc(no * 8), *o2 = malloc(no * 8), *s1 = malloc(ns * 8), *s2 = malloc(ns * 8);
    RefGdnShape a = {s, 0, 1, 1.0}, b = {s, 0, 1, 0.125};
    ref_gdn(&a, &ri, o1, s1);
    ref_gdn(&b, &ri, o2, s2);
    for (size_t e = 0; e < no; e++) o1[e] *= 0.125;
    double e = fmax(max_rel_diff(o2, o1, no), max_rel_diff(s2, s1, ns));
    check(e == 0.0, "o(q_scale) == q_scale o(1)", "T=20 B=2 Hk=2 Hv=4 Dk=16 Dv=8", e);
    free(o1), free(o2), free(s1), free(s2);
    free_inputs(&in);
}

int main(void) {
    /* T around the chunk size (one token, one short of a chunk, a chunk, one
     * over) and ragged multi-chunk lengths, for each chunk size */
    static const int Cs[] = {16, 32, 64};
    for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++) {
        int C = Cs[ci], Ts[] = {1, C - 1, C, C + 1, 2 * C + 5, 3 * C - 1};
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            RefShape s = {Ts[ti], 2, 2, 4, 16, 12, C, REF_HEAD_MAP_TILED};
            chunked_equals_recurrent(s, DECAY_MILD);
        }
        /* strong decay (a = exp(-30) .. exp(-5)) and almost none, over several chunks */
        RefShape many = {3 * C + 7, 1, 1, 2, 32, 16, C, REF_HEAD_MAP_BLOCK};
        chunked_equals_recurrent(many, DECAY_STRONG);
        chunked_equals_recurrent(many, DECAY_NONE);
    }
    /* H_v/H_k = 1..4 under both head maps, with H_k = 1 and 3 */
    for (int hk = 1; hk <= 3; hk += 2)
        for (int ratio = 1; ratio <= 4; ratio++)
            for (int map = REF_HEAD_MAP_TILED; map <= REF_HEAD_MAP_BLOCK; map++) {
                RefShape s = {70, 2, hk, hk * ratio, 16, 8, 32, map};
                chunked_equals_recurrent(s, DECAY_MILD);
            }
    /* the model's head size */
    RefShape big = {130, 1, 1, 2, 128, 128, 64, REF_HEAD_MAP_TILED};
    chunked_equals_recurrent(big, DECAY_MILD);
    solve_is_inverse(64, 128, 32, DECAY_MILD);
    solve_is_inverse(64, 128, 32, DECAY_NONE);
    solve_is_inverse(16, 16, 16, DECAY_STRONG);
    one_token_closed_form((RefShape){1, 1, 1, 1, 128, 128, 64, REF_HEAD_MAP_TILED});
    one_token_closed_form((RefShape){1, 1, 1, 1, 7, 5, 64, REF_HEAD_MAP_TILED});
    for (int map = REF_HEAD_MAP_TILED; map <= REF_HEAD_MAP_BLOCK; map++)
        one_token_closed_form((RefShape){1, 3, 2, 6, 16, 12, 64, map});
    /* ggml's op: KDA gate, snapshots (T below, at and above K), q scale */
    kda_uniform_is_scalar((RefShape){9, 2, 1, 2, 8, 4, 64, REF_HEAD_MAP_TILED});
    kda_matrix_form(12, 16, 8);
    kda_matrix_form(5, 7, 5);
    static const int snap_cases[][2] = {{1, 1}, {1, 4}, {3, 4}, {4, 4}, {9, 2}, {9, 4}};
    for (size_t i = 0; i < sizeof snap_cases / sizeof snap_cases[0]; i++)
        for (int kda = 0; kda <= 1; kda++) snapshots_are_prefix_states(snap_cases[i][0], snap_cases[i][1], kda);
    q_scale_scales_outputs();
    if (failures) {
        printf("test_reference: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test_reference: %d checks passed (largest error %.1e)\n", checks, largest);
    return 0;
}

/* Proves the reference: the chunked (WY) form equals the token recurrence
 * on many shapes, (I - A) Tinv = I, and one token against a closed form
 * written out here independently of reference/deltanet.c. */
#include "../reference/deltanet.h"
#include "../reference/ref.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int checks, failures;

static void check(int ok, const char *what, const char *shape, double err) {
    checks++;
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

/* (I - A) Tinv = I for the Tinv of a realistic chunk. */
static void solve_is_inverse(int n, int dk, int dv) {
    RefShape s = {n, 1, 1, 1, dk, dv, n, 0};
    Inputs in = make_inputs(&s, DECAY_MILD);
    double *k = malloc(sizeof(double) * n * dk), *v = malloc(sizeof(double) * n * dv), *g = malloc(sizeof(double) * n),
           *b = malloc(sizeof(double) * n);
    ref_widen(in.k, k, (size_t)n * dk);
    ref_widen(in.v, v, (size_t)n * dv);
    ref_widen(in.g, g, n);
    ref_widen(in.beta, b, n);
    RefChunk ch = {malloc(sizeof(double) * n), malloc(sizeof(double) * n * n), malloc(sizeof(double) * n * n),
                   malloc(sizeof(double) * n * n), malloc(sizeof(double) * n * dv), malloc(sizeof(double) * n * dk)};
    ref_chunk_intra(n, dk, dv, k, v, g, b, &ch);
    double worst = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = ch.Tinv[i * n + j]; /* (I - A) Tinv = Tinv - A Tinv */
            for (int p = 0; p < n; p++) acc -= ch.A[i * n + p] * ch.Tinv[p * n + j];
            double d = fabs(acc - (i == j));
            if (!(d <= worst)) worst = d;
        }
    char shape[64];
    snprintf(shape, sizeof shape, "C=%d Dk=%d", n, dk);
    check(worst <= 1e-13, "(I - A) Tinv == I", shape, worst);
    free(k), free(v), free(g), free(b);
    free(ch.gamma), free(ch.decay), free(ch.A), free(ch.Tinv), free(ch.U), free(ch.W);
    free_inputs(&in);
}

/* One token, one head, written out from docs/algorithm.md:
 * S1 = a S0 + k d^T with d = beta (v - a S0^T k), o = S1^T q. */
static void one_token_closed_form(int dk, int dv) {
    RefShape s = {1, 1, 1, 1, dk, dv, 64, 0};
    Inputs in = make_inputs(&s, DECAY_MILD);
    RefInputs ri = {in.q, in.k, in.v, in.g, in.beta, in.state};
    double *o = malloc(sizeof(double) * dv), *st = malloc(sizeof(double) * dk * dv);
    ref_deltanet_recurrent(&s, &ri, o, st);
    double a = exp((double)in.g[0]), worst = 0.0;
    for (int b = 0; b < dv; b++) {
        /* column b of S is row b of the ggml state */
        double s0k = 0.0;
        for (int i = 0; i < dk; i++) s0k += (double)in.state[b * dk + i] * in.k[i];
        double d = in.beta[0] * (in.v[b] - a * s0k), out = 0.0;
        for (int i = 0; i < dk; i++) {
            double s1 = a * in.state[b * dk + i] + (double)in.k[i] * d;
            out += s1 * in.q[i];
            double e = fabs(s1 - st[b * dk + i]);
            if (!(e <= worst)) worst = e;
        }
        double e = fabs(out - o[b]);
        if (!(e <= worst)) worst = e;
    }
    check(worst <= 1e-14, "one token == closed form", "T=1", worst);
    free(o), free(st);
    free_inputs(&in);
}

int main(void) {
    static const int Ts[] = {1, 15, 16, 17, 63, 64, 65, 150};
    static const int Cs[] = {16, 32, 64};
    for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++)
        for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
            RefShape s = {Ts[ti], 2, 2, 4, 16, 12, Cs[ci], REF_HEAD_MAP_TILED};
            chunked_equals_recurrent(s, DECAY_MILD);
        }
    for (int ratio = 1; ratio <= 4; ratio++)
        for (int map = REF_HEAD_MAP_TILED; map <= REF_HEAD_MAP_BLOCK; map++) {
            RefShape s = {70, 2, 2, 2 * ratio, 16, 8, 32, map};
            chunked_equals_recurrent(s, DECAY_MILD);
        }
    RefShape strong = {100, 1, 1, 2, 32, 16, 32, 0};
    chunked_equals_recurrent(strong, DECAY_STRONG);
    chunked_equals_recurrent(strong, DECAY_NONE);
    solve_is_inverse(64, 128, 32);
    solve_is_inverse(16, 16, 16);
    one_token_closed_form(128, 128);
    one_token_closed_form(7, 5);
    if (failures) {
        printf("test_reference: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test_reference: %d checks passed\n", checks);
    return 0;
}

/* The KL divergence between two logit dumps of tools/e2e/e2e_logits.c (int32 positions, int32 n_vocab, then
 * positions x n_vocab float32).
 *
 *   e2e_kl BASE.f32 TEST.f32   per position KL(P_base || P_test) of the softmaxes, in double; prints one
 *                              tab-separated line: positions kl_mean kl_p99 kl_max top1_agree rms_dlogit nonfinite
 *
 * C11 and libm only (no llama.cpp): tests/test_e2e_tools.sh checks it on hand-made dumps. Exit status: 0 done,
 * 1 a failure (I/O, different shapes, or a non-finite logit in either dump: counted and reported, never averaged
 * over), 2 bad usage.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what) {
    fprintf(stderr, "e2e_kl: %s\n", what);
    return 1;
}

typedef struct {
    int32_t n_tok, n_vocab;
    float *logits;
} Dump;

static int read_dump(const char *path, Dump *d) {
    FILE *f = fopen(path, "rb");
    if (!f) return fail("cannot open a dump file");
    int ok = fread(&d->n_tok, sizeof d->n_tok, 1, f) == 1 && fread(&d->n_vocab, sizeof d->n_vocab, 1, f) == 1 &&
             d->n_tok > 0 && d->n_vocab > 0;
    const size_t n = ok ? (size_t)d->n_tok * (size_t)d->n_vocab : 0;
    d->logits = ok ? malloc(n * sizeof *d->logits) : NULL;
    ok = ok && d->logits && fread(d->logits, sizeof *d->logits, n, f) == n;
    fclose(f);
    return ok ? 0 : fail("cannot read a dump file");
}

/* log-sum-exp of one row, in double; returns the index of the largest logit through argmax */
static double log_sum_exp(const float *x, int n, int *argmax) {
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += exp((double)x[i] - x[best]);
    *argmax = best;
    return x[best] + log(sum);
}

static int count_nonfinite(const float *x, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !isfinite(x[i]);
    return bad;
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int kl(const char *base_path, const char *test_path) {
    Dump b, t;
    if (read_dump(base_path, &b) || read_dump(test_path, &t)) return 1;
    if (b.n_tok != t.n_tok || b.n_vocab != t.n_vocab) return fail("the dumps have different shapes");
    const int n = b.n_tok, v = b.n_vocab;
    const int nonfinite = count_nonfinite(b.logits, (size_t)n * v) + count_nonfinite(t.logits, (size_t)n * v);
    if (nonfinite) {
        printf("%d\tnan\tnan\tnan\tnan\tnan\t%d\n", n, nonfinite);
        return fail("non-finite logits");
    }
    double *kls = malloc((size_t)n * sizeof *kls);
    if (!kls) return fail("out of memory");
    double kl_sum = 0, d2_sum = 0;
    int agree = 0;
    for (int p = 0; p < n; ++p) {
        const float *xb = b.logits + (size_t)p * v, *xt = t.logits + (size_t)p * v;
        int top_b, top_t;
        const double lb = log_sum_exp(xb, v, &top_b), lt = log_sum_exp(xt, v, &top_t);
        double k = 0;
        for (int i = 0; i < v; ++i) {
            const double log_pb = xb[i] - lb, log_pt = xt[i] - lt;
            k += exp(log_pb) * (log_pb - log_pt);
            d2_sum += ((double)xb[i] - xt[i]) * ((double)xb[i] - xt[i]);
        }
        kls[p] = k;
        kl_sum += k;
        agree += top_b == top_t;
    }
    qsort(kls, (size_t)n, sizeof *kls, compare_doubles);
    printf("%d\t%.6e\t%.6e\t%.6e\t%.6f\t%.6e\t0\n", n, kl_sum / n, kls[(int)(0.99 * (n - 1))], kls[n - 1],
           (double)agree / n, sqrt(d2_sum / ((double)n * v)));
    free(kls);
    free(b.logits);
    free(t.logits);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: e2e_kl BASE.f32 TEST.f32\n");
        return 2;
    }
    return kl(argv[1], argv[2]);
}

/* Realistic Delta-Net inputs (see deltanet_data.h). */
#define _DEFAULT_SOURCE /* sysconf(_SC_NPROCESSORS_ONLN) */
#include "deltanet_data.h"
#include "deltanet_files.h"

#include "../harness/tensors.h"
#include "../reference/linalg.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }

static void l2_normalise_rows(float *x, size_t rows, int d, double scale) {
    for (size_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (int i = 0; i < d; i++) ss += (double)x[r * d + i] * x[r * d + i];
        double f = scale / sqrt(ss + 1e-12);
        for (int i = 0; i < d; i++) x[r * d + i] = (float)(x[r * d + i] * f);
    }
}

/* Per value head (every head its own, however many): A ~ U(0, 16) as
 * Qwen3-Next's A_log init, a time-step bias putting softplus near
 * dt0 ~ log-uniform [1e-3, 1e-1], per-token noise. */
static void fill_log_decay(Ctx *c, const Shape *sh, float *g, size_t tokens) {
    int H = sh->H_v;
    double *A = host_d(c, (size_t)H), *bias = host_d(c, (size_t)H);
    for (int h = 0; h < H; h++) {
        double dt0 = exp(log(1e-3) + (log(1e-1) - log(1e-3)) * rng_uniform(c));
        A[h] = 16.0 * rng_uniform(c);
        bias[h] = log(expm1(dt0)); /* softplus^-1 */
    }
    for (size_t t = 0; t < tokens; t++)
        for (int h = 0; h < H; h++) {
            double x = rng_normal(c), val;
            if (sh->decay == DECAY_STRONG)
                val = -(5.0 + 25.0 * rng_uniform(c));
            else if (sh->decay == DECAY_WEAK)
                val = -1e-4 * rng_uniform(c);
            else if (sh->decay == DECAY_BURSTY) /* long memory cut by a forgetting burst 1 token in 8 */
                val = rng_uniform(c) < 0.125 ? -(5.0 + 25.0 * rng_uniform(c)) : -1e-3 * rng_uniform(c);
            else
                val = -A[h] * softplus(x + bias[h]);
            g[t * H + h] = (float)val;
        }
}

/* q, k, v, g, beta, state read from --load's files into d's arrays (files
 * that do not fit the shape the test runs leave the test: load_floats). */
static void load_inputs(Ctx *c, const Shape *sh, DnData *d) {
    float *dst[6] = {d->q, d->k, d->v, d->g, d->beta, d->state};
    for (int i = 0; i < 6; i++) {
        size_t shape[4];
        int ndim = layer_tensor_shape(sh, layer_inputs[i], shape);
        load_floats(c, layer_inputs[i], dst[i], ndim, shape);
    }
}

static void generate_inputs(Ctx *c, const Shape *sh, DnData *d) {
    size_t tokens = (size_t)sh->T * sh->n_seqs;
    fill_normal(c, d->q, d->n_qk, 0.0, 1.0);
    fill_normal(c, d->k, d->n_qk, 0.0, 1.0);
    l2_normalise_rows(d->q, tokens * sh->H_k, sh->D_k, 1.0 / sqrt((double)sh->D_k));
    l2_normalise_rows(d->k, tokens * sh->H_k, sh->D_k, 1.0);
    fill_normal(c, d->v, d->n_v, 0.0, 1.0);
    for (size_t i = 0; i < d->n_gb; i++) d->beta[i] = (float)(1.0 / (1.0 + exp(-rng_normal(c))));
    fill_log_decay(c, sh, d->g, tokens);
    if (sh->state) fill_normal(c, d->state, d->n_state, 0.0, 0.3 * sh->state);
}

static void dump_inputs(Ctx *c, const Shape *sh, const DnData *d) {
    const float *src[6] = {d->q, d->k, d->v, d->g, d->beta, d->state};
    for (int i = 0; i < 6; i++) {
        size_t shape[4];
        int ndim = layer_tensor_shape(sh, layer_inputs[i], shape);
        dump_input(c, layer_inputs[i], src[i], ndim, shape);
    }
}

void dn_count(const Shape *sh, DnData *d) {
    KdnShape ks = {sh->T, sh->n_seqs, sh->H_k, sh->H_v, sh->D_k, sh->D_v, sh->chunk, sh->head_map};
    RefShape rs = {sh->T, sh->n_seqs, sh->H_k, sh->H_v, sh->D_k, sh->D_v, sh->chunk, sh->head_map};
    d->ks = ks;
    d->rs = rs;
    size_t tokens = (size_t)sh->T * sh->n_seqs;
    d->n_qk = tokens * sh->H_k * sh->D_k;
    d->n_v = tokens * sh->H_v * sh->D_v;
    d->n_gb = tokens * sh->H_v;
    d->n_state = (size_t)sh->n_seqs * sh->H_v * sh->D_v * sh->D_k;
}

void dn_generate(Ctx *c, const Shape *sh, DnData *d) {
    dn_count(sh, d);
    d->q = host_f(c, d->n_qk);
    d->k = host_f(c, d->n_qk);
    d->v = host_f(c, d->n_v);
    d->g = host_f(c, d->n_gb);
    d->beta = host_f(c, d->n_gb);
    d->state = host_f(c, d->n_state);
    if (tensors_load_dir())
        load_inputs(c, sh, d);
    else
        generate_inputs(c, sh, d);
    dump_inputs(c, sh, d);
}

void dn_upload(Ctx *c, const DnData *d, DnDevice *dd) {
    dd->q = dev_in(c, "q", d->q, d->n_qk);
    dd->k = dev_in(c, "k", d->k, d->n_qk);
    dd->v = dev_in(c, "v", d->v, d->n_v);
    dd->g = dev_in(c, "g", d->g, d->n_gb);
    dd->beta = dev_in(c, "beta", d->beta, d->n_gb);
    dd->state = dev_in(c, "state_in", d->state, d->n_state);
}

RefInputs dn_ref_inputs(const DnData *d) {
    RefInputs in = {d->q, d->k, d->v, d->g, d->beta, d->state};
    return in;
}

/* ---- dn_reference: one (sequence, head) pair at a time, on every core ---- */
typedef struct {
    const DnData *d;
    double *o, *state_out;
    int next, failed; /* the next pair to take; a thread without memory */
    pthread_mutex_t lock;
} RefJob;

/* Tokens of pair (seq, h) gathered into one-head arrays, the recurrence run
 * on them and its outputs put back in the layer's layout. */
static void reference_pair(RefJob *job, int seq, int h, float *buf, double *o1) {
    const DnData *d = job->d;
    const KdnShape *s = &d->ks;
    size_t T = (size_t)s->T, dk = (size_t)s->D_k, dv = (size_t)s->D_v, head = dk * dv;
    float *q = buf, *k = q + T * dk, *v = k + T * dk, *g = v + T * dv, *beta = g + T;
    int hk = ref_key_head(&d->rs, h);
    for (size_t t = 0; t < T; t++) {
        size_t tok = (size_t)seq * T + t;
        memcpy(q + t * dk, d->q + (tok * s->H_k + hk) * dk, dk * sizeof(float));
        memcpy(k + t * dk, d->k + (tok * s->H_k + hk) * dk, dk * sizeof(float));
        memcpy(v + t * dv, d->v + (tok * s->H_v + h) * dv, dv * sizeof(float));
        g[t] = d->g[tok * s->H_v + h];
        beta[t] = d->beta[tok * s->H_v + h];
    }
    RefShape one = {s->T, 1, 1, 1, s->D_k, s->D_v, s->chunk, 0};
    RefInputs in = {q, k, v, g, beta, d->state + ((size_t)seq * s->H_v + h) * head};
    ref_deltanet_recurrent(&one, &in, o1, job->state_out + ((size_t)seq * s->H_v + h) * head);
    for (size_t t = 0; t < T; t++)
        memcpy(job->o + (((size_t)seq * T + t) * s->H_v + h) * dv, o1 + t * dv, dv * sizeof(double));
}

static void *reference_worker(void *arg) {
    RefJob *job = arg;
    const KdnShape *s = &job->d->ks;
    size_t T = (size_t)s->T;
    float *buf = malloc((T * (2 * (size_t)s->D_k + s->D_v + 2) + 1) * sizeof(float));
    double *o1 = malloc((T * s->D_v + 1) * sizeof(double));
    for (;;) {
        pthread_mutex_lock(&job->lock);
        int p = job->next++;
        if (!buf || !o1) job->failed = 1;
        int stop = job->failed || p >= s->n_seqs * s->H_v;
        pthread_mutex_unlock(&job->lock);
        if (stop) break;
        reference_pair(job, p / s->H_v, p % s->H_v, buf, o1);
    }
    free(buf);
    free(o1);
    return NULL;
}

void dn_reference(Ctx *c, const DnData *d, double *o, double *state_out) {
    enum { MAX_THREADS = 16 };
    RefJob job = {d, o, state_out, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    long cores = sysconf(_SC_NPROCESSORS_ONLN), pairs = (long)d->ks.n_seqs * d->ks.H_v;
    int n = (int)(cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : cores);
    if (n > pairs) n = (int)pairs;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, reference_worker, &job) != 0) break;
    if (started == 0) reference_worker(&job); /* no thread: this one does it all */
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (job.failed) test_fail(c, "out of host memory for the reference's per-head arrays");
}

double *dn_widen(Ctx *c, const float *x, size_t n) {
    double *y = host_d(c, n);
    ref_widen(x, y, n);
    return y;
}

void dn_expect_layer(Ctx *c, const Shape *sh, const float *o, const double *o_ref, const float *s_out,
                     const double *s_ref, Tol tol) {
    int block = sh->head_map != HEAD_MAP_TILED;
    expect_close(c, block ? "o (block map)" : "o (tiled map)", o, o_ref, sh->T * sh->n_seqs * sh->H_v, sh->D_v, tol);
    expect_close(c, block ? "state (block map)" : "state (tiled map)", s_out, s_ref, sh->n_seqs * sh->H_v * sh->D_v,
                 sh->D_k, tol);
}

void dn_describe_note(Ctx *c, const Shape *sh, const char *note) {
    static const char *const decay[] = {"qwen", "strong", "weak", "bursty"};
    static const char *const map[] = {"tiled", "block", "both"};
    char inputs[320];
    if (tensors_load_dir())
        snprintf(inputs, sizeof inputs, "inputs=%s", tensors_load_dir());
    else if (sh->state > 1)
        snprintf(inputs, sizeof inputs, "decay=%s s0=rand_x%d", decay[sh->decay], sh->state);
    else
        snprintf(inputs, sizeof inputs, "decay=%s s0=%s", decay[sh->decay], sh->state ? "rand" : "zero");
    set_shape_desc(c, "T=%d B=%d Hk=%d Hv=%d Dk=%d Dv=%d C=%d map=%s %s%s", sh->T, sh->n_seqs, sh->H_k, sh->H_v,
                   sh->D_k, sh->D_v, sh->chunk, map[sh->head_map], inputs, note);
}

void dn_describe(Ctx *c, const Shape *sh) { dn_describe_note(c, sh, ""); }

RefChunk dn_ref_chunk(Ctx *c, int n, int D_k, int D_v) {
    RefChunk r;
    r.gamma = host_d(c, n);
    r.decay = host_d(c, (size_t)n * n);
    r.A = host_d(c, (size_t)n * n);
    r.Tinv = host_d(c, (size_t)n * n);
    r.U = host_d(c, (size_t)n * D_v);
    r.W = host_d(c, (size_t)n * D_k);
    return r;
}

/* The CPU build (emulation) runs a quarter of a row's heads, never of heads
 * --set or --load gave. */
Shape dn_backend_shape(const Shape *sh) {
    Shape s = *sh;
    if (is_cpu_backend() && s.H_k % 4 == 0 && !tensors_load_dir() && !set_key_given("H_k") && !set_key_given("H_v")) {
        s.H_k /= 4;
        s.H_v /= 4;
    }
    return s;
}

Shape dn_setup(Ctx *c, const Shape *shape, DnData *d, DnDevice *dd) {
    Shape sh = dn_backend_shape(shape);
    dn_generate(c, &sh, d);
    dn_upload(c, d, dd);
    return sh;
}

Shape dn_chunk_shape(const Shape *sh) {
    Shape s = *sh;
    s.T = sh->chunk;
    s.n_seqs = s.H_k = s.H_v = 1;
    return s;
}

/* Multiply-adds of the chunked form on one chunk of n tokens of one value
 * head: K K^T and Q K^T (2 n^2 D_k), Tinv = (I - A)^-1 by forward
 * substitution (n^3 / 6), U and W (n^2 (D_v + D_k)), W S and Q S
 * (2 n D_k D_v), P D (n^2 D_v), the state update (n D_k D_v). */
static double chunk_macs(double n, double dk, double dv) {
    return 2 * n * n * dk + n * n * n / 6 + n * n * (dv + dk) + 2 * n * dk * dv + n * n * dv + n * dk * dv;
}

void dn_layer_cost(const KdnShape *sh, double *bytes, double *flops) {
    double tokens = (double)sh->T * sh->n_seqs, dk = sh->D_k, dv = sh->D_v;
    double heads = (double)sh->n_seqs * sh->H_v;
    *bytes = 4.0 * (tokens * sh->H_k * dk * 2 + tokens * sh->H_v * (2 * dv + 2) + 2 * heads * dk * dv);
    /* each sequence: T / C full chunks and a tail of T mod C tokens */
    int full = sh->T / sh->chunk, tail = sh->T % sh->chunk;
    *flops = 2.0 * heads * (full * chunk_macs(sh->chunk, dk, dv) + chunk_macs(tail, dk, dv));
}

Work dn_layer_work(const Shape *shape) {
    DnData d;
    Shape sh = dn_backend_shape(shape);
    dn_count(&sh, &d);
    /* S^T k, the update and q S: 4 multiply-adds per state element */
    double flops = 8.0 * (double)d.n_gb * d.ks.D_k * d.ks.D_v;
    Work w = {flops, flops};
    return w;
}

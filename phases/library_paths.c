/* The library's paths as layer rows of the tests (the per-chunk buffers as
 * guarded test buffers), and the reference of one chunk in
 * kdn.h's per-chunk layout (library_paths.h). */
#include "library_paths.h"

#include <math.h>
#include <string.h>

int chunk_count(const KdnShape *s) { return (s->T + s->chunk - 1) / s->chunk; }

void *chunked_prepare(Ctx *c, const KdnShape *s) {
    size_t chunks = (size_t)chunk_count(s) * s->n_seqs * s->H_v, C = (size_t)s->chunk;
    ChunkQuantities *w = (ChunkQuantities *)host_d(c, sizeof(ChunkQuantities) / sizeof(double) + 1);
    w->gamma = dev_out(c, "gamma", chunks * C);
    w->to_end = dev_out(c, "to_end", chunks * C);
    w->Tinv = dev_out(c, "Tinv", chunks * C * C);
    w->U = dev_out(c, "U", chunks * C * s->D_v);
    w->W = dev_out(c, "W", chunks * C * s->D_k);
    w->P = dev_out(c, "P", chunks * C * C);
    return w;
}

/* Each adapter runs the library's dispatch (kdn_layer_run) on the call, with
 * the path it names. */
void deltanet_chunked(void *scratch, const KdnLayerCall *c) { kdn_layer_run(c, KDN_PATH_CHUNKED, scratch); }

void deltanet_auto(void *scratch, const KdnLayerCall *c) { kdn_layer_run(c, KDN_PATH_AUTO, scratch); }

void deltanet_recurrent(void *scratch, const KdnLayerCall *c) {
    (void)scratch;
    kdn_layer_run(c, KDN_PATH_RECURRENT, NULL);
}

RefChunkWork ref_chunk_work(Ctx *c, const KdnShape *s) {
    int C = s->chunk;
    RefChunkWork w;
    w.n = 0;
    w.q = host_d(c, (size_t)C * s->D_k);
    w.k = host_d(c, (size_t)C * s->D_k);
    w.v = host_d(c, (size_t)C * s->D_v);
    w.g = host_d(c, C);
    w.beta = host_d(c, C);
    w.r = dn_ref_chunk(c, C, s->D_k, s->D_v);
    return w;
}

/* n rows of width d, `stride` floats apart, to doubles. */
static void gather(const float *src, size_t stride, int n, int d, double *dst) {
    for (int i = 0; i < n; i++)
        for (int p = 0; p < d; p++) dst[(size_t)i * d + p] = src[i * stride + p];
}

void ref_chunk_of(RefChunkWork *w, const DnData *d, int seq, int h, int ch) {
    const KdnShape *s = &d->ks;
    int t0 = ch * s->chunk, n = s->T - t0 < s->chunk ? s->T - t0 : s->chunk;
    size_t tok = (size_t)seq * s->T + t0, kq = (tok * s->H_k + ref_key_head(&d->rs, h)) * s->D_k;
    size_t qk_stride = (size_t)s->H_k * s->D_k;
    gather(d->q + kq, qk_stride, n, s->D_k, w->q);
    gather(d->k + kq, qk_stride, n, s->D_k, w->k);
    gather(d->v + (tok * s->H_v + h) * s->D_v, (size_t)s->H_v * s->D_v, n, s->D_v, w->v);
    gather(d->g + tok * s->H_v + h, s->H_v, n, 1, w->g);
    gather(d->beta + tok * s->H_v + h, s->H_v, n, 1, w->beta);
    w->n = n;
    ref_chunk_intra(n, s->D_k, s->D_v, w->k, w->v, w->g, w->beta, &w->r);
}

void ref_chunk_place(const RefChunkWork *w, const KdnShape *s, size_t ci, double *gamma, double *to_end,
                     double *Tinv, double *U, double *W, double *P) {
    size_t C = (size_t)s->chunk;
    int n = w->n;
    memcpy(gamma + ci * C, w->r.gamma, n * sizeof(double));
    for (int i = 0; i < n; i++) to_end[ci * C + i] = exp(w->r.gamma[n - 1] - w->r.gamma[i]);
    memcpy(U + ci * C * s->D_v, w->r.U, (size_t)n * s->D_v * sizeof(double));
    memcpy(W + ci * C * s->D_k, w->r.W, (size_t)n * s->D_k * sizeof(double));
    if (Tinv)
        for (int i = 0; i < n; i++) memcpy(Tinv + (ci * C + i) * C, w->r.Tinv + (size_t)i * n, n * sizeof(double));
    if (P)
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) {
                double qk = 0.0;
                for (int p = 0; p < s->D_k; p++) qk += w->q[(size_t)i * s->D_k + p] * w->k[(size_t)j * s->D_k + p];
                P[(ci * C + i) * C + j] = qk * w->r.decay[(size_t)i * n + j];
            }
}


/* Reference gated Delta-Net in double precision (see deltanet.h and
 * docs/algorithm.md). Written for clarity, not speed: the recurrence is the
 * ground truth, the chunked form is checked against it by tests/test_reference.c. */
#include "deltanet.h"

#include "linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ref_key_head(const RefShape *s, int h) { return s->head_map == REF_HEAD_MAP_BLOCK ? h / (s->H_v / s->H_k) : h % s->H_k; }

/* Offsets into ggml-layout tensors. */
static size_t qk_at(const RefShape *s, int seq, int t, int hk) { return (((size_t)seq * s->T + t) * s->H_k + hk) * s->D_k; }
static size_t v_at(const RefShape *s, int seq, int t, int h) { return (((size_t)seq * s->T + t) * s->H_v + h) * s->D_v; }
static size_t gb_at(const RefShape *s, int seq, int t, int h) { return ((size_t)seq * s->T + t) * s->H_v + h; }
static size_t state_at(const RefShape *s, int seq, int h) { return ((size_t)seq * s->H_v + h) * s->D_v * s->D_k; }

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort(); /* the reference has no way to go on without memory */
    return p;
}

/* One token of one head; St is D_v x D_k (row b = column b of S). Key row i
 * of S decays by exp(g[i * g_stride]) (stride 0: ggml's scalar gate; 1: the
 * KDA gate); o = q_scale * S^T q after the update. */
static void recurrent_token(int D_k, int D_v, const float *q, const float *k, const float *v, const float *g,
                            int g_stride, double beta, double q_scale, double *St, double *o) {
    for (int b = 0; b < D_v; b++) {
        double *row = St + (size_t)b * D_k, sk = 0.0;
        for (int i = 0; i < D_k; i++) sk += (row[i] *= exp(g[i * g_stride])) * k[i];
        double d = beta * (v[b] - sk), out = 0.0;
        for (int i = 0; i < D_k; i++) out += (row[i] += k[i] * d) * q[i];
        o[b] = q_scale * out;
    }
}

void ref_gdn(const RefGdnShape *gs, const RefInputs *in, double *o, double *snapshots) {
    const RefShape *s = &gs->s;
    size_t head = (size_t)s->D_k * s->D_v, slot = head * s->H_v * s->n_seqs;
    int g_stride = gs->kda ? 1 : 0, g_row = gs->kda ? s->D_k : 1;
    double *St = xcalloc(head, sizeof *St);
    for (int seq = 0; seq < s->n_seqs; seq++)
        for (int h = 0; h < s->H_v; h++) {
            ref_widen(in->state + state_at(s, seq, h), St, head);
            int hk = ref_key_head(s, h);
            for (int t = 0; t < s->T; t++) {
                recurrent_token(s->D_k, s->D_v, in->q + qk_at(s, seq, t, hk), in->k + qk_at(s, seq, t, hk),
                                in->v + v_at(s, seq, t, h), in->g + gb_at(s, seq, t, h) * g_row, g_stride,
                                in->beta[gb_at(s, seq, t, h)], gs->q_scale, St, o + v_at(s, seq, t, h));
                if (s->T - 1 - t < gs->K)
                    memcpy(snapshots + (size_t)(s->T - 1 - t) * slot + state_at(s, seq, h), St, head * sizeof *St);
            }
            if (s->T == 0) memcpy(snapshots + state_at(s, seq, h), St, head * sizeof *St);
        }
    free(St);
}

void ref_deltanet_recurrent(const RefShape *s, const RefInputs *in, double *o, double *state_out) {
    RefGdnShape gs = {*s, 0, 1, 1.0};
    ref_gdn(&gs, in, o, state_out);
}

void ref_chunk_intra(int n, int D_k, int D_v, const double *k, const double *v, const double *g, const double *beta,
                     RefChunk *out) {
    double acc = 0.0;
    for (int i = 0; i < n; i++) out->gamma[i] = acc += g[i];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double dot = 0.0;
            for (int p = 0; p < D_k; p++) dot += k[i * D_k + p] * k[j * D_k + p];
            out->decay[i * n + j] = j <= i ? exp(out->gamma[i] - out->gamma[j]) : 0.0;
            out->A[i * n + j] = j < i ? -beta[i] * dot * out->decay[i * n + j] : 0.0;
        }
    double *eye = xcalloc((size_t)n * n, sizeof *eye);
    ref_eye(eye, n);
    ref_solve_tri(out->A, eye, out->Tinv, n, n);
    free(eye);
    double *bv = xcalloc((size_t)n * D_v, sizeof *bv), *bk = xcalloc((size_t)n * D_k, sizeof *bk);
    for (int i = 0; i < n; i++) {
        for (int p = 0; p < D_v; p++) bv[i * D_v + p] = beta[i] * v[i * D_v + p];
        for (int p = 0; p < D_k; p++) bk[i * D_k + p] = beta[i] * exp(out->gamma[i]) * k[i * D_k + p];
    }
    ref_gemm(out->Tinv, bv, out->U, n, D_v, n, 0, 0);
    ref_gemm(out->Tinv, bk, out->W, n, D_k, n, 0, 0);
    free(bv);
    free(bk);
}

void ref_chunk_state(int n, int D_k, int D_v, const double *q, const double *k, const RefChunk *ch, const double *St0,
                     double *O, double *St1) {
    size_t head = (size_t)D_k * D_v;
    double *Dl = xcalloc((size_t)n * D_v, sizeof *Dl), *S0 = xcalloc(head, sizeof *S0);
    memcpy(S0, St0, head * sizeof *S0); /* St1 may alias St0 */
    /* Dl = U - W S0, where (W S0)[i][b] = W_i . St0[b] */
    ref_gemm(ch->W, S0, Dl, n, D_v, D_k, 0, 1);
    for (size_t i = 0; i < (size_t)n * D_v; i++) Dl[i] = ch->U[i] - Dl[i];
    for (int i = 0; i < n; i++)
        for (int b = 0; b < D_v; b++) {
            double from_state = 0.0, intra = 0.0;
            for (int p = 0; p < D_k; p++) from_state += q[i * D_k + p] * S0[(size_t)b * D_k + p];
            for (int j = 0; j <= i; j++) {
                double qk = 0.0;
                for (int p = 0; p < D_k; p++) qk += q[i * D_k + p] * k[j * D_k + p];
                intra += qk * ch->decay[i * n + j] * Dl[j * D_v + b];
            }
            O[i * D_v + b] = exp(ch->gamma[i]) * from_state + intra;
        }
    double last = n > 0 ? ch->gamma[n - 1] : 0.0;
    for (int b = 0; b < D_v; b++)
        for (int p = 0; p < D_k; p++) {
            double upd = 0.0;
            for (int j = 0; j < n; j++) upd += exp(last - ch->gamma[j]) * k[j * D_k + p] * Dl[j * D_v + b];
            St1[(size_t)b * D_k + p] = exp(last) * S0[(size_t)b * D_k + p] + upd;
        }
    free(Dl);
    free(S0);
}

/* Copies n token rows of width d, `stride` apart in a ggml tensor, to doubles. */
static void gather(const float *src, size_t stride, int n, int d, double *dst) {
    for (int i = 0; i < n; i++)
        for (int p = 0; p < d; p++) dst[(size_t)i * d + p] = src[i * stride + p];
}

void ref_deltanet_chunked(const RefShape *s, const RefInputs *in, double *o, double *state_out) {
    int C = s->chunk, dk = s->D_k, dv = s->D_v;
    size_t cc = (size_t)C * C, head = (size_t)dk * dv;
    double *q = xcalloc((size_t)C * dk, sizeof *q), *k = xcalloc((size_t)C * dk, sizeof *k);
    double *v = xcalloc((size_t)C * dv, sizeof *v), *g = xcalloc(C, sizeof *g), *beta = xcalloc(C, sizeof *beta);
    double *O = xcalloc((size_t)C * dv, sizeof *O);
    RefChunk ch = {xcalloc(C, sizeof(double)), xcalloc(cc, sizeof(double)), xcalloc(cc, sizeof(double)),
                   xcalloc(cc, sizeof(double)), xcalloc((size_t)C * dv, sizeof(double)),
                   xcalloc((size_t)C * dk, sizeof(double))};
    size_t qk_stride = (size_t)s->H_k * dk, v_stride = (size_t)s->H_v * dv;
    for (int seq = 0; seq < s->n_seqs; seq++)
        for (int h = 0; h < s->H_v; h++) {
            double *St = state_out + state_at(s, seq, h);
            ref_widen(in->state + state_at(s, seq, h), St, head);
            int hk = ref_key_head(s, h);
            for (int t0 = 0; t0 < s->T; t0 += C) {
                int n = s->T - t0 < C ? s->T - t0 : C;
                gather(in->q + qk_at(s, seq, t0, hk), qk_stride, n, dk, q);
                gather(in->k + qk_at(s, seq, t0, hk), qk_stride, n, dk, k);
                gather(in->v + v_at(s, seq, t0, h), v_stride, n, dv, v);
                gather(in->g + gb_at(s, seq, t0, h), s->H_v, n, 1, g);
                gather(in->beta + gb_at(s, seq, t0, h), s->H_v, n, 1, beta);
                ref_chunk_intra(n, dk, dv, k, v, g, beta, &ch);
                ref_chunk_state(n, dk, dv, q, k, &ch, St, O, St);
                for (int i = 0; i < n; i++)
                    memcpy(o + v_at(s, seq, t0 + i, h), O + (size_t)i * dv, dv * sizeof *O);
            }
        }
    free(q), free(k), free(v), free(g), free(beta), free(O);
    free(ch.gamma), free(ch.decay), free(ch.A), free(ch.Tinv), free(ch.U), free(ch.W);
}

/* The unfused Delta-Net pipeline (see pipeline.h). */
#include "pipeline.h"
#include "kernels/ladder.h"

#include <stdio.h>

void chunk_work_alloc(Ctx *c, ChunkWork *w, int C, int D_k, int D_v) {
    size_t cc = (size_t)C * C, ck = (size_t)C * D_k, cv = (size_t)C * D_v, vk = (size_t)D_v * D_k;
    w->C = C;
    w->D_k = D_k;
    w->D_v = D_v;
#define ALLOC(field, n) w->field = dev_out(c, #field, n)
    ALLOC(q, ck); ALLOC(k, ck); ALLOC(v, cv); ALLOC(g, C); ALLOC(beta, C);
    ALLOC(gamma, C); ALLOC(mask, cc); ALLOC(causal, cc);
    ALLOC(k_beta, ck); ALLOC(v_beta, cv); ALLOC(kk, cc); ALLOC(A, cc); ALLOC(X, cc); ALLOC(Tinv, cc);
    ALLOC(exp_gamma, C); ALLOC(to_end, C); ALLOC(total, 1);
    ALLOC(k_bg, ck); ALLOC(U, cv); ALLOC(W, ck); ALLOC(ws, cv); ALLOC(D, cv);
    ALLOC(q_g, ck); ALLOC(o_state, cv); ALLOC(qk, cc); ALLOC(P, cc); ALLOC(o_intra, cv); ALLOC(o, cv);
    ALLOC(k_end, ck); ALLOC(s_upd, vk); ALLOC(s_scaled, vk);
#undef ALLOC
}

void step_attn_pre(ChunkWork *w, int n) {
    kdn_cumsum_sequential(w->g, w->gamma, n, 1);
    kdn_decay_mask(w->gamma, w->mask, n, 1);
    kdn_causal_mask(w->causal, n);
    kdn_broadcast_mul_rows(w->k, w->beta, w->k_beta, n, w->D_k);
    kdn_gemm_nt_naive(w->k_beta, w->k, w->kk, n, n, w->D_k);
    kdn_mul(w->kk, w->mask, w->A, n * n);
    kdn_mul(w->A, w->causal, w->A, n * n);
    kdn_neg(w->A, w->A, n * n);
}

void step_solve(ChunkWork *w, int n) {
    kdn_solve_tri_sequential(w->A, w->A, w->X, n, n);
    kdn_causal_identity(w->X, w->Tinv, n);
}

void step_wy(ChunkWork *w, int n) {
    kdn_broadcast_mul_rows(w->v, w->beta, w->v_beta, n, w->D_v);
    kdn_gemm_nn_naive(w->Tinv, w->v_beta, w->U, n, w->D_v, n);
    kdn_chunk_decays(w->gamma, w->exp_gamma, w->to_end, w->total, n);
    kdn_broadcast_mul_rows(w->k_beta, w->exp_gamma, w->k_bg, n, w->D_k);
    kdn_gemm_nn_naive(w->Tinv, w->k_bg, w->W, n, w->D_k, n);
}

void step_state(ChunkWork *w, float *St, int n) {
    int dk = w->D_k, dv = w->D_v;
    /* the chunk's deltas see the state: D = U - W S0 */
    kdn_gemm_nt_tiled(w->W, St, w->ws, n, dv, dk);
    kdn_sub(w->U, w->ws, w->D, n * dv);
    /* outputs: the decayed state's part plus the causal intra-chunk part */
    kdn_broadcast_mul_rows(w->q, w->exp_gamma, w->q_g, n, dk);
    kdn_gemm_nt_tiled(w->q_g, St, w->o_state, n, dv, dk);
    kdn_gemm_nt_naive(w->q, w->k, w->qk, n, n, dk);
    kdn_mul(w->qk, w->mask, w->P, n * n);
    kdn_gemm_nn_naive(w->P, w->D, w->o_intra, n, dv, n);
    kdn_add(w->o_state, w->o_intra, w->o, n * dv);
    /* state carried to the chunk's end */
    kdn_broadcast_mul_rows(w->k, w->to_end, w->k_end, n, dk);
    kdn_gemm_tn_naive(w->D, w->k_end, w->s_upd, dv, dk, n);
    kdn_scale_by(St, w->total, w->s_scaled, dv * dk);
    kdn_add(w->s_scaled, w->s_upd, St, dv * dk);
}

static int key_head(const KdnShape *s, int h) { return s->head_map ? h / (s->H_v / s->H_k) : h % s->H_k; }

/* One chunk of one (sequence, value head): gather, run every step, scatter. */
static void run_chunk(ChunkWork *w, const KdnShape *s, int seq, int h, int t0, const float *q, const float *k,
                      const float *v, const float *g, const float *beta, float *o, float *St) {
    int n = s->T - t0 < s->chunk ? s->T - t0 : s->chunk;
    long tok = (long)seq * s->T + t0;
    long kq_off = (tok * s->H_k + key_head(s, h)) * s->D_k, v_off = (tok * s->H_v + h) * s->D_v;
    kdn_gather_rows(q + kq_off, w->q, n, s->D_k, (long)s->H_k * s->D_k);
    kdn_gather_rows(k + kq_off, w->k, n, s->D_k, (long)s->H_k * s->D_k);
    kdn_gather_rows(v + v_off, w->v, n, s->D_v, (long)s->H_v * s->D_v);
    kdn_gather_rows(g + tok * s->H_v + h, w->g, n, 1, s->H_v);
    kdn_gather_rows(beta + tok * s->H_v + h, w->beta, n, 1, s->H_v);
    step_attn_pre(w, n);
    step_solve(w, n);
    step_wy(w, n);
    step_state(w, St, n);
    kdn_scatter_rows(w->o, o + v_off, n, s->D_v, (long)s->H_v * s->D_v);
}

void deltanet_unfused(ChunkWork *w, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                      const float *beta, const float *state_in, float *o, float *state_out) {
    size_t head = (size_t)s->D_k * s->D_v;
    kdn_gather_rows(state_in, state_out, s->n_seqs * s->H_v * s->D_v, s->D_k, s->D_k);
    for (int seq = 0; seq < s->n_seqs; seq++)
        for (int h = 0; h < s->H_v; h++) {
            float *St = state_out + ((size_t)seq * s->H_v + h) * head;
            for (int t0 = 0; t0 < s->T; t0 += s->chunk) run_chunk(w, s, seq, h, t0, q, k, v, g, beta, o, St);
        }
}


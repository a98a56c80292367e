/* The unfused Delta-Net: one small kernel per step, chunk by chunk and head
 * by head, as the seed ladder runs it (docs/algorithm.md has the math). The
 * phases call its steps one at a time to check every intermediate. */
#ifndef PIPELINE_H
#define PIPELINE_H

#include "shape.h"
#include "../kernels/kdn.h"
#include "deltanet_data.h"

/* Device scratch for one chunk of n <= C tokens (row-major, token rows). */
typedef struct {
    int C, D_k, D_v;
    float *q, *k, *v, *g, *beta;            /* gathered inputs */
    float *gamma, *mask, *causal;           /* C, C x C, C x C */
    float *k_beta, *v_beta;                 /* C x D_k, C x D_v */
    float *kk, *A;                          /* C x C */
    float *X, *Tinv;                        /* C x C */
    float *exp_gamma, *to_end, *total;      /* C, C, 1 */
    float *k_bg, *U, *W;                    /* C x D_k, C x D_v, C x D_k */
    float *ws, *D;                          /* C x D_v */
    float *q_g, *o_state, *qk, *P, *o_intra, *o; /* C x D_v, C x C ... */
    float *k_end, *s_upd, *s_scaled;        /* C x D_k, D_v x D_k, D_v x D_k */
} ChunkWork;

/* Allocates the scratch as guarded device buffers of the test. */
void chunk_work_alloc(Ctx *c, ChunkWork *w, int C, int D_k, int D_v);

/* gamma = cumsum(g); mask = decay mask; A = -(K_beta K^T) * mask * causal. */
void step_attn_pre(ChunkWork *w, int n);
/* Tinv = (I - A)^-1 as solve((I - A) X = A) + I. */
void step_solve(ChunkWork *w, int n);
/* U = Tinv (beta V); W = Tinv (beta exp(gamma) K). */
void step_wy(ChunkWork *w, int n);
/* The state step of a chunk: D = U - W S0; O = (exp(gamma) Q) S0 + ((Q K^T) * mask) D;
 * St <- exp(gamma_last) St + (exp(gamma_last - gamma) K)^T D, in place. */
void step_state(ChunkWork *w, float *St, int n);

/* The whole layer, unfused: q..state_in in ggml layout on the device; w is
 * scratch from chunk_work_alloc for s->chunk, s->D_k, s->D_v. */
void deltanet_unfused(ChunkWork *w, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                      const float *beta, const float *state_in, float *o, float *state_out);

#endif

/* The unfused Delta-Net: one small kernel per step, chunk by chunk and head
 * by head, as the seed ladder runs it (docs/algorithm.md has the math). The
 * phases call its steps one at a time to check every intermediate. */
#ifndef PIPELINE_H
#define PIPELINE_H

#include "../harness/harness.h"
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

/* The product paths live in the library (kdn.h: kdn_layer_run, the
 * library's dispatch). The tests give them their per-chunk buffers as guarded
 * device buffers of the test, one per quantity (an overrun of one is caught
 * on its own), so that phases 6 and 7 can check each intermediate. */
typedef KdnChunkBuffers ChunkQuantities;
int two_launch_chunks(const KdnShape *s); /* ceil(T / C) */
void *two_launch_prepare(Ctx *c, const KdnShape *s);
/* Layer-row adapters: kdn_layer_run with path CHUNKED, AUTO, RECURRENT
 * (scratch from two_launch_prepare; unused by the last). */
void deltanet_two_launch(void *scratch, const KdnShape *s, const float *q, const float *k, const float *v,
                         const float *g, const float *beta, const float *state_in, float *o, float *state_out);
void deltanet_auto(void *scratch, const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                   const float *beta, const float *state_in, float *o, float *state_out);
void deltanet_recurrent(void *scratch, const KdnShape *s, const float *q, const float *k, const float *v,
                        const float *g, const float *beta, const float *state_in, float *o, float *state_out);

/* Reference side: one chunk's inputs gathered from the ggml tensors (double,
 * token rows) and its ref_chunk_intra, in host scratch reused chunk after
 * chunk (the harness caps a test's host arrays). */
typedef struct {
    int n;                        /* tokens of the chunk last gathered */
    double *q, *k, *v, *g, *beta; /* its inputs */
    RefChunk r;
} RefChunkWork;
RefChunkWork ref_chunk_work(Ctx *c, const KdnShape *s);
void ref_chunk_of(RefChunkWork *w, const DnData *d, int seq, int h, int ch);
/* Copies w's gamma, to_end = exp(gamma_last - gamma), Tinv, U, W and P =
 * (Q K^T) .* decay (Tinv and P skipped where NULL) into chunk ci of padded
 * arrays in kdn.h's layout (zero-initialised: rows past n stay 0). */
void ref_chunk_place(const RefChunkWork *w, const KdnShape *s, size_t ci, double *gamma, double *to_end,
                     double *Tinv, double *U, double *W, double *P);

#endif

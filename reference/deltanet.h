/* Reference gated Delta-Net in double precision (docs/algorithm.md).
 *
 * Tensors use ggml's GGML_OP_GATED_DELTA_NET layout, innermost first:
 *   q, k   [D_k, H_k, T, n_seqs]      v, o  [D_v, H_v, T, n_seqs]
 *   g, beta [H_v, T, n_seqs]          state [D_k, D_v, H_v, n_seqs]
 * One head's state is therefore a row-major D_v x D_k matrix St = S^T
 * (row b holds S[:, b]); every per-head state below uses that layout.
 * Per-chunk matrices are row-major with one row per token. */
#ifndef REF_DELTANET_H
#define REF_DELTANET_H

enum { REF_HEAD_MAP_TILED = 0, REF_HEAD_MAP_BLOCK = 1 };

typedef struct {
    int T, n_seqs, H_k, H_v, D_k, D_v;
    int chunk;    /* chunk size C of the chunked form */
    int head_map; /* value head h reads key head h % H_k (tiled) or h / (H_v/H_k) (block) */
} RefShape;

typedef struct {
    const float *q, *k, *v, *g, *beta, *state; /* state: initial state */
} RefInputs;

int ref_key_head(const RefShape *s, int h);

/* Ground truth: the token-by-token recurrence (ref_gdn with the scalar gate,
 * K = 1, q unscaled). o and state_out in ggml layout. */
void ref_deltanet_recurrent(const RefShape *s, const RefInputs *in, double *o, double *state_out);
/* ggml's GATED_DELTA_NET by the recurrence: q scaled by q_scale (ggml:
 * 1/sqrt(D_v)), g scalar per head and token or per key row (KDA, g then
 * [D_k, H_v, T, n_seqs]: row i of S decays by exp(g[i])), and K state
 * snapshots: slot s (D_k*D_v*H_v*n_seqs doubles each) gets the state after
 * token T-1-s for s < min(K, T) (T = 0: slot 0 the initial state); other
 * slots are not written. */
typedef struct {
    RefShape s; /* chunk unused */
    int kda, K;
    double q_scale;
} RefGdnShape;
void ref_gdn(const RefGdnShape *gs, const RefInputs *in, double *o, double *snapshots);
/* The chunked (WY) form, built from the two per-chunk steps below. */
void ref_deltanet_chunked(const RefShape *s, const RefInputs *in, double *o, double *state_out);

/* Intra-chunk quantities of one head's chunk of n <= C tokens; they do not
 * depend on the state. Arrays are allocated by the caller with these sizes. */
typedef struct {
    double *gamma; /* n       cumulative log-decay inside the chunk */
    double *decay; /* n x n   exp(gamma_i - gamma_j) for j <= i, else 0 */
    double *A;     /* n x n   -beta_i (k_i . k_j) decay_ij for j < i, else 0 */
    double *Tinv;  /* n x n   (I - A)^-1, unit lower triangular */
    double *U;     /* n x D_v Tinv (beta * V) */
    double *W;     /* n x D_k Tinv (beta * exp(gamma) * K) */
} RefChunk;

/* k: n x D_k, v: n x D_v, g, beta: n. */
void ref_chunk_intra(int n, int D_k, int D_v, const double *k, const double *v, const double *g, const double *beta,
                     RefChunk *out);
/* State interaction of that chunk, with St0 the state at its start:
 *   Dl = U - W S0                      (the chunk's deltas, n x D_v)
 *   O  = (exp(gamma) * Q) S0 + ((Q K^T) * decay) Dl
 *   S1 = exp(gamma_last) S0 + (exp(gamma_last - gamma) * K)^T Dl
 * q, k: n x D_k; St0, St1: D_v x D_k; O: n x D_v. St1 may equal St0. */
void ref_chunk_state(int n, int D_k, int D_v, const double *q, const double *k, const RefChunk *ch, const double *St0,
                     double *O, double *St1);

#endif

/* The library's internal C face: the device runtime (backend/runtime.h) and
 * one launcher per product kernel, the kernels the entry point
 * (gated_delta_net.c) and its dispatch (dispatch.c) reach. Launchers only enqueue work: errors (launch
 * or execution) surface at kdn_sync(). The ladder's own kernels are declared
 * in phases/kernels/ladder.h. */
#ifndef KDN_H
#define KDN_H

#include "backend/runtime.h"

#include "gated_delta_net.h" /* kdn_path */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- phase 8: whole-layer kernels --------------------------------------
 * See reference/deltanet.h for the math and ggml's tensor layout. */
typedef struct {
    int T, n_seqs, H_k, H_v, D_k, D_v;
    int chunk;    /* chunk size C */
    int head_map; /* 0: key head = h % H_k (ggml, tiled); 1: h / (H_v / H_k) (block) */
} KdnShape;

/* What a layer kernel takes. Each kernel file defines its table from the
 * constants its code is built on; the library, the tests and the command
 * line ask it instead of restating the numbers. A launcher refuses any other
 * shape (kdn_launch_refused: named at kdn_sync()). */
typedef struct {
    int max_D_k;   /* the largest key dimension */
    int chunks[2]; /* the chunk sizes it is built for ({0, 0}: not chunked) */
} KdnLimits;
extern const KdnLimits kdn_recurrent_limits;  /* kernels/deltanet_recurrent.cpp */
extern const KdnLimits kdn_chunked_limits; /* kernels/chunked_state.cpp */
/* 1 when the kernel is built for chunk size C. */
static inline int kdn_takes_chunk(const KdnLimits *l, int C) {
    return C > 0 && (C == l->chunks[0] || C == l->chunks[1]);
}

/* One call of the layer as the kernels take it: inputs as strided views
 * (rows contiguous; strides in floats for dims 1..3, i.e. head, token,
 * sequence), o scaled by q_scale (ggml's 1/sqrt(S_v) on q: o is linear in q),
 * the scalar or the KDA gate, and K state snapshots. o is contiguous
 * [D_v, H_v, T, n_seqs]; snapshot slot s (slots snap_stride floats apart,
 * each [D_k, D_v, H_v, n_seqs] contiguous) receives the state after token T-1-s for s < min(K, T) (T = 0: slot
 * 0 gets state_in). The recurrent kernel takes every such call; the chunked
 * kernels contiguous q, k, g and beta (v any view), the scalar gate and K = 1
 * (kdn_layer_run: a K > 1 call runs chunked up to its last K tokens, then
 * recurrent). */
typedef struct {
    KdnShape s; /* chunk: the chunked path's C */
    const float *q, *k, *v, *g, *beta, *state_in;
    long q_st[3], k_st[3], v_st[3], g_st[3], beta_st[3];
    float q_scale;
    int kda; /* 0: g is [1, H_v, T, n_seqs]; 1: [D_k, H_v, T, n_seqs], state row i *= exp(g[i]) */
    int K;   /* >= 1 */
    float *o, *snapshots;
    long snap_stride; /* >= D_k*D_v*H_v*n_seqs */
    const kdn_tuning *tuning; /* the dispatch's constants, checked (kdn_tuning_check); NULL: the built-in ones */
} KdnLayerCall;
/* The call of contiguous ggml tensors: unscaled q, scalar gate, K = 1
 * (gated_delta_net.c). */
KdnLayerCall kdn_layer_contiguous(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                                  const float *beta, const float *state_in, float *o, float *state_out);
/* Token-recurrent kernel: every head and sequence in one launch
 * (deltanet_recurrent.cpp, as the next one). */
void kdn_deltanet_recurrent_call(const KdnLayerCall *c);
/* The same on contiguous tensors (kdn_layer_contiguous). */
void kdn_deltanet_recurrent(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                            const float *beta, const float *state_in, float *o, float *state_out);

/* dst (contiguous [ne0, ne1, ne2, ne3]) = src, a view with contiguous rows
 * and strides st[0..2] (floats) for dims 1..3 (gather.cpp). */
void kdn_gather_strided(const float *src, const long ne[4], const long st[3], float *dst);

/* Chunked form, on a KdnLayerCall c with the scalar gate and K = 1: q,
 * k, g and beta contiguous [., H, T, n_seqs]; v any view with contiguous
 * rows (c->v_st: llama.cpp's v is a slice of the convolution's output, read
 * in place). n_chunks = ceil(T / C); chunk index
 * ci = (seq * H_v + h) * n_chunks + c. Per chunk, the intra-chunk quantities
 * (reference/deltanet.h's RefChunk, row-major, token rows; rows past the
 * chunk's length n are zero):
 *   gamma [ci][C]   to_end [ci][C] = exp(gamma_last - gamma_i)   Tinv [ci][C][C]
 *   U [ci][C][D_v]   W [ci][C][D_k]
 *   P [ci][C][C] = (q_i . k_j) exp(gamma_i - gamma_j) for j <= i, else 0
 * (to_end is taken from gamma in double inside the kernel: the state pass
 * would lose u |gamma| of each exponent taking it from the float gamma) */
typedef struct {
    float *gamma, *to_end, *Tinv, *U, *W, *P; /* [ci][C] x 2, [ci][C][C], [ci][C][D_v], [ci][C][D_k], [ci][C][C] */
    float *state_mid; /* K > 1 (kdn_gated_delta_net's workspace only): [D_k, D_v, H_v], the state after one
                         sequence's chunked tokens; NULL from kdn_chunk_buffers_carve */
} KdnChunkBuffers;
/* 1) every chunk of every head and sequence in parallel, one launch: reads
 * c's q, k, v, g, beta, writes b (chunked_intra.cpp). */
void kdn_chunked_intra(const KdnLayerCall *c, const KdnChunkBuffers *b);
/* 2) chunks c0 <= c < c1 of every head and sequence, one launch: the outputs
 * of those chunks' tokens (times c->q_scale) and the state carried through
 * them, from c's q, k and b. c->state_in (ggml layout) is the state at chunk
 * c0's start; c->snapshots (which may be the same buffer) receives the state
 * after chunk c1 - 1; c->o is written for the tokens of chunks c0..c1-1 only
 * (chunked_state.cpp, as the next one). */
void kdn_chunked_state(const KdnLayerCall *c, int c0, int c1, const KdnChunkBuffers *b);

/* The chunk size of the fewest state-pass rounds (a round: the workgroups the
 * device runs at once): 64 when the C = 64 pass's workgroups for shape s
 * (C ignored) fit one round, else 32, whose pass holds more workgroups per
 * gfx906 CU (3 against 2). */
int kdn_chunked_fewest_rounds_chunk(const KdnShape *s);

/* ---- the library's dispatch (kernels/dispatch.c) ---------------------------
 * kdn_gated_delta_net (gated_delta_net.h) checks a call, stages the views
 * the chunked kernels cannot read, and ends in kdn_layer_run; the tests,
 * benchmarks and tools run the same function on contiguous tensors, so what
 * they time is what the library launches. */
/* Device bytes of the buffers (each 256-byte aligned when workspace is) and
 * their places in a workspace of that size. */
size_t kdn_chunk_buffers_bytes(const KdnShape *s);
void kdn_chunk_buffers_carve(void *workspace, const KdnShape *s, KdnChunkBuffers *b);
/* KDN_OK when t can steer a call on this build (kernels/tuning.c): its
 * version, its backend, its chunk and rows in range; the device is checked
 * by kdn_tuning_load only. */
kdn_status kdn_tuning_check(const kdn_tuning *t);
/* 1 when c runs the chunked kernels under `path`: scalar gate, D_k <= 128, K = 1 or T > K, and either
 * path CHUNKED or path AUTO past kdn_tuning_recurrent_max_t(c->tuning, n_seqs) tokens; else 0 (the
 * recurrent kernel). */
int kdn_layer_chunked(const KdnLayerCall *c, kdn_path path);
/* Enqueues the layer: the recurrent kernel, or the two chunked launches
 * (kdn_chunked_intra, kdn_chunked_state over all chunks) on inputs
 * they read in place, with the per-chunk buffers b (unused on the recurrent
 * path). K > 1, chunked: per sequence, the two chunked launches over its
 * tokens but the last K (their state into b->state_mid), then the recurrent
 * kernel over the last K from there, storing the K snapshots. */
void kdn_layer_run(const KdnLayerCall *c, kdn_path path, const KdnChunkBuffers *b);

#ifdef __cplusplus
}
#endif
#endif

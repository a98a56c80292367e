/* The C face of the kernels: the device runtime the harness needs and one
 * launcher per kernel. Matrices are row-major; "rows x cols" below. Launchers
 * only enqueue work: errors (launch or execution) surface at kdn_sync(). */
#ifndef KDN_H
#define KDN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device runtime ---------------------------------------------------- */
const char *kdn_backend(void);       /* "hip", "cuda" or "cpu" */
const char *kdn_target(void);        /* e.g. "gfx906", "sm_90", "host-wave64" */
/* 0 when a device is usable; otherwise fills msg with why not. */
int kdn_init(char *msg, size_t msg_size);
const char *kdn_device_name(void);
int kdn_device_count(void);
/* Bytes of memory of the device kdn_init chose (after kdn_init); 0 on the
 * CPU build, whose device memory is host memory. */
size_t kdn_device_memory(void);
void *kdn_malloc(size_t bytes);      /* NULL on failure */
void kdn_free(void *p);
int kdn_upload(void *dst, const void *src, size_t bytes);
int kdn_download(void *dst, const void *src, size_t bytes);
/* Device-to-device copy, enqueued like a kernel (the runtime's own copy:
 * the bandwidth reference of --bench). */
int kdn_copy(void *dst, const void *src, size_t bytes);
/* Waits for all queued work. Returns NULL when everything succeeded, else a
 * message naming the failing kernel; the error is consumed. */
const char *kdn_sync(void);
/* Kernels of this host thread are enqueued on `stream` (hipStream_t /
 * cudaStream_t; NULL: the default stream; kept but unused on the cpu build)
 * from now on; returns the previous one. */
void *kdn_set_stream(void *stream);

/* ---- timing (--bench) ---------------------------------------------------- */
long kdn_launch_count(void);       /* kernel launches enqueued so far */
/* Waits for earlier work, then returns the milliseconds work(arg) takes on
 * the device (GPU events; on the CPU build a host clock: emulation). */
double kdn_time_ms(void (*work)(void *arg), void *arg);
/* Evicts the last-level cache by writing kdn_flush_bytes() bytes (GPU: a
 * buffer larger than it), so a timed run reads its inputs from memory;
 * nothing on the CPU build (0 bytes). */
void kdn_flush_cache(void);
size_t kdn_flush_bytes(void);

/* ---- phase 1: element-wise (n elements) -------------------------------- */
void kdn_sigmoid(const float *x, float *y, int n);
void kdn_exp(const float *x, float *y, int n);
/* y = e^g as every layer kernel computes a decay factor (decay.h: kdn_decay) */
void kdn_decay_factors(const float *g, float *y, int n);
void kdn_neg(const float *x, float *y, int n);
void kdn_scale(const float *x, float *y, float s, int n);
void kdn_add(const float *a, const float *b, float *y, int n);
void kdn_sub(const float *a, const float *b, float *y, int n);
void kdn_mul(const float *a, const float *b, float *y, int n);
/* y[r][c] = a[r][c] * v[r]   (rows x cols; one factor per row) */
void kdn_broadcast_mul_rows(const float *a, const float *v, float *y, int rows, int cols);
/* Inclusive prefix sums of `count` independent segments of length n. */
void kdn_cumsum_sequential(const float *x, float *y, int n, int count);
void kdn_cumsum_wave_scan(const float *x, float *y, int n, int count);

/* ---- phase 2: triangular (n x n unless stated) ------------------------- */
/* y = x with entries above diagonal `diag` zeroed (diag 0 keeps the diagonal) */
void kdn_tril(const float *x, float *y, int n, int diag);
void kdn_causal_mask(float *y, int n);   /* 1 where col < row, else 0 */
void kdn_eye(float *y, int n);
/* Solve (I - A) X = B, A strictly lower triangular n x n, B and X n x k. */
void kdn_solve_tri_sequential(const float *A, const float *B, float *X, int n, int k);
/* The same solve by one workgroup per 64 right-hand sides; n <= 64. */
void kdn_solve_tri_parallel(const float *A, const float *B, float *X, int n, int k);
/* y = strict lower part of x plus the identity */
void kdn_causal_identity(const float *x, float *y, int n);
void kdn_transpose(const float *x, float *y, int rows, int cols);

/* ---- phase 3: GEMMs  C (M x N) ----------------------------------------- */
void kdn_gemm_nn_naive(const float *A, const float *B, float *C, int M, int N, int K); /* A MxK, B KxN */
void kdn_gemm_nt_naive(const float *A, const float *B, float *C, int M, int N, int K); /* A MxK, B NxK */
void kdn_gemm_tn_naive(const float *A, const float *B, float *C, int M, int N, int K); /* A KxM, B KxN */
void kdn_gemm_nt_tiled(const float *A, const float *B, float *C, int M, int N, int K);

/* ---- phases 4-7: chunk-level steps (n tokens, d features) -------------- */
/* mask[i][j] = exp(gamma_i - gamma_j) for j <= i, else 0; `count` masks. */
void kdn_decay_mask(const float *gamma, float *mask, int n, int count);
/* A = -(K_beta K^T) * mask below the diagonal, 0 elsewhere (n x n). */
void kdn_attn_matrix(const float *k_beta, const float *k, const float *mask, float *A, int n, int d);
/* exp(gamma_i), exp(gamma_last - gamma_i) (n each) and exp(gamma_last) (1). */
void kdn_chunk_decays(const float *gamma, float *exp_gamma, float *to_end, float *total, int n);
void kdn_scale_by(const float *x, const float *s, float *y, int n); /* y = x * s[0] */
/* Strided rows <-> contiguous rows x cols: row r of the strided side starts at r*stride. */
void kdn_gather_rows(const float *src, float *dst, int rows, int cols, long stride);
void kdn_scatter_rows(const float *src, float *dst, int rows, int cols, long stride);

/* ---- phase 8: whole-layer kernels --------------------------------------
 * See reference/deltanet.h for the math and ggml's tensor layout. */
typedef struct {
    int T, n_seqs, H_k, H_v, D_k, D_v;
    int chunk;    /* chunk size C */
    int head_map; /* 0: key head = h % H_k (ggml, tiled); 1: h / (H_v / H_k) (block) */
} KdnShape;

/* Token-recurrent kernel: every head and sequence in one launch. */
void kdn_deltanet_recurrent(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                            const float *beta, const float *state_in, float *o, float *state_out);
/* The same kernel as the library calls it (kernels/gated_delta_net.c): inputs
 * as strided views (rows contiguous; strides in floats for dims 1..3, i.e.
 * head, token, sequence), o scaled by q_scale, the scalar or the KDA gate,
 * and K state snapshots. o is contiguous [D_v, H_v, T, n_seqs]; snapshot slot
 * s (slots D_k*D_v*H_v*n_seqs floats apart) receives the state after token
 * T-1-s for s < min(K, T) (T = 0: slot 0 gets state_in). */
typedef struct {
    KdnShape s; /* chunk unused */
    const float *q, *k, *v, *g, *beta, *state_in;
    long q_st[3], k_st[3], v_st[3], g_st[3], beta_st[3];
    float q_scale;
    int kda; /* 0: g is [1, H_v, T, n_seqs]; 1: [D_k, H_v, T, n_seqs], state row i *= exp(g[i]) */
    int K;   /* >= 1 */
    float *o, *snapshots;
} KdnRecurrentCall;
void kdn_deltanet_recurrent_call(const KdnRecurrentCall *c);

/* dst (contiguous [ne0, ne1, ne2, ne3]) = scale * src, src a view with
 * contiguous rows and strides st[0..2] (floats) for dims 1..3. */
void kdn_gather_strided(const float *src, const long ne[4], const long st[3], float scale, float *dst);

/* One-launch chunked kernel: the whole layer in one launch. */
void kdn_deltanet_one_launch(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                        const float *beta, const float *state_in, float *o, float *state_out);

/* Two-launch form. n_chunks = ceil(T / C); chunk index
 * ci = (seq * H_v + h) * n_chunks + c. Per chunk, the intra-chunk quantities
 * (reference/deltanet.h's RefChunk, row-major, token rows; rows past the
 * chunk's length n are zero):
 *   gamma [ci][C]   Tinv [ci][C][C]   U [ci][C][D_v]   W [ci][C][D_k]
 *   P [ci][C][C] = (q_i . k_j) exp(gamma_i - gamma_j) for j <= i, else 0
 * 1) every chunk of every head and sequence in parallel, one launch: */
void kdn_two_launch_intra(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                           const float *beta, float *gamma, float *Tinv, float *U, float *W, float *P);
/* 1') the opt-in packed-fp16 variant of 1): the products K K^T (in A) and
 * Q K^T (in P) from q and k rounded to fp16, gfx906's v_dot2_f32_f16 (two
 * fp16 products, fp32 accumulation; emulated on CUDA and the CPU), the rest
 * fp32. Not the library's path: its error is that of fp16 inputs, 2^-11
 * relative (docs/tolerances.md, "Packed fp16 products"), for a modelled
 * gain docs/performance.md gives. */
void kdn_two_launch_intra_f16dot(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                                 const float *beta, float *gamma, float *Tinv, float *U, float *W, float *P);
/* 2) chunks c0 <= c < c1 of every head and sequence, one launch: the outputs
 * of those chunks' tokens and the state carried through them. state_in (ggml
 * layout) is the state at chunk c0's start; state_out (which may be the same
 * buffer) receives the state after chunk c1 - 1; o is written for the tokens
 * of chunks c0..c1-1 only. */
void kdn_two_launch_state(const KdnShape *s, int c0, int c1, const float *q, const float *k, const float *gamma,
                            const float *U, const float *W, const float *P, const float *state_in, float *state_out,
                            float *o);

/* ---- the product paths (kernels/gated_delta_net.c) ----------------------
 * What kdn_gated_delta_net (gated_delta_net.h) runs, on contiguous ggml
 * tensors and unscaled q; the phases test these directly. */
typedef struct {
    float *gamma, *Tinv, *U, *W, *P; /* [ci][C], [ci][C][C], [ci][C][D_v], [ci][C][D_k], [ci][C][C] */
} KdnChunkBuffers;
/* Device bytes of the buffers (each 256-byte aligned when workspace is) and
 * their places in a workspace of that size. */
size_t kdn_chunk_buffers_bytes(const KdnShape *s);
void kdn_chunk_buffers_carve(void *workspace, const KdnShape *s, KdnChunkBuffers *b);
/* The layer in two launches: kdn_two_launch_intra, then kdn_two_launch_state over all chunks. */
void kdn_deltanet_two_launch(const KdnShape *s, const KdnChunkBuffers *b, const float *q, const float *k,
                             const float *v, const float *g, const float *beta, const float *state_in, float *o,
                             float *state_out);
/* The same with 1') for 1): the opt-in packed-fp16 layer (tests only). */
void kdn_deltanet_two_launch_f16dot(const KdnShape *s, const KdnChunkBuffers *b, const float *q, const float *k,
                                    const float *v, const float *g, const float *beta, const float *state_in,
                                    float *o, float *state_out);
/* Recurrent up to kdn_auto_recurrent_max_t(s->n_seqs) tokens, two-launch past it (b unused then). */
void kdn_deltanet_auto(const KdnShape *s, const KdnChunkBuffers *b, const float *q, const float *k, const float *v,
                       const float *g, const float *beta, const float *state_in, float *o, float *state_out);
int kdn_auto_recurrent_max_t(int n_seqs); /* per backend and batch, docs/api.md */

#ifdef __cplusplus
}
#endif
#endif

// The chunked layer (the product's prefill): the gated Delta-Net in two kernel launches
// (docs/algorithm.md). The first, chunked_intra.cpp, computes every chunk's
// state-independent quantities at once; the second, chunked_state.cpp,
// carries the state through the chunks. kdn.h fixes the buffers:
// chunk index ci = (seq * H_v + h) * n_chunks + c, per chunk gamma [C],
// Tinv [C][C], U [C][D_v], W [C][D_k], P [C][C], rows past the chunk's n
// tokens zero.
//
// Both kernels use dynamic LDS (the launchers static_assert <= 64 KB). C = 32
// and 64 are instantiated; C = 128 or D_k > 128 are refused. Only exponentials
// of non-positive numbers appear (gamma_i, gamma_i - gamma_j for j <= i,
// gamma_last - gamma_j). Vector loads need D_k and D_v multiples of 4 and
// 16-byte aligned tensors; other shapes run the same code with scalar loads.
//
// This header holds what both stages and their launchers share.
#ifndef KDN_CHUNKED_H
#define KDN_CHUNKED_H

#include "backend/backend.h"
#include "backend/wave.h"
#include "decay.h"
#include "heads.h"
#include "kdn.h"
#include "kernel_args.h"

static const int kMaxDk = 128;
// Inner loops go in batches of kSteps 4-float steps whose global loads are all
// issued before the batch's FMAs: one memory latency per batch, not per step.
static const int kSteps = 2;
static_assert(kMaxDk % (4 * kSteps) == 0 && kSteps % 2 == 0, "D_k loops run in whole batches");

// p[0 .. N - 1] (N = 2 or 4), of which the first `valid` exist (valid may be
// <= 0 or >= N). kVec: p is 4N-byte aligned and valid a multiple of N (D_k,
// D_v and every column offset are), so a run exists whole or not at all: one
// vector load or zeros, never scalar loads (which made gfx906 serialise the
// vector ones).
template <int N, bool kVec>
__device__ __forceinline__ void load_run(const float *p, int valid, float out[N]) {
    static_assert(N == 2 || N == 4, "vector runs are 2 or 4 floats");
    if (kVec) {
        if constexpr (N == 4)
            kdn_load4_if(p, valid >= 4, out);
        else
            kdn_load2_if(p, valid >= 2, out);
        return;
    }
    KDN_UNROLL
    for (int u = 0; u < N; u++) out[u] = u < valid ? p[u] : 0.0f;
}

template <int N, bool kVec>
__device__ __forceinline__ void store_run(float *p, int valid, const float in[N]) {
    static_assert(N == 2 || N == 4, "vector runs are 2 or 4 floats");
    if (kVec) {
        if (valid >= N) {
            if constexpr (N == 4)
                kdn_store4(p, in);
            else
                kdn_store2(p, in);
        }
        return;
    }
    KDN_UNROLL
    for (int u = 0; u < N; u++)
        if (u < valid) p[u] = in[u];
}

// ---- launchers' checks --------------------------------------------------------
// What both stages take (the C of their launch<C>); kdn_chunked_limits, the
// library's copy (kdn.h), is defined from it in chunked_state.cpp.
constexpr KdnLimits kChunkedLimits = {kMaxDk, {32, 64}};

// 1 when st (dims 1..3, floats) are a contiguous [D, H, T, n_seqs] tensor's.
static inline bool dense(const long st[3], long D, long H, long T) {
    return st[0] == D && st[1] == D * H && st[2] == D * H * T;
}

// Why the chunked kernels cannot take call c (NULL: they can). They read v as
// any view, q, k, g and beta contiguous (kdn_layer_run stages other views),
// the scalar gate only and write one state, to c->snapshots.
static inline const char *unsupported(const KdnLayerCall *c, const KdnChunkBuffers *b) {
    if (!c || !b) return "no call";
    const KdnShape *s = &c->s;
    const char *why = kdn_layer_shape_unsupported(s);
    if (why) return why;
    if (s->D_k > kMaxDk) return "D_k > 128 (the state slab would not fit in 64 KB of LDS)";
    if (!kdn_takes_chunk(&kChunkedLimits, s->chunk)) return "chunk must be 32 or 64";
    if (c->kda || c->K != 1) return "the chunked kernels take the scalar gate and K = 1 only";
    if (!dense(c->q_st, s->D_k, s->H_k, s->T) || !dense(c->k_st, s->D_k, s->H_k, s->T) ||
        !dense(c->g_st, 1, s->H_v, s->T) || !dense(c->beta_st, 1, s->H_v, s->T))
        return "q, k, g and beta must be contiguous";
    return NULL;
}

// Vector loads: every row length a multiple of 4 floats and every tensor
// 16-byte aligned.
static inline bool vector_ok(const KdnShape *s, const void *const *ptrs, int count) {
    if (s->D_k % 4 != 0 || s->D_v % 4 != 0) return false;
    for (int i = 0; i < count; i++)
        if ((size_t)ptrs[i] % 16 != 0) return false;
    return true;
}

#endif

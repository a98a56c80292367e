// Phase 8b: the fused chunked gated Delta-Net: the whole layer (every
// sequence, value head and chunk) in one launch. Math: docs/algorithm.md.
//
// Work split
//   grid      (D_v / kBV, H_v, n_seqs): a workgroup owns kBV = 16 columns of
//             one head's state (a D_k x 16 slab) for the whole sequence.
//             Columns are independent (column b of D, O and S depends only on
//             column b of S and V), so slabs never talk to each other, and a
//             single sequence of Qwen3-Next (H_v = 32, D_v = 128) still gives
//             256 workgroups.
//   workgroup 512 threads (8 waves on gfx906: 2 per SIMD, since the LDS below
//             allows one workgroup per CU). The slab stays in LDS from the
//             first chunk to the last: the state is read once and written once.
//   per chunk of C tokens (n <= C valid; rows past n are zero and beta = 0,
//   so they add nothing):
//     1. gamma (cumulative log-decay, summed in double and rounded once, so a
//        difference gamma_i - gamma_j errs by at most 2u|gamma| instead of the
//        C u |gamma| of a float prefix sum; thread t of the first C forms
//        gamma_t and gamma_last itself, so no serial thread), beta and the
//        chunk's keys go to LDS.
//     2. A (strictly lower: -beta_i k_i.k_j e^(gamma_i - gamma_j)) and
//        P (lower with diagonal: q_i.k_j e^(gamma_i - gamma_j)) share one
//        C x (C+1) LDS array: P in the lower triangle, A transposed in the
//        upper one. The first 256 threads compute A, the other 256 P, each
//        thread a (C/16) x (C/16) tile (tiles above the diagonal idle).
//     3. R = beta * (V - e^gamma * (K S)) for the slab: thread (t, b) pairs.
//     4. (I - A) D = R by forward substitution without barriers: the 32 lanes
//        of a column (a 32-lane group never straddles a wave for wave 32 or 64)
//        each hold the rows j = lane (mod 32) of D in registers; row i is one
//        partial dot product per lane and a 5-step xor butterfly.
//     5. O = e^gamma * (Q S) + P D, written straight to o.
//     6. S <- e^gamma_last S + (e^(gamma_last - gamma) K)^T D in place.
//   Steps 2 and 3 share a phase; a barrier ends each phase: 5 per chunk.
//
// LDS (C = 64, D_k <= 128): keys 64 x 129 floats (33 KB) + A/P 64 x 65 (16.6 KB)
// + slab 128 x 17 (8.7 KB) + R/D 64 x 16 (4 KB) + five per-token vectors:
// 63744 B of gfx906's 65536 (a static_assert keeps it so). It is
// dynamic LDS because CUDA caps static shared memory at 48 KB. C = 32 needs
// 34 KB. C = 128 or D_k > 128 do not fit and are refused. Queries are read
// from global memory (L2) where needed.
//
// Only exponentials of non-positive numbers appear: gamma_i, gamma_i - gamma_j
// (j <= i) and gamma_last - gamma_j; exp(-gamma_j) alone would overflow under
// strong decay.
#include "backend/backend.h"
#include "backend/wave.h"
#include "kdn.h"

static const int kThreads = 512;
static const int kTileThreads = 256;         // threads per matrix (A or P) in step 2
static const int kBV = 16;                   // state columns per workgroup
static const int kGroup = kThreads / kBV;    // lanes per column in the solve
static const int kMaxDk = 128;

static_assert(KDN_WAVE % kGroup == 0, "a column's lanes must sit in one wave");
static_assert(kThreads == 2 * kTileThreads, "step 2: one half of the threads per matrix");

template <int C>
struct FusedLds {
    static_assert(C % 16 == 0 && C % kGroup == 0, "C must split into 16 tiles and kGroup-row solve slices");
    float k[C][kMaxDk + 1];   // the chunk's keys (+1: no bank conflicts on column walks)
    float ap[C][C + 1];       // P in the lower triangle with diagonal, A^T in the upper
    float s[kMaxDk][kBV + 1]; // the state slab S[i][b]
    float rd[C][kBV];         // R, then D in place
    float graw[C];            // the chunk's raw log decays g
    float gamma[C];           // summed in double, rounded once: differences err by <= 2u|gamma|
    float beta[C];
    float exp_gamma[C], to_end[C]; // e^gamma_t, e^(gamma_last - gamma_t)
};

// The raw log decays g of a chunk's n tokens (0 past n) into L.graw. Called
// one step ahead (for chunk c + 1 while chunk c computes its outputs), so
// that load_chunk finds them in LDS instead of waiting for memory.
template <int C>
__device__ void load_log_decays(FusedLds<C> &L, const float *g, size_t tok0, int n, int h, int H_v) {
    const int t = (int)threadIdx.x;
    if (t < C) L.graw[t] = t < n ? g[(tok0 + t) * H_v + h] : 0.0f;
}

// gamma and its exponentials from L.graw, beta and the keys of the chunk's n
// tokens; rows n..C-1 get zero keys, beta = 0 and gamma = gamma_(n-1).
// Thread t < C sums all C log decays in the same order as every other such
// thread (so all agree on gamma_last bit for bit) and keeps the partial sum
// at t.
template <int C>
__device__ void load_chunk(FusedLds<C> &L, const float *k, const float *beta, size_t tok0, int n, int hk, int h,
                           int H_k, int H_v, int D_k) {
    const int tid = (int)threadIdx.x;
    if (tid < C) {
        double acc = 0.0, mine = 0.0;
        for (int t0 = 0; t0 < C; t0 += 8) {
            float x[8]; // eight LDS reads in flight, not one at a time
            KDN_UNROLL
            for (int u = 0; u < 8; u++) x[u] = L.graw[t0 + u];
            KDN_UNROLL
            for (int u = 0; u < 8; u++) {
                acc += (double)x[u];
                if (t0 + u == tid) mine = acc;
            }
        }
        const float gamma = (float)mine, last = (float)acc;
        L.gamma[tid] = gamma;
        L.exp_gamma[tid] = expf(gamma);
        L.to_end[tid] = expf(last - gamma);
        L.beta[tid] = tid < n ? beta[(tok0 + tid) * H_v + h] : 0.0f;
    }
    for (int e = tid; e < C * kMaxDk; e += kThreads) {
        int t = e / kMaxDk, i = e % kMaxDk;
        L.k[t][i] = t < n && i < D_k ? k[((tok0 + t) * H_k + hk) * D_k + i] : 0.0f;
    }
}

// Step 2: a (C/16) x (C/16) tile of rows i and columns j per thread of the
// row operand x (keys for A, queries for P) against the keys.
template <int C>
__device__ void attention_tiles(FusedLds<C> &L, const float *qc, size_t q_stride, int n, int D_k) {
    const int TS = C / 16;
    const int tt = (int)threadIdx.x % kTileThreads;
    const bool is_p = (int)threadIdx.x >= kTileThreads;
    const int ti = tt / 16, tj = tt % 16;
    if (tj > ti) return; // upper tiles: nothing below the diagonal
    float acc[TS][TS];
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) acc[a][c] = 0.0f;
    for (int p = 0; p < D_k; p++) {
        float xi[TS], kj[TS];
        KDN_UNROLL
        for (int a = 0; a < TS; a++) {
            int i = ti * TS + a;
            xi[a] = !is_p ? L.k[i][p] : i < n ? qc[i * q_stride + p] : 0.0f;
            kj[a] = L.k[tj * TS + a][p];
        }
        KDN_UNROLL
        for (int a = 0; a < TS; a++)
            KDN_UNROLL
            for (int c = 0; c < TS; c++) acc[a][c] = fmaf(xi[a], kj[c], acc[a][c]);
    }
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) {
            int i = ti * TS + a, j = tj * TS + c;
            float decay = j <= i ? expf(L.gamma[i] - L.gamma[j]) : 0.0f;
            if (is_p && j <= i) L.ap[i][j] = acc[a][c] * decay;
            if (!is_p && j < i) L.ap[j][i] = -L.beta[i] * acc[a][c] * decay;
        }
}

// Step 3: R[t][b] = beta_t (v_t[b] - e^gamma_t sum_i K[t][i] S[i][b]).
template <int C>
__device__ void delta_rhs(FusedLds<C> &L, const float *vc, size_t v_stride, int n, int D_k, int b0, int D_v) {
    const int b = (int)threadIdx.x % kBV;
    for (int t = (int)threadIdx.x / kBV; t < C; t += kThreads / kBV) {
        float ks = 0.0f;
        for (int i = 0; i < D_k; i++) ks = fmaf(L.k[t][i], L.s[i][b], ks);
        float v = t < n && b0 + b < D_v ? vc[t * v_stride + b] : 0.0f;
        L.rd[t][b] = L.beta[t] * (v - L.exp_gamma[t] * ks);
    }
}

// Step 4: D = (I - A)^-1 R, column b by the kGroup lanes of its group.
template <int C>
__device__ void solve_deltas(FusedLds<C> &L) {
    const int b = (int)(threadIdx.x / kGroup), r = (int)(threadIdx.x % kGroup);
    const int R = C / kGroup;
    float d[R]; // d[m] = D[m * kGroup + r][b]
    KDN_UNROLL
    for (int m = 0; m < R; m++) d[m] = 0.0f;
    for (int i = 0; i < C; i++) {
        float part = 0.0f;
        KDN_UNROLL
        for (int m = 0; m < R; m++) {
            int j = m * kGroup + r;
            if (j < i) part = fmaf(L.ap[j][i], d[m], part); // A[i][j] lives at ap[j][i]
        }
        for (int mask = kGroup / 2; mask > 0; mask >>= 1) part += kdn_shfl_xor(part, mask);
        float di = L.rd[i][b] + part;
        KDN_UNROLL
        for (int m = 0; m < R; m++)
            if (i == m * kGroup + r) d[m] = di;
    }
    KDN_UNROLL
    for (int m = 0; m < R; m++) L.rd[m * kGroup + r][b] = d[m];
}

// Step 5: o_t[b] = e^gamma_t (q_t . S[:, b]) + sum_{j <= t} P[t][j] D[j][b].
template <int C>
__device__ void chunk_outputs(FusedLds<C> &L, const float *qc, size_t q_stride, float *oc, size_t o_stride, int n,
                              int D_k, int b0, int D_v) {
    const int b = (int)threadIdx.x % kBV;
    for (int t = (int)threadIdx.x / kBV; t < n; t += kThreads / kBV) {
        const float *qt = qc + t * q_stride;
        float qs = 0.0f, pd = 0.0f;
        for (int i = 0; i < D_k; i++) qs = fmaf(qt[i], L.s[i][b], qs);
        for (int j = 0; j <= t; j++) pd = fmaf(L.ap[t][j], L.rd[j][b], pd);
        if (b0 + b < D_v) oc[t * o_stride + b] = fmaf(L.exp_gamma[t], qs, pd);
    }
}

// Step 6: S[i][b] <- e^gamma_last S[i][b] + sum_j e^(gamma_last - gamma_j) K[j][i] D[j][b].
template <int C>
__device__ void update_state(FusedLds<C> &L, int D_k) {
    const float total = L.exp_gamma[C - 1];
    const int b = (int)threadIdx.x % kBV;
    for (int i = (int)threadIdx.x / kBV; i < D_k; i += kThreads / kBV) {
        float acc = 0.0f;
        for (int j = 0; j < C; j++) acc = fmaf(L.to_end[j] * L.k[j][i], L.rd[j][b], acc);
        L.s[i][b] = fmaf(total, L.s[i][b], acc);
    }
}

template <int C>
__global__ __launch_bounds__(kThreads) void kernel_deltanet_fused(const float *__restrict__ q, const float *__restrict__ k,
                                                             const float *__restrict__ v, const float *__restrict__ g,
                                                             const float *__restrict__ beta,
                                                             const float *__restrict__ state_in, float *__restrict__ o,
                                                             float *__restrict__ state_out, int T, int H_k, int H_v,
                                                             int D_k, int D_v, int head_map) {
    KDN_DYNAMIC_SHARED(double, lds_raw);
    FusedLds<C> &L = *(FusedLds<C> *)lds_raw;
    const int tid = (int)threadIdx.x;
    const int b0 = (int)blockIdx.x * kBV, h = (int)blockIdx.y, seq = (int)blockIdx.z;
    const int hk = head_map == 0 ? h % H_k : h / (H_v / H_k);
    const size_t head = ((size_t)seq * H_v + h) * D_v * D_k;
    const size_t q_stride = (size_t)H_k * D_k, v_stride = (size_t)H_v * D_v;

    // St is D_v x D_k: consecutive threads read consecutive i of one column.
    for (int e = tid; e < kMaxDk * kBV; e += kThreads) {
        int b = e / kMaxDk, i = e % kMaxDk;
        L.s[i][b] = i < D_k && b0 + b < D_v ? state_in[head + (size_t)(b0 + b) * D_k + i] : 0.0f;
    }
    load_log_decays<C>(L, g, (size_t)seq * T, T < C ? T : C, h, H_v);
    __syncthreads();
    for (int t0 = 0; t0 < T; t0 += C) {
        const int n = T - t0 < C ? T - t0 : C;
        const size_t tok0 = (size_t)seq * T + t0;
        const float *qc = q + (tok0 * H_k + hk) * D_k;
        const float *vc = v + (tok0 * H_v + h) * D_v + b0;
        float *oc = o + (tok0 * H_v + h) * D_v + b0;
        load_chunk<C>(L, k, beta, tok0, n, hk, h, H_k, H_v, D_k);
        __syncthreads();
        attention_tiles<C>(L, qc, q_stride, n, D_k);
        delta_rhs<C>(L, vc, v_stride, n, D_k, b0, D_v);
        __syncthreads();
        solve_deltas<C>(L);
        __syncthreads();
        if (t0 + C < T) load_log_decays<C>(L, g, tok0 + C, T - t0 - C < C ? T - t0 - C : C, h, H_v);
        chunk_outputs<C>(L, qc, q_stride, oc, v_stride, n, D_k, b0, D_v);
        __syncthreads();
        update_state<C>(L, D_k);
        __syncthreads();
    }
    for (int e = tid; e < kMaxDk * kBV; e += kThreads) {
        int b = e / kMaxDk, i = e % kMaxDk;
        if (i < D_k && b0 + b < D_v) state_out[head + (size_t)(b0 + b) * D_k + i] = L.s[i][b];
    }
}

static const char *unsupported(const KdnShape *s) {
    if (s->T < 0 || s->n_seqs < 1 || s->H_k < 1 || s->H_v < 1 || s->D_k < 1 || s->D_v < 1)
        return "empty or negative dimension";
    if (s->D_k > kMaxDk) return "D_k > 128 (the chunk's keys would not fit in 64 KB of LDS)";
    if (s->chunk != 32 && s->chunk != 64) return "chunk must be 32 or 64 (128 does not fit in 64 KB of LDS)";
    if (s->H_v > 65535 || s->n_seqs > 65535) return "H_v or n_seqs > 65535 (grid y/z limit)";
    if (s->head_map != 0 && s->head_map != 1) return "head_map must be 0 (tiled) or 1 (block)";
    if (s->head_map == 1 && s->H_v % s->H_k != 0) return "block head map needs H_v to be a multiple of H_k";
    return NULL;
}

template <int C>
static void launch(const KdnShape *s, const float *q, const float *k, const float *v, const float *g, const float *beta,
                   const float *state_in, float *o, float *state_out) {
    static_assert(sizeof(FusedLds<C>) <= 64 * 1024, "gfx906 has 64 KB of LDS per workgroup");
    dim3 grid((unsigned)KDN_CEIL_DIV(s->D_v, kBV), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_ALLOW_LDS(kernel_deltanet_fused<C>, sizeof(FusedLds<C>));
    KDN_LAUNCH(kernel_deltanet_fused<C>, grid, dim3(kThreads), sizeof(FusedLds<C>), q, k, v, g, beta, state_in, o, state_out, s->T,
               s->H_k, s->H_v, s->D_k, s->D_v, s->head_map);
}

extern "C" void kdn_deltanet_fused(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                                   const float *beta, const float *state_in, float *o, float *state_out) {
    const char *why = unsupported(s);
    if (why)
        kdn_launch_refused("kernel_deltanet_fused", why);
    else if (s->chunk == 32)
        launch<32>(s, q, k, v, g, beta, state_in, o, state_out);
    else
        launch<64>(s, q, k, v, g, beta, state_in, o, state_out);
}

// Phase 8b: the one-launch chunked gated Delta-Net: the whole layer (every
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
//     1. gamma (cumulative log-decay, summed and kept in double, so a
//        difference gamma_i - gamma_j is the span's own sum rounded once, its
//        accuracy independent of the decay before it; thread t of the first C forms
//        gamma_t and gamma_last itself, from log decays fetched into LDS
//        during the previous chunk), beta and the chunk's keys go to LDS.
//     2. A (strictly lower: -beta_i k_i.k_j e^(gamma_i - gamma_j)) and
//        P (lower with diagonal: q_i.k_j e^(gamma_i - gamma_j)) share one
//        C x (C+1) LDS array: P in the lower triangle, A transposed in the
//        upper one. The first 256 threads compute A, the other 256 P, each
//        thread a (C/16) x (C/16) tile (tiles above the diagonal idle). Each
//        half runs its own instantiation of the dot-product loop (keys from
//        LDS or queries from L1/L2), so the loop has no branch: choosing per
//        element cost ~100 gfx906 instructions per 16 FMAs, now ~25-30.
//     3. R = beta * (V - e^gamma * (K S)) for the slab.
//     4. (I - A) D = R by forward substitution without barriers: the 32 lanes
//        of a column (a 32-lane group never straddles a wave for wave 32 or 64)
//        each hold the rows j = lane (mod 32) of D in registers. Rows go in
//        blocks of 8: one partial dot product per lane and row, one 5-step
//        xor butterfly for the block's 8 sums, then each lane solves the 8 x 8
//        triangle of the block itself.
//     5. O = e^gamma * (Q S) + P D, written straight to o.
//     6. S <- e^gamma_last S + (e^(gamma_last - gamma) K)^T D in place.
//   Steps 3, 5 and 6 give each thread several rows of one column, so the
//   shared operand is read from LDS once per row group.
//   Steps 2 and 3 share a phase; a barrier ends each phase: 5 per chunk.
//
// LDS (C = 64, D_k <= 128): keys 64 x 129 floats (33 KB) + A/P 64 x 65 (16.6 KB)
// + slab 128 x 17 (8.7 KB) + R/D 64 x 16 (4 KB) + five per-token vectors (gamma in double):
// 64000 B of gfx906's 65536 (a static_assert keeps it so). It is
// dynamic LDS because CUDA caps static shared memory at 48 KB. C = 32 needs
// 34 KB. C = 128 or D_k > 128 do not fit and are refused. Queries are read
// from global memory (L2) where needed.
//
// Only exponentials of non-positive numbers appear: gamma_i, gamma_i - gamma_j
// (j <= i) and gamma_last - gamma_j; exp(-gamma_j) alone would overflow under
// strong decay.
#include "../../kernels/backend/backend.h"
#include "../../kernels/backend/wave.h"
#include "../../kernels/decay.h"
#include "../../kernels/heads.h"
#include "ladder.h"

static const int kThreads = 512;
static const int kTileThreads = 256;         // threads per matrix (A or P) in step 2
static const int kBV = 16;                   // state columns per workgroup
static const int kGroup = kThreads / kBV;    // lanes per column in the solve
static const int kRows = kThreads / kBV;     // row groups of steps 3, 5, 6
static const int kSolveBlock = 8;            // rows per butterfly in the solve
static const int kMaxDk = 128;

static_assert(KDN_WAVE % kGroup == 0, "a column's lanes must sit in one wave");
static_assert(kThreads == 2 * kTileThreads, "step 2: one half of the threads per matrix");
static_assert(kGroup % kSolveBlock == 0, "a solve block lies in one slice of kGroup rows");

template <int C>
struct OneLaunchLds {
    static_assert(C % 16 == 0 && C % kGroup == 0 && C % kRows == 0 && C % kSolveBlock == 0,
                  "C must split into 16 tiles, the solve's slices and blocks, and the row groups");
    static_assert(kMaxDk % kRows == 0, "the state update's rows split evenly");
    float k[C][kMaxDk + 1];   // the chunk's keys (+1: no bank conflicts on column walks)
    float ap[C][C + 1];       // P in the lower triangle with diagonal, A^T in the upper
    float s[kMaxDk][kBV + 1]; // the state slab S[i][b]
    float rd[C][kBV];         // R, then D in place
    float graw[C];            // the chunk's raw log decays g, floored (decay.h)
    double gamma[C];          // summed in double and kept so: a difference is the span's own sum
    float beta[C];
    float exp_gamma[C], to_end[C]; // e^gamma_t, e^(gamma_last - gamma_t)
};

// The raw log decays g of a chunk's n tokens (0 past n) into L.graw. Called
// one step ahead (for chunk c + 1 while chunk c computes its outputs), so
// that load_chunk finds them in LDS instead of waiting for memory.
template <int C>
__device__ void load_log_decays(OneLaunchLds<C> &L, const float *g, size_t tok0, int n, int h, int H_v) {
    const int t = (int)threadIdx.x;
    if (t < C) L.graw[t] = t < n ? kdn_log_decay_floored(g[(tok0 + t) * H_v + h]) : 0.0f;
}

// gamma and its exponentials from L.graw, beta and the keys of the chunk's n
// tokens; rows n..C-1 get zero keys, beta = 0 and gamma = gamma_(n-1).
// Thread t < C sums the chunk's log decays in the same order as every other
// such thread (so all agree on gamma_last bit for bit) and keeps the partial
// sum at t.
template <int C>
__device__ void load_chunk(OneLaunchLds<C> &L, const float *k, const float *beta, size_t tok0, int n, int hk, int h,
                           int H_k, int H_v, int D_k) {
    const int tid = (int)threadIdx.x;
    if (tid < C) {
        // Up to n only (graw is 0 past n): a runtime bound, so the compiler
        // keeps the block loop instead of hoisting C lane masks out of it.
        double acc = 0.0, mine = 0.0;
        for (int t0 = 0; t0 < n; t0 += 8) {
            float x[8]; // eight LDS reads in flight, not one at a time
            KDN_UNROLL
            for (int u = 0; u < 8; u++) x[u] = L.graw[t0 + u];
            KDN_UNROLL
            for (int u = 0; u < 8; u++) {
                acc += (double)x[u];
                if (t0 + u == tid) mine = acc;
            }
        }
        if (tid >= n) mine = acc;
        L.gamma[tid] = mine;
        L.exp_gamma[tid] = kdn_decay((float)mine); // [C - 1] decays the state once per chunk: decay.h
        L.to_end[tid] = expf((float)(acc - mine));
        L.beta[tid] = tid < n ? beta[(tok0 + tid) * H_v + h] : 0.0f;
    }
    for (int e = tid; e < C * kMaxDk; e += kThreads) {
        int t = e / kMaxDk, i = e % kMaxDk;
        L.k[t][i] = t < n && i < D_k ? k[((tok0 + t) * H_k + hk) * D_k + i] : 0.0f;
    }
}

// Step 2: a (C/16) x (C/16) tile of rows i and columns j per thread of the
// row operand x (keys for A, queries for P) against the keys. The operand's
// source is a template parameter, so the dot-product loop has no branch
// (half of the threads, whole waves, take each instantiation): choosing it
// per element made the compiler branch around every query load.
template <int C, bool kQueries>
__device__ __forceinline__ void tile_products(OneLaunchLds<C> &L, const float *qc, size_t q_stride, int n, int D_k, int ti, int tj,
                              float (&acc)[C / 16][C / 16]) {
    const int TS = C / 16;
    // Query rows past the chunk's n tokens read row n - 1 instead (finite,
    // in bounds, no branch); attention_tiles zeroes those rows of P. Row
    // offsets from qc, 32-bit: a tensor has fewer than 2^31 elements, and a
    // pointer each took twice the registers (ROCm 6's clang spilled).
    unsigned qr[TS];
    KDN_UNROLL
    for (int a = 0; a < TS; a++) qr[a] = (unsigned)(ti * TS + a < n ? ti * TS + a : n - 1) * (unsigned)q_stride;
    for (int p = 0; p < D_k; p++) {
        float xi[TS], kj[TS];
        KDN_UNROLL
        for (int a = 0; a < TS; a++) {
            xi[a] = kQueries ? qc[qr[a] + p] : L.k[ti * TS + a][p];
            kj[a] = L.k[tj * TS + a][p];
        }
        KDN_UNROLL
        for (int a = 0; a < TS; a++)
            KDN_UNROLL
            for (int c = 0; c < TS; c++) acc[a][c] = fmaf(xi[a], kj[c], acc[a][c]);
    }
}

template <int C>
__device__ void attention_tiles(OneLaunchLds<C> &L, const float *qc, size_t q_stride, int n, int D_k) {
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
    if (is_p) tile_products<C, true>(L, qc, q_stride, n, D_k, ti, tj, acc);
    else tile_products<C, false>(L, qc, q_stride, n, D_k, ti, tj, acc);
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) {
            int i = ti * TS + a, j = tj * TS + c;
            float decay = j <= i ? expf((float)(L.gamma[i] - L.gamma[j])) : 0.0f;
            if (is_p && j <= i) L.ap[i][j] = i < n ? acc[a][c] * decay : 0.0f;
            if (!is_p && j < i) L.ap[j][i] = -L.beta[i] * acc[a][c] * decay;
        }
}

// Steps 3, 5 and 6 give thread (g, b) = (tid / kBV, tid % kBV) the rows
// g, g + kRows, g + 2 kRows, ... of column b: the operand shared by those
// rows (a state or D entry) is read from LDS once for all of them.

// Step 3: R[t][b] = beta_t (v_t[b] - e^gamma_t sum_i K[t][i] S[i][b]).
template <int C>
__device__ void delta_rhs(OneLaunchLds<C> &L, const float *vc, size_t v_stride, int n, int D_k, int b0, int D_v) {
    const int MR = C / kRows;
    const int b = (int)threadIdx.x % kBV, t0 = (int)threadIdx.x / kBV;
    float ks[MR];
    KDN_UNROLL
    for (int m = 0; m < MR; m++) ks[m] = 0.0f;
    for (int i = 0; i < D_k; i++) {
        const float sv = L.s[i][b];
        KDN_UNROLL
        for (int m = 0; m < MR; m++) ks[m] = fmaf(L.k[t0 + m * kRows][i], sv, ks[m]);
    }
    KDN_UNROLL
    for (int m = 0; m < MR; m++) {
        const int t = t0 + m * kRows;
        const float v = t < n && b0 + b < D_v ? vc[t * v_stride + b] : 0.0f;
        L.rd[t][b] = L.beta[t] * (v - L.exp_gamma[t] * ks[m]); // mutate: one_launch_delta
    }
}

// Step 4: D = (I - A)^-1 R, column b by the kGroup lanes of its group, lane
// r holding rows r, r + kGroup, ... of D. Rows go in blocks of kSolveBlock:
// the block's sums over the rows of earlier blocks are partial dot products
// per lane, added by one butterfly for the whole block (its shuffles
// independent, so they pipeline); then every lane solves the small triangle
// inside the block itself. The serial chain is n / kSolveBlock butterflies
// instead of n. Rows past the chunk's n tokens have R = 0 and A = 0, so
// their D is 0 and they are not visited (the runtime bound also keeps the
// compiler from unrolling the block loop and hoisting its lane masks).
template <int C>
__device__ void solve_deltas(OneLaunchLds<C> &L, int n) {
    const int b = (int)(threadIdx.x / kGroup), r = (int)(threadIdx.x % kGroup);
    const int R = C / kGroup, NB = kSolveBlock;
    float d[R]; // d[m] = D[m * kGroup + r][b]
    KDN_UNROLL
    for (int m = 0; m < R; m++) d[m] = 0.0f;
    for (int i0 = 0; i0 < n; i0 += NB) {
        // Lane 0 of the group brings R into the butterfly's sums. R is read
        // before the butterfly: once a lane has passed the last butterfly it
        // stores D over R, and lanes are not in lockstep (CUDA's independent
        // threads, the CPU executor); a shuffle waits for the whole wave.
        float x[NB];
        KDN_UNROLL
        for (int u = 0; u < NB; u++) x[u] = r == 0 ? L.rd[i0 + u][b] : 0.0f;
        KDN_UNROLL
        for (int m = 0; m < R; m++) {
            const int j = m * kGroup + r;
            if (j < i0) {
                KDN_UNROLL
                for (int u = 0; u < NB; u++) x[u] = fmaf(L.ap[j][i0 + u], d[m], x[u]); // A[i][j] is at ap[j][i]
            }
        }
        for (int mask = kGroup / 2; mask > 0; mask >>= 1) {
            KDN_UNROLL
            for (int u = 0; u < NB; u++) x[u] += kdn_shfl_xor(x[u], mask);
        }
        KDN_UNROLL
        for (int u = 0; u < NB; u++) {
            float xu = x[u];
            KDN_UNROLL
            for (int w = 0; w < u; w++) xu = fmaf(L.ap[i0 + w][i0 + u], x[w], xu);
            x[u] = xu;
        }
        // The block lies in one slice m of kGroup rows (NB divides kGroup);
        // lane r owns its row i0 + u with u = r - i0 % kGroup, if any.
        float mine = 0.0f;
        KDN_UNROLL
        for (int u = 0; u < NB; u++) mine = r == i0 % kGroup + u ? x[u] : mine;
        const bool owns = r >= i0 % kGroup && r < i0 % kGroup + NB;
        KDN_UNROLL
        for (int m = 0; m < R; m++)
            if (owns && m == i0 / kGroup) d[m] = mine;
    }
    kdn_wave_sync(); // every lane of the group has read its R rows before D overwrites them
    KDN_UNROLL
    for (int m = 0; m < R; m++) L.rd[m * kGroup + r][b] = d[m];
}

// Step 5: o_t[b] = e^gamma_t (q_t . S[:, b]) + sum_{j <= t} P[t][j] D[j][b].
template <int C>
__device__ void chunk_outputs(OneLaunchLds<C> &L, const float *qc, size_t q_stride, float *oc, size_t o_stride, int n,
                              int D_k, int b0, int D_v) {
    const int MR = C / kRows;
    const int b = (int)threadIdx.x % kBV, t0 = (int)threadIdx.x / kBV;
    float qs[MR], pd[MR];
    KDN_UNROLL
    for (int m = 0; m < MR; m++) qs[m] = pd[m] = 0.0f;
    for (int i = 0; i < D_k; i++) {
        const float sv = L.s[i][b];
        KDN_UNROLL
        for (int m = 0; m < MR; m++) {
            const int t = t0 + m * kRows;
            qs[m] = fmaf(t < n ? qc[t * q_stride + i] : 0.0f, sv, qs[m]);
        }
    }
    for (int j = 0; j <= t0 + (MR - 1) * kRows; j++) {
        const float dj = L.rd[j][b];
        KDN_UNROLL
        for (int m = 0; m < MR; m++) {
            const int t = t0 + m * kRows;
            if (j <= t) pd[m] = fmaf(L.ap[t][j], dj, pd[m]); // P: lower triangle with diagonal
        }
    }
    KDN_UNROLL
    for (int m = 0; m < MR; m++) {
        const int t = t0 + m * kRows;
        if (t < n && b0 + b < D_v) oc[t * o_stride + b] = fmaf(L.exp_gamma[t], qs[m], pd[m]); // mutate: one_launch_out
    }
}

// Step 6: S[i][b] <- e^gamma_last S[i][b] + sum_j K[j][i] (e^(gamma_last - gamma_j) D[j][b]).
// Rows j >= n have D = 0 and are skipped (the runtime bound also keeps the
// compiler from unrolling the loop and keeping all its loads live at C = 32).
template <int C>
__device__ void update_state(OneLaunchLds<C> &L, int n, int D_k) {
    const int MI = kMaxDk / kRows;
    const float total = L.exp_gamma[C - 1];
    const int b = (int)threadIdx.x % kBV, i0 = (int)threadIdx.x / kBV;
    float acc[MI];
    KDN_UNROLL
    for (int m = 0; m < MI; m++) acc[m] = 0.0f;
    for (int j = 0; j < n; j++) {
        const float w = L.to_end[j] * L.rd[j][b];
        KDN_UNROLL
        for (int m = 0; m < MI; m++) acc[m] = fmaf(L.k[j][i0 + m * kRows], w, acc[m]);
    }
    KDN_UNROLL
    for (int m = 0; m < MI; m++) {
        const int i = i0 + m * kRows;
        if (i < D_k) L.s[i][b] = fmaf(total, L.s[i][b], acc[m]); // mutate: one_launch_state
    }
}

// The second bound (1): one workgroup per SM/CU is all the LDS allows
// anyway; told so, nvcc stops capping C = 32 at 64 registers (which spilled)
// and HIP reads it as at least one wave per SIMD, which changes nothing.
template <int C>
__global__ __launch_bounds__(kThreads, 1) void kernel_deltanet_one_launch(const float *__restrict__ q, const float *__restrict__ k,
                                                             const float *__restrict__ v, const float *__restrict__ g,
                                                             const float *__restrict__ beta,
                                                             const float *__restrict__ state_in, float *__restrict__ o,
                                                             float *__restrict__ state_out, int T, int H_k, int H_v,
                                                             int D_k, int D_v, int head_map) {
    KDN_DYNAMIC_SHARED(double, lds_raw);
    OneLaunchLds<C> &L = *(OneLaunchLds<C> *)lds_raw;
    const int tid = (int)threadIdx.x;
    const int b0 = (int)blockIdx.x * kBV, h = (int)blockIdx.y, seq = (int)blockIdx.z;
    const int hk = kdn_key_head(h, H_k, H_v, head_map);
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
        const int n = T - t0 < C ? T - t0 : C; // mutate: one_launch_tail
        const size_t tok0 = (size_t)seq * T + t0;
        const float *qc = q + (tok0 * H_k + hk) * D_k;
        const float *vc = v + (tok0 * H_v + h) * D_v + b0;
        float *oc = o + (tok0 * H_v + h) * D_v + b0;
        load_chunk<C>(L, k, beta, tok0, n, hk, h, H_k, H_v, D_k);
        __syncthreads();
        attention_tiles<C>(L, qc, q_stride, n, D_k);
        delta_rhs<C>(L, vc, v_stride, n, D_k, b0, D_v);
        __syncthreads();
        solve_deltas<C>(L, n);
        __syncthreads();
        if (t0 + C < T) load_log_decays<C>(L, g, tok0 + C, T - t0 - C < C ? T - t0 - C : C, h, H_v);
        chunk_outputs<C>(L, qc, q_stride, oc, v_stride, n, D_k, b0, D_v);
        __syncthreads();
        update_state<C>(L, n, D_k);
        __syncthreads();
    }
    for (int e = tid; e < kMaxDk * kBV; e += kThreads) {
        int b = e / kMaxDk, i = e % kMaxDk;
        if (i < D_k && b0 + b < D_v) state_out[head + (size_t)(b0 + b) * D_k + i] = L.s[i][b];
    }
}

const KdnLimits kdn_one_launch_limits = {kMaxDk, {32, 64}}; // the C of launch<C> below

static const char *unsupported(const KdnShape *s) {
    const char *why = kdn_layer_shape_unsupported(s);
    if (why) return why;
    if (s->D_k > kMaxDk) return "D_k > 128 (the chunk's keys would not fit in 64 KB of LDS)";
    if (!kdn_takes_chunk(&kdn_one_launch_limits, s->chunk))
        return "chunk must be 32 or 64 (128 does not fit in 64 KB of LDS)";
    return NULL;
}

template <int C>
static void launch(const KdnShape *s, const float *q, const float *k, const float *v, const float *g, const float *beta,
                   const float *state_in, float *o, float *state_out) {
    static_assert(sizeof(OneLaunchLds<C>) <= 64 * 1024, "gfx906 has 64 KB of LDS per workgroup");
    dim3 grid((unsigned)KDN_CEIL_DIV(s->D_v, kBV), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_ALLOW_LDS(kernel_deltanet_one_launch<C>, sizeof(OneLaunchLds<C>));
    KDN_LAUNCH(kernel_deltanet_one_launch<C>, grid, dim3(kThreads), sizeof(OneLaunchLds<C>), q, k, v, g, beta, state_in, o, state_out, s->T,
               s->H_k, s->H_v, s->D_k, s->D_v, s->head_map);
}

extern "C" void kdn_deltanet_one_launch(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                                   const float *beta, const float *state_in, float *o, float *state_out) {
    const char *why = unsupported(s);
    if (why)
        kdn_launch_refused("kernel_deltanet_one_launch", why);
    else if (s->chunk == 32)
        launch<32>(s, q, k, v, g, beta, state_in, o, state_out);
    else
        launch<64>(s, q, k, v, g, beta, state_in, o, state_out);
}

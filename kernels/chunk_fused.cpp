// Phases 6-7, fused: the gated Delta-Net in two launches (docs/algorithm.md).
// The first computes every chunk's state-independent quantities at once, the
// second carries the state through the chunks. kdn.h fixes the buffers:
// chunk index ci = (seq * H_v + h) * n_chunks + c, per chunk gamma [C],
// Tinv [C][C], U [C][D_v], W [C][D_k], rows past the chunk's n tokens zero.
//
// 1) kernel_intra_chunk_fused
//   grid      (n_chunks, H_v, n_seqs): a workgroup per chunk of one head of
//             one sequence; chunks are independent, so a 4k-token prompt of
//             Qwen3-Next (H_v = 32, C = 64) gives 2048 workgroups.
//   workgroup 256 threads (4 waves on gfx906; about 51 KB of LDS at C = 64
//             allows one workgroup per CU, so the 4 waves are one per SIMD).
//   phases (a barrier after each of the first four):
//     a. the chunk's keys, beta and raw log decays g to LDS (rows past n: 0).
//     b. thread t < C: gamma_t (gamma_last past n), summed in double in the same order by every
//        such thread and rounded once (a difference gamma_i - gamma_j then
//        errs by 2u|gamma| instead of C u |gamma|), and beta_t e^gamma_t.
//     c. A (strictly lower: -beta_i k_i.k_j e^(gamma_i - gamma_j)): thread
//        (ti, tj) of a 16 x 16 grid owns a (C/16) x (C/16) tile; tiles above
//        the diagonal idle. A is stored transposed in the upper triangle.
//     d. Tinv = (I - A)^-1 column by column: 8 groups of 32 lanes (a group
//        never straddles a wave for KDN_WAVE 32 or 64), group q solving
//        columns q, q + 8, ...; lane r holds rows r, r + 32 of the column in
//        registers. Forward substitution in blocks of 8 rows: one partial
//        dot product per lane and row, one 5-step xor butterfly per block,
//        then each lane solves the block's 8 x 8 triangle itself. The groups
//        of one wave take neighbouring columns of one 8-row block, so they
//        share the loop bounds and whole waves reach the shuffles (a column
//        past n beside one below n is computed and dropped). The column
//        goes into the lower triangle (with the diagonal) of the same array:
//        the solve reads only the strict upper triangle, so no lane reads an
//        entry another lane writes in this interval.
//     e. U = Tinv (beta V) and W = Tinv (beta e^gamma K): thread (r, b) =
//        (tid / 64, tid % 64) owns rows r, r + 4, ... of output column b (in
//        passes of 64 columns), so each loaded source element serves C / 4
//        rows; V is read from global memory (coalesced along b), K from LDS.
//        Tinv is copied out with zeros above the diagonal.
//   LDS (C = 64): keys 64 x 129 floats (33 KB, +1 so that column walks do not
//   conflict) + A/Tinv 64 x 65 (16.6 KB) + four per-token vectors (1 KB) =
//   50.7 KB of gfx906's 64 (a static_assert keeps it <= 64 KB).
//
// 2) kernel_state_chunks_fused
//   grid      (D_v / 16, H_v, n_seqs): a workgroup owns a D_k x 16 slab of one
//             head's state (state columns are independent) and keeps it in
//             LDS through chunks c0 .. c1 - 1: read once, written once.
//   workgroup 512 threads (8 waves; the ~62 KB of LDS allows one workgroup
//             per CU, so 2 waves per SIMD hide each other's latency).
//   per chunk (n <= C tokens; a barrier after each phase, 4 per chunk):
//     a. the chunk's keys to LDS, gamma, e^gamma and e^(gamma_last - gamma).
//     b. threads 0..255: P = (Q K^T) .* e^(gamma_i - gamma_j), lower with the
//        diagonal, a (C/16)^2 tile each (queries from global memory / L2);
//        all threads: D = U - W S0 for the slab, thread (t, b) = (tid / 16,
//        tid % 16) rows t, t + 32 of column b (U, W rows from L2: the 16
//        lanes of a row read the same W element).
//     c. O = e^gamma (Q S0) + P D, straight to o.
//     d. S <- e^gamma_last S0 + (e^(gamma_last - gamma) K)^T D in place:
//        thread (i, b) owns rows i, i + 32, ... of slab column b and is the
//        only one to read or write them in this phase.
//   LDS (C = 64, D_k <= 128): keys 33 KB + P 64 x 65 (16.6 KB) + slab
//   128 x 17 (8.7 KB) + D 64 x 16 (4 KB) + three per-token vectors: 63232 B.
//
// Both use dynamic LDS (CUDA caps static shared memory at 48 KB, and both
// kernels exceed it at C = 64), so tools/gfx906_resources.sh shows static LDS
// 0; the launchers static_assert sizeof(IntraLds<C>), sizeof(StateLds<C>)
// <= 64 KB (50688 and 63232 B at C = 64; 21248 and 31872 B at C = 32). C = 32
// needs about half; C = 128 or D_k > 128 do not fit and are refused. Only
// exponentials of non-positive numbers appear (gamma_i, gamma_i - gamma_j for
// j <= i, gamma_last - gamma_j).
#include "backend/backend.h"
#include "backend/wave.h"
#include "kdn.h"

static const int kMaxDk = 128;
static const int kSolveBlock = 8; // rows per butterfly in the solve

// ---- 1) intra-chunk ---------------------------------------------------------
static const int kIntraThreads = 256;
static const int kIntraGroup = 32;                            // lanes per Tinv column
static const int kIntraGroups = kIntraThreads / kIntraGroup;  // columns solved at once
static const int kWyCols = 64;                                // output columns per WY pass
static const int kWyRows = kIntraThreads / kWyCols;           // row groups of a WY pass

static_assert(KDN_WAVE % kIntraGroup == 0, "a column's lanes must sit in one wave");
static_assert(kIntraGroup % kSolveBlock == 0, "a solve block lies in one slice of kIntraGroup rows");
static_assert(kIntraThreads == 256, "phase c: one thread per tile of a 16 x 16 grid");

template <int C>
struct IntraLds {
    static_assert(C % 16 == 0 && C % kIntraGroup == 0 && C % kWyRows == 0, "C must split into the tiles");
    float k[C][kMaxDk + 1]; // the chunk's keys (+1: no bank conflicts on column walks)
    float at[C][C + 1];     // A^T in the strict upper triangle, Tinv in the lower one with the diagonal
    float graw[C];          // raw log decays
    float gamma[C];
    float beta[C];
    float kscale[C];        // beta_t e^gamma_t, W's row factor
};

template <int C>
__device__ void intra_load(IntraLds<C> &L, const float *k, const float *g, const float *beta, size_t tok0, int n,
                           int hk, int h, int H_k, int H_v, int D_k) {
    const int tid = (int)threadIdx.x;
    if (tid < C) {
        L.graw[tid] = tid < n ? g[(tok0 + tid) * H_v + h] : 0.0f;
        L.beta[tid] = tid < n ? beta[(tok0 + tid) * H_v + h] : 0.0f;
    }
    for (int e = tid; e < C * kMaxDk; e += kIntraThreads) {
        int t = e / kMaxDk, i = e % kMaxDk;
        L.k[t][i] = t < n && i < D_k ? k[((tok0 + t) * H_k + hk) * D_k + i] : 0.0f;
    }
}

// Phase b; also writes gamma out (0 past n).
template <int C>
__device__ void intra_gamma(IntraLds<C> &L, int n, float *gamma_out) {
    const int tid = (int)threadIdx.x;
    if (tid >= C) return;
    double acc = 0.0, mine = 0.0;
    for (int t = 0; t < n; t++) {
        acc += (double)L.graw[t];
        if (t == tid) mine = acc;
    }
    if (tid >= n) mine = acc; // gamma_last: e^(gamma_i - gamma_j) stays <= 1 on padding rows
    const float gm = (float)mine;
    L.gamma[tid] = gm;
    L.kscale[tid] = L.beta[tid] * expf(gm);
    gamma_out[tid] = tid < n ? gm : 0.0f;
}

// Phase c: A[i][j] into at[j][i] for j < i.
template <int C>
__device__ void intra_attn(IntraLds<C> &L, int D_k) {
    const int TS = C / 16;
    const int ti = (int)threadIdx.x / 16, tj = (int)threadIdx.x % 16;
    if (tj > ti) return;
    float acc[TS][TS];
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) acc[a][c] = 0.0f;
    for (int p = 0; p < D_k; p++) {
        float ki[TS], kj[TS];
        KDN_UNROLL
        for (int a = 0; a < TS; a++) {
            ki[a] = L.k[ti * TS + a][p];
            kj[a] = L.k[tj * TS + a][p];
        }
        KDN_UNROLL
        for (int a = 0; a < TS; a++)
            KDN_UNROLL
            for (int c = 0; c < TS; c++) acc[a][c] = fmaf(ki[a], kj[c], acc[a][c]);
    }
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) {
            const int i = ti * TS + a, j = tj * TS + c;
            if (j < i) L.at[j][i] = -L.beta[i] * acc[a][c] * expf(L.gamma[i] - L.gamma[j]);
        }
}

// Phase d for one column col of Tinv: (I - A) x = e_col, by the kIntraGroup
// lanes of a group, lane r holding rows m * kIntraGroup + r in d[m]. Blocks
// before col's are zero and skipped; columns past n are zero (no token).
// Rows past n have A = 0 and a zero right-hand side, so they come out 0.
// `run` is the same for every group of a wave (see intra_solve), so the
// butterfly's shuffles are reached by whole waves; a column past n that runs
// beside a column below n computes garbage that the store below drops.
template <int C>
__device__ void solve_column(IntraLds<C> &L, int col, int n, int r, bool run) {
    const int R = C / kIntraGroup, NB = kSolveBlock;
    float d[R];
    KDN_UNROLL
    for (int m = 0; m < R; m++) d[m] = 0.0f;
    if (run) {
        for (int i0 = col / NB * NB; i0 < n; i0 += NB) {
            float x[NB]; // lane 0 brings the right-hand side into the butterfly's sums
            KDN_UNROLL
            for (int u = 0; u < NB; u++) x[u] = r == 0 && i0 + u == col ? 1.0f : 0.0f;
            KDN_UNROLL
            for (int m = 0; m < R; m++) {
                const int j = m * kIntraGroup + r;
                if (j < i0) {
                    KDN_UNROLL
                    for (int u = 0; u < NB; u++) x[u] = fmaf(L.at[j][i0 + u], d[m], x[u]); // A[i][j] at at[j][i]
                }
            }
            for (int mask = kIntraGroup / 2; mask > 0; mask >>= 1) {
                KDN_UNROLL
                for (int u = 0; u < NB; u++) x[u] += kdn_shfl_xor(x[u], mask);
            }
            KDN_UNROLL
            for (int u = 0; u < NB; u++) {
                float xu = x[u];
                KDN_UNROLL
                for (int w = 0; w < u; w++) xu = fmaf(L.at[i0 + w][i0 + u], x[w], xu);
                x[u] = xu;
            }
            // The block lies in slice i0 / kIntraGroup; lane r owns its row i0 + u
            // with u = r - i0 % kIntraGroup, if any.
            float mine = 0.0f;
            KDN_UNROLL
            for (int u = 0; u < NB; u++) mine = r == i0 % kIntraGroup + u ? x[u] : mine;
            const bool owns = r >= i0 % kIntraGroup && r < i0 % kIntraGroup + NB;
            KDN_UNROLL
            for (int m = 0; m < R; m++)
                if (owns && m == i0 / kIntraGroup) d[m] = mine;
        }
    }
    KDN_UNROLL
    for (int m = 0; m < R; m++) {
        const int i = m * kIntraGroup + r;
        if (i >= col) L.at[i][col] = col < n ? d[m] : 0.0f;
    }
}

template <int C>
__device__ void intra_solve(IntraLds<C> &L, int n) {
    const int q = (int)threadIdx.x / kIntraGroup, r = (int)threadIdx.x % kIntraGroup;
    // The groups of one wave take consecutive columns inside one block of
    // kSolveBlock, so they share the loop bounds; they run if the wave's
    // first column is below n.
    static_assert(kSolveBlock % (KDN_WAVE / kIntraGroup) == 0, "a wave's columns must share a block");
    for (int col = q; col < C; col += kIntraGroups)
        solve_column<C>(L, col, n, r, col - q % (KDN_WAVE / kIntraGroup) < n);
}

// Phase e: out (C x width, row-major) = Tinv X, X's row j = src_j * factor_j
// where src is V's row j in global memory (from_v) or K's row j in LDS with
// factor beta_j e^gamma_j, else factor beta_j.
template <int C, bool kFromV>
__device__ void intra_wy(IntraLds<C> &L, const float *vc, size_t v_stride, int n, int width, float *out) {
    const int MR = C / kWyRows;
    const int cb = (int)threadIdx.x % kWyCols, r0 = (int)threadIdx.x / kWyCols;
    for (int b = cb; b - cb < width; b += kWyCols) {
        float acc[MR];
        KDN_UNROLL
        for (int m = 0; m < MR; m++) acc[m] = 0.0f;
        for (int j = 0; j < n; j++) {
            const float x = b >= width ? 0.0f : kFromV ? L.beta[j] * vc[j * v_stride + b] : L.kscale[j] * L.k[j][b];
            KDN_UNROLL
            for (int m = 0; m < MR; m++) {
                const int i = r0 + m * kWyRows;
                if (j <= i) acc[m] = fmaf(L.at[i][j], x, acc[m]);
            }
        }
        if (b < width) {
            KDN_UNROLL
            for (int m = 0; m < MR; m++) out[(size_t)(r0 + m * kWyRows) * width + b] = acc[m];
        }
    }
}

template <int C>
__device__ void intra_store_tinv(IntraLds<C> &L, float *tinv) {
    for (int e = (int)threadIdx.x; e < C * C; e += kIntraThreads) {
        const int i = e / C, j = e % C;
        tinv[e] = j <= i ? L.at[i][j] : 0.0f;
    }
}

template <int C>
__global__ __launch_bounds__(kIntraThreads) void kernel_intra_chunk_fused(
    const float *__restrict__ k, const float *__restrict__ v, const float *__restrict__ g,
    const float *__restrict__ beta, float *__restrict__ gamma, float *__restrict__ Tinv, float *__restrict__ U,
    float *__restrict__ W, int T, int H_k, int H_v, int D_k, int D_v, int head_map) {
    KDN_DYNAMIC_SHARED(double, lds_raw);
    IntraLds<C> &L = *(IntraLds<C> *)lds_raw;
    const int c = (int)blockIdx.x, h = (int)blockIdx.y, seq = (int)blockIdx.z;
    const int hk = head_map == 0 ? h % H_k : h / (H_v / H_k);
    const int t0 = c * C, n = T - t0 < C ? T - t0 : C;
    const size_t tok0 = (size_t)seq * T + t0;
    const size_t ci = ((size_t)seq * H_v + h) * gridDim.x + c;
    intra_load<C>(L, k, g, beta, tok0, n, hk, h, H_k, H_v, D_k);
    __syncthreads();
    intra_gamma<C>(L, n, gamma + ci * C);
    __syncthreads();
    intra_attn<C>(L, D_k);
    __syncthreads();
    intra_solve<C>(L, n);
    __syncthreads();
    intra_store_tinv<C>(L, Tinv + ci * C * C);
    intra_wy<C, true>(L, v + (tok0 * H_v + h) * D_v, (size_t)H_v * D_v, n, D_v, U + ci * C * D_v);
    intra_wy<C, false>(L, NULL, 0, n, D_k, W + ci * C * D_k);
}

// ---- 2) state through chunks ------------------------------------------------
static const int kStateThreads = 512;
static const int kTileThreads = 256;              // threads computing P in phase b
static const int kBV = 16;                        // state columns per workgroup
static const int kRows = kStateThreads / kBV;     // row groups of phases b, c, d

template <int C>
struct StateLds {
    static_assert(C % 16 == 0 && C % kRows == 0 && kMaxDk % kRows == 0, "C and D_k must split into row groups");
    float k[C][kMaxDk + 1];   // the chunk's keys
    float p[C][C + 1];        // P, lower triangle with the diagonal
    float s[kMaxDk][kBV + 1]; // the state slab S[i][b]
    float d[C][kBV];          // D = U - W S0
    float gamma[C];           // gamma_last past n
    float exp_gamma[C], to_end[C];
};

template <int C>
__device__ void state_load_chunk(StateLds<C> &L, const float *k, const float *gamma, size_t tok0, int n, int hk,
                                 int H_k, int D_k) {
    const int tid = (int)threadIdx.x;
    if (tid < C) {
        const float last = gamma[n - 1], gm = tid < n ? gamma[tid] : last;
        L.gamma[tid] = gm;
        L.exp_gamma[tid] = expf(gm);
        L.to_end[tid] = expf(last - gm);
    }
    for (int e = tid; e < C * kMaxDk; e += kStateThreads) {
        int t = e / kMaxDk, i = e % kMaxDk;
        L.k[t][i] = t < n && i < D_k ? k[((tok0 + t) * H_k + hk) * D_k + i] : 0.0f;
    }
}

// Phase b, threads 0..kTileThreads-1: P[i][j] = q_i.k_j e^(gamma_i - gamma_j), j <= i.
template <int C>
__device__ void state_p_tiles(StateLds<C> &L, const float *qc, size_t q_stride, int n, int D_k) {
    const int TS = C / 16;
    const int ti = (int)threadIdx.x / 16, tj = (int)threadIdx.x % 16;
    if ((int)threadIdx.x >= kTileThreads || tj > ti) return;
    float acc[TS][TS];
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) acc[a][c] = 0.0f;
    for (int p = 0; p < D_k; p++) {
        float qi[TS], kj[TS];
        KDN_UNROLL
        for (int a = 0; a < TS; a++) {
            const int i = ti * TS + a;
            qi[a] = i < n ? qc[i * q_stride + p] : 0.0f;
            kj[a] = L.k[tj * TS + a][p];
        }
        KDN_UNROLL
        for (int a = 0; a < TS; a++)
            KDN_UNROLL
            for (int c = 0; c < TS; c++) acc[a][c] = fmaf(qi[a], kj[c], acc[a][c]);
    }
    KDN_UNROLL
    for (int a = 0; a < TS; a++)
        KDN_UNROLL
        for (int c = 0; c < TS; c++) {
            const int i = ti * TS + a, j = tj * TS + c;
            if (j <= i) L.p[i][j] = acc[a][c] * expf(L.gamma[i] - L.gamma[j]);
        }
}

// Phase b, all threads: D[t][b] = U[t][b] - sum_i W[t][i] S[i][b] (0 past n).
template <int C>
__device__ void state_deltas(StateLds<C> &L, const float *Uc, const float *Wc, int n, int D_k, int b0, int D_v) {
    const int MR = C / kRows;
    const int b = (int)threadIdx.x % kBV, t0 = (int)threadIdx.x / kBV;
    float ws[MR];
    KDN_UNROLL
    for (int m = 0; m < MR; m++) ws[m] = 0.0f;
    for (int i = 0; i < D_k; i++) {
        const float sv = L.s[i][b];
        KDN_UNROLL
        for (int m = 0; m < MR; m++) {
            const int t = t0 + m * kRows;
            ws[m] = fmaf(t < n ? Wc[(size_t)t * D_k + i] : 0.0f, sv, ws[m]);
        }
    }
    KDN_UNROLL
    for (int m = 0; m < MR; m++) {
        const int t = t0 + m * kRows;
        L.d[t][b] = t < n && b0 + b < D_v ? Uc[(size_t)t * D_v + b0 + b] - ws[m] : 0.0f;
    }
}

// Phase c: o_t[b] = e^gamma_t (q_t . S[:, b]) + sum_{j <= t} P[t][j] D[j][b].
template <int C>
__device__ void state_outputs(StateLds<C> &L, const float *qc, size_t q_stride, float *oc, size_t o_stride, int n,
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
        const float dj = L.d[j][b];
        KDN_UNROLL
        for (int m = 0; m < MR; m++) {
            const int t = t0 + m * kRows;
            if (j <= t) pd[m] = fmaf(L.p[t][j], dj, pd[m]);
        }
    }
    KDN_UNROLL
    for (int m = 0; m < MR; m++) {
        const int t = t0 + m * kRows;
        if (t < n && b0 + b < D_v) oc[t * o_stride + b] = fmaf(L.exp_gamma[t], qs[m], pd[m]);
    }
}

// Phase d: S[i][b] <- e^gamma_last S[i][b] + sum_{j < n} K[j][i] e^(gamma_last - gamma_j) D[j][b].
template <int C>
__device__ void state_update(StateLds<C> &L, int n, int D_k) {
    const int MI = kMaxDk / kRows;
    const float total = L.exp_gamma[C - 1]; // gamma_last: rows past n hold it
    const int b = (int)threadIdx.x % kBV, i0 = (int)threadIdx.x / kBV;
    float acc[MI];
    KDN_UNROLL
    for (int m = 0; m < MI; m++) acc[m] = 0.0f;
    for (int j = 0; j < n; j++) {
        const float w = L.to_end[j] * L.d[j][b];
        KDN_UNROLL
        for (int m = 0; m < MI; m++) acc[m] = fmaf(L.k[j][i0 + m * kRows], w, acc[m]);
    }
    KDN_UNROLL
    for (int m = 0; m < MI; m++) {
        const int i = i0 + m * kRows;
        if (i < D_k) L.s[i][b] = fmaf(total, L.s[i][b], acc[m]);
    }
}

template <int C>
__global__ __launch_bounds__(kStateThreads) void kernel_state_chunks_fused(
    const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ gamma,
    const float *__restrict__ U, const float *__restrict__ W, float *__restrict__ state, float *__restrict__ o, int T,
    int H_k, int H_v, int D_k, int D_v, int head_map, int c0, int c1) {
    KDN_DYNAMIC_SHARED(double, lds_raw);
    StateLds<C> &L = *(StateLds<C> *)lds_raw;
    const int tid = (int)threadIdx.x;
    const int b0 = (int)blockIdx.x * kBV, h = (int)blockIdx.y, seq = (int)blockIdx.z;
    const int hk = head_map == 0 ? h % H_k : h / (H_v / H_k);
    const int n_chunks = (T + C - 1) / C;
    const size_t head = ((size_t)seq * H_v + h) * D_v * D_k;
    const size_t q_stride = (size_t)H_k * D_k, v_stride = (size_t)H_v * D_v;

    // St is D_v x D_k: consecutive threads read consecutive i of one column.
    for (int e = tid; e < kMaxDk * kBV; e += kStateThreads) {
        int b = e / kMaxDk, i = e % kMaxDk;
        L.s[i][b] = i < D_k && b0 + b < D_v ? state[head + (size_t)(b0 + b) * D_k + i] : 0.0f;
    }
    for (int c = c0; c < c1; c++) {
        const int t0 = c * C, n = T - t0 < C ? T - t0 : C;
        const size_t tok0 = (size_t)seq * T + t0;
        const size_t ci = ((size_t)seq * H_v + h) * n_chunks + c;
        const float *qc = q + (tok0 * H_k + hk) * D_k;
        state_load_chunk<C>(L, k, gamma + ci * C, tok0, n, hk, H_k, D_k);
        __syncthreads(); // also: the slab is loaded
        state_p_tiles<C>(L, qc, q_stride, n, D_k);
        state_deltas<C>(L, U + ci * C * D_v, W + ci * C * D_k, n, D_k, b0, D_v);
        __syncthreads();
        state_outputs<C>(L, qc, q_stride, o + (tok0 * H_v + h) * D_v + b0, v_stride, n, D_k, b0, D_v);
        __syncthreads();
        state_update<C>(L, n, D_k);
        __syncthreads();
    }
    for (int e = tid; e < kMaxDk * kBV; e += kStateThreads) {
        int b = e / kMaxDk, i = e % kMaxDk;
        if (i < D_k && b0 + b < D_v) state[head + (size_t)(b0 + b) * D_k + i] = L.s[i][b];
    }
}

// ---- launchers ----------------------------------------------------------------
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
static void launch_intra(const KdnShape *s, const float *k, const float *v, const float *g, const float *beta,
                         float *gamma, float *Tinv, float *U, float *W) {
    static_assert(sizeof(IntraLds<C>) <= 64 * 1024, "gfx906 has 64 KB of LDS per workgroup");
    dim3 grid((unsigned)KDN_CEIL_DIV(s->T, C), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_ALLOW_LDS(kernel_intra_chunk_fused<C>, sizeof(IntraLds<C>));
    KDN_LAUNCH(kernel_intra_chunk_fused<C>, grid, dim3(kIntraThreads), sizeof(IntraLds<C>), k, v, g, beta, gamma, Tinv,
               U, W, s->T, s->H_k, s->H_v, s->D_k, s->D_v, s->head_map);
}

extern "C" void kdn_intra_chunk_fused(const KdnShape *s, const float *k, const float *v, const float *g,
                                      const float *beta, float *gamma, float *Tinv, float *U, float *W) {
    const char *why = unsupported(s);
    if (why)
        kdn_launch_refused("kernel_intra_chunk_fused", why);
    else if (s->T == 0)
        return; // no chunk
    else if (s->chunk == 32)
        launch_intra<32>(s, k, v, g, beta, gamma, Tinv, U, W);
    else
        launch_intra<64>(s, k, v, g, beta, gamma, Tinv, U, W);
}

template <int C>
static void launch_state(const KdnShape *s, int c0, int c1, const float *q, const float *k, const float *gamma,
                         const float *U, const float *W, float *state, float *o) {
    static_assert(sizeof(StateLds<C>) <= 64 * 1024, "gfx906 has 64 KB of LDS per workgroup");
    dim3 grid((unsigned)KDN_CEIL_DIV(s->D_v, kBV), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_ALLOW_LDS(kernel_state_chunks_fused<C>, sizeof(StateLds<C>));
    KDN_LAUNCH(kernel_state_chunks_fused<C>, grid, dim3(kStateThreads), sizeof(StateLds<C>), q, k, gamma, U, W, state,
               o, s->T, s->H_k, s->H_v, s->D_k, s->D_v, s->head_map, c0, c1);
}

extern "C" void kdn_state_chunks_fused(const KdnShape *s, int c0, int c1, const float *q, const float *k,
                                       const float *gamma, const float *U, const float *W, float *state, float *o) {
    const char *why = unsupported(s);
    if (!why && (c0 < 0 || c1 < c0 || c1 > KDN_CEIL_DIV(s->T, s->chunk))) why = "chunk range outside 0..n_chunks";
    if (why)
        kdn_launch_refused("kernel_state_chunks_fused", why);
    else if (s->chunk == 32)
        launch_state<32>(s, c0, c1, q, k, gamma, U, W, state, o);
    else
        launch_state<64>(s, c0, c1, q, k, gamma, U, W, state, o);
}

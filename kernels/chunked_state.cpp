// The chunked prefill's second launch: the state carried through the chunks,
// and the outputs (chunked.h; the ladder checks it in phase 7):
//
// 2) kernel_chunked_state<C, N>
//   grid      (D_v / N, H_v, n_seqs): a workgroup owns a D_k x N slab of one
//             head's state (state columns are independent) through chunks
//             c0 .. c1 - 1: read once, written once. N = kBV<C>: 16 at
//             C = 64, 32 at C = 32 (32 at both in the CUDA build); at C = 64
//             on gfx906 8 (the narrow slab) where those workgroups fit one
//             round of the 16-column slab's (up to 11 heads at B = 1).
//   workgroup 256 threads; thread (rg, cg) = (tid / (N/CW), tid % (N/CW))
//             owns the slab's columns CW cg .. CW cg + CW - 1 in every step
//             (CW = 4; 2 in the narrow slab, so that each thread keeps one
//             token row):
//             G1  X = [W; Q] S (RT = C N / (256 CW) token rows rg RT + a,
//                 so 2 CW RT accumulators): per 4 state rows, 4 LDS reads of
//                 CW floats of S and 2 RT global vector reads of W and Q rows
//                 feed 8 CW RT FMAs. V_new = U - W S to LDS; e^gamma (Q S)
//                 kept.
//             G2  O = e^gamma (Q S) + P V_new for the same rows, to o.
//             G3  S <- e^gamma_last S + K^T (e^(gamma_last - gamma) V_new)
//                 for state rows SR rg .. SR rg + SR - 1 (SR = 2 at C = 64,
//                 either slab; 4 at C = 32), read from and written back to
//                 the slab in LDS (the only copy: no registers held from
//                 chunk to chunk), for the next chunk's G1.
//             A barrier after V_new is stored, after G2, after V_new is
//             rescaled in place, and after G3: 4 per chunk.
//   LDS       S 128 x N + V_new C x N floats: 12 KB at C = 64, 20 KB at
//             C = 32, 6 KB in the narrow slab; three workgroups (3 waves per
//             SIMD, the kernel held to 84 VGPRs) share a gfx906 CU.

#include "chunked.h"

// ---- 2) state through chunks ------------------------------------------------
static const int kStateThreads = 256;
// State columns per workgroup, the default slab width N at each C (32 at
// C = 32: one token row per thread already). gfx906, and the CPU executor
// that checks its layout: 16 at C = 64, so that a thread has one token row in
// G1 and G2 and 2 state rows in G3 (the lens: the pass is bound by each
// wave's chain of dependent steps per chunk, not by the workgroup count). The
// CUDA build (always C = 64) keeps 32: on an H100 16 columns ran Qwen3-Next's
// T = 512 chunked call 9 % slower (results/h100-ab-slab16.tsv).
// The narrow slab, kNarrowBV64 columns at C = 64, is for grids that fit one
// round of the CUs' workgroup slots even so (few heads at B = 1): twice the
// workgroups, each thread 2 columns, so half the FMAs in each wave's chain of
// dependent steps per chunk, for twice the W, Q and K reads from L2 (the
// lens's simulation, ROCm 6.4: 8 heads at T = 512 from 204 to 170 us; at 16
// heads, past one round, 242 to 338).
// G1's and G3's global loads: unguarded on gfx906 (below), a guard per row
// and step in the CUDA build, where G3's unguarded K loads ran the chunked
// call 2-4 % slower on an H100 (results/h100-ab-g3loads.tsv).
#if defined(KDN_BACKEND_CUDA)
constexpr int kBV64 = 32, kNarrowBV64 = 32; // no narrower slab
constexpr bool kGuardedLoads = true;
#else
constexpr int kBV64 = 16, kNarrowBV64 = 8;
constexpr bool kGuardedLoads = false;
#endif
template <int C>
constexpr int kBV = C == 64 ? kBV64 : 32;
// A thread's state columns: 4, or 2 where a slab is too narrow for one token
// row per thread with 4 (the narrow slab).
template <int C, int N>
constexpr int kCols = C * N / kStateThreads < 4 ? C * N / kStateThreads : 4;
template <int C, int N>
constexpr int kColGroups = N / kCols<C, N>;
template <int C, int N>
constexpr int kRowGroups = kStateThreads / kColGroups<C, N>;
template <int C, int N>
constexpr int kSRows = kMaxDk / kRowGroups<C, N>; // state rows per thread in G3: a 2- or 4-float run of a column

template <int C, int N>
struct StateLds {
    static_assert(C % kRowGroups<C, N> == 0 && C % (4 * kSteps) == 0, "C must split into row groups and batches");
    static_assert(kCols<C, N> == 2 || kCols<C, N> == 4, "a thread's columns are one 2- or 4-float run");
    float s[kMaxDk][N]; // the slab S[i][b]; rows past D_k and columns past D_v zero
    float vn[C][N];     // V_new, then e^(gamma_last - gamma_j) V_new
};

// A thread's run of W (2 or 4) floats of a slab row in LDS.
template <int W>
__device__ __forceinline__ void lds_load(const float *p, float out[W]) {
    if constexpr (W == 4)
        kdn_load4(p, out);
    else
        kdn_load2_if(p, true, out);
}
template <int W>
__device__ __forceinline__ void lds_store(float *p, const float in[W]) {
    if constexpr (W == 4)
        kdn_store4(p, in);
    else
        kdn_store2(p, in);
}

// G2's batch of 4 kSteps columns j of P for the thread's RT token rows: xq +=
// P[row][j] V_new[j]. For j > row, P's zero meets 0 instead of V_new[j] (a
// select of the operand), so that a NaN or Inf in a later token's V_new
// never reaches an earlier token's output. gfx906 model (ROCm 5.2): the
// chunk loop from 549 to 808 cycles; a branch to a masked copy of the batch
// took it to 2204, a loop of its own for the last batch 129 VGPRs (1 wave
// per SIMD).
template <int C, int N, bool kVec>
__device__ __forceinline__ void state_outputs_batch(const StateLds<C, N> &L, const float *Pc, int rg, int cq,
                                                    int j0, int jend, float (*xq)[kCols<C, N>]) {
    const int RT = C / kRowGroups<C, N>, CW = kCols<C, N>;
    float p4[kSteps][RT][4]; // P[row][j0 ..]: whole rows exist (C columns, zero past the diagonal)
    KDN_UNROLL
    for (int st = 0; st < kSteps; st++)
        KDN_UNROLL
        for (int a = 0; a < RT; a++)
            load_run<4, kVec>(Pc + (rg * RT + a) * C + j0 + 4 * st, j0 + 4 * st < jend ? 4 : 0, p4[st][a]);
    KDN_UNROLL
    for (int st = 0; st < kSteps; st++)
        KDN_UNROLL
        for (int e = 0; e < 4; e++) {
            const int j = j0 + 4 * st + e;
            float v[CW];
            lds_load<CW>(&L.vn[j][cq], v);
            KDN_UNROLL
            for (int a = 0; a < RT; a++)
                KDN_UNROLL
                for (int b = 0; b < CW; b++)
                    xq[a][b] = fmaf(p4[st][a][e], j <= rg * RT + a ? v[b] : 0.0f, xq[a][b]); // mutate: state_out
        }
}

// gfx906 waves per SIMD the pass is compiled for, and so its workgroups per
// CU (a workgroup is one wave per SIMD): with vector loads three (<= 84
// VGPRs; LDS: 20 KB at C = 32, 12 KB at C = 64), so that 128 workgroups
// (Qwen3-Next at B = 1: 32 heads x 4 slabs at C = 32, 16 heads x 8 slabs at
// C = 64) run in one round on 60 CUs instead of 120 + 8. The scalar-load
// copies are not bound (the one at C = 32 needs 95 VGPRs): 1.
template <bool kVec>
constexpr int kStateWaves = kVec ? 3 : 1;

// The kernel's body, its pointers __restrict__ where they can be (kernel_args.h says why).
template <int C, int N, bool kVec>
__device__ __forceinline__ void chunked_state(
    const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ gamma,
    const float *__restrict__ to_end, const float *__restrict__ U, const float *__restrict__ W,
    const float *__restrict__ P, const float *state_in, float *state_out, float *__restrict__ o, int T, int H_k,
    int H_v, int D_k, int D_v, int head_map, int c0, int c1, float q_scale) {
    KDN_DYNAMIC_SHARED(double, lds_raw);
    StateLds<C, N> &L = *(StateLds<C, N> *)lds_raw;
    // token rows per thread in G1 and G2, state rows in G3, state columns in all
    const int RT = C / kRowGroups<C, N>, SR = kSRows<C, N>, CW = kCols<C, N>;
    const int tid = (int)threadIdx.x, rg = tid / kColGroups<C, N>, cq = tid % kColGroups<C, N> * CW;
    const int b0 = (int)blockIdx.x * N, h = (int)blockIdx.y, seq = (int)blockIdx.z;
    const int hk = kdn_key_head(h, H_k, H_v, head_map);
    const int ncols = D_v - (b0 + cq); // this thread's columns that exist (may be <= 0)
    const int n_chunks = (T + C - 1) / C;
    const size_t head = ((size_t)seq * H_v + h) * D_v * D_k;
    const size_t qk_stride = (size_t)H_k * D_k;
    const int i0 = rg * SR; // this thread's state rows in G3
    const unsigned k_col = i0 < D_k ? i0 : 0; // the K columns G3 loads for them: always inside a K row

    // St is D_v x D_k (i innermost): column b of the slab is a row of St.
    // The slab lives in LDS only: registers held across the chunk loop would
    // count against every step's (gfx906: 3 waves per SIMD need <= 84 VGPRs).
    KDN_UNROLL
    for (int c = 0; c < CW; c++) {
        float col[SR];
        load_run<SR, kVec>(state_in + head + (size_t)(b0 + cq + c) * D_k + i0, c < ncols ? D_k - i0 : 0, col);
        KDN_UNROLL
        for (int u = 0; u < SR; u++) L.s[i0 + u][cq + c] = col[u];
    }
    __syncthreads();

    for (int c = c0; c < c1; c++) {
        const int n = T - c * C < C ? T - c * C : C;
        const size_t tok0 = (size_t)seq * T + (size_t)c * C;
        const size_t ci = ((size_t)seq * H_v + h) * n_chunks + c;
        const float *Wc = W + ci * C * D_k, *Uc = U + ci * C * D_v, *Pc = P + ci * C * C, *gc = gamma + ci * C;
        const float *te = to_end + ci * C;
        const float *qc = q + (tok0 * H_k + hk) * D_k, *kc = k + (tok0 * H_k + hk) * D_k;

        // G1: X = [W; Q] S for token rows rg RT + a.
        // Unguarded (vector) loads: every batch of W and Q is whole (the
        // launch asks D_k % 8 == 0 of them); a Q row past n reads row n - 1,
        // whose products stay in rows that are never stored.
        const bool guarded = kGuardedLoads || !kVec;
        float xw[RT][CW], xq[RT][CW];
        KDN_UNROLL
        for (int a = 0; a < RT; a++)
            KDN_UNROLL
            for (int b = 0; b < CW; b++) xw[a][b] = xq[a][b] = 0.0f;
        for (int i0b = 0; i0b < D_k; i0b += 4 * kSteps) {
            float w4[kSteps][RT][4], q4[kSteps][RT][4]; // the batch's loads, issued together
            KDN_UNROLL
            for (int st = 0; st < kSteps; st++)
                KDN_UNROLL
                for (int a = 0; a < RT; a++) {
                    const int row = rg * RT + a, i = i0b + 4 * st;
                    load_run<4, kVec>(Wc + (size_t)row * D_k + i, guarded ? D_k - i : 4, w4[st][a]); // zero past n
                    const int q_row = guarded || row < n ? row : n - 1;
                    load_run<4, kVec>(qc + q_row * qk_stride + i, guarded ? (row < n ? D_k - i : 0) : 4, q4[st][a]);
                }
            KDN_GFX906_SCHED_FENCE();
            KDN_UNROLL
            for (int st = 0; st < kSteps; st++) {
                float s4[4][CW];
                KDN_UNROLL
                for (int e = 0; e < 4; e++) lds_load<CW>(&L.s[i0b + 4 * st + e][cq], s4[e]);
                KDN_UNROLL
                for (int a = 0; a < RT; a++)
                    KDN_UNROLL
                    for (int e = 0; e < 4; e++)
                        KDN_UNROLL
                        for (int b = 0; b < CW; b++) {
                            xw[a][b] = fmaf(w4[st][a][e], s4[e][b], xw[a][b]);
                            xq[a][b] = fmaf(q4[st][a][e], s4[e][b], xq[a][b]);
                        }
            }
        }
        // V_new = U - W S (0 past n: U and W rows are); the state part of O.
        // The rows' e^(gamma_last - gamma_j) are loaded here, for after G2:
        // their latency hides behind it.
        float vn[RT][CW], f_end[RT];
        KDN_UNROLL
        for (int a = 0; a < RT; a++) {
            const int row = rg * RT + a;
            f_end[a] = row < n ? te[row] : 0.0f;
            float u[CW];
            load_run<CW, kVec>(Uc + (size_t)row * D_v + b0 + cq, ncols, u);
            const float eg = expf(gc[row]);
            KDN_UNROLL
            for (int b = 0; b < CW; b++) {
                vn[a][b] = u[b] - xw[a][b];
                xq[a][b] *= eg;
            }
            lds_store<CW>(&L.vn[row][cq], vn[a]);
        }
        __syncthreads();

        // G2: O = e^gamma (Q S) + P V_new; P is zero above the diagonal.
        const int jend = n < (rg + 1) * RT ? n : (rg + 1) * RT;
        for (int j0 = 0; j0 < jend; j0 += 4 * kSteps) state_outputs_batch<C, N, kVec>(L, Pc, rg, cq, j0, jend, xq);
        // o is linear in q: ggml's scale of q is one multiply here.
        KDN_UNROLL
        for (int a = 0; a < RT; a++) {
            const int row = rg * RT + a;
            KDN_UNROLL
            for (int b = 0; b < CW; b++) xq[a][b] *= q_scale; // mutate: chunked_q_scale
            if (row < n) store_run<CW, kVec>(o + ((tok0 + row) * H_v + h) * D_v + b0 + cq, ncols, xq[a]);
        }
        __syncthreads();

        // V_new rows scaled by e^(gamma_last - gamma_j), for G3.
        KDN_UNROLL
        for (int a = 0; a < RT; a++) {
            const int row = rg * RT + a;
            KDN_UNROLL
            for (int b = 0; b < CW; b++) vn[a][b] *= f_end[a];
            lds_store<CW>(&L.vn[row][cq], vn[a]);
        }
        __syncthreads();

        // G3: S <- e^gamma_last S + K^T V_new' for state rows i0 .. i0 + SR - 1.
        // No branch guards the K loads (gfx906: 3.2 instructions per FMA with
        // one per row, 2.2 without): a token row past n reads row n - 1 (its
        // V_new' row is zero), a thread whose rows are past D_k reads K's
        // first columns and leaves its slab rows as they are (zero).
        float acc[SR][CW];
        KDN_UNROLL
        for (int u = 0; u < SR; u++)
            KDN_UNROLL
            for (int b = 0; b < CW; b++) acc[u][b] = 0.0f;
        const float *k_last = kc + (size_t)(n - 1) * qk_stride, *k_j = kc;
        for (int j0 = 0; j0 < n; j0 += 4 * kSteps, k_j += 4 * kSteps * qk_stride) {
            float k4[4 * kSteps][SR];
            KDN_UNROLL
            for (int jj = 0; jj < 4 * kSteps; jj++) {
                const float *k_row = kGuardedLoads ? k_j + jj * qk_stride + i0
                                                   : (j0 + jj < n ? k_j + jj * qk_stride : k_last) + k_col;
                const int valid = kGuardedLoads ? (j0 + jj < n ? D_k - i0 : 0) : kVec ? SR : D_k - (int)k_col;
                load_run<SR, kVec>(k_row, valid, k4[jj]);
            }
            KDN_UNROLL
            for (int jj = 0; jj < 4 * kSteps; jj++) {
                float v[CW];
                lds_load<CW>(&L.vn[j0 + jj][cq], v); // rows past n are zero
                KDN_UNROLL
                for (int u = 0; u < SR; u++)
                    KDN_UNROLL
                    for (int b = 0; b < CW; b++) acc[u][b] = fmaf(k4[jj][u], v[b], acc[u][b]);
            }
        }
        const float total = kdn_decay(gc[n - 1]); // once per chunk: decay.h
        // Rows i0 .. i0 + SR - 1 of the slab are this thread's alone.
        if (i0 < D_k) {
            KDN_UNROLL
            for (int u = 0; u < SR; u++) {
                float s_row[CW];
                lds_load<CW>(&L.s[i0 + u][cq], s_row);
                KDN_UNROLL
                for (int b = 0; b < CW; b++) s_row[b] = fmaf(total, s_row[b], acc[u][b]); // mutate: state_update
                lds_store<CW>(&L.s[i0 + u][cq], s_row);
            }
        }
        __syncthreads();
    }
    KDN_UNROLL
    for (int c = 0; c < CW; c++) {
        float col[SR];
        KDN_UNROLL
        for (int u = 0; u < SR; u++) col[u] = L.s[i0 + u][cq + c];
        if (c < ncols) store_run<SR, kVec>(state_out + head + (size_t)(b0 + cq + c) * D_k + i0, D_k - i0, col);
    }
}

template <int C, int N, bool kVec>
__global__ __launch_bounds__(kStateThreads) KDN_GFX906_WAVES_PER_SIMD((kStateWaves<kVec>)) void kernel_chunked_state(
    const StateArgs a) {
    chunked_state<C, N, kVec>(a.q, a.k, a.gamma, a.to_end, a.U, a.W, a.P, a.state_in, a.state_out, a.o, a.T, a.H_k,
                              a.H_v, a.D_k, a.D_v, a.head_map, a.c0, a.c1, a.q_scale);
}

// ---- launchers ----------------------------------------------------------------
const KdnLimits kdn_chunked_limits = kChunkedLimits;

template <int C, int N, bool kVec>
static void launch_state(const KdnLayerCall *c, int c0, int c1, const KdnChunkBuffers *b) {
    static_assert(sizeof(StateLds<C, N>) <= 64 * 1024, "gfx906 has 64 KB of LDS per workgroup");
    const KdnShape *s = &c->s;
    dim3 grid((unsigned)KDN_CEIL_DIV(s->D_v, N), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_ALLOW_LDS((kernel_chunked_state<C, N, kVec>), sizeof(StateLds<C, N>));
    const StateArgs a = {c->q,   c->k,   b->gamma, b->to_end, b->U,   b->W,        b->P, c->state_in, c->snapshots,
                         c->o,   s->T,   s->H_k,   s->H_v,    s->D_k, s->D_v,      s->head_map, c0, c1, c->q_scale};
    KDN_LAUNCH((kernel_chunked_state<C, N, kVec>), grid, dim3(kStateThreads), sizeof(StateLds<C, N>), a);
}

// Workgroups of the state pass at slab width N, and how many one round of
// the 16-column kernel at C = 64 runs at once (gfx906: 3 per CU).
template <int N>
static long state_workgroups(const KdnShape *s) {
    return (long)KDN_CEIL_DIV(s->D_v, N) * s->H_v * s->n_seqs;
}
static long state_round_64() {
    return KDN_ROUND_WORKGROUPS((kernel_chunked_state<64, kBV64, true>), kStateThreads, kStateWaves<true>);
}

template <int C, int N>
static void launch_state_n(const KdnLayerCall *c, int c0, int c1, const KdnChunkBuffers *b, bool vec) {
    if (vec)
        launch_state<C, N, true>(c, c0, c1, b);
    else
        launch_state<C, N, false>(c, c0, c1, b);
}

// The one choice of the slab width at C = 64: the narrow slab where its
// twice as many workgroups still fit one round of the 16-column kernel's
// slots (no CU holds more of them than of the 16-column ones: at 12 heads,
// 192 > 180 on the MI50, the lens ran the narrow slab 5 % faster on ROCm 6.4
// objects and no faster on ROCm 7.2's), the 16-column slab otherwise.
static void launch_state_64(const KdnLayerCall *c, int c0, int c1, const KdnChunkBuffers *b, bool vec) {
    if (kNarrowBV64 < kBV64 && state_workgroups<kNarrowBV64>(&c->s) <= state_round_64())
        launch_state_n<64, kNarrowBV64>(c, c0, c1, b, vec);
    else
        launch_state_n<64, kBV64>(c, c0, c1, b, vec);
}

extern "C" int kdn_chunked_fewest_rounds_chunk(const KdnShape *s) {
    return state_workgroups<kBV64>(s) <= state_round_64() ? 64 : 32;
}

extern "C" void kdn_chunked_state(const KdnLayerCall *c, int c0, int c1, const KdnChunkBuffers *b) {
    const char *why = unsupported(c, b);
    if (!why && (c0 < 0 || c1 < c0 || c1 > KDN_CEIL_DIV(c->s.T, c->s.chunk)))
        why = "chunk range outside 0..n_chunks";
    if (why) {
        kdn_launch_refused("kernel_chunked_state", why);
        return;
    }
    const void *ptrs[] = {c->q, c->k, b->U, b->W, b->P, c->state_in, c->snapshots, c->o};
    // Unguarded loads read G1's batches whole: D_k a multiple of 8 floats.
    const bool vec = vector_ok(&c->s, ptrs, 8) && (kGuardedLoads || c->s.D_k % (4 * kSteps) == 0); // mutate: batches
    if (c->s.chunk == 32)
        launch_state_n<32, kBV<32>>(c, c0, c1, b, vec);
    else
        launch_state_64(c, c0, c1, b, vec);
}

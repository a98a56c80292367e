// The token-recurrent gated Delta-Net kernel (decode and short prompts; the
// ladder checks it in phase 8).
//
// Per (sequence, value head h) with state S (D_k x D_v), for t = 0..T-1:
//   S <- exp(g_t) S;   d = beta_t (v_t - S^T k_t);   S <- S + k_t d^T;   o_t = S^T q_t
// Column b of S only ever meets column b (d_b and o_b need S[:, b] alone), so
// the columns are independent and this kernel splits them across threads.
//
// Work split
//   grid      (ceil(D_v / (16 kCols)), H_v, n_seqs): one workgroup per
//             16 kCols state columns of one head of one sequence -> every head
//             and sequence in one launch; for a single sequence of the default
//             model (D_v = 128, H_v = 32) 256 workgroups with kCols = 1, 128
//             with kCols = 2.
//   workgroup 256 threads = 16 groups of kGroup = 16 lanes (4 waves on gfx906,
//             8 warps on CUDA; a group never straddles a wave for KDN_WAVE 32 or
//             64). No LDS, no barriers, but for the KDA gate (KdaDecays).
//   group     owns kCols state columns, 16 apart (so each set of 16 is
//             contiguous across the workgroup), i.e. kCols x D_k floats; the
//             description below is per column b. Prompts take kCols = 2
//             where one column per group would take more than one round of
//             the device (prompt_two_cols()): one k, q (loads, registers,
//             k.q) then serve both columns.
//   lane      lane j of a group owns R = ceil(D_k / 16) rows of that column,
//             kept in R registers for all T tokens (the state is read once and
//             written once): runs of 4 consecutive rows 4j .. 4j+3, 64 rows
//             apart (Rows<true>: one 16-byte load or store per run, a group
//             covers 256 contiguous bytes per instruction), or where a call's
//             views are not 16-byte aligned single rows j + 16 r (Rows<false>,
//             64 contiguous bytes per group and instruction).
//   per token each lane forms partial sums of S[:,b].k, S[:,b].q and k.q over
//             its R rows, the group adds them in one 4-step xor butterfly
//             (a group is a DPP row: each step a row rotation), and then
//             every lane knows d_b and o_b without a second reduction:
//               sk = S.k, sq = S.q  (undecayed S), a = exp(g)
//               d  = beta (v_b - a sk)
//               o  = (a S + k d).q = a sq + d (k.q)
//               S  = a S + k d       (R FMAs per lane)
//             Lane 0 of the group stores o_b. k_t and q_t (one key head, tiny)
//             are read straight from global memory into the same row slots; the
//             16 groups of a workgroup read the same lines, so they come from
//             L1/L2. In prompts the next token's k, q, v, g, beta are loaded before
//             the current token is processed, so their latency overlaps its math.
//
// Why it fits gfx906: wave64 with no matrix cores and a long memory latency
// wants many independent waves and a streaming, coalesced state access; this
// uses R rows of state + 2 x 2 R token values per lane (56 VGPRs at D_k = 128
// with the one-token-ahead prefetch: 4 waves per SIMD; 36 for decode, a
// single token without a loop: 7 waves, so the B = 1 grid of 256 workgroups
// runs in one round of the MI50's 420 slots), no scratch and no LDS. The
// only cross-lane traffic is 12 DPP row rotations per token (VALU modifiers, no LDS traffic;
// where ds_bpermute would go through LDS). D_k <= 64 / 128 / 256 use instantiations
// with R = 4 / 8 / 16 registers of state per lane.
//
// Supported shapes (others are refused, see the launcher):
//   1 <= D_k <= 256 (any value; rows past D_k are masked), D_v >= 1 (any value;
//   a partial last workgroup masks its extra columns), T >= 0 (T = 0 copies the
//   state), H_k >= 1, n_seqs >= 1, H_v <= 65535, n_seqs <= 65535, and for the
//   block head map (head_map = 1) H_v a multiple of H_k.
// A refused shape writes nothing: the launcher reports why through
// kdn_launch_refused, so kdn_sync() returns the failure on every backend.
#include "backend/backend.h"
#include "backend/wave.h"
#include "decay.h"
#include "heads.h"
#include "kdn.h"
#include "kernel_args.h"

#include <stdint.h>

static const int kGroup = 16;                          // lanes per state column
static const int kBlock = 256;                         // threads per workgroup
static const int kColsPerBlock = kBlock / kGroup;      // state columns per workgroup
static const int kMaxDk = 256;

static_assert(KDN_WAVE % kGroup == 0, "a column's lanes must sit in one wave");

// Sums over the kGroup lanes of a group (a DPP row of 16 lanes: the xor
// butterfly as row rotations, never leaves the group); every lane of the
// group gets the totals.
static_assert(kGroup == 16, "a group is one DPP row");
__device__ __forceinline__ float group_sum(float a) { return kdn_row_sum16(a); }

__device__ __forceinline__ void group_sum2(float &a, float &b) { kdn_row_sum16x2(a, b); }

// N sums over the group, two at a time with their exchanges interleaved.
template <int N>
__device__ __forceinline__ void group_sums(float x[N]) {
    for (int i = 0; i + 1 < N; i += 2) group_sum2(x[i], x[i + 1]);
    if (N % 2) x[N - 1] = group_sum(x[N - 1]);
}

// One token's inputs as this lane needs them: its rows of k and q, then the
// scalars of the token: v of each of the lane's kCols columns, g (scalar
// gate: the head's log-decay; KDA: that of state row tid, see
// KdaDecays) and beta.
template <int R, int kCols>
struct TokenIn {
    float k[R], q[R];
    float v[kCols], g, beta;
};

// KDA: the decay factor of state row i, e^g[i], is the same for every column
// of the head, so the workgroup computes each once per token, thread i for
// row i, into LDS (two buffers: token t's factors are read while token
// t + 1's are written), and every lane reads its R rows' factors there.
// Computed by each lane for its own rows, a token cost R kdn_decay per lane
// (16 columns of the workgroup recomputing the same 16 R factors) and made
// the KDA prompt issue-bound: 1.5x ggml's kernel at T = 64 on the H100.
template <bool kKda>
struct KdaDecays {
    float f[2][kKda ? kBlock : 1];
};

// Thread tid's row: its factor of the token whose gate g it holds, into buffer buf.
template <bool kKda>
__device__ __forceinline__ void kda_put(KdaDecays<kKda> &L, int buf, float g) {
    if (kKda) L.f[buf][threadIdx.x] = kdn_decay(g);
}

// Where a token of this lane's (sequence, head, column, rows) sits in each
// input, and how far apart tokens are (floats; tokens are uniform). The
// pointers move one token at a time (next()), so a token's addresses are
// ready before its loads: computed from the token index inside the loop,
// they delayed the loads of the next token on the H100 until the current
// token's math was done (nvcc scheduled them last).
struct TokenPtrs {
    const float *k, *q, *v, *g, *beta;
    long st_k, st_q, st_v, st_g, st_beta;
    __device__ __forceinline__ void next() {
        k += st_k, q += st_q, v += st_v, g += st_g, beta += st_beta;
    }
};

// A lane's rows of a column: R rows in runs of kRun consecutive ones, the
// runs kGroup * kRun rows apart; lane j's first row is j * kRun. With kVec a
// run is 4 rows, read and written as one 16-byte access (dwordx4 on gfx906):
// a group then covers 256 contiguous bytes per instruction instead of 64.
// p points at the lane's first row; n_rows = D_k - that row; rows past D_k
// (only when !kFull) read as zeros and are never written.
template <bool kVec>
struct Rows {
    static const int kRun = kVec ? 4 : 1;
    static const int kStride = kGroup * kRun;  // rows from one run of a lane to its next
};

template <int R, bool kFull, bool kVec>
__device__ __forceinline__ void load_rows(const float *p, int n_rows, float x[R]) {
    typedef Rows<kVec> L;
    for (int c = 0; c < R / L::kRun; c++) {
        const bool in = kFull || c * L::kStride < n_rows;
        if (kVec && kFull) kdn_load4(p + c * L::kStride, x + 4 * c);
        else if (kVec) kdn_load4_if(p + c * L::kStride, in, x + 4 * c);
        else x[c] = in ? p[c * L::kStride] : 0.0f;
    }
}

template <int R, bool kFull, bool kVec>
__device__ __forceinline__ void store_rows(float *p, int n_rows, const float x[R]) {
    typedef Rows<kVec> L;
    for (int c = 0; c < R / L::kRun; c++) {
        if (!(kFull || c * L::kStride < n_rows)) continue;
        if (kVec) kdn_store4(p + c * L::kStride, x + 4 * c);
        else p[c * L::kStride] = x[c];
    }
}

// dv[i]: where column i's v sits relative to p.v (dv[0] = 0).
// kda_row_ok: KDA, this thread's gate row (tid) exists (< D_k).
template <int R, bool kFull, bool kVec, int kCols>
__device__ __forceinline__ void load_token(TokenIn<R, kCols> &x, const TokenPtrs &p, int n_rows, const int dv[kCols],
                                           bool g_ok) {
    load_rows<R, kFull, kVec>(p.k, n_rows, x.k);
    load_rows<R, kFull, kVec>(p.q, n_rows, x.q);
    for (int i = 0; i < kCols; i++) x.v[i] = p.v[dv[i]];
    x.g = g_ok ? p.g[0] : 0.0f;
    x.beta = p.beta[0];
}

// The KDA factors of this lane's rows from buffer `buf` (rows in the order
// load_rows gives them).
template <int R, bool kVec, bool kKda>
__device__ __forceinline__ void kda_factors(const KdaDecays<kKda> &L, int buf, int row0, float f[R]) {
    typedef Rows<kVec> Lr;
    for (int c = 0; kKda && c < R / Lr::kRun; c++)
        for (int e = 0; e < Lr::kRun; e++) f[c * Lr::kRun + e] = L.f[buf][row0 + c * Lr::kStride + e];
}

// Stores this lane's rows of its columns of S (those inside D_v) into
// snapshot slot `slot`; s_off is the first column's offset, dv[i] column i's
// distance from it.
template <int R, bool kFull, bool kVec, int kCols>
__device__ __forceinline__ void store_states(const RecurrentArgs &args, const float S[kCols][R], int slot,
                                             size_t s_off, int n_rows, const bool col_ok[kCols],
                                             const int dv[kCols]) {
    for (int i = 0; i < kCols; i++)
        if (col_ok[i])
            store_rows<R, kFull, kVec>(args.snapshots + (size_t)slot * args.snap_stride + s_off + (size_t)dv[i] * args.D_k,
                                       n_rows, S[i]);
}

// kSnap: snapshots stored inside the token loop (K > 1, and the KDA variant);
// without it only the final state is stored, after the loop: a store in the
// loop keeps 3 more VGPRs live (66 vs 63 at D_k = 128 on gfx906, 3 waves per
// SIMD instead of 4), so the decode path of K = 1 does without.
// kAhead: token t + 1's inputs are loaded while token t is processed (prompts).
// Decode (T <= 1, the only calls the launcher gives the instantiation
// without kAhead) has no next token and runs at most one trip of the token
// loop: no second set of token registers (1-2 % faster on the H100) and no
// token pointers or loop state kept live, so the D_k = 128 decode kernel
// needs 36 VGPRs on gfx906 (7 waves per SIMD; 50 with the loop, 4 waves:
// the B = 1 grid then took two rounds of 240 slots).
template <int R, bool kFull, bool kKda, bool kSnap, bool kVec, bool kAhead, int kCols>
__global__ __launch_bounds__(256) void kernel_deltanet_recurrent(const RecurrentArgs args) {
    const int T = args.T, H_k = args.H_k, H_v = args.H_v, D_k = args.D_k, D_v = args.D_v;
    const int tid = (int)threadIdx.x;
    // lane % kGroup (groups are aligned inside the wave) picks the lane's rows
    const int row0 = tid % kGroup * Rows<kVec>::kRun;
    const int h = (int)blockIdx.y;
    const int seq = (int)blockIdx.z;
    const int hk = kdn_key_head(h, H_k, H_v, args.head_map);
    // The group's kCols columns lie kColsPerBlock apart, so that each of them
    // is contiguous across the workgroup's groups (coalesced v loads, o stores).
    // Columns past D_v (last workgroup only) still run, so that every lane
    // joins the shuffles; they read column D_v - 1 and store nothing.
    bool col_ok[kCols];
    int b[kCols], dv[kCols]; // column, and its offset from the first one
    for (int i = 0; i < kCols; i++) {
        const int col = ((int)blockIdx.x * kCols + i) * kColsPerBlock + tid / kGroup;
        col_ok[i] = col < D_v;
        b[i] = col_ok[i] ? col : D_v - 1;
        dv[i] = b[i] - b[0];
    }
    // This lane's rows start at row0 (Rows<kVec>); rows past D_k (only when
    // !kFull) hold zeros in S, k and q, so they add nothing anywhere.
    const int n_rows = D_k - row0;

    // Not __restrict__: with it nvcc may read the state before
    // kdn_wait_prior_grid (a restrict const load is taken as invariant).
    const float *state_in = args.state_in;
    const size_t s_off = ((size_t)(seq * H_v + h) * D_v + b[0]) * D_k + row0; // column i: + dv[i] * D_k
    float S[kCols][R];
    // Everything above is arithmetic on the call: on CUDA it overlaps the
    // previous kernel's tail (programmatic dependent launch, KDN_LAUNCH_PDL);
    // no memory is touched before this wait. The next kernel is not let in
    // early (backend.h says why): it starts as this one ends.
    kdn_wait_prior_grid();
    for (int i = 0; i < kCols; i++) load_rows<R, kFull, kVec>(state_in + s_off + (size_t)dv[i] * D_k, n_rows, S[i]);

    TokenPtrs p;
    p.k = args.k + seq * args.k_st[2] + hk * args.k_st[0] + row0;
    p.q = args.q + seq * args.q_st[2] + hk * args.q_st[0] + row0;
    p.v = args.v + seq * args.v_st[2] + h * args.v_st[0] + b[0];
    p.g = args.g + seq * args.g_st[2] + h * args.g_st[0] + (kKda ? tid : 0);
    p.beta = args.beta + seq * args.beta_st[2] + h * args.beta_st[0];
    p.st_k = args.k_st[1], p.st_q = args.q_st[1], p.st_v = args.v_st[1], p.st_g = args.g_st[1], p.st_beta = args.beta_st[1];
    const size_t st_o = (size_t)H_v * D_v;
    float *ob = args.o + ((size_t)seq * T * H_v + h) * D_v + b[0]; // column i: ob[dv[i]]

    // p points at token min(t + 1, T - 1) during token t
    static_assert(!kKda || kAhead, "the KDA factors of token t + 1 are made during token t");
    const bool g_ok = !kKda || tid < D_k;
    __shared__ KdaDecays<kKda> kda;
    TokenIn<R, kCols> cur;
    if (T > 0) load_token<R, kFull, kVec, kCols>(cur, p, n_rows, dv, g_ok);
    if (T > 1) p.next();
    if (kKda) {
        kda_put<kKda>(kda, 0, T > 0 ? cur.g : 0.0f); // T = 0: no token, nothing reads it
        __syncthreads();
    }

    // The decode instantiation (no token ahead) is launched for T <= 1 only:
    // a loop of at most one trip keeps no token pointers live across it.
    const int n_tokens = kAhead ? T : (T < 1 ? T : 1);
    for (int t = 0; t < n_tokens; t++) {
        // Prefetch token t + 1 (the last token reloads itself: branch-free).
        TokenIn<R, kCols> nxt;
        if (kAhead) load_token<R, kFull, kVec, kCols>(nxt, p, n_rows, dv, g_ok);

        // KDA decays each row by its own factor before anything reads S; the
        // scalar gate is folded into the formulas below (a).
        if (kKda) {
            float f[R];
            kda_factors<R, kVec, kKda>(kda, t & 1, row0, f); // mutate: kda_factors
            for (int i = 0; i < kCols; i++)
                for (int r = 0; r < R; r++) S[i][r] *= f[r];
        }
        // The chain from one token to the next runs through sk only: reduce it
        // first; S.q of each column and k.q (needed just for o) are reduced
        // after the update. k.q is the same for all the group's columns.
        float sk[kCols], dots[kCols + 1]; // dots: S.q per column, then k.q
        for (int i = 0; i < kCols; i++) {
            sk[i] = 0.0f;
            for (int r = 0; r < R; r++) sk[i] = fmaf(S[i][r], cur.k[r], sk[i]);
        }
        for (int i = 0; i <= kCols; i++) dots[i] = 0.0f;
        for (int r = 0; r < R; r++) {
            for (int i = 0; i < kCols; i++) dots[i] = fmaf(S[i][r], cur.q[r], dots[i]);
            dots[kCols] = fmaf(cur.k[r], cur.q[r], dots[kCols]);
        }
        group_sums<kCols>(sk);

        const float a = kKda ? 1.0f : kdn_decay(cur.g); // mutate: rec_decay_factor
        float d[kCols];
        for (int i = 0; i < kCols; i++) {
            d[i] = cur.beta * (cur.v[i] - a * sk[i]); // mutate: rec_delta
            for (int r = 0; r < R; r++) S[i][r] = fmaf(cur.k[r], d[i], a * S[i][r]); // mutate: rec_state
        }

        group_sums<kCols + 1>(dots);
        // o is linear in q: ggml's 1/sqrt(S_v) on q is one multiply here.
        for (int i = 0; i < kCols; i++)
            if (row0 == 0 && col_ok[i]) ob[dv[i]] = args.q_scale * fmaf(d[i], dots[kCols], a * dots[i]); // mutate: rec_out
        ob += st_o;
        // Snapshot slot T-1-t holds the state after token t (slot 0: final).
        if (kSnap && T - 1 - t < args.K) store_states<R, kFull, kVec, kCols>(args, S, T - 1 - t, s_off, n_rows, col_ok, dv); // mutate: rec_snapshot
        if (kKda) { // token t + 1's factors (the last token's reload of itself: unread)
            kda_put<kKda>(kda, (t + 1) & 1, nxt.g);
            __syncthreads();
        }
        if (kAhead) cur = nxt;
        else if (t + 1 < T) load_token<R, kFull, kVec, kCols>(cur, p, n_rows, dv, g_ok);
        if (t + 2 < T) p.next();
    }
    // Without kSnap, or with no token at all: slot 0 gets the state as it is now.
    if (!kSnap || T == 0) store_states<R, kFull, kVec, kCols>(args, S, 0, s_off, n_rows, col_ok, dv);
}

const KdnLimits kdn_recurrent_limits = {kMaxDk, {0, 0}};

static const char *unsupported(const KdnLayerCall *c) {
    const KdnShape *s = &c->s;
    const char *why = kdn_layer_shape_unsupported(s);
    if (why) return why;
    if (s->D_k > kMaxDk) return "D_k > 256";
    if (c->K < 1) return "K (snapshots) < 1";
    return NULL;
}

// The grid of a launch with kCols columns per group: a workgroup per
// 16 x kCols columns of one head of one sequence.
static dim3 grid_of(const KdnLayerCall *c, int cols) {
    return dim3((unsigned)KDN_CEIL_DIV(c->s.D_v, cols * kColsPerBlock), (unsigned)c->s.H_v, (unsigned)c->s.n_seqs);
}

// Prompts (scalar gate, K = 1, T > 1) run two columns per group where one
// column per group would take more than one round of the device's workgroup
// slots: one k, q (loads, registers, k.q) then serve both columns, gfx906's
// loop issues 196 instructions per token for two columns where one took 130,
// and the grid halves (MI50, B = 1: 256 one-column workgroups on 240 slots,
// two rounds, -> 128 two-column ones on 180, one; the model's recurrent
// prefill drops 25 %). Where one round holds the one-column grid (the H100's
// 528 at B = 1) the one-column kernel keeps its twice as many warps to hide
// the per-token chain of shuffles: on the H100 it was 10-18 % faster at B = 1
// and the two-column one 0-7 % faster at B = 4 (docs/performance.md).
template <int R, bool kFull, bool kVec>
static bool prompt_two_cols(const KdnLayerCall *c) {
    // gfx906_per_cu 4: the one-column kernel at D_k = 128 has 56 VGPRs, 4 waves
    // per SIMD, workgroups of 4 waves (the ISA gate holds it to that); the
    // runtime's answer is kept per device (query_cache.h)
    const int round =
        KDN_ROUND_WORKGROUPS((kernel_deltanet_recurrent<R, kFull, false, false, kVec, true, 1>), kBlock, 4);
    const dim3 g = grid_of(c, 1);
    return round <= 0 || (long)g.x * g.y * g.z > round;
}

// Four variants: scalar gate K = 1 for decode (T = 1) and for prompts (one or
// two columns per group, above), scalar gate with snapshots, KDA gate (with or
// without snapshots).
template <int R, bool kFull, bool kVec>
static void launch(const KdnLayerCall *c, const RecurrentArgs &a) {
    const dim3 block(kBlock);
    if (c->kda)
        KDN_LAUNCH_PDL((kernel_deltanet_recurrent<R, kFull, true, true, kVec, true, 1>), grid_of(c, 1), block, 0, a);
    else if (c->K > 1)
        KDN_LAUNCH_PDL((kernel_deltanet_recurrent<R, kFull, false, true, kVec, true, 1>), grid_of(c, 1), block, 0, a);
    else if (c->s.T > 1 && prompt_two_cols<R, kFull, kVec>(c))
        KDN_LAUNCH_PDL((kernel_deltanet_recurrent<R, kFull, false, false, kVec, true, 2>), grid_of(c, 2), block, 0, a);
    else if (c->s.T > 1)
        KDN_LAUNCH_PDL((kernel_deltanet_recurrent<R, kFull, false, false, kVec, true, 1>), grid_of(c, 1), block, 0, a);
    else
        KDN_LAUNCH_PDL((kernel_deltanet_recurrent<R, kFull, false, false, kVec, false, 1>), grid_of(c, 1), block, 0, a);
}

// What the kernel reads of the call (kernel_args.h).
static RecurrentArgs recurrent_args(const KdnLayerCall *c) {
    RecurrentArgs a;
    a.T = c->s.T, a.H_k = c->s.H_k, a.H_v = c->s.H_v, a.D_k = c->s.D_k, a.D_v = c->s.D_v;
    a.head_map = c->s.head_map;
    a.q = c->q, a.k = c->k, a.v = c->v, a.g = c->g, a.beta = c->beta, a.state_in = c->state_in;
    for (int d = 0; d < 3; d++) {
        a.q_st[d] = c->q_st[d], a.k_st[d] = c->k_st[d], a.v_st[d] = c->v_st[d];
        a.g_st[d] = c->g_st[d], a.beta_st[d] = c->beta_st[d];
    }
    a.q_scale = c->q_scale;
    a.K = c->K;
    a.o = c->o, a.snapshots = c->snapshots;
    a.snap_stride = c->snap_stride;
    return a;
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static bool strides_of4(const long st[3]) { return st[0] % 4 == 0 && st[1] % 4 == 0 && st[2] % 4 == 0; }

// The 16-byte row runs (Rows<true>) need every row vector a lane reads or
// writes to start on 16 bytes: D_k a multiple of 4 (the state's columns and
// snapshot slots and their stride), aligned base pointers and key/query (and KDA gate) strides
// in multiples of 4 floats. Views that are not fall back to single floats.
static bool vector_rows_ok(const KdnLayerCall *c) {
    return c->s.D_k % 4 == 0 && aligned16(c->state_in) && aligned16(c->snapshots) && c->snap_stride % 4 == 0 &&
           aligned16(c->k) && aligned16(c->q) && strides_of4(c->k_st) && strides_of4(c->q_st) &&
           (!c->kda || (aligned16(c->g) && strides_of4(c->g_st)));
}

template <int R, bool kFull>
static void launch_rows(const KdnLayerCall *c) {
    const RecurrentArgs a = recurrent_args(c);
    if (vector_rows_ok(c)) launch<R, kFull, true>(c, a);
    else launch<R, kFull, false>(c, a);
}

extern "C" {

void kdn_deltanet_recurrent_call(const KdnLayerCall *c) {
    const char *why = c ? unsupported(c) : "no call";
    if (why) {
        kdn_launch_refused("kernel_deltanet_recurrent", why);
        return;
    }
    const int D_k = c->s.D_k;
    if (D_k == 4 * kGroup) launch_rows<4, true>(c);
    else if (D_k == 8 * kGroup) launch_rows<8, true>(c);
    else if (D_k == 16 * kGroup) launch_rows<16, true>(c);
    else if (D_k < 4 * kGroup) launch_rows<4, false>(c);
    else if (D_k < 8 * kGroup) launch_rows<8, false>(c);
    else launch_rows<16, false>(c);
}

void kdn_deltanet_recurrent(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                            const float *beta, const float *state_in, float *o, float *state_out) {
    if (!s) {
        kdn_launch_refused("kernel_deltanet_recurrent", "no shape");
        return;
    }
    const KdnLayerCall c = kdn_layer_contiguous(s, q, k, v, g, beta, state_in, o, state_out);
    kdn_deltanet_recurrent_call(&c);
}

}  // extern "C"

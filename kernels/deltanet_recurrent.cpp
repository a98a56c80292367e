// Phase 8a: the token-recurrent gated Delta-Net (decode and short prompts).
//
// Per (sequence, value head h) with state S (D_k x D_v), for t = 0..T-1:
//   S <- exp(g_t) S;   d = beta_t (v_t - S^T k_t);   S <- S + k_t d^T;   o_t = S^T q_t
// Column b of S only ever meets column b (d_b and o_b need S[:, b] alone), so
// the columns are independent and this kernel splits them across threads.
//
// Work split
//   grid      (ceil(D_v / 16), H_v, n_seqs): one workgroup per 16 state
//             columns of one head of one sequence -> every head and sequence in
//             one launch, and 256 workgroups even for a single sequence of the
//             default model (D_v = 128, H_v = 32), so all CUs get work at B = 1.
//   workgroup 256 threads = 16 groups of kGroup = 16 lanes (4 waves on gfx906,
//             8 warps on CUDA; a group never straddles a wave for KDN_WAVE 32 or
//             64). No LDS, no barriers.
//   group     owns one state column b, i.e. D_k contiguous floats.
//   lane      lane j of a group owns rows i = j + 16 r (r < R = ceil(D_k / 16)) of
//             that column, kept in R registers for all T tokens: the state is
//             read once and written once, and each load/store instruction of a
//             wave touches whole 64-byte runs of consecutive addresses
//             (coalesced; four columns side by side in memory per gfx906 wave).
//   per token each lane forms partial sums of S[:,b].k, S[:,b].q and k.q over
//             its R rows, the group adds them in one 4-step xor butterfly
//             (three values interleaved, stays inside the 16 lanes), and then
//             every lane knows d_b and o_b without a second reduction:
//               sk = S.k, sq = S.q  (undecayed S), a = exp(g)
//               d  = beta (v_b - a sk)
//               o  = (a S + k d).q = a sq + d (k.q)
//               S  = a S + k d       (R FMAs per lane)
//             Lane 0 of the group stores o_b. k_t and q_t (one key head, tiny)
//             are read straight from global memory into the same row slots; the
//             16 groups of a workgroup read the same lines, so they come from
//             L1/L2. The next token's k, q, v, g, beta are loaded before the
//             current token is processed, so their latency overlaps its math.
//
// Why it fits gfx906: wave64 with no matrix cores and a long memory latency
// wants many independent waves and a streaming, coalesced state access; this
// uses 16 rows of state + 2 x 2 x 8 token values per lane for D_k = 128
// (well under 64 VGPRs, so several waves per SIMD), no scratch and no LDS. The
// only cross-lane traffic is 12 ds_bpermute per token. D_k <= 64 / 128 / 256
// use instantiations with R = 4 / 8 / 16 registers of state per lane.
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
#include "heads.h"
#include "kdn.h"

static const int kGroup = 16;                          // lanes per state column
static const int kBlock = 256;                         // threads per workgroup
static const int kColsPerBlock = kBlock / kGroup;      // state columns per workgroup
static const int kMaxDk = 256;

static_assert(KDN_WAVE % kGroup == 0, "a column's lanes must sit in one wave");

// Sums over the kGroup lanes of a group (xor butterfly, never leaves the
// group); every lane of the group gets the totals.
__device__ __forceinline__ float group_sum(float a) {
    for (int m = kGroup / 2; m > 0; m >>= 1) a += kdn_shfl_xor(a, m);
    return a;
}

__device__ __forceinline__ void group_sum2(float &a, float &b) {
    for (int m = kGroup / 2; m > 0; m >>= 1) {
        float a2 = kdn_shfl_xor(a, m);
        float b2 = kdn_shfl_xor(b, m);
        a += a2;
        b += b2;
    }
}

// One token's inputs as this lane needs them: its rows of k and q, then the
// scalars v_b, g and beta of the token.
template <int R>
struct TokenIn {
    float k[R], q[R];
    float v, g, beta;
};

// kr, qr point at row `row0` of token 0's key head, vb at column b of token
// 0's v; token tn's values sit tn strides further (tn is uniform).
template <int R, bool kFull>
__device__ __forceinline__ void load_token(TokenIn<R> &x, int tn, const float *kr, const float *qr, const float *vb,
                                           const float *gh, const float *bh, size_t st_qk, size_t st_v, int H_v,
                                           int n_rows) {
    const float *kt = kr + (size_t)tn * st_qk;
    const float *qt = qr + (size_t)tn * st_qk;
    for (int r = 0; r < R; r++) {
        bool in = kFull || r * kGroup < n_rows;
        x.k[r] = in ? kt[r * kGroup] : 0.0f;
        x.q[r] = in ? qt[r * kGroup] : 0.0f;
    }
    x.v = vb[(size_t)tn * st_v];
    x.g = gh[(size_t)tn * H_v];
    x.beta = bh[(size_t)tn * H_v];
}

template <int R, bool kFull>
__global__ __launch_bounds__(256) void kernel_deltanet_recurrent(
    const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,
    const float *__restrict__ g, const float *__restrict__ beta, const float *__restrict__ state_in,
    float *__restrict__ o, float *__restrict__ state_out, int T, int H_k, int H_v, int D_k, int D_v, int head_map) {
    const int tid = (int)threadIdx.x;
    const int row0 = tid % kGroup;  // == lane % kGroup: groups are aligned inside the wave
    const int col = (int)blockIdx.x * kColsPerBlock + tid / kGroup;
    const int h = (int)blockIdx.y;
    const int seq = (int)blockIdx.z;
    const int hk = kdn_key_head(h, H_k, H_v, head_map);
    // Columns past D_v (last workgroup only) still run, so that every lane
    // joins the shuffles; they read column D_v - 1 and store nothing.
    const bool col_ok = col < D_v;
    const int b = col_ok ? col : D_v - 1;
    // This lane's rows are row0 + kGroup r for r < R; rows past D_k (only when
    // !kFull) hold zeros in S, k and q, so they add nothing anywhere.
    const int n_rows = D_k - row0;

    const size_t s_off = ((size_t)(seq * H_v + h) * D_v + b) * D_k + row0;
    float S[R];
    for (int r = 0; r < R; r++) S[r] = kFull || r * kGroup < n_rows ? state_in[s_off + r * kGroup] : 0.0f;

    const size_t st_qk = (size_t)H_k * D_k, st_v = (size_t)H_v * D_v;
    const size_t tok0 = (size_t)seq * T;
    const float *kr = k + (tok0 * H_k + hk) * D_k + row0;
    const float *qr = q + (tok0 * H_k + hk) * D_k + row0;
    const float *vb = v + (tok0 * H_v + h) * D_v + b;
    const float *gh = g + tok0 * H_v + h;
    const float *bh = beta + tok0 * H_v + h;
    float *ob = o + (tok0 * H_v + h) * D_v + b;

    TokenIn<R> cur;
    if (T > 0) load_token<R, kFull>(cur, 0, kr, qr, vb, gh, bh, st_qk, st_v, H_v, n_rows);

    for (int t = 0; t < T; t++) {
        // Prefetch token t + 1 (the last token reloads itself: branch-free).
        TokenIn<R> nxt;
        load_token<R, kFull>(nxt, t + 1 < T ? t + 1 : t, kr, qr, vb, gh, bh, st_qk, st_v, H_v, n_rows);

        // The chain from one token to the next runs through sk only: reduce it
        // first; sq and kq (needed just for o) are reduced after the update.
        float sk = 0.0f, sq = 0.0f, kq = 0.0f;
        for (int r = 0; r < R; r++) sk = fmaf(S[r], cur.k[r], sk);
        for (int r = 0; r < R; r++) {
            sq = fmaf(S[r], cur.q[r], sq);
            kq = fmaf(cur.k[r], cur.q[r], kq);
        }
        sk = group_sum(sk);

        const float a = expf(cur.g);
        const float d = cur.beta * (cur.v - a * sk);
        for (int r = 0; r < R; r++) S[r] = fmaf(cur.k[r], d, a * S[r]);

        group_sum2(sq, kq);
        if (row0 == 0 && col_ok) ob[(size_t)t * st_v] = fmaf(d, kq, a * sq);
        cur = nxt;
    }

    if (col_ok)
        for (int r = 0; r < R; r++)
            if (kFull || r * kGroup < n_rows) state_out[s_off + r * kGroup] = S[r];
}

static const char *unsupported(const KdnShape *s) {
    if (!s) return "no shape";
    if (s->T < 0 || s->n_seqs < 1 || s->H_k < 1 || s->H_v < 1 || s->D_k < 1 || s->D_v < 1) return "empty or negative dimension";
    if (s->D_k > kMaxDk) return "D_k > 256";
    if (s->H_v > 65535 || s->n_seqs > 65535) return "H_v or n_seqs > 65535 (grid y/z limit)";
    if (s->head_map != 0 && s->head_map != 1) return "head_map must be 0 (tiled) or 1 (block)";
    if (s->head_map == 1 && s->H_v % s->H_k != 0) return "block head map needs H_v to be a multiple of H_k";
    return NULL;
}

template <int R, bool kFull>
static void launch(const KdnShape *s, const float *q, const float *k, const float *v, const float *g, const float *beta,
                   const float *state_in, float *o, float *state_out) {
    dim3 grid((unsigned)KDN_CEIL_DIV(s->D_v, kColsPerBlock), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_LAUNCH((kernel_deltanet_recurrent<R, kFull>), grid, dim3(kBlock), 0, q, k, v, g, beta, state_in, o, state_out,
               s->T, s->H_k, s->H_v, s->D_k, s->D_v, s->head_map);
}

extern "C" {

void kdn_deltanet_recurrent(const KdnShape *s, const float *q, const float *k, const float *v, const float *g,
                            const float *beta, const float *state_in, float *o, float *state_out) {
    const char *why = unsupported(s);
    if (why) {
        kdn_launch_refused("kernel_deltanet_recurrent", why);
        return;
    }
    if (s->D_k == 4 * kGroup) launch<4, true>(s, q, k, v, g, beta, state_in, o, state_out);
    else if (s->D_k == 8 * kGroup) launch<8, true>(s, q, k, v, g, beta, state_in, o, state_out);
    else if (s->D_k == 16 * kGroup) launch<16, true>(s, q, k, v, g, beta, state_in, o, state_out);
    else if (s->D_k < 4 * kGroup) launch<4, false>(s, q, k, v, g, beta, state_in, o, state_out);
    else if (s->D_k < 8 * kGroup) launch<8, false>(s, q, k, v, g, beta, state_in, o, state_out);
    else launch<16, false>(s, q, k, v, g, beta, state_in, o, state_out);
}

}  // extern "C"

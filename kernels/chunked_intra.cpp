// The chunked prefill's first launch: every chunk's state-independent
// quantities at once (chunked.h; the ladder checks it in phase 6):
//
// 1) kernel_chunked_intra
//   grid      (n_chunks, H_v, n_seqs): a workgroup per chunk of one head of
//             one sequence; chunks are independent, so a 4k-token prompt of
//             Qwen3-Next (H_v = 32, C = 64) gives 2048 workgroups.
//   workgroup 256 threads (4 waves on gfx906). Keys and queries pass
//             through LDS 16 columns at a time (phase c); values and keys are
//             read from L1/L2 as 16-byte vectors in phase e. LDS: the C x C
//             triangle matrix, the staged slice and per-token vectors
//             (31.2 KB at C = 64), so two workgroups share a gfx906 CU.
//   phases (a barrier after each):
//     a. beta and the raw log decays g to LDS (0 past n).
//     b. thread t < C: gamma_t (gamma_last past n), summed in double by DPP
//        row scans and sums (no serial loop) and rounded once (a difference
//        gamma_i - gamma_j then errs by 2u|gamma| instead of C u |gamma|),
//        and e^gamma_t.
//     c. 4 x 4 tiles of the lower triangle, one per job of 16 FMAs per key
//        column, jobs spread over the threads: A = -beta_i k_i.k_j e^(gamma_i - gamma_j) (strictly
//        lower, stored transposed in the upper triangle of m) and
//        P = q_i.k_j e^(gamma_i - gamma_j) (with the diagonal, straight to
//        global memory; zeros above). Tiles are sums of outer products of
//        4-token pieces of the staged key/query columns (see intra_tiles).
//     d. Tinv = (I - A)^-1 by 16 x 16 blocks: each of the first C threads
//        inverts one column of a diagonal block by forward substitution in
//        registers; then block row I (I = 1 .. C/16 - 1) left of its diagonal
//        is Tinv_II (A_I,<I Tinv_<I), two small products with a barrier after
//        each. Tinv goes to the lower triangle (with the diagonal) of m, which
//        A^T does not use, so no phase reads an entry it or another thread
//        writes in the same interval.
//     e. Tinv to memory, and m's lower triangle scaled to Tinv diag(beta)
//        (zeros above). U = (Tinv diag beta) V and W = (Tinv diag beta)
//        (e^gamma K): thread (tid / 32, tid % 32) owns two blocks of C / 16
//        rows, one from the top and the mirror one from the bottom, so every
//        group has the same work, and 4 consecutive columns (passes of 128
//        columns): per 4 source rows four 16-byte loads (the 32 lanes of a
//        row group read 512 contiguous bytes of each) and one 16-byte
//        broadcast LDS read per owned row feed 16 FMAs per row; the loops
//        stop at each block's last row, as Tinv is lower triangular.

#include "chunked.h"

// ---- 1) intra-chunk ---------------------------------------------------------
static const int kIntraThreads = 256;
static const int kTile = 4;     // phase c tiles are kTile x kTile
static const int kSlice = 16;   // key/query columns staged in LDS per phase c step
static const int kPieces = 4;   // columns of a slice whose LDS reads are issued together
static const int kBlock = 16;   // diagonal blocks of the blocked inversion
static const int kWyQuads = 32; // column quads of a phase e pass (128 columns)
static const int kWyGroups = kIntraThreads / kWyQuads;
static const int kWyBatch = 4;  // source rows per batch of phase e: one 16-byte LDS read per Tinv row

template <int C>
struct IntraLds {
    static_assert(C % kBlock == 0 && C % (2 * kWyGroups) == 0 && C <= kIntraThreads, "C must split into the blocks");
    static_assert(C * (kSlice / 4) <= kIntraThreads, "a thread stages one 4-column piece of a key and a query row");
    static_assert(kBlock / kTile * (C - kBlock) / kTile * 4 <= kIntraThreads, "a quad per tile of a block row");
    // A^T strictly above the diagonal, Tinv on and below it; rows 16-byte
    // aligned for phase e's vector reads.
    float m[C][C + 4];
    float r[kBlock][C]; // A_I,<I Tinv_<I of the block row being solved
    // keys' columns p0 .. p0 + kSlice - 1, transposed; qt: the same columns
    // of the queries
    float kt[kSlice][C + 4], qt[kSlice][C + 4];
    float graw[C];           // raw log decays, floored (decay.h)
    double gamma[C];         // cumulative, in double: differences are the span's own sums
    float beta[C];
    float egamma[C];         // e^gamma_t: W's row factor besides beta
};

// Phase b; also writes gamma out (0 past n). gamma_t = g_0 + .. + g_t in
// double, kept in double: a difference gamma_i - gamma_j is then the span's
// own sum, rounded once to float (relative error u of the difference, not
// u |gamma|: the accuracy does not depend on how much decay came before);
// g is 0 past n, so padding rows get gamma_last and e^(gamma_i - gamma_j)
// stays <= 1 there. Token t is lane t % 16 of row
// t / 16 of 16 lanes: its row's prefix (4 DPP row shifts) plus the sum of
// the earlier rows (each lane adds its column of them, then a row sum by 4
// row rotations): no serial loop over the chunk, no LDS round trip. Whole
// waves run it, since a row operation reads every lane of its row.
template <int C>
__device__ void intra_gamma(IntraLds<C> &L, int n, float *gamma_out) {
    const int tid = (int)threadIdx.x;
    if (tid - tid % KDN_WAVE >= C) return;
    const int row0 = tid - tid % 16;
    double before = 0.0;
    for (int t = tid % 16; t < row0 && t < C; t += 16) before += (double)L.graw[t];
    const double mine = kdn_row_sum16(before) + kdn_row_scan16_f64(tid < C ? (double)L.graw[tid] : 0.0);
    if (tid >= C) return;
    const float gm = (float)mine;
    L.gamma[tid] = mine;
    L.egamma[tid] = expf(gm);
    gamma_out[tid] = tid < n ? gm : 0.0f;
}

// One slice of phase c's staging: thread t holds row t / (kSlice / 4) of the
// keys (x = 0) and queries (x = 1) at columns p0 + 4 (t % (kSlice / 4)) ..
// (rows past n and columns past D_k zero).
template <int C, bool kVec>
__device__ __forceinline__ void slice_load(const float *qc, const float *kc, size_t stride, int n, int D_k, int p0,
                                           float buf[2][4]) {
    const int t = (int)threadIdx.x, row = t / (kSlice / 4), p = p0 + t % (kSlice / 4) * 4;
    if (row >= C) return;
    load_run<4, kVec>(kc + row * stride + p, row < n ? D_k - p : 0, buf[0]);
    load_run<4, kVec>(qc + row * stride + p, row < n ? D_k - p : 0, buf[1]);
}

template <int C>
__device__ __forceinline__ void slice_store(IntraLds<C> &L, const float buf[2][4]) {
    const int t = (int)threadIdx.x, row = t / (kSlice / 4), p = t % (kSlice / 4) * 4;
    if (row >= C) return;
    KDN_UNROLL
    for (int e = 0; e < 4; e++) {
        L.kt[p + e][row] = buf[0][e];
        L.qt[p + e][row] = buf[1][e];
    }
}

// One staged slice of a tile's products: acc[u][w] += x_u . (w < u ? z_w : y_w)
// over kSteps LDS rows, rows ti of x, yrow of y and tj of z (K's rows below the
// diagonal).
template <int C, int kSteps>
__device__ __forceinline__ void tile_products(const float (*xs)[C + 4], const float (*ys)[C + 4],
                                              const float (*zs)[C + 4], int ti, int yrow, int tj,
                                              float acc[kTile][kTile]) {
    KDN_NO_UNROLL
    for (int p4 = 0; p4 < kSteps; p4 += kPieces)
    KDN_UNROLL
    for (int p = p4; p < p4 + kPieces; p++) {
        float x[4], y[4], z[4];
        kdn_load4(&xs[p][ti * kTile], x);
        kdn_load4(&ys[p][yrow * kTile], y);
        kdn_load4(&zs[p][tj * kTile], z);
        KDN_UNROLL
        for (int u = 0; u < kTile; u++)
            KDN_UNROLL
            for (int w = 0; w < kTile; w++) acc[u][w] = fmaf(x[u], w < u ? z[w] : y[w], acc[u][w]);
    }
}

// Phase c. Jobs: A's tiles strictly below the diagonal, P's, then the
// diagonal tiles, each of which does both (they share the key rows); at
// C = 64 that is 120 + 120 + 16 = 256 jobs, one per thread. The keys and
// queries pass through LDS kSlice columns at a time (coalesced global loads,
// the next slice's issued before this one's products); a tile is a sum of
// outer products of 4-row column pieces, read as 16-byte vectors that the
// lanes of a wave mostly share.
//
// Every job costs the same 16 FMAs per column, so no wave waits on another
// (a wave's lanes run in lockstep: one diagonal job among its lanes used to
// make the whole wave pay 32). An off-diagonal job accumulates x[u] y[w]
// with x its left tile's piece and y the keys of tile tj. A diagonal job
// needs only the strictly lower K_u.K_w of A (6 entries) and the lower
// Q_w.K_u of P (10 entries, with the diagonal), so its x is the keys, y
// the queries of tile ti: slot (u, w) holds K_u.Q_w = P[w][u] for u <= w,
// and K_u.K_w from z = the keys again for u > w. z is y's address for an
// off-diagonal job, so the code has no per-lane branch; the products and
// their order per entry are the ones of the former separate accumulators.
template <int C, bool kVec>
__device__ void intra_tiles(IntraLds<C> &L, const float *qc, const float *kc, size_t stride, int n, int D_k,
                            float *P) {
    static_assert(C / kTile * (C / kTile - 1) + C / kTile <= kIntraThreads, "one phase c job per thread");
    const int NT = C / kTile, below = NT * (NT - 1) / 2, job = (int)threadIdx.x;
    const bool active = job < 2 * below + NT, diag = job >= 2 * below, is_p = !diag && job >= below;
    int ti = job - 2 * below, tj = ti; // diagonal tile
    if (!diag) {
        const int x = is_p ? job - below : job; // strictly lower tile x: (ti, tj), tj < ti
        ti = 1;
        while (ti * (ti + 1) / 2 <= x) ti++;
        tj = x - ti * (ti - 1) / 2;
    }
    const float(*xs)[C + 4] = is_p ? L.qt : L.kt; // x: rows ti of Q (P) or K (A, diagonal)
    const float(*ys)[C + 4] = diag ? L.qt : L.kt; // y: rows ti of Q (diagonal) or tj of K
    const int yrow = diag ? ti : tj;
    float acc[kTile][kTile];
    KDN_UNROLL
    for (int u = 0; u < kTile; u++)
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) acc[u][w] = 0.0f;
    float buf[2][4] = {}; // threads past the staged rows hold nothing
    slice_load<C, kVec>(qc, kc, stride, n, D_k, 0, buf);
    for (int p0 = 0; p0 < D_k; p0 += kSlice) {
        slice_store<C>(L, buf);
        __syncthreads();
        if (p0 + kSlice < D_k) slice_load<C, kVec>(qc, kc, stride, n, D_k, p0 + kSlice, buf);
        if (active) tile_products<C, kSlice>(xs, ys, L.kt, ti, yrow, tj, acc);
        __syncthreads();
    }
    if (!active) return;
    KDN_UNROLL
    for (int u = 0; u < kTile; u++) {
        const int i = ti * kTile + u;
        float prow[kTile];
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) {
            const int j = tj * kTile + w;
            const float d = j <= i ? expf((float)(L.gamma[i] - L.gamma[j])) : 0.0f;
            // a diagonal tile's P[i][j] sits at (w, u); its (u, w) above holds K.K
            prow[w] = j <= i ? (diag ? acc[w][u] : acc[u][w]) * d : 0.0f;
            if (!is_p && j < i) L.m[j][i] = -L.beta[i] * acc[u][w] * d; // A, transposed
        }
        if (is_p || diag) store_run<4, kVec>(P + i * C + tj * kTile, kTile, prow);
    }
}

// Zeroes P's tiles above the diagonal.
template <int C, bool kVec>
__device__ void intra_p_upper(float *P) {
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int e = (int)threadIdx.x; e < C * C / 4; e += kIntraThreads) {
        const int i = e / (C / 4), j = e % (C / 4) * 4;
        if (j / kTile > i / kTile) store_run<4, kVec>(P + i * C + j, 4, zero);
    }
}

// Phase d, first part: thread t < C inverts column t % 16 of diagonal block
// t / 16 into r (r[row in block][t]); the caller copies r into m after a
// barrier, so that no read of A^T here shares a vector load with a write.
// Column-oriented substitution: once x_j is final, every later x_r takes its
// term A[r][j] x_j; A^T's row j holds those A[r][j] side by side, so the
// block's A arrives in 64 broadcast 16-byte reads that do not wait for any x
// (a row-oriented loop read A's column one float at a time, each read
// followed by the FMA that needs it). Each x_r still sums its terms in order
// j = 0, 1, .., so the result is bitwise the row-oriented one.
template <int C>
__device__ void intra_invert_diagonal(IntraLds<C> &L) {
    const int t = (int)threadIdx.x;
    if (t >= C) return;
    const int base = t / kBlock * kBlock, c = t % kBlock;
    float x[kBlock];
    KDN_UNROLL
    for (int r = 0; r < kBlock; r++) x[r] = r == c ? 1.0f : 0.0f;
    KDN_UNROLL
    for (int j = 0; j < kBlock; j++) {
        float a[kBlock]; // A^T[base + j][base ..]: A[base + r][base + j] for r > j
        KDN_UNROLL
        for (int q = 0; q < kBlock; q += 4) kdn_load4(&L.m[base + j][base + q], &a[q]);
        KDN_UNROLL
        for (int r = j + 1; r < kBlock; r++) x[r] = fmaf(a[r], x[j], x[r]);
    }
    KDN_UNROLL
    for (int r = 0; r < kBlock; r++) L.r[r][t] = x[r];
}

template <int C>
__device__ void intra_place_diagonal(IntraLds<C> &L) {
    for (int e = (int)threadIdx.x; e < kBlock * C; e += kIntraThreads) {
        const int r = e / C, t = e % C, base = t / kBlock * kBlock;
        if (r >= t % kBlock) L.m[base + r][t] = L.r[r][t];
    }
}

// Phase d's products are 4 x 4 tiles of sum_m a_m b_m^T, one tile per quad
// of 4 lanes: lane s of the quad takes every 4th m from its own start, and
// the quad adds its partial tiles by DPP quad permutations (no LDS round
// trip), after which every lane holds the tile and lane s stores its row s.
// Every thread takes part in the sums (a lane without a tile adds zeros).
struct QuadTile {
    float acc[kTile][kTile];
};

__device__ __forceinline__ void quad_tile_zero(QuadTile &t) {
    KDN_UNROLL
    for (int u = 0; u < kTile; u++)
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) t.acc[u][w] = 0.0f;
}

__device__ __forceinline__ void quad_tile_fma(QuadTile &t, const float a[kTile], const float b[kTile]) {
    KDN_UNROLL
    for (int u = 0; u < kTile; u++)
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) t.acc[u][w] = fmaf(a[u], b[w], t.acc[u][w]);
}

// The same for the rows u >= first only: the terms of a triangular factor's
// zeros are skipped, not multiplied, so that a NaN or Inf in a later token's
// row of b never reaches an earlier row (0 * NaN is NaN).
__device__ __forceinline__ void quad_tile_fma_rows_from(QuadTile &t, const float a[kTile], const float b[kTile],
                                                        int first) {
    KDN_UNROLL
    for (int u = 0; u < kTile; u++)
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) {
            const float sum = fmaf(a[u], b[w], t.acc[u][w]);
            t.acc[u][w] = u >= first ? sum : t.acc[u][w];
        }
}

// Sums the quad's partial tiles, then lane s stores row s of the tile at
// row0 + s of `dst` (rows `pitch` floats apart) from column j0.
__device__ __forceinline__ void quad_tile_store(QuadTile &t, bool owner, float *dst, int pitch, int j0) {
    const int s = (int)threadIdx.x % 4;
    KDN_UNROLL
    for (int u = 0; u < kTile; u++)
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) t.acc[u][w] = kdn_quad_sum(t.acc[u][w]);
    KDN_UNROLL
    for (int u = 0; u < kTile; u++)
        if (owner && u == s) kdn_store4(dst + u * pitch + j0, t.acc[u]);
}

// Phase d, block row I: Tinv_I,<I = Tinv_II (A_I,<I Tinv_<I,<I), in 4 x 4
// tiles (rows r0 .. r0 + 3 of the block row, columns j0 .. j0 + 3), 16 I of
// them, one per quad. First r = A_I,<I Tinv_<I: A^T's rows m (above the
// diagonal) and Tinv's rows m, of which only columns <= m are Tinv's (the
// rest of the row is A^T: zeroed). Then Tinv_II r: Tinv_II's column m read
// per row, r's rows m, for the rows on and below Tinv_II's diagonal only.
template <int C>
__device__ void intra_block_row(IntraLds<C> &L, int I) {
    const int row0 = I * kBlock, jt = row0 / kTile;
    const int tile = (int)threadIdx.x / 4, s = (int)threadIdx.x % 4;
    const bool owner = tile < kBlock / kTile * jt;
    const int r0 = owner ? tile / jt * kTile : 0, j0 = owner ? tile % jt * kTile : 0;
    QuadTile t;
    quad_tile_zero(t);
    for (int m = j0 + s; owner && m < row0; m += 4) {
        float a[kTile], b[kTile];
        kdn_load4(&L.m[m][row0 + r0], a); // A[row0 + r0 + u][m]
        kdn_load4(&L.m[m][j0], b);        // Tinv[m][j0 + w] where j0 + w <= m
        KDN_UNROLL
        for (int w = 0; w < kTile; w++) b[w] = j0 + w <= m ? b[w] : 0.0f;
        quad_tile_fma(t, a, b);
    }
    quad_tile_store(t, owner, &L.r[r0][0], C, j0);
    __syncthreads();
    quad_tile_zero(t);
    for (int m = s; owner && m < r0 + kTile; m += 4) {
        float a[kTile], b[kTile];
        KDN_UNROLL
        for (int u = 0; u < kTile; u++) a[u] = L.m[row0 + r0 + u][row0 + m]; // Tinv_II where m <= r0 + u
        kdn_load4(&L.r[m][j0], b);
        quad_tile_fma_rows_from(t, a, b, m - r0);
    }
    quad_tile_store(t, owner, &L.m[row0 + r0][0], C + 4, j0);
    __syncthreads();
}

// Before phase e: Tinv to global memory (0 past n), and m's lower triangle
// becomes Tinv diag(beta), zero above it, so that phase e reads it whole.
template <int C>
__device__ void intra_put_tinv(IntraLds<C> &L, int n, float *Tinv) {
    for (int e = (int)threadIdx.x; e < C * C; e += kIntraThreads) {
        const int i = e / C, j = e % C;
        const float t = j <= i ? L.m[i][j] : 0.0f;
        Tinv[e] = i < n ? t : 0.0f;
        L.m[i][j] = t * L.beta[j];
    }
}

// With phase e: e^(gamma_last - gamma_t) for the state pass (0 past n), the
// difference taken in double (phase b).
template <int C>
__device__ void intra_to_end(const IntraLds<C> &L, int n, float *to_end) {
    const int t = (int)threadIdx.x;
    if (t < C) to_end[t] = t < n ? expf((float)(L.gamma[n - 1] - L.gamma[t])) : 0.0f;
}

// Phase e: out (C x D, row-major) = (Tinv diag(beta)) X, X's row j =
// scale_j * src row j (scale null: 1; rows `stride` floats apart; only j < n
// exist). Per batch of 4 source rows: 4 coalesced 16-byte loads and one
// 16-byte LDS read (a broadcast) per Tinv row feed 16 FMAs per row.
//
// Row k of Tinv has k + 1 terms, so contiguous row blocks would give the
// last group 8x the first's work (and its wave, which waits for its slowest
// lanes, 4x). Group g (of kWyGroups) owns two blocks of H = C / (2
// kWyGroups) rows: block g near the top and block 2 kWyGroups - 1 - g near
// the bottom, a short and a long one whose lengths add to C + H for every
// group. Source rows up to the short block's end feed both, the rest the
// long one.
//
// A batch that reaches past a row's token (j > row0 + a) skips those terms
// rather than adding Tinv's zero times them: a NaN or Inf in a later token's
// v, k or e^gamma must not reach an earlier row (0 * NaN is NaN). Only the
// batch at a block's diagonal does; the others run the plain loop. (Loops of
// their own for the diagonal batches cost more: ROCm 5.2's gfx906 model,
// intra at T = 4096 715 -> 753 us; ROCm 6.4 151 VGPRs at C = 32.)
//
// Where a block is one batch (C = 64: kRows = kWyBatch), the diagonal
// batch has j0 == row0 and the skipped terms are jj > a, known at
// compile time: no select, and fewer FMAs than the unmasked batch. C = 32
// selects per term. Both keep intra's waves per SIMD on ROCm 5.2 and 6.4.
template <int C, int kRows, bool kDiagonal>
__device__ __forceinline__ void intra_wy_rows_of(const IntraLds<C> &L, const float (*x)[4], int row0, int j0,
                                                 float (*acc)[4]) {
    const bool kAligned = kRows == kWyBatch; // the block is one batch, so its diagonal batch has j0 == row0
    KDN_UNROLL
    for (int a = 0; a < kRows; a++) {
        float t[kWyBatch]; // Tinv diag(beta) [row0 + a][j0 ..], zero above the diagonal
        kdn_load4(&L.m[row0 + a][j0], t);
        KDN_UNROLL
        for (int jj = 0; jj < kWyBatch; jj++) {
            if (kDiagonal && kAligned && jj > a) continue;
            KDN_UNROLL
            for (int c = 0; c < 4; c++) {
                const float sum = fmaf(t[jj], x[jj][c], acc[a][c]);
                acc[a][c] = !kDiagonal || kAligned || j0 + jj <= row0 + a ? sum : acc[a][c];
            }
        }
    }
}

template <int C, int kRows>
__device__ __forceinline__ void intra_wy_rows(const IntraLds<C> &L, const float (*x)[4], int row0, int j0,
                                              float (*acc)[4]) {
    if (j0 + kWyBatch - 1 <= row0)
        intra_wy_rows_of<C, kRows, false>(L, x, row0, j0, acc);
    else
        intra_wy_rows_of<C, kRows, true>(L, x, row0, j0, acc);
}

template <int C, bool kVec>
__device__ __forceinline__ void intra_wy_batch(const float *src, size_t stride, const float *scale, int jend, int D,
                                               int b, int j0, float (*x)[4]) {
    KDN_UNROLL
    for (int jj = 0; jj < kWyBatch; jj++) {
        const int j = j0 + jj;
        load_run<4, kVec>(src + j * stride + b, j < jend ? D - b : 0, x[jj]);
        const float sj = scale && j < jend ? scale[j] : 1.0f;
        KDN_UNROLL
        for (int c = 0; c < 4; c++) x[jj][c] *= sj;
    }
}

// Forced inline: clang 21 (ROCm 6.4) otherwise calls it, and the call frame
// takes intra<64> to 1 wave per SIMD.
template <int C, bool kVec>
__device__ __forceinline__ void intra_wy(IntraLds<C> &L, const float *src, size_t stride, const float *scale, int n, int D,
                         float *out) {
    const int H = C / kWyGroups / 2; // rows per block
    const int g = (int)threadIdx.x / kWyQuads, cq = (int)threadIdx.x % kWyQuads * 4;
    const int lo = g * H, hi = (2 * kWyGroups - 1 - g) * H; // first rows of the short and the long block
    const int jlo = n < lo + H ? n : lo + H, jhi = n < hi + H ? n : hi + H; // Tinv is lower triangular
    for (int b = cq; b - cq < D; b += 4 * kWyQuads) {
        float acc[2][H][4]; // [0]: the short block, [1]: the long one
        KDN_UNROLL
        for (int a = 0; a < H; a++)
            KDN_UNROLL
            for (int c = 0; c < 4; c++) acc[0][a][c] = acc[1][a][c] = 0.0f;
        int j0 = 0;
        for (; j0 < jlo; j0 += kWyBatch) {
            float x[kWyBatch][4];
            intra_wy_batch<C, kVec>(src, stride, scale, jhi, D, b, j0, x);
            intra_wy_rows<C, H>(L, x, lo, j0, acc[0]);
            intra_wy_rows<C, H>(L, x, hi, j0, acc[1]);
        }
        for (; j0 < jhi; j0 += kWyBatch) {
            float x[kWyBatch][4];
            intra_wy_batch<C, kVec>(src, stride, scale, jhi, D, b, j0, x);
            intra_wy_rows<C, H>(L, x, hi, j0, acc[1]);
        }
        KDN_UNROLL
        for (int a = 0; a < H; a++) {
            store_run<4, kVec>(out + (size_t)(lo + a) * D + b, D - b, acc[0][a]);
            store_run<4, kVec>(out + (size_t)(hi + a) * D + b, D - b, acc[1][a]);
        }
    }
}

// The kernel's body, its pointers __restrict__ (kernel_args.h says why).
template <int C, bool kVec>
__device__ __forceinline__ void chunked_intra(
    const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v, long v_head, long v_token,
    long v_seq, const float *__restrict__ g, const float *__restrict__ beta, float *__restrict__ gamma,
    float *__restrict__ to_end, float *__restrict__ Tinv, float *__restrict__ U, float *__restrict__ W,
    float *__restrict__ P, int T, int H_k, int H_v, int D_k, int D_v, int head_map) {
    KDN_DYNAMIC_SHARED(double, lds_raw);
    IntraLds<C> &L = *(IntraLds<C> *)lds_raw;
    const int tid = (int)threadIdx.x;
    const int c = (int)blockIdx.x, h = (int)blockIdx.y, seq = (int)blockIdx.z;
    const int hk = kdn_key_head(h, H_k, H_v, head_map);
    const int t0 = c * C, n = T - t0 < C ? T - t0 : C; // mutate: intra_tail
    const size_t tok0 = (size_t)seq * T + t0;
    const size_t ci = ((size_t)seq * H_v + h) * gridDim.x + c;
    const size_t qk_stride = (size_t)H_k * D_k;
    const float *qc = q + (tok0 * H_k + hk) * D_k, *kc = k + (tok0 * H_k + hk) * D_k;

    if (tid < C) {
        L.graw[tid] = tid < n ? kdn_log_decay_floored(g[(tok0 + tid) * H_v + h]) : 0.0f;
        L.beta[tid] = tid < n ? beta[(tok0 + tid) * H_v + h] : 0.0f;
    }
    __syncthreads();
    intra_gamma<C>(L, n, gamma + ci * C);
    intra_p_upper<C, kVec>(P + ci * C * C);
    // No barrier here: before its own first barrier intra_tiles only loads
    // global keys/queries and writes kt/qt, which phase b does not touch, and
    // its P tiles (on and below the diagonal) are not intra_p_upper's; its
    // reads of gamma and beta come after that barrier (D_k >= 1: the loop
    // runs), which orders them after phase b's writes.
    intra_tiles<C, kVec>(L, qc, kc, qk_stride, n, D_k, P + ci * C * C);
    __syncthreads(); // mutate: intra_after_tiles
    intra_invert_diagonal<C>(L);
    __syncthreads(); // mutate: intra_after_invert
    intra_place_diagonal<C>(L);
    __syncthreads();
    for (int I = 1; I < C / kBlock; I++) intra_block_row<C>(L, I);
    intra_put_tinv<C>(L, n, Tinv + ci * C * C);
    intra_to_end<C>(L, n, to_end + ci * C);
    __syncthreads();
    const float *vc = v + seq * v_seq + t0 * v_token + h * v_head; // mutate: v_view
    intra_wy<C, kVec>(L, vc, v_token, nullptr, n, D_v, U + ci * C * D_v);
    intra_wy<C, kVec>(L, kc, qk_stride, L.egamma, n, D_k, W + ci * C * D_k);
}

template <int C, bool kVec>
__global__ __launch_bounds__(kIntraThreads) void kernel_chunked_intra(const IntraArgs a) {
    chunked_intra<C, kVec>(a.q, a.k, a.v, a.v_head, a.v_token, a.v_seq, a.g, a.beta, a.gamma, a.to_end, a.Tinv,
                              a.U, a.W, a.P, a.T, a.H_k, a.H_v, a.D_k, a.D_v, a.head_map);
}

// ---- launchers ----------------------------------------------------------------
template <int C, bool kVec>
static void launch_intra(const KdnLayerCall *c, const KdnChunkBuffers *b) {
    static_assert(sizeof(IntraLds<C>) <= 64 * 1024, "gfx906 has 64 KB of LDS per workgroup");
    const KdnShape *s = &c->s;
    dim3 grid((unsigned)KDN_CEIL_DIV(s->T, C), (unsigned)s->H_v, (unsigned)s->n_seqs);
    KDN_ALLOW_LDS((kernel_chunked_intra<C, kVec>), sizeof(IntraLds<C>));
    const IntraArgs a = {c->q,     c->k,      c->v,    c->v_st[0], c->v_st[1], c->v_st[2], c->g,
                         c->beta,  b->gamma,  b->to_end, b->Tinv,  b->U,       b->W,       b->P,
                         s->T,     s->H_k,    s->H_v,  s->D_k,     s->D_v,     s->head_map};
    KDN_LAUNCH((kernel_chunked_intra<C, kVec>), grid, dim3(kIntraThreads), sizeof(IntraLds<C>), a);
}

template <int C>
static void launch_intra_c(const KdnLayerCall *c, const KdnChunkBuffers *b, bool vec) {
    if (vec)
        launch_intra<C, true>(c, b);
    else
        launch_intra<C, false>(c, b);
}

extern "C" void kdn_chunked_intra(const KdnLayerCall *c, const KdnChunkBuffers *b) {
    const char *why = unsupported(c, b);
    if (why) {
        kdn_launch_refused("kernel_chunked_intra", why);
        return;
    }
    const void *ptrs[] = {c->q, c->k, c->v, b->U, b->W, b->P};
    const bool vec = vector_ok(&c->s, ptrs, 6) && c->v_st[0] % 4 == 0 && c->v_st[1] % 4 == 0 && c->v_st[2] % 4 == 0;
    if (c->s.T == 0)
        return; // no chunk
    else if (c->s.chunk == 32)
        launch_intra_c<32>(c, b, vec);
    else
        launch_intra_c<64>(c, b, vec);
}

// Wave-level primitives. Each backend supplies two: read another lane's value
// (kdn_shfl) and the lane index; everything else is built on them here, so
// the reductions are the same code on every backend. gfx906 also gets DPP
// row rotations (kdn_row_ror), which the other backends emulate with kdn_shfl.
// At the end, per lane: gfx906's packed fp16 dot product (v_dot2_f32_f16)
// and its emulation on the other backends, built on the same bit casts.
#pragma once
#include "backend.h"

#if defined(KDN_BACKEND_HIP)
// gfx906 waves run in lockstep: nothing to wait for.
__device__ __forceinline__ void kdn_wave_sync(void) {}
// ds_bpermute on gfx906; width defaults to the 64-lane wave.
__device__ __forceinline__ float kdn_shfl(float v, int src) { return __shfl(v, src); }
__device__ __forceinline__ int kdn_lane(void) { return __lane_id(); }
#elif defined(KDN_BACKEND_CUDA)
// Lanes of a warp may run apart (independent thread scheduling): a lane
// writing LDS that another lane of its warp read must wait for it here.
__device__ __forceinline__ void kdn_wave_sync(void) { __syncwarp(); }
__device__ __forceinline__ float kdn_shfl(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ int kdn_lane(void) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return (int)lane;
}
#else
// The executor runs a wave's lanes one after another between wave operations
// (no lockstep, like CUDA's independent threads): the lanes meet here.
__device__ __forceinline__ void kdn_wave_sync(void) { kdn_cpu_wave_sync(); }
__device__ __forceinline__ float kdn_shfl(float v, int src) { return kdn_cpu_wave_read(v, src); }
__device__ __forceinline__ int kdn_lane(void) { return kdn_cpu_lane(); }
#endif

__device__ __forceinline__ float kdn_shfl_xor(float v, int mask) { return kdn_shfl(v, kdn_lane() ^ mask); }

// ---- DPP row operations on 32 bits ------------------------------------------
// gfx906's DPP moves 32 bits whatever they hold, so each row operation is
// written once, on int: a float crosses lanes as its bits, a double as its
// two halves (below). On gfx906 the DPP modifier of the VALU instruction that
// consumes it (no LDS traffic, unlike ds_bpermute); on the other backends the
// same lane mapping through kdn_shfl_i32, so the CPU executor runs the lane
// semantics the MI50 runs.
#if defined(KDN_BACKEND_HIP) || defined(KDN_BACKEND_CUDA)
__device__ __forceinline__ int kdn_f32_bits(float v) { return __float_as_int(v); }
__device__ __forceinline__ float kdn_f32_from_bits(int b) { return __int_as_float(b); }
__device__ __forceinline__ int kdn_f64_lo(double v) { return __double2loint(v); }
__device__ __forceinline__ int kdn_f64_hi(double v) { return __double2hiint(v); }
__device__ __forceinline__ double kdn_f64_join(int lo, int hi) { return __hiloint2double(hi, lo); }
#else
template <typename To, typename From>
__device__ __forceinline__ To kdn_bit_cast(From v) {
    static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
    To t;
    __builtin_memcpy(&t, &v, sizeof t);
    return t;
}
__device__ __forceinline__ int kdn_f32_bits(float v) { return kdn_bit_cast<int>(v); }
__device__ __forceinline__ float kdn_f32_from_bits(int b) { return kdn_bit_cast<float>(b); }
__device__ __forceinline__ int kdn_f64_lo(double v) { return (int)(unsigned)kdn_bit_cast<unsigned long long>(v); }
__device__ __forceinline__ int kdn_f64_hi(double v) { return (int)(unsigned)(kdn_bit_cast<unsigned long long>(v) >> 32); }
__device__ __forceinline__ double kdn_f64_join(int lo, int hi) {
    return kdn_bit_cast<double>((unsigned long long)(unsigned)hi << 32 | (unsigned)lo);
}
#endif

// Another lane's 32 bits, unchanged (the CPU executor carries them in a
// float, copied, never computed on).
#if defined(KDN_BACKEND_CUDA)
__device__ __forceinline__ int kdn_shfl_i32(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
#elif !defined(KDN_BACKEND_HIP)
__device__ __forceinline__ int kdn_shfl_i32(int v, int src) {
    return kdn_f32_bits(kdn_shfl(kdn_f32_from_bits(v), src));
}
#endif

// Row shift, gfx906's row_shr:N: lane i of a row of 16 reads lane i - N
// when i % 16 >= N; the first N lanes of the row get 0 (the source lane is
// out of the row: bound_ctrl off, so the lane keeps `old`, here 0). Row
// rotation, row_ror:N: lane i reads lane (i - N) mod 16 of its row. Other
// backends: every lane reads through kdn_shfl_i32 (a lane with no source
// reads its own and drops it).
#if defined(KDN_BACKEND_HIP)
template <int N>
__device__ __forceinline__ int kdn_row_shr_i32(int v) {
    static_assert(N > 0 && N < 16, "row_shr shifts by 1 .. 15 lanes");
    return __builtin_amdgcn_update_dpp(0, v, 0x110 + N, 0xF, 0xF, false);
}
template <int N>
__device__ __forceinline__ int kdn_row_ror_i32(int v) {
    static_assert(N > 0 && N < 16, "row_ror rotates by 1 .. 15 lanes");
    return __builtin_amdgcn_update_dpp(0, v, 0x120 + N, 0xF, 0xF, false);
}
#else
template <int N>
__device__ __forceinline__ int kdn_row_shr_i32(int v) {
    static_assert(N > 0 && N < 16, "row_shr shifts by 1 .. 15 lanes");
    const int lane = kdn_lane();
    const bool inside = (lane & 15) >= N;
    const int r = kdn_shfl_i32(v, inside ? lane - N : lane);
    return inside ? r : 0;
}
template <int N>
__device__ __forceinline__ int kdn_row_ror_i32(int v) {
    static_assert(N > 0 && N < 16, "row_ror rotates by 1 .. 15 lanes");
    const int lane = kdn_lane();
    return kdn_shfl_i32(v, (lane & ~15) | ((lane - N) & 15));
}
#endif

template <int N>
__device__ __forceinline__ float kdn_row_ror(float v) {
    return kdn_f32_from_bits(kdn_row_ror_i32<N>(kdn_f32_bits(v)));
}
// Step m (8, 4, 2, 1) of the xor butterfly inside rows of 16 lanes: the
// value lane i ^ m holds. After the steps for m' > m every value repeats with
// period 2m within the row, so lane (i - m) mod 16 holds it too: gfx906 reads
// it with a DPP row rotation (no LDS traffic), the CPU executor through the
// same rotation, and CUDA with the xor shuffle it always used; the sums are
// bitwise the same on every backend (tests/test_harness.c: test_row_ops).
template <int M>
__device__ __forceinline__ float kdn_row_butterfly_partner(float v) {
#if defined(KDN_BACKEND_CUDA)
    return kdn_shfl_xor(v, M);
#else
    return kdn_row_ror<M>(v);
#endif
}

template <int M>
__device__ __forceinline__ void kdn_row_butterfly_step(float &a, float &b) {
    const float a2 = kdn_row_butterfly_partner<M>(a), b2 = kdn_row_butterfly_partner<M>(b);
    a += a2;
    b += b2;
}

// Sum over each row of 16 lanes, every lane of the row gets it (the xor
// butterfly v += v[i ^ m], m = 8, 4, 2, 1): kdn_row_sum16 (float or double,
// below the 64-bit row operations); kdn_row_sum16x2 does two floats with
// their exchanges interleaved.
__device__ __forceinline__ void kdn_row_sum16x2(float &a, float &b) {
    kdn_row_butterfly_step<8>(a, b);
    kdn_row_butterfly_step<4>(a, b);
    kdn_row_butterfly_step<2>(a, b);
    kdn_row_butterfly_step<1>(a, b);
}

// Butterfly reduction: every lane ends with the sum of the whole wave.
__device__ __forceinline__ float kdn_wave_sum(float v) {
    for (int m = KDN_WAVE / 2; m > 0; m >>= 1) v += kdn_shfl_xor(v, m);
    return v;
}

__device__ __forceinline__ float kdn_wave_max(float v) {
    for (int m = KDN_WAVE / 2; m > 0; m >>= 1) v = fmaxf(v, kdn_shfl_xor(v, m));
    return v;
}

// Hillis-Steele inclusive scan across the wave (log2(KDN_WAVE) steps).
__device__ __forceinline__ float kdn_wave_inclusive_sum(float v) {
    int lane = kdn_lane();
    for (int off = 1; off < KDN_WAVE; off <<= 1) {
        float up = kdn_shfl(v, lane >= off ? lane - off : lane);
        if (lane >= off) v += up;
    }
    return v;
}

// ---- 64-bit values through the row operations --------------------------------
// A double crosses lanes as its two 32-bit halves, each through the same
// 32-bit row operation.
template <int N>
__device__ __forceinline__ double kdn_row_shr_f64(double v) {
    return kdn_f64_join(kdn_row_shr_i32<N>(kdn_f64_lo(v)), kdn_row_shr_i32<N>(kdn_f64_hi(v)));
}

template <int N>
__device__ __forceinline__ double kdn_row_ror_f64(double v) {
    return kdn_f64_join(kdn_row_ror_i32<N>(kdn_f64_lo(v)), kdn_row_ror_i32<N>(kdn_f64_hi(v)));
}

// Inclusive prefix sum inside each row of 16 lanes (Hillis-Steele with row
// shifts: lane i ends with v_r0 + .. + v_i of its row).
__device__ __forceinline__ double kdn_row_scan16_f64(double v) {
    v += kdn_row_shr_f64<1>(v);
    v += kdn_row_shr_f64<2>(v);
    v += kdn_row_shr_f64<4>(v);
    v += kdn_row_shr_f64<8>(v);
    return v;
}

// A double's butterfly partner: the row rotation on every backend.
template <int M>
__device__ __forceinline__ double kdn_row_butterfly_partner(double v) {
    return kdn_row_ror_f64<M>(v);
}

template <typename T>
__device__ __forceinline__ T kdn_row_sum16(T v) {
    v += kdn_row_butterfly_partner<8>(v);
    v += kdn_row_butterfly_partner<4>(v);
    v += kdn_row_butterfly_partner<2>(v);
    v += kdn_row_butterfly_partner<1>(v);
    return v;
}

// DPP quad permutation, gfx906's quad_perm:[P0,P1,P2,P3]: lane i reads lane
// 4 (i / 4) + P_(i % 4) of its quad of 4 lanes. Other backends: the same lane
// mapping through kdn_shfl.
#if defined(KDN_BACKEND_HIP)
template <int P0, int P1, int P2, int P3>
__device__ __forceinline__ float kdn_quad_perm(float v) {
    return __int_as_float(
        __builtin_amdgcn_update_dpp(0, __float_as_int(v), P0 | P1 << 2 | P2 << 4 | P3 << 6, 0xF, 0xF, false));
}
#else
template <int P0, int P1, int P2, int P3>
__device__ __forceinline__ float kdn_quad_perm(float v) {
    const int lane = kdn_lane(), i = lane & 3;
    return kdn_shfl(v, (lane & ~3) | (i == 0 ? P0 : i == 1 ? P1 : i == 2 ? P2 : P3));
}
#endif

// Sum over each quad of 4 lanes, every lane gets it: the xor butterfly
// (lane ^ 1, then lane ^ 2) as two quad permutations.
__device__ __forceinline__ float kdn_quad_sum(float v) {
    v += kdn_quad_perm<1, 0, 3, 2>(v);
    v += kdn_quad_perm<2, 3, 0, 1>(v);
    return v;
}

// ---- packed fp16 dot products: gfx906's v_dot2_f32_f16 --------------------------
// A kdn_f16x2 holds two IEEE binary16 values, element 0 in bits 0..15 (the
// layout of v_dot2_f32_f16's packed operands).
//   kdn_pack_f16x2(lo, hi)      each float rounded to the nearest fp16, ties to
//                               even (v_cvt_f16_f32 in the default mode);
//                               fp16 subnormals kept, overflow to infinity
//   kdn_dot2_f32_f16(a, b, c)   a.lo b.lo + a.hi b.hi + c, c and the result fp32
// What v_dot2_f32_f16 does, as far as public sources say (docs/tolerances.md,
// "Packed fp16 products", cites them):
//   confirmed  the two fp16 x fp16 products are exact (22-bit significands,
//              |p| in [2^-48, 2^32]: an fp32 holds every one), so only the
//              three-term sum rounds; the fp32 accumulator c and the result are
//              flushed to zero when subnormal, whatever the mode register says
//              (LLVM's AMDGPU lowering); fp16 subnormal inputs are kept on
//              every GPU but gfx90a (LLVM, from hardware tests);
//   assumed    the sum is rounded once, to nearest even (an LLVM reviewer's
//              "only rounds a single time"; AMD's ISA guide gives only
//              D = S0[0] S1[0] + S0[1] S1[1] + S2). Two roundings (an fma
//              chain) or a truncated alignment of the three terms (found on
//              gfx1151 silicon) would differ in the last bits; the variant's
//              tolerance allows 3 u of the summed magnitudes per instruction,
//              which covers each of them (docs/tolerances.md).
// The CPU executor and CUDA run the emulation below: single rounding of the
// exact sum, the flushes above. A result below 2^-126 after rounding to 24
// bits is flushed (assumed: where the hardware decides is not documented).
typedef unsigned kdn_f16x2;

#if defined(KDN_BACKEND_HIP)
typedef _Float16 kdn_half2_vec __attribute__((ext_vector_type(2)));
__device__ __forceinline__ kdn_f16x2 kdn_pack_f16x2(float lo, float hi) {
    const kdn_half2_vec h = {(_Float16)lo, (_Float16)hi};
    return __builtin_bit_cast(kdn_f16x2, h);
}
__device__ __forceinline__ float kdn_dot2_f32_f16(kdn_f16x2 a, kdn_f16x2 b, float c) {
    return __builtin_amdgcn_fdot2(__builtin_bit_cast(kdn_half2_vec, a), __builtin_bit_cast(kdn_half2_vec, b), c,
                                  false);
}
#else
// (kdn_f32_bits / kdn_f32_from_bits: the bit casts above)
// fp32 -> fp16 bits, round to nearest even.
__device__ __forceinline__ unsigned kdn_f16_bits(float f) {
    const unsigned x = (unsigned)kdn_f32_bits(f), sign = x >> 16 & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u;   // NaN
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up (the tie above 65504 included): infinity
    if (ax < 0x38800000u)                           // below 2^-14: an fp16 subnormal, in units of 2^-24
        return sign | (unsigned)rintf(kdn_f32_from_bits((int)ax) * 0x1p24f); // exact scaling; rintf ties to even
    const unsigned r = ax - (112u << 23), keep = r >> 13, rest = r & 0x1fffu; // rebias 127 -> 15
    return sign | (keep + (rest > 0x1000u || (rest == 0x1000u && (keep & 1u)))); // a carry moves the exponent
}

__device__ __forceinline__ float kdn_f16_value(unsigned h) {
    const unsigned sign = (h & 0x8000u) << 16, e = h >> 10 & 0x1fu, m = h & 0x3ffu;
    if (e == 0) return kdn_f32_from_bits((int)(sign | (unsigned)kdn_f32_bits((float)m * 0x1p-24f))); // subnormal or zero: exact
    if (e == 31) return kdn_f32_from_bits((int)(sign | 0x7f800000u | m << 13));             // infinity, NaN
    return kdn_f32_from_bits((int)(sign | (e + 112u) << 23 | m << 13));
}

__device__ __forceinline__ kdn_f16x2 kdn_pack_f16x2(float lo, float hi) { return kdn_f16_bits(lo) | kdn_f16_bits(hi) << 16; }

__device__ __forceinline__ float kdn_flush_subnormal(float x) { return fabsf(x) < 0x1p-126f ? 0.0f * x : x; }

// n 2^e rounded to fp32 (to nearest even, once), a result below 2^-126 flushed.
__device__ inline float kdn_round_scaled(__int128 n, int e) {
    const bool neg = n < 0;
    unsigned __int128 m = neg ? -(unsigned __int128)n : (unsigned __int128)n;
    int len = 0;
    while (len < 128 && m >> len) len++;
    if (len > 24) {
        const int s = len - 24;
        const unsigned __int128 rest = m & (((unsigned __int128)1 << s) - 1), half = (unsigned __int128)1 << (s - 1);
        m >>= s;
        e += s;
        m += rest > half || (rest == half && (m & 1));
    }
    const float r = kdn_flush_subnormal(ldexpf((float)(unsigned)m, e)); // m <= 2^24: exact as a float
    return neg ? -r : r;
}

// x 2^k for k >= 0 (no overflow here), else x 2^k truncated toward zero (x >= 0
// where it truncates); 0 past the width. Through unsigned: a left shift of a
// negative value is undefined in C++17.
__device__ __forceinline__ __int128 kdn_shift(__int128 x, int k) {
    if (k >= 0) return (__int128)((unsigned __int128)x << k);
    return k > -127 ? x >> -k : 0;
}

// x (finite) = n 2^e with |n| < 2^24 (0: n = 0).
__device__ __forceinline__ void kdn_exact_of(float x, __int128 *n, int *e) {
    const float f = frexpf(x, e);
    *n = (__int128)(long long)ldexpf(f, 24);
    *e -= 24;
}

// p0 + p1 + c rounded once; p0, p1 exact fp16 products (multiples of 2^-48
// below 2^33), c an fp32, all finite. The products' sum P is exact in 128
// bits on the 2^-48 grid. P and c go on a common grid 100 bits below the
// larger one's leading bit; bits of the smaller one below that grid can only
// exist where the larger one is at least 2^18 times larger (P spans <= 82
// bits and never has bits below 2^-48, c spans 24), so no cancellation
// follows: the result's rounding unit is far above the grid and the lost
// bits act only as a sticky bit. The sum becomes 2N +- 1 on a grid twice as
// fine, strictly between the same two grid points as the exact sum, which
// rounds as the exact sum does.
__device__ inline float kdn_sum3_exact(float p0, float p1, float c) {
    __int128 n0, n1, nc;
    int e0, e1, ec;
    kdn_exact_of(p0, &n0, &e0);
    kdn_exact_of(p1, &n1, &e1);
    const __int128 P = kdn_shift(n0, e0 + 48) + kdn_shift(n1, e1 + 48); // exact: the products' low bits are zero
    kdn_exact_of(c, &nc, &ec);
    int top_p = -48;
    for (unsigned __int128 m = P < 0 ? -(unsigned __int128)P : (unsigned __int128)P; m; m >>= 1) top_p++;
    const int grid = (top_p > ec + 24 ? top_p : ec + 24) - 100;
    __int128 terms[2] = {P, nc}, sum = 0;
    const int exps[2] = {-48, ec};
    int sticky = 0;
    for (int i = 0; i < 2; i++) {
        const int s = grid - exps[i];
        const __int128 mag = terms[i] < 0 ? -terms[i] : terms[i], kept = kdn_shift(mag, -s);
        sum += terms[i] < 0 ? -kept : kept;
        if (s > 0 && kdn_shift(kept, s) != mag) sticky = terms[i] < 0 ? -1 : 1;
    }
    return sticky ? kdn_round_scaled(2 * sum + sticky, grid - 1) : kdn_round_scaled(sum, grid);
}

__device__ inline float kdn_dot2_f32_f16(kdn_f16x2 a, kdn_f16x2 b, float c) {
    const float p0 = kdn_f16_value(a & 0xffffu) * kdn_f16_value(b & 0xffffu); // exact
    const float p1 = kdn_f16_value(a >> 16) * kdn_f16_value(b >> 16);
    c = kdn_flush_subnormal(c);
    if (!isfinite(p0) || !isfinite(p1) || !isfinite(c)) return p0 + p1 + c; // infinities and NaNs as IEEE
    // The sum in double is the exact sum when neither addition rounds
    // (TwoSum's error terms zero); then one conversion rounds it, as the
    // hardware does, unless the result is near the flush range.
    const double s1 = (double)p0 + (double)p1, t1 = s1 - p0, err1 = (p0 - (s1 - t1)) + (p1 - t1);
    const double s = s1 + (double)c, t = s - s1, err = (s1 - (s - t)) + (c - t);
    if (err1 == 0.0 && err == 0.0 && (s == 0.0 || fabs(s) >= 0x1p-126)) return (float)s;
    return kdn_sum3_exact(p0, p1, c);
}
#endif

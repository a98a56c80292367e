// Wave-level primitives. Each backend supplies two: read another lane's value
// (kdn_shfl) and the lane index; everything else is built on them here, so
// the reductions are the same code on every backend. gfx906 also gets DPP
// row rotations (kdn_row_ror), which the other backends emulate with kdn_shfl.
#pragma once
#include "backend.h"

#if defined(KDN_BACKEND_HIP)
// ds_bpermute on gfx906; width defaults to the 64-lane wave.
__device__ __forceinline__ float kdn_shfl(float v, int src) { return __shfl(v, src); }
__device__ __forceinline__ int kdn_lane(void) { return __lane_id(); }
#elif defined(KDN_BACKEND_CUDA)
__device__ __forceinline__ float kdn_shfl(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ int kdn_lane(void) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return (int)lane;
}
#else
// The executor runs a wave's lanes one after another between wave operations
// (no lockstep, like CUDA's independent threads): the lanes meet in kdn_shfl.
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


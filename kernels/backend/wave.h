// Wave-level primitives. Each backend supplies two: read another lane's value
// (kdn_shfl) and the lane index; everything else is built on them here, so
// the reductions are the same code on every backend.
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
// The executor runs a wave's lanes one after another between wave operations;
// a read by one lane and a write by another are ordered by the kernel's code.
__device__ __forceinline__ void kdn_wave_sync(void) {}
__device__ __forceinline__ float kdn_shfl(float v, int src) { return kdn_cpu_wave_read(v, src); }
__device__ __forceinline__ int kdn_lane(void) { return kdn_cpu_lane(); }
#endif

__device__ __forceinline__ float kdn_shfl_xor(float v, int mask) { return kdn_shfl(v, kdn_lane() ^ mask); }

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

// The one place where the three builds differ. Kernel files include this and
// nothing backend-specific; the Makefile defines exactly one KDN_BACKEND_*.
//
//   KDN_BACKEND_HIP   hipcc, gfx906 (the product)
//   KDN_BACKEND_CUDA  nvcc, NVIDIA (development proxy)
//   KDN_BACKEND_CPU   host C++, kernels run on the SIMT executor (simt_cpu.h)
//
// Kernels are written against: __global__/__device__, threadIdx & co.,
// __syncthreads(), __shared__ (static), KDN_DYNAMIC_SHARED for dynamic LDS,
// KDN_WAVE for the wave width, the primitives of wave.h, and KDN_LAUNCH.
#pragma once

#include <math.h>
#include <stddef.h>

#include "runtime.h" // what KDN_LAUNCH and the launchers call (runtime_gpu.cpp, runtime_cpu.cpp)

#if defined(KDN_BACKEND_HIP)
#include <hip/hip_runtime.h>
#define KDN_WAVE 64
#define KDN_DYNAMIC_SHARED(type, name) HIP_DYNAMIC_SHARED(type, name)
#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuErrorNotReady hipErrorNotReady
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceProp hipDeviceProp_t
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuEvent_t hipEvent_t
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuMemset hipMemset
#define gpuGetDevice hipGetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define KDN_LAUNCH(kernel, grid, block, shmem, ...)                              \
    do {                                                                          \
        if (!kdn_launch_may_run()) break;                                         \
        hipLaunchKernelGGL(kernel, grid, block, shmem, (hipStream_t)kdn_launch_stream, __VA_ARGS__); \
        kdn_note_launch(#kernel, hipGetLastError());                              \
    } while (0)

#elif defined(KDN_BACKEND_CUDA)
#include <cuda_runtime.h>
// NVIDIA warps are 32 wide; kernels are written for any KDN_WAVE that divides
// the workgroup, so the same source runs natively on both.
#define KDN_WAVE 32
#define KDN_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError
#define gpuErrorNotReady cudaErrorNotReady
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceProp cudaDeviceProp
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuMemset cudaMemset
#define gpuGetDevice cudaGetDevice
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define KDN_LAUNCH(kernel, grid, block, shmem, ...)                              \
    do {                                                                          \
        if (!kdn_launch_may_run()) break;                                         \
        kernel<<<grid, block, shmem, (cudaStream_t)kdn_launch_stream>>>(__VA_ARGS__); \
        kdn_note_launch(#kernel, cudaGetLastError());                             \
    } while (0)

#elif defined(KDN_BACKEND_CPU)
#include "simt_cpu.h"
#define KDN_WAVE 64
#define KDN_DYNAMIC_SHARED(type, name) type *name = (type *)kdn_cpu_dynamic_shared()
#define KDN_LAUNCH(kernel, grid, block, shmem, ...)                              \
    do {                                                                          \
        auto kdn_body_ = [=]() { kernel(__VA_ARGS__); };                          \
        kdn_cpu_launch(#kernel, grid, block, shmem,                               \
                       [](void *p) { (*(decltype(kdn_body_) *)p)(); }, &kdn_body_); \
    } while (0)

#else
#error "define one of KDN_BACKEND_HIP, KDN_BACKEND_CUDA, KDN_BACKEND_CPU"
#endif

// Programmatic dependent launch (CUDA, sm_90 and later): KDN_LAUNCH_PDL lets
// a kernel start while the stream's previous kernel finishes, so that its
// launch and its arithmetic on the call overlap that kernel's tail, as
// ggml's CUDA kernels do (a decode step is mostly such latency). The kernel
// must call kdn_wait_prior_grid() before it touches memory (it then sees
// everything the previous kernel wrote). It does not let the next kernel in
// early (griddepcontrol.launch_dependents), as ggml's own Gated Delta-Net
// kernel does not: ggml's element-wise kernels let their own successor in at
// once, and behind an early release here such a kernel was let in while this
// one still ran; a replayed graph of decode calls each followed by one took
// 2.97 us per pair with the release, 2.45 without it, ggml's kernel 2.91
// (H200, results/h200-pdl-decode-ref.tsv, graph method). On HIP, the CPU
// executor and CUDA code built for an older target it is KDN_LAUNCH and the
// wait does nothing.
#if defined(KDN_BACKEND_CUDA)
__device__ __forceinline__ void kdn_wait_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
template <typename... Params, typename... Args>
static inline cudaError_t kdn_launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shmem,
                                         Args... args) {
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.dynamicSmemBytes = shmem;
    cfg.stream = (cudaStream_t)kdn_launch_stream;
    cfg.attrs = &attr;
    cfg.numAttrs = kdn_pdl_capable((const void *)kernel) ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}
// As KDN_LAUNCH: the runtime's last error is taken right after the launch;
// the launch's own return code is the outcome when it reports a failure.
#define KDN_LAUNCH_PDL(kernel, grid, block, shmem, ...)                             \
    do {                                                                            \
        if (!kdn_launch_may_run()) break;                                           \
        cudaError_t kdn_e_ = kdn_launch_pdl(kernel, grid, block, shmem, __VA_ARGS__); \
        cudaError_t kdn_last_ = cudaGetLastError();                                 \
        kdn_note_launch(#kernel, kdn_e_ != cudaSuccess ? kdn_e_ : kdn_last_);       \
    } while (0)
#else
__device__ __forceinline__ void kdn_wait_prior_grid() {}
#define KDN_LAUNCH_PDL KDN_LAUNCH
#endif

// A kernel launched with more than 48 KB of dynamic LDS: CUDA needs an opt-in
// per kernel; gfx906 and the CPU executor allow 64 KB as they are. A failed
// opt-in is recorded as the kernel's launch failure (the launch would fail).
#if defined(KDN_BACKEND_CUDA)
#define KDN_ALLOW_LDS(kernel, bytes)                                                                          \
    kdn_note_runtime_call("cudaFuncSetAttribute", #kernel,                                                  \
                          cudaFuncSetAttribute((const void *)(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                               (int)(bytes)))
#else
#define KDN_ALLOW_LDS(kernel, bytes) ((void)(bytes))
#endif

// How many workgroups of `threads` threads one round of `kernel` runs at once
// on the current device: its multiprocessors (CUs, SMs) times the kernel's
// occupancy, asked of the runtime once per device, kernel and block size
// (0 when it cannot say). The CPU executor has
// neither and reports the MI50's, 60 CUs x gfx906_per_cu (the kernel's
// workgroups per CU on gfx906, which lens/static.py's gate holds it to),
// so that make test runs the grids an MI50 runs.
#if defined(KDN_BACKEND_CPU)
#define KDN_ROUND_WORKGROUPS(kernel, threads, gfx906_per_cu) (60 * (gfx906_per_cu))
#else
#define KDN_ROUND_WORKGROUPS(kernel, threads, gfx906_per_cu) kdn_round_workgroups((const void *)(kernel), (threads))
#endif

// The gfx906 occupancy a kernel is compiled for: its waves per SIMD, which
// caps its VGPRs at 256 / waves (the compiler must fit them without scratch;
// make resources-check fails otherwise). Only the gfx906 build is held to it:
// other targets keep their own register allocation.
#if defined(KDN_BACKEND_HIP)
#define KDN_GFX906_WAVES_PER_SIMD(waves) __attribute__((amdgpu_waves_per_eu(waves)))
#else
#define KDN_GFX906_WAVES_PER_SIMD(waves)
#endif

// A scheduling fence for the gfx906 compiler: no instruction moves across it,
// so that loads issued together before it stay together (one latency per
// batch, not one per load the scheduler sinks towards its use).
#if defined(KDN_BACKEND_HIP)
#define KDN_GFX906_SCHED_FENCE() __builtin_amdgcn_sched_barrier(0)
#else
#define KDN_GFX906_SCHED_FENCE()
#endif

// Full unrolling of a loop with a compile-time trip count, so that arrays
// indexed by its counter stay in registers.
// KDN_NO_UNROLL keeps a loop rolled where unrolling would let the compiler
// hoist every iteration's loads and run out of registers.
#if defined(KDN_BACKEND_CPU)
#define KDN_UNROLL _Pragma("GCC unroll 128")
#define KDN_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define KDN_UNROLL _Pragma("unroll")
#define KDN_NO_UNROLL _Pragma("unroll 1")
#endif

#define KDN_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

// Four (two) consecutive floats at a 16-byte (8-byte) aligned address: one
// vector load or store on the GPUs (dwordx4, dwordx2 on gfx906), scalar ones
// on the CPU.
// kdn_load4_if, kdn_load2_if: the floats when `ok`, zeros otherwise, with no scalar
// load path: where a vector load and scalar loads could write the same
// registers, the gfx906 compiler waited for every earlier load (vmcnt(0))
// before each vector load (lens/static.py counts such waits).
#if defined(KDN_BACKEND_CPU)
__device__ __forceinline__ void kdn_load4(const float *p, float out[4]) {
    for (int u = 0; u < 4; u++) out[u] = p[u];
}
__device__ __forceinline__ void kdn_store4(float *p, const float in[4]) {
    for (int u = 0; u < 4; u++) p[u] = in[u];
}
__device__ __forceinline__ void kdn_load4_if(const float *p, bool ok, float out[4]) {
    for (int u = 0; u < 4; u++) out[u] = ok ? p[u] : 0.0f;
}
__device__ __forceinline__ void kdn_store2(float *p, const float in[2]) {
    for (int u = 0; u < 2; u++) p[u] = in[u];
}
__device__ __forceinline__ void kdn_load2_if(const float *p, bool ok, float out[2]) {
    for (int u = 0; u < 2; u++) out[u] = ok ? p[u] : 0.0f;
}
#else
__device__ __forceinline__ void kdn_load4(const float *p, float out[4]) {
    const float4 v = *(const float4 *)p;
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void kdn_store4(float *p, const float in[4]) {
    *(float4 *)p = make_float4(in[0], in[1], in[2], in[3]);
}
__device__ __forceinline__ void kdn_load4_if(const float *p, bool ok, float out[4]) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (ok) v = *(const float4 *)p;
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void kdn_store2(float *p, const float in[2]) {
    *(float2 *)p = make_float2(in[0], in[1]);
}
__device__ __forceinline__ void kdn_load2_if(const float *p, bool ok, float out[2]) {
    float2 v = make_float2(0.0f, 0.0f);
    if (ok) v = *(const float2 *)p;
    out[0] = v.x, out[1] = v.y;
}
#endif

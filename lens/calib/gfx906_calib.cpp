// Microbenchmarks for the gfx906 simulator's calibration (python3 -m lens calibrate): each
// measures one thing published measurements on gfx906 also measure (results/gfx906-calibration.tsv
// names the sources). Compiled for gfx906 and simulated, never run here.
#include <hip/hip_runtime.h>

// fp32 FMA peak: 16 independent FMA chains per thread, 4 steps each per round (as clpeak, long
// unrolled chains: the loop's own instructions are a small share), n rounds; 2 x 64 x n flops.
__global__ void calib_fma(float *out, float b, float c, int n) {
    float a[16];
    for (int j = 0; j < 16; j++) a[j] = threadIdx.x + j;
    for (int i = 0; i < n; i++) {
#pragma unroll
        for (int k = 0; k < 4; k++)
#pragma unroll
            for (int j = 0; j < 16; j++) a[j] = fmaf(a[j], b, c);
    }
    float s = 0;
    for (int j = 0; j < 16; j++) s += a[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// Streaming read, 16 bytes per lane per load (global_load_dwordx4), grid-stride: n float4 in total.
__global__ void calib_stream(const float4 *in, float *out, int n) {
    float4 s = make_float4(0, 0, 0, 0);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float4 v = in[i];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s.x + s.y + s.z + s.w;
}

// LDS streaming, 16 bytes per lane per read (ds_read_b128): n rounds of 4 reads per thread.
__global__ void calib_lds(float *out, int n) {
    __shared__ float4 tile[1024];
    tile[threadIdx.x] = make_float4(threadIdx.x, 1, 2, 3);
    __syncthreads();
    float4 s = make_float4(0, 0, 0, 0);
    for (int i = 0; i < n; i++) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float4 v = tile[(threadIdx.x + 256 * j + i) & 1023];
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s.x + s.y + s.z + s.w;
}

// Lane exchange rates, as the published figures name them: a chain of v_mov_b32_dpp row_shr:1
// (lane i of a row of 16 takes lane i - 1's value) against a chain of ds_bpermute_b32 from the XOR
// neighbour. Each thread makes n exchanges (n a multiple of 16), 16 per loop iteration: the loop's
// own scalar instructions (a counter, a compare, a branch) would otherwise bind a one-exchange loop
// (one SALU instruction per clock per CU) instead of the exchange.
__global__ void calib_dpp(float *out, int n) {
    int x = threadIdx.x;
    for (int i = 0; i < n; i += 16) {
#pragma unroll
        for (int j = 0; j < 16; j++) x = __builtin_amdgcn_mov_dpp(x, 0x111, 0xf, 0xf, false);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = (float)x;
}

__global__ void calib_bpermute(float *out, int n) {
    int x = threadIdx.x;
    const int from = ((threadIdx.x & 63) ^ 1) * 4;
    for (int i = 0; i < n; i += 16) {
#pragma unroll
        for (int j = 0; j < 16; j++) x = __builtin_amdgcn_ds_bpermute(from, x);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = (float)x;
}

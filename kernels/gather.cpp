// The library's input staging (kernels/gated_delta_net.c): a strided ggml
// view copied into a contiguous buffer. The chunked kernels read contiguous
// ggml layout; a call with permuted views goes through this first (one read
// and one write of the tensor; docs/api.md gives the cost).
//
// One thread per element, ne0 (the contiguous row) fastest, so both the reads
// of a row and all the writes are coalesced; rows of a permuted view are read
// ne0 floats at a time wherever they lie.
#include "backend/backend.h"
#include "kdn.h"
#include "kernel_args.h"

static const int kBlock = 256;

// The kernel's body, its pointers __restrict__ (kernel_args.h says why).
__device__ __forceinline__ void gather_strided(const float *__restrict__ src, float *__restrict__ dst, long st1,
                                               long st2, long st3, int ne0, int ne1, int ne2, long n) {
    const long i = (long)blockIdx.x * kBlock + (long)threadIdx.x;
    if (i >= n) return;
    const long i0 = i % ne0, r = i / ne0;
    const long i1 = r % ne1, r2 = r / ne1;
    const long i2 = r2 % ne2, i3 = r2 / ne2;
    dst[i] = src[i0 + i1 * st1 + i2 * st2 + i3 * st3];
}

__global__ void kernel_gather_strided(const GatherArgs a) {
    gather_strided(a.src, a.dst, a.st1, a.st2, a.st3, a.ne0, a.ne1, a.ne2, a.n);
}

extern "C" void kdn_gather_strided(const float *src, const long ne[4], const long st[3], float *dst) {
    const long n = ne[0] * ne[1] * ne[2] * ne[3];
    if (n <= 0) return;
    if (ne[0] > 0x7fffffff || ne[1] > 0x7fffffff || ne[2] > 0x7fffffff || n / kBlock >= 0x7fffffff) {
        kdn_launch_refused("kernel_gather_strided", "tensor too large for one launch");
        return;
    }
    const GatherArgs a = {src, dst, st[0], st[1], st[2], (int)ne[0], (int)ne[1], (int)ne[2], n};
    KDN_LAUNCH(kernel_gather_strided, dim3((unsigned)KDN_CEIL_DIV(n, kBlock)), dim3(kBlock), 0, a);
}

// The kernels' one calling convention: each product kernel takes one argument
// struct by value, holding what that kernel reads and nothing more (device
// pointers, strides and dimensions; no host pointer). The launcher fills it
// from the layer call (kdn.h's KdnLayerCall) and passes it to KDN_LAUNCH.
//
// A struct's fields are in the order the kernel's positional arguments had,
// so its kernel-argument bytes are laid out as before. A pointer inside a
// struct is not a __restrict__ kernel parameter: each kernel hands the
// struct's pointers to a body function whose parameters are __restrict__
// where they were, so that the compiler keeps the same no-alias knowledge
// (gfx906: a load it can prove unclobbered stays a scalar s_load; CUDA: the
// ld.global.nc path). make isa's instruction counts check it.
#ifndef KDN_KERNEL_ARGS_H
#define KDN_KERNEL_ARGS_H

// kernel_deltanet_recurrent (deltanet_recurrent.cpp): one call of the layer,
// inputs as strided views (strides in floats for dims 1..3), the state in and
// out (K snapshot slots snap_stride floats apart); kdn.h's KdnLayerCall says
// what each field is. Sequences and value heads are the grid's z and y.
struct RecurrentArgs {
    int T, H_k, H_v, D_k, D_v, head_map;
    const float *q, *k, *v, *g, *beta, *state_in;
    long q_st[3], k_st[3], v_st[3], g_st[3], beta_st[3];
    float q_scale;
    int K;
    float *o, *snapshots;
    long snap_stride;
};

// kernel_chunked_intra (chunked_intra.cpp): contiguous q, k, g, beta;
// v a view (strides in floats per head, token, sequence); the per-chunk
// buffers it writes (kdn.h's KdnChunkBuffers).
struct IntraArgs {
    const float *q, *k, *v;
    long v_head, v_token, v_seq;
    const float *g, *beta;
    float *gamma, *to_end, *Tinv, *U, *W, *P;
    int T, H_k, H_v, D_k, D_v, head_map;
};

// kernel_chunked_state (chunked_state.cpp): contiguous q and k, the
// per-chunk buffers, the state at chunk c0's start and after chunk c1 - 1
// (the same buffer when updated in place), the outputs of chunks c0..c1-1.
struct StateArgs {
    const float *q, *k, *gamma, *to_end, *U, *W, *P;
    const float *state_in;
    float *state_out, *o;
    int T, H_k, H_v, D_k, D_v, head_map, c0, c1;
    float q_scale;
};

// kernel_gather_strided (gather.cpp): dst, n floats contiguous
// [ne0, ne1, ne2, .], from src with strides st1..st3 (floats) for dims 1..3.
struct GatherArgs {
    const float *src;
    float *dst;
    long st1, st2, st3;
    int ne0, ne1, ne2;
    long n;
};

#endif

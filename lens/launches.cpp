// The launches kdn_gated_delta_net makes for one call, recorded instead of run: every kernel's
// name (with its template arguments), grid, block, dynamic LDS and its kernel-argument bytes laid
// out as HIP lays them out (each argument at the next multiple of its alignment). The library's
// own code (kernels/, CPU backend: it takes the MI50's launch decisions, KDN_ROUND_WORKGROUPS)
// chooses the path and the kernels; the tensors are never touched, so their addresses are
// made up. the lens (lens/product.py) runs the recorded launches on the simulated MI50.
//   usage: launches PATH T N_SEQS [H_K H_V D [GATE [K [MAP [CHUNK]]]]]   (PATH: auto, recurrent,
//          chunked; GATE: scalar (g [1, H_v, T, N_SEQS], the default) or key (KDA: g [D, H_v, T,
//          N_SEQS]); K: state snapshots, default 1; MAP: tiled (default) or block; CHUNK: 0, 32, 64)
//   output: one line per launch: name \t gx gy gz \t bx by bz \t lds_bytes \t hex bytes; first a
//          line "#buffers" \t the addresses of q k v g beta state dst workspace \t workspace bytes
//          (the functional mode, lens/isa_run.py, puts its data there)
//   build: each kernel file compiled with -include lens/launches.h (lens/product.py does it)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/gated_delta_net.h"
static kdn_tensor tensor(uintptr_t at, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t;
    t.data = (const void *)at;
    int64_t ne[4] = {n0, n1, n2, n3};
    size_t nb = 4;
    for (int i = 0; i < 4; i++) {
        t.ne[i] = ne[i];
        t.nb[i] = nb;
        nb *= (size_t)ne[i];
    }
    return t;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: launches auto|recurrent|chunked T N_SEQS [H_K H_V D [scalar|key [K [tiled|block [CHUNK]]]]]\n");
        return 2;
    }
    const long T = atol(argv[2]), B = atol(argv[3]);
    const long Hk = argc > 4 ? atol(argv[4]) : 16, Hv = argc > 5 ? atol(argv[5]) : 32,
               D = argc > 6 ? atol(argv[6]) : 128;
    const bool key_gate = argc > 7 && strcmp(argv[7], "key") == 0;
    const int K = argc > 8 ? atoi(argv[8]) : 1;
    const bool block_map = argc > 9 && strcmp(argv[9], "block") == 0;
    const int chunk = argc > 10 ? atoi(argv[10]) : 0;
    // made-up device addresses, 1 GiB apart, 256-byte aligned
    uintptr_t at = (uintptr_t)1 << 40;
    auto next = [&at]() { return at += (uintptr_t)1 << 30; };
    kdn_gdn_call c;
    memset(&c, 0, sizeof c);
    c.q = tensor(next(), D, Hk, T, B);
    c.k = tensor(next(), D, Hk, T, B);
    c.v = tensor(next(), D, Hv, T, B);
    c.g = tensor(next(), key_gate ? D : 1, Hv, T, B);
    c.beta = tensor(next(), 1, Hv, T, B);
    c.state = tensor(next(), D, D, Hv, B);
    c.dst = (float *)next();
    c.K = K;
    c.head_map = block_map ? KDN_HEAD_MAP_BLOCK : KDN_HEAD_MAP_TILED;
    c.chunk = chunk;
    c.path = strcmp(argv[1], "recurrent") == 0 ? KDN_PATH_RECURRENT
             : strcmp(argv[1], "chunked") == 0 ? KDN_PATH_CHUNKED : KDN_PATH_AUTO;
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&c, &ws);
    const uintptr_t workspace = next();
    if (st == KDN_OK)
        printf("#buffers\t%zu %zu %zu %zu %zu %zu %zu %zu\t%zu\n", (size_t)c.q.data, (size_t)c.k.data,
               (size_t)c.v.data, (size_t)c.g.data, (size_t)c.beta.data, (size_t)c.state.data, (size_t)c.dst,
               (size_t)workspace, ws);
    if (st == KDN_OK) st = kdn_gated_delta_net(&c, (void *)workspace, ws);
    if (st != KDN_OK) {
        fprintf(stderr, "launches: %s\n", kdn_status_message(st));
        return 1;
    }
    return 0;
}

// The launches kdn_gated_delta_net makes for one call, recorded instead of run: every kernel's
// name (with its template arguments), grid, block, dynamic LDS and its kernel-argument bytes laid
// out as HIP lays them out (each argument at the next multiple of its alignment). The library's
// own code (kernels/, CPU backend: it takes the MI50's launch decisions, KDN_ROUND_WORKGROUPS)
// chooses the path and the kernels; the tensors are never touched, so their addresses are
// made up. the lens (lens/product.py) runs the recorded launches on the simulated MI50.
//   usage: launches PATH T N_SEQS [H_K H_V D [GATE [K [MAP [CHUNK [VIEWS]]]]]]   (PATH: auto,
//          recurrent, chunked; GATE: scalar (g [1, H_v, T, N_SEQS], the default) or key (KDA: g [D,
//          H_v, T, N_SEQS]); K: state snapshots, default 1; MAP: tiled (default) or block; CHUNK: 0,
//          32, 64; VIEWS: dense (default), fused: q, k, v the rows of one [D, 2 H_k + H_v, T, N_SEQS]
//          tensor (llama.cpp's qkv projection split into views: strided, so the chunked path gathers
//          q and k), odd: fused, 4 bytes into its buffer (no view 16-byte aligned))
//   output: one line per launch: name \t gx gy gz \t bx by bz \t lds_bytes \t hex bytes; first the
//          memory (the functional mode, lens/isa_run.py, puts its data there): "#buffer" \t name \t
//          address \t bytes per allocation (qkv or q k v, g, beta, state, dst, workspace), "#view" \t
//          name \t address \t nb1 nb2 nb3 per input tensor
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
        fprintf(stderr, "usage: launches auto|recurrent|chunked T N_SEQS [H_K H_V D [scalar|key [K [tiled|block "
                        "[CHUNK [dense|fused|odd]]]]]]\n");
        return 2;
    }
    const long T = atol(argv[2]), B = atol(argv[3]);
    const long Hk = argc > 4 ? atol(argv[4]) : 16, Hv = argc > 5 ? atol(argv[5]) : 32,
               D = argc > 6 ? atol(argv[6]) : 128;
    const bool key_gate = argc > 7 && strcmp(argv[7], "key") == 0;
    const int K = argc > 8 ? atoi(argv[8]) : 1;
    const bool block_map = argc > 9 && strcmp(argv[9], "block") == 0;
    const int chunk = argc > 10 ? atoi(argv[10]) : 0;
    const char *views = argc > 11 ? argv[11] : "dense";
    const bool fused = strcmp(views, "dense") != 0, odd = strcmp(views, "odd") == 0;
    // made-up device addresses, 1 GiB apart, 256-byte aligned
    uintptr_t at = (uintptr_t)1 << 40;
    auto next = [&at]() { return at += (uintptr_t)1 << 30; };
    kdn_gdn_call c;
    memset(&c, 0, sizeof c);
    if (fused) {
        const uintptr_t qkv = next();
        const size_t row = 4 * (size_t)D, tok = row * (size_t)(2 * Hk + Hv), shift = odd ? 4 : 0;
        printf("#buffer\tqkv\t%zu\t%zu\n", (size_t)qkv, shift + tok * (size_t)(T * B));
        c.q = tensor(qkv + shift, D, Hk, T, B);
        c.k = tensor(qkv + shift + row * (size_t)Hk, D, Hk, T, B);
        c.v = tensor(qkv + shift + 2 * row * (size_t)Hk, D, Hv, T, B);
        kdn_tensor *qkv_views[] = {&c.q, &c.k, &c.v};
        for (kdn_tensor *t : qkv_views) t->nb[2] = tok, t->nb[3] = tok * (size_t)T;
    } else {
        c.q = tensor(next(), D, Hk, T, B);
        c.k = tensor(next(), D, Hk, T, B);
        c.v = tensor(next(), D, Hv, T, B);
    }
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
    const char *names[] = {"q", "k", "v", "g", "beta", "state"};
    const kdn_tensor *ins[] = {&c.q, &c.k, &c.v, &c.g, &c.beta, &c.state};
    for (int i = 0; i < 6 && st == KDN_OK; i++) {
        const kdn_tensor *t = ins[i];
        if (!fused || i > 2) printf("#buffer\t%s\t%zu\t%zu\n", names[i], (size_t)t->data, t->nb[3] * (size_t)t->ne[3]);
        printf("#view\t%s\t%zu\t%zu %zu %zu\n", names[i], (size_t)t->data, t->nb[1], t->nb[2], t->nb[3]);
    }
    if (st == KDN_OK)
        printf("#buffer\tdst\t%zu\t%zu\n#buffer\tworkspace\t%zu\t%zu\n", (size_t)c.dst,
               4 * (size_t)(D * Hv * T * B + K * D * D * Hv * B), (size_t)workspace, ws);
    if (st == KDN_OK) st = kdn_gated_delta_net(&c, (void *)workspace, ws);
    if (st != KDN_OK) {
        fprintf(stderr, "launches: %s\n", kdn_status_message(st));
        return 1;
    }
    return 0;
}

// fusion_check: the graph shape llama.cpp builds for a Gated Delta-Net layer's recurrent cache -- GATED_DELTA_NET,
// then a ggml_cpy of its snapshot tail into a view of the cache -- run on a GPU backend and on ggml's CPU backend.
// ggml-cuda fuses that pair (ggml_cuda_try_gdn_cache_fusion: the kernel writes the snapshots straight into the
// cache); with ggml-kdn.patch the fused call goes to libkdn, which writes the snapshots into the cache view
// (state_dst). test-backend-ops never builds this pair (its op is a graph output, which is never fused), so this
// program checks that path: the cache slots and the outputs must match the CPU backend by ggml's NMSE bound
// (1e-7), every cache byte outside the written slots must keep its sentinel, and NaN fails. One more case sets an
// op parameter besides K (as forks of ggml add their own): the patch must not hand such a call to libkdn, whose
// meaning of it would be a guess; where libkdn runs the other cases (its "runs in libkdn" line was logged), the
// log must say "libkdn not handled" for it, and its results must still match the CPU backend's (ggml's kernels,
// which ignore the parameter, ran it).
//
//   c++ -std=c++17 -O2 fusion_check.cpp -I<ggml>/include -L<libdir> -lggml -lggml-base -o fusion_check
//   ./fusion_check [BACKEND]        (default CUDA0; ROCm0 on HIP).  Exit 0: every case passed, 1: one failed,
//                                    77: no such backend.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Case {
    int H, S, T, n_seqs, K;
    int32_t extra_param; // non-zero: set as op parameter 1 (a parameter the op's form does not have)
};

// ggml's log, kept to read what the patch said (and passed on to stderr).
std::string g_log;
bool        g_kdn_ran = false;

void keep_log(ggml_log_level, const char * text, void *) {
    g_log += text;
    if (strstr(text, "runs in libkdn")) g_kdn_ran = true;
    fputs(text, stderr);
}

// Slot s of the cache sits at s * slot_floats; one spare sequence row per slot makes the slot stride differ
// from the size of the copied slot, so a copy that ignores the stride shows.
struct Layout {
    int64_t D, slot_floats, n_slots, n_written;
    explicit Layout(const Case & c)
        : D((int64_t) c.S * c.S * c.H), slot_floats(D * (c.n_seqs + 1)), n_slots(c.K + 1),
          n_written(c.T < c.K ? c.T : c.K) {}
};

const float kSentinel = -12345.0f;

struct Inputs {
    std::vector<float> q, k, v, g, beta, state;
};

void fill(std::vector<float> & x, size_t n, std::mt19937 & rng, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    x.resize(n);
    for (float & e : x) e = u(rng);
}

// q and k rows L2-normalised, as the models feed the op (test-backend-ops does the same).
void normalise_rows(std::vector<float> & x, int S) {
    for (size_t r = 0; r < x.size() / S; ++r) {
        double s = 0;
        for (int i = 0; i < S; ++i) s += (double) x[r * S + i] * x[r * S + i];
        const float inv = (float) (1.0 / std::sqrt(s + 1e-12));
        for (int i = 0; i < S; ++i) x[r * S + i] *= inv;
    }
}

Inputs make_inputs(const Case & c, unsigned seed) {
    std::mt19937 rng(seed);
    const size_t tok = (size_t) c.T * c.n_seqs;
    Inputs in;
    fill(in.q, tok * c.H * c.S, rng, -1, 1);
    fill(in.k, tok * c.H * c.S, rng, -1, 1);
    normalise_rows(in.q, c.S);
    normalise_rows(in.k, c.S);
    fill(in.v, tok * c.H * c.S, rng, -0.3f, 5.0f);
    fill(in.g, tok * c.H, rng, -20.0f, -1e-4f);
    fill(in.beta, tok * c.H, rng, 0, 1);
    fill(in.state, (size_t) c.S * c.S * c.H * c.n_seqs, rng, -1, 1);
    return in;
}

struct Result {
    std::vector<float> out, cache;
};

// Builds gdn -> cpy(tail view -> cache view) and gdn outputs -> cpy(out), runs it on `backend`.
Result run(ggml_backend_t backend, const Case & c, const Inputs & in) {
    const Layout L(c);
    ggml_init_params params = { 64 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(params);

    ggml_tensor * q     = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c.S, c.H, c.T, c.n_seqs);
    ggml_tensor * k     = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c.S, c.H, c.T, c.n_seqs);
    ggml_tensor * v     = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c.S, c.H, c.T, c.n_seqs);
    ggml_tensor * g     = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, c.H, c.T, c.n_seqs);
    ggml_tensor * beta  = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, c.H, c.T, c.n_seqs);
    ggml_tensor * state = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, c.S, c.S, c.H, c.n_seqs);
    ggml_tensor * cache = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, L.slot_floats * L.n_slots);
    ggml_tensor * out   = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t) c.S * c.H * c.T * c.n_seqs);

    ggml_tensor * gdn = ggml_gated_delta_net(ctx, q, k, v, g, beta, state, c.K);
    gdn->op_params[1] = c.extra_param;
    const size_t  fl  = sizeof(float);
    const size_t  tail_off = (size_t) c.S * c.H * c.T * c.n_seqs * fl;
    // [D, n_seqs, n_written]: the snapshot tail, contiguous, and the cache slots it goes to
    ggml_tensor * tail = ggml_view_3d(ctx, gdn, L.D, c.n_seqs, L.n_written, L.D * fl, L.D * c.n_seqs * fl, tail_off);
    ggml_tensor * slots = ggml_view_3d(ctx, cache, L.D, c.n_seqs, L.n_written, L.D * fl, L.slot_floats * fl, 0);
    ggml_tensor * outs  = ggml_view_1d(ctx, gdn, ggml_nelements(out), 0);

    ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, ggml_cpy(ctx, tail, slots)); // first node after the op: the fusable copy
    ggml_build_forward_expand(gf, ggml_cpy(ctx, outs, out));

    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    ggml_backend_tensor_set(q, in.q.data(), 0, in.q.size() * fl);
    ggml_backend_tensor_set(k, in.k.data(), 0, in.k.size() * fl);
    ggml_backend_tensor_set(v, in.v.data(), 0, in.v.size() * fl);
    ggml_backend_tensor_set(g, in.g.data(), 0, in.g.size() * fl);
    ggml_backend_tensor_set(beta, in.beta.data(), 0, in.beta.size() * fl);
    ggml_backend_tensor_set(state, in.state.data(), 0, in.state.size() * fl);
    std::vector<float> sentinel(ggml_nelements(cache), kSentinel);
    ggml_backend_tensor_set(cache, sentinel.data(), 0, sentinel.size() * fl);

    Result r;
    if (ggml_backend_graph_compute(backend, gf) == GGML_STATUS_SUCCESS) {
        r.out.resize(ggml_nelements(out));
        r.cache.resize(ggml_nelements(cache));
        ggml_backend_tensor_get(out, r.out.data(), 0, r.out.size() * fl);
        ggml_backend_tensor_get(cache, r.cache.data(), 0, r.cache.size() * fl);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return r;
}

// NMSE of `got` against `ref` over the elements `take(i)` selects; NaN anywhere gives NaN.
template <typename Pick>
double nmse(const std::vector<float> & got, const std::vector<float> & ref, Pick take) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        if (!take(i)) continue;
        const double d = (double) got[i] - ref[i];
        err += d * d;
        norm += (double) ref[i] * ref[i];
    }
    return norm > 0 ? err / norm : err;
}

bool check(ggml_backend_t gpu, ggml_backend_t cpu, const Case & c, unsigned seed) {
    const Layout L(c);
    const Inputs in  = make_inputs(c, seed);
    const Result ref = run(cpu, c, in);
    g_log.clear();
    const Result got = run(gpu, c, in);
    printf("H=%-2d S=%-3d T=%-3d n_seqs=%d K=%d (slots written %lld)%s: ", c.H, c.S, c.T, c.n_seqs, c.K,
           (long long) L.n_written, c.extra_param ? ", op parameter 1 set" : "");
    // libkdn active: a call with a parameter it does not know must have gone to ggml's kernel
    const bool declined = !c.extra_param || !g_kdn_ran ||
                          (g_log.find("libkdn not handled") != std::string::npos &&
                           g_log.find("op parameter") != std::string::npos);
    if (got.cache.empty() || ref.cache.empty()) {
        printf("FAIL graph compute failed\n");
        return false;
    }
    // inside a written slot: its first D * n_seqs floats; everything else keeps the sentinel
    auto written = [&](size_t i) {
        return (int64_t) (i / L.slot_floats) < L.n_written && (int64_t) (i % L.slot_floats) < L.D * c.n_seqs;
    };
    int64_t overwritten = 0;
    for (size_t i = 0; i < got.cache.size(); ++i)
        if (!written(i) && !(got.cache[i] == kSentinel)) overwritten++;
    const double e_cache = nmse(got.cache, ref.cache, written);
    const double e_out   = nmse(got.out, ref.out, [](size_t) { return true; });
    const bool   ok      = e_cache <= 1e-7 && e_out <= 1e-7 && overwritten == 0 && declined; // NaN compares false
    printf("%s nmse cache %.2e, outputs %.2e, bytes outside the slots changed %lld%s\n", ok ? "PASS" : "FAIL",
           e_cache, e_out, (long long) overwritten,
           declined ? "" : ", but libkdn ran a call with an op parameter it does not know");
    return ok;
}

} // namespace

int main(int argc, char ** argv) {
    const char * name = argc > 1 ? argv[1] : "CUDA0";
    ggml_log_set(keep_log, nullptr);
    ggml_backend_load_all();
    ggml_backend_t gpu = ggml_backend_init_by_name(name, nullptr);
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!gpu || !cpu) {
        fprintf(stderr, "fusion_check: no backend %s (or no CPU backend)\n", gpu ? "CPU" : name);
        return 77;
    }
    // decode (T = 1), T below K, T above K, a prompt long enough for libkdn's chunked path; then decode with an
    // op parameter the patch does not know (after libkdn's first call, so its "runs in libkdn" line is logged)
    const Case cases[] = {
        { 4, 64, 1, 2, 1, 0 },   { 4, 64, 1, 2, 4, 0 },     { 4, 64, 3, 2, 4, 0 },
        { 8, 32, 16, 2, 4, 0 },  { 4, 128, 200, 2, 1, 0 },  { 4, 64, 1, 2, 1, 1 },
    };
    int failed = 0;
    unsigned seed = 1;
    for (const Case & c : cases) failed += !check(gpu, cpu, c, seed++);
    printf("fusion_check on %s: %d of %d cases failed\n", name, failed, (int) (sizeof cases / sizeof cases[0]));
    ggml_backend_free(gpu);
    ggml_backend_free(cpu);
    return failed ? 1 : 0;
}

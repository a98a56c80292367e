// The decay factor exp(g) of a log-decay g, for every place where a kernel
// multiplies the state by a decay again and again (the recurrent kernel once
// per token, the chunked kernels once per chunk).
//
// Why not expf: a state multiplied by a factor T times carries the sum of the
// factors' rounding errors, and with a weak decay (g near 0, e.g. -1e-4) the
// state remembers all T tokens, so a factor that is off by the same few tenths
// of an ulp each token drifts by T times that: CUDA's expf (2 ulp, off with a
// steady sign near 1) moved the final state of a T = 1000 weak-decay case by
// 1.2e-5 normwise on the H100 (docs/tolerances.md); glibc's nearly correctly
// rounded expf hid it on the CPU build. This function is the same IEEE
// arithmetic on every backend (fmaf, rintf, ldexpf are exact or correctly
// rounded everywhere), so the CPU build checks the very numbers a GPU gets
// (the H100 gives the CPU's decay_factor figures bit for bit).
//
// How: g = k ln 2 + r with k = rint(g / ln 2), |r| <= ln 2 / 2, ln 2 split in
// two (Cody-Waite: k C1 is exact, so r is exact for k = 0 and rounded once
// otherwise); e^r = 1 + r (1 + r Q(r)) with Q a degree-5 fit of
// (e^r - 1 - r) / r^2 (mpmath.chebyfit, 1.4e-9 off, 0.003 ulp of e^r); the
// last step is one fma, rounded once; then scaled by 2^k (exact).
// Error against e^g, every float g with 2^-40 <= |g| <= 104 tried: at most
// 0.531 ulp for |g| <= 1/16 (where a decay is weak enough to compound; mean
// error ~1e-6 ulp), 0.706 for |g| <= ln 2 / 2, 0.874 elsewhere. Phase 1's
// decay_factor row (phases/phase1_elementwise.c) holds every build to it.
// |g| > 256 is clamped (e^-256 is 0, e^256 infinite in float), which also keeps
// k an int; NaN stays NaN.
//
// Cost: gfx906 17 VALU instructions where hipcc's expf took 13 (v_exp_f32 is
// not correctly rounded either); H100 within the noise of expf at T <= 64
// (tools/gpu/ab.sh against an expf build: results/h100-ab-decay-*.tsv).
#pragma once
#include "backend/backend.h"

__device__ __forceinline__ float kdn_decay(float g) {
    const float kLog2e = 1.44269504f, kC1 = 0.693359375f, kC2 = -2.12194440e-4f;
    // the comparison is false for NaN, which thus reaches the result
    if (fabsf(g) > 256.0f) g = copysignf(256.0f, g);
    const float k = rintf(g * kLog2e);
    const float r = fmaf(-k, kC2, fmaf(-k, kC1, g));
    float q = 1.98910799e-4f;
    q = fmaf(q, r, 1.39337312e-3f);
    q = fmaf(q, r, 8.33331048e-3f);
    q = fmaf(q, r, 4.16664630e-2f);
    q = fmaf(q, r, 1.66666672e-1f);
    q = fmaf(q, r, 0.5f);
    return ldexpf(fmaf(r, fmaf(r, q, 1.0f), 1.0f), (int)k);
}

// A log-decay as the chunked kernels take it: g below -kKdnLogDecayFloor
// (-inf, -FLT_MAX, -1e8 ...) becomes -kKdnLogDecayFloor. Exact for the
// result: every decay factor over a span that holds such a token, e^(sum of
// the span's g <= 0), is 0 in float either way (e^-104 already is), so g =
// -inf stays a reset, as exp(-inf) = 0 is in the recurrence. What it buys:
// a chunk's cumulative sums stay within 64 x 2^16 = 2^22 in magnitude, where
// summing float g in double is exact to 2^-31 and no sum is infinite, so
// the differences the kernels take (gamma_i - gamma_j, in double) are those
// of the span's own g whatever came before. NaN stays NaN (the comparison is
// false for it); +inf and positive g pass unchanged.
static const float kKdnLogDecayFloor = 65536.0f;

__device__ __forceinline__ float kdn_log_decay_floored(float g) {
    return g < -kKdnLogDecayFloor ? -kKdnLogDecayFloor : g;
}

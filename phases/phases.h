/* One table of tests per phase of the ladder, each defined by its file
 * (phase1_tests in phase1_elementwise.c, ...; the phase8_*_tests in
 * phase8_*.c). */
#ifndef PHASES_H
#define PHASES_H

#include "shape.h"

extern const TestList phase1_tests; /* element-wise */
extern const TestList phase2_tests; /* triangular, incl. the solve */
extern const TestList phase3_tests; /* GEMMs */
extern const TestList phase4_tests; /* decay mask */
extern const TestList phase5_tests; /* attention matrix */
extern const TestList phase6_tests; /* intra-chunk */
extern const TestList phase7_tests; /* state interaction */
extern const TestList phase8_tests; /* full multi-chunk Delta-Net */
extern const TestList phase8_gdn_tests; /* the library's entry point (phase 8 too) */
extern const TestList phase8_golden_tests; /* conventions pinned by hand (phase 8 too) */
extern const TestList phase8_paths_tests; /* scalar loads, T = 0, refusals (phase 8 too) */
extern const TestList phase8_numerics_tests; /* non-finite inputs, decay range, ggml draws, limits (phase 8 too) */
/* All of them in ladder order, with the --set keys of Shape, as the
 * harness takes them (ladder.c). */
const Suite *ladder_suite(void);
/* The largest D_k --set and --load take: the widest layer kernel's (kdn.h's
 * KdnLimits); a row whose kernels take less skips the shape, saying so
 * (phases/layer_variants.c). */
int widest_D_k(void);

/* Tolerance classes; docs/tolerances.md gives the error analysis.
 * U is fp32's unit roundoff 2^-24. */
#define FP32_U 5.9604644775390625e-8
#define TOL_EXACT {0.0, 0.0, 0.0}
/* one rounding of an exactly representable operation */
#define TOL_ARITH {0.0, 1e-6, 1e-6}
/* a libm-class transcendental, fast GPU variants included */
#define TOL_TRANSC {1e-6, 1e-5, 1e-5}
/* a recursive sum of K terms whose magnitudes add up to at most S:
 * |error| <= K*U*S (Higham's gamma_K bound, first order) */
#define TOL_ACCUM(K, S) {(K) * FP32_U * (S), 1e-6, 0.0}
/* chains of such sums: a chunk's intra and state steps (phases 6-7) and
 * whole layers of any length (phase 8); docs/tolerances.md derives it */
#define TOL_CHUNK {2e-5, 1e-4, 1e-5}

#endif

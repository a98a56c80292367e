/* Deterministic inputs: splitmix64, seeded per test from --seed and the
 * test's name, so a test draws the same numbers whatever else runs. */
#include "internal.h"

#include <math.h>

uint64_t rng_next(Ctx *c) {
    uint64_t z = (c->rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double rng_uniform(Ctx *c) { return (double)(rng_next(c) >> 11) * (1.0 / 9007199254740992.0); }

/* Box-Muller; one value per call keeps the stream position obvious. */
double rng_normal(Ctx *c) {
    double u1 = rng_uniform(c), u2 = rng_uniform(c);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

void fill_uniform(Ctx *c, float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * rng_uniform(c));
}

void fill_normal(Ctx *c, float *x, size_t n, double mean, double sd) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(mean + sd * rng_normal(c));
}

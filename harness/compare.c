/* Element-wise and normwise comparison against a double-precision reference. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* The scale an element's absolute bound is measured in: the reference's RMS
 * over its finite elements, never below 1 (the tolerance classes were derived
 * for values of magnitude up to 1, docs/tolerances.md). */
static double element_scale(const double *ref, size_t n) {
    double sum = 0.0;
    size_t finite = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(ref[i])) sum += ref[i] * ref[i], finite++;
    double rms = finite ? sqrt(sum / (double)finite) : 0.0;
    return rms > 1.0 ? rms : 1.0;
}

/* ||got - ref|| / ||ref|| over finite pairs: 0 when both norms are 0,
 * infinite when only the reference's is. */
static double normwise(double diff2, double ref2) {
    if (ref2 > 0.0) return sqrt(diff2 / ref2);
    return diff2 > 0.0 ? INFINITY : 0.0;
}

Comparison compare_arrays(const float *got, const double *ref, size_t n, Tol tol) {
    Comparison r;
    memset(&r, 0, sizeof r);
    r.scale = element_scale(ref, n);
    double atol = tol.atol * r.scale, diff2 = 0.0, ref2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i];
        bool bad;
        if (!isfinite(g)) {
            if (r.n_nonfinite++ == 0) r.first_nonfinite = i;
            bad = true;
        } else {
            double d = fabs(g - ref[i]);
            if (d > r.max_diff) {
                r.max_diff = d;
                r.worst = i;
            }
            if (isfinite(ref[i])) diff2 += d * d, ref2 += ref[i] * ref[i];
            /* A NaN reference also fails: !(d <= bound) */
            bad = !(d <= atol + tol.rtol * fabs(ref[i]));
        }
        if (bad) {
            if (r.n_bad < MAX_REPORTED) r.first_bad[r.n_bad] = i;
            r.n_bad++;
        }
    }
    r.nrel = normwise(diff2, ref2);
    r.nmse = r.nrel * r.nrel;
    r.nrel_bad = tol.nrel > 0.0 && !(r.nrel <= tol.nrel);
    return r;
}

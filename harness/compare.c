/* Element-wise comparison against a double-precision reference. */
#include "internal.h"

#include <math.h>
#include <string.h>

Comparison compare_arrays(const float *got, const double *ref, size_t n, Tol tol) {
    Comparison r;
    memset(&r, 0, sizeof r);
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
            /* A NaN reference also fails: !(d <= bound) */
            bad = !(d <= tol.atol + tol.rtol * fabs(ref[i]));
        }
        if (bad) {
            if (r.n_bad < MAX_REPORTED) r.first_bad[r.n_bad] = i;
            r.n_bad++;
        }
    }
    return r;
}

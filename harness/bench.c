/* --bench: timing of the device work a test hands to bench_work (docs/bench.md). */
#include "internal.h"

#include "../kernels/backend/runtime.h" /* the device runtime: buffers, sync, timing (kdn_*: the library's prefix) */

#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 1000
#define TIME_BUDGET_MS 3000.0 /* per label: stop early past it, after at least 3 runs */

/* fp32 vector peak (no tensor/matrix cores) and memory bandwidth; sources
 * in docs/bench.md. */
typedef struct {
    const char *match; /* substring of the device name or target */
    double tflops, gbytes_s;
} Peak;

static const Peak peaks[] = {
    {"gfx906", 13.4, 1024.0},         /* AMD Instinct MI50 */
    {"H100 PCIe", 51.2, 2039.0},
    {"H100 NVL", 60.0, 3900.0},
    {"H100", 66.9, 3350.0},           /* H100 SXM5 80GB HBM3 */
    {"H200", 66.9, 4800.0},
};

static const Peak *device_peak(void) {
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++)
        if (strstr(kdn_device_name(), peaks[i].match) || strstr(kdn_target(), peaks[i].match)) return &peaks[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* b's label: `label`, or "label#k" for its k-th timing in this test. */
static void name_timing(const Ctx *c, BenchResult *b, const char *label) {
    int seen = 1;
    for (const BenchResult *p = c->bench; p < b; p++) {
        size_t n = strlen(label);
        seen += strncmp(p->label, label, n) == 0 && (p->label[n] == 0 || p->label[n] == '#');
    }
    if (seen == 1)
        snprintf(b->label, sizeof b->label, "%s", label);
    else
        snprintf(b->label, sizeof b->label, "%s#%d", label, seen);
}

void bench_work(Ctx *c, const char *label, void (*work)(void *arg), void *arg, double bytes, double flops) {
    long before = kdn_launch_count();
    work(arg); /* the run the test verifies */
    if (c->bench_reps == 0 || c->n_bench == MAX_BENCH) return;
    long launches = kdn_launch_count() - before;
    const char *err = kdn_sync();
    if (err) {
        test_fail(c, "runtime error: %s", err);
        return;
    }
    static double ms[MAX_RUNS];
    int n = 0, reps = c->bench_reps < MAX_RUNS ? c->bench_reps : MAX_RUNS;
    double total = 0.0;
    work(arg); /* warm-up */
    while (n < reps && (n < 3 || total < TIME_BUDGET_MS)) {
        kdn_flush_cache();
        total += ms[n++] = kdn_time_ms(work, arg);
    }
    if ((err = kdn_sync()) != NULL) {
        test_fail(c, "runtime error while timing %s: %s", label, err);
        return;
    }
    qsort(ms, (size_t)n, sizeof ms[0], cmp_double);
    BenchResult *b = &c->bench[c->n_bench++];
    name_timing(c, b, label);
    b->median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    b->min_ms = ms[0];
    b->bytes = bytes;
    b->flops = flops;
    b->launches = launches;
    b->runs = n;
}

void bench_print_method(FILE *out, int reps) {
    const Peak *p = device_peak();
    fprintf(out, "bench: median and min of up to %d runs per variant (fewer once %.0f s are spent), ", reps,
            TIME_BUDGET_MS / 1e3);
    if (is_cpu_backend()) {
        fprintf(out, "host clock, no cache flush; CPU executor: emulation, not performance\n");
        return;
    }
    fprintf(out, "GPU events; last-level cache flushed before each run (%zu MB written); ", kdn_flush_bytes() >> 20);
    if (p)
        fprintf(out, "peak %.1f TFLOP/s fp32, %.0f GB/s\n", p->tflops, p->gbytes_s);
    else
        fprintf(out, "peak unknown for %s\n", kdn_device_name());
}

/* A table under the test's line: one row per label, the speed-up of each
 * against the first label (its median time over theirs: "x3.0" reads "three
 * times faster than the first"). */
void bench_print(FILE *out, const BenchResult *bench, int n) {
    if (n == 0) return;
    const Peak *p = is_cpu_backend() ? NULL : device_peak();
    fprintf(out, "       %-13s %12s %12s %9s %10s", "bench", "median us", "min us", "GB/s", "GFLOP/s");
    if (p) fprintf(out, " %6s %6s", "%bw", "%fp32");
    fprintf(out, " %9s %5s  speed-up vs %s%s\n", "launches", "runs", bench[0].label,
            is_cpu_backend() ? "  (CPU executor: emulation, not performance)" : "");
    for (int i = 0; i < n; i++) {
        const BenchResult *b = &bench[i];
        double s = b->median_ms * 1e-3;
        double gbs = b->bytes / s * 1e-9, gflops = b->flops / s * 1e-9;
        fprintf(out, "       %-13s %12.1f %12.1f %9.1f %10.1f", b->label, b->median_ms * 1e3, b->min_ms * 1e3, gbs,
                gflops);
        if (p) fprintf(out, " %6.1f %6.1f", 100.0 * gbs / p->gbytes_s, 100.0 * gflops / (p->tflops * 1e3));
        fprintf(out, " %9ld %5d  x%.2f\n", b->launches, b->runs, bench[0].median_ms / b->median_ms);
    }
}

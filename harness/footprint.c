/* What a test needs before it runs (harness.h's Footprint): the estimate's
 * building blocks, the machine's limits, the refusal, and the check of the
 * estimate against the bytes the test really allocated. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "../kernels/kdn.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void fp_host_f(Footprint *f, size_t n) { f->host += 4.0 * (double)n; }
void fp_host_d(Footprint *f, size_t n) { f->host += 8.0 * (double)n; }

void fp_temp(Footprint *f, double bytes) {
    if (bytes > f->host_temp) f->host_temp = bytes;
}

/* dev_alloc: guard | n floats | guard on the device, and the same bytes on
 * the host for a moment (the upload image) */
void fp_dev(Footprint *f, size_t n) {
    double bytes = 4.0 * ((double)n + 2 * GUARD_FLOATS);
    f->dev += bytes;
    fp_temp(f, bytes);
}

void fp_compare(Footprint *f, size_t n) { fp_temp(f, 4.0 * (double)n); }

double footprint_host(const Footprint *f) { return f->host + f->host_temp; }

/* Seconds from arithmetic, at rates measured on the CPU build's ladder
 * (docs/ci.md): the double-precision reference on one host core, the
 * kernels on the SIMT executor (the slowest kernel per flop, the recurrent
 * one) or on a GPU (far below peak: small launches), plus a fixed cost. */
#define REF_FLOPS_PER_S 1.0e9
#define CPU_KERNEL_FLOPS_PER_S 2.0e7
#define GPU_KERNEL_FLOPS_PER_S 1.0e11
double footprint_seconds(const Footprint *f) {
    double kernel_rate = is_cpu_backend() ? CPU_KERNEL_FLOPS_PER_S : GPU_KERNEL_FLOPS_PER_S;
    return 0.01 + f->ref_flops / REF_FLOPS_PER_S + f->dev_flops / kernel_rate;
}

/* The host memory this process may still take: physical memory, and the
 * address-space and data limits (prlimit, ulimit -v, ulimit -d) less what it
 * already maps. Names the tightest in *what. */
static double host_limit(const char **what) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double limit = pages > 0 && page > 0 ? (double)pages * (double)page : 1e300;
    *what = "physical memory";
    double mapped = 0.0;
    FILE *statm = fopen("/proc/self/statm", "r");
    unsigned long vm_pages;
    if (statm && fscanf(statm, "%lu", &vm_pages) == 1 && page > 0) mapped = (double)vm_pages * (double)page;
    if (statm) fclose(statm);
    static const struct {
        int resource;
        const char *what;
    } limits[] = {{RLIMIT_AS, "ulimit -v less what is mapped"}, {RLIMIT_DATA, "ulimit -d less what is mapped"}};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit rl;
        if (getrlimit(limits[i].resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) continue;
        double left = (double)rl.rlim_cur - mapped;
        if (left < limit) limit = left, *what = limits[i].what;
    }
    return limit;
}

/* 0: the test fits; 1: it does not, and why says by how much (short enough
 * for the log's shape column). */
int footprint_refusal(const Footprint *f, const Options *o, char *why, size_t size) {
    const char *host_what;
    double host = footprint_host(f), dev = f->dev, limit = host_limit(&host_what);
    double dev_limit = (double)kdn_device_memory(); /* 0: device memory is host memory */
    bool one_memory = dev_limit == 0.0;
    if (one_memory) host += dev, dev = 0.0;
    const char *host_name = one_memory ? "host+device memory (one on this build)" : "host memory";
    const struct {
        double need, limit;
        const char *what, *limit_what;
    } checks[] = {
        {host, o->max_mem, host_name, "--max-mem"},
        {host, limit, host_name, host_what},
        {dev, o->max_mem, "device memory", "--max-mem"},
        {dev, one_memory ? 1e300 : dev_limit, "device memory", "the device's memory"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].need > checks[i].limit)
            return snprintf(why, size, "refused: %s needs %.1f MB, over %s %.1f MB", checks[i].what, checks[i].need / 1e6,
                            checks[i].limit_what, checks[i].limit / 1e6), 1;
    double secs = footprint_seconds(f);
    if (secs > o->max_seconds)
        return snprintf(why, size, "refused: estimated %.0f s (%.2g reference, %.2g kernel flops), over --max-seconds %g",
                        secs, f->ref_flops, f->dev_flops, o->max_seconds), 1;
    return 0;
}

/* The estimate against what the test allocated through the context: below
 * it, or far above it on a test that ran to its end, is a harness error. */
#define FOOTPRINT_SLACK (4.0 * 1024 * 1024)
void footprint_check(Ctx *c, const Footprint *f) {
    const struct {
        const char *what;
        double estimate, measured;
    } sides[] = {{"host", footprint_host(f), c->host_peak}, {"device", f->dev, c->dev_peak}};
    bool ran_through = !c->failed && !c->skipped;
    for (size_t i = 0; i < 2; i++) {
        double e = sides[i].estimate, m = sides[i].measured;
        if (m > e)
            test_error(c, "harness: the %s memory estimate, %.0f bytes, is below the %.0f bytes the test allocated",
                       sides[i].what, e, m);
        else if (ran_through && e > FOOTPRINT_OVER * m + FOOTPRINT_SLACK)
            test_error(c, "harness: the %s memory estimate, %.0f bytes, is more than %.2g x the %.0f bytes the test allocated",
                       sides[i].what, e, FOOTPRINT_OVER, m);
    }
}

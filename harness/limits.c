/* The limits a test runs under (docs/ci.md): its memory, checked where it is
 * taken (every host array and device buffer of a test goes through
 * context.c), and its time, estimated before it runs from the least
 * arithmetic its shape does. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "../kernels/backend/runtime.h" /* the device runtime: buffers, sync, timing (kdn_*: the library's prefix) */

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int is_cpu_backend(void) { return strcmp(kdn_backend(), "cpu") == 0; }

void format_bytes(double bytes, char *out, size_t size) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 10240.0) {
        snprintf(out, size, "%.0f bytes", bytes);
        return;
    }
    int u = 0;
    for (bytes /= 1024.0; bytes >= 10240.0 && u < 3; u++) bytes /= 1024.0;
    snprintf(out, size, "%.1f %s", bytes, units[u]);
}

void format_seconds(double s, char *out, size_t size) {
    if (s < 1e-3)
        snprintf(out, size, "%.3g us", s * 1e6);
    else if (s < 1.0)
        snprintf(out, size, "%.3g ms", s * 1e3);
    else if (s < 100.0)
        snprintf(out, size, "%.3g s", s);
    else
        snprintf(out, size, "%.0f s", s);
}

/* max_mem 0: the default, DEFAULT_MAX_MEM or the device's memory where that
 * is larger, so that a GPU with the memory runs every test; the machine's
 * memory (physical, ulimits, the device's) stays a limit either way. */
MemoryLimits memory_limits(double max_mem) {
    const double device = (double)kdn_device_memory();
    if (max_mem <= 0.0) max_mem = device > DEFAULT_MAX_MEM ? device : DEFAULT_MAX_MEM;
    MemoryLimits m = {max_mem, 1e300, "physical memory", device};
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m.host_room = (double)pages * (double)page;
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
        if (left < m.host_room) m.host_room = left, m.host_what = limits[i].what;
    }
    return m;
}

int memory_refusal(const MemoryLimits *m, bool device, double held, double more, const char *what, char *why,
                   size_t size) {
    bool one_memory = m->dev_room == 0.0; /* device buffers are host memory */
    bool dev_pool = device && !one_memory;
    double limit = m->max_mem, machine = dev_pool ? m->dev_room : m->host_room;
    const char *limit_what = "--max-mem";
    if (machine < limit) limit = machine, limit_what = dev_pool ? "the device's memory" : m->host_what;
    if (held + more <= limit) return 0;
    char need[32], add[32], cap[32];
    format_bytes(held + more, need, sizeof need), format_bytes(more, add, sizeof add), format_bytes(limit, cap, sizeof cap);
    const char *pool = one_memory ? "host+device memory (one on this build)" : device ? "device memory" : "host memory";
    snprintf(why, size, "refused: %s needs %s (%s of %s), over %s %s", pool, need, add, what, limit_what, cap);
    return 1;
}

/* Seconds from arithmetic at rates set high, so the estimate is a floor: a
 * refused test could not have finished in time, a test that runs may take
 * longer. The double-precision reference (4 GFLOP/s a core, over up to 16
 * cores: phases spread heads over threads); the kernels on the SIMT executor
 * (1e8 flop/s; docs/ci.md: on the chunked kernels the executor runs faster,
 * so there the estimate is not a floor) or on a GPU (1e12 flop/s). */
#define REF_FLOPS_PER_CORE 4.0e9
#define REF_MAX_CORES 16
#define CPU_KERNEL_FLOPS_PER_S 1.0e8
#define GPU_KERNEL_FLOPS_PER_S 1.0e12
double least_seconds(const Work *w) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double ref_rate = REF_FLOPS_PER_CORE * (double)(cores < 1 ? 1 : cores > REF_MAX_CORES ? REF_MAX_CORES : cores);
    double kernel_rate = is_cpu_backend() ? CPU_KERNEL_FLOPS_PER_S : GPU_KERNEL_FLOPS_PER_S;
    return w->ref_flops / ref_rate + w->kernel_flops / kernel_rate;
}

int time_refusal(const Work *w, double max_seconds, char *why, size_t size) {
    double secs = least_seconds(w);
    if (secs <= max_seconds) return 0;
    char est[32], cap[32];
    format_seconds(secs, est, sizeof est), format_seconds(max_seconds, cap, sizeof cap);
    snprintf(why, size, "refused: estimated at least %s (%.2g reference, %.2g kernel flops), over --max-seconds %s", est,
             w->ref_flops, w->kernel_flops, cap);
    return 1;
}

void time_stop_refusal(double max_seconds, char *why, size_t size) {
    char cap[32];
    format_seconds(max_seconds, cap, sizeof cap);
    snprintf(why, size, "refused: a kernel launch ran past --max-seconds %s of CPU time and was stopped there", cap);
}

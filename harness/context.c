/* A test's context: its memory, guarded device buffers and comparisons
 * (its verdict: verdict.c). */
#include "internal.h"
#include "tensors.h"

#include "../kernels/backend/runtime.h" /* the device runtime: buffers, sync, timing (kdn_*: the library's prefix) */

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void ctx_begin(Ctx *c, const Test *t, uint64_t seed, bool verbose, int bench_reps, double max_mem) {
    memset(c, 0, sizeof *c);
    c->limits = memory_limits(max_mem);
    c->test_name = t->name;
    c->rng_state = seed ^ hash_name(registry_former_name(t->name)); /* a rename keeps the inputs */
    c->verbose = verbose;
    c->bench_reps = bench_reps;
}

void ctx_end(Ctx *c) {
    for (int i = 0; i < c->n_bufs && !c->heap_damaged; i++) kdn_free(c->bufs[i].base);
    for (int i = 0; i < c->n_host && !c->heap_damaged; i++) free(c->host[i]);
    c->n_bufs = c->n_host = 0;
    if (!c->heap_damaged) free(c->dumped);
    c->dumped = NULL;
    c->n_dumped = c->dumped_cap = 0;
}


void test_abandon(Ctx *c, int status) {
    if (c->abandon) longjmp(*c->abandon, 1);
    fprintf(stderr, "harness: %s\n", c->msg);
    exit(status);
}

void load_floats(Ctx *c, const char *tensor, float *dst, int ndim, const size_t *shape) {
    char err[4400];
    if (tensor_read(c->test_name, tensor, dst, ndim, shape, err, sizeof err) == 0) return;
    test_error(c, "%s", err);
    test_abandon(c, 2);
}

/* A test whose memory would pass a limit, or that the system refuses
 * memory, is refused with the numbers and left at once, so nothing is
 * launched on a missing buffer. */
static _Noreturn void refuse_test(Ctx *c) {
    c->refused = c->failed = true;
    test_abandon(c, 3);
}

/* n elements of `size` bytes, or SIZE_MAX when that overflows */
static size_t bytes_of(size_t n, size_t size) { return n > SIZE_MAX / size ? SIZE_MAX : n * size; }

/* Refuses the test unless `bytes` more of host (device: false) or device
 * memory fit the limits, the test's arrays and buffers counted. */
static void claim(Ctx *c, bool device, size_t bytes, const char *what) {
    bool one_memory = c->limits.dev_room == 0.0;
    double held = device && !one_memory ? c->dev_now : c->host_now + (one_memory ? c->dev_now : 0.0);
    double more = bytes == SIZE_MAX ? 1e300 : (double)bytes;
    if (memory_refusal(&c->limits, device, held, more, what, c->msg, sizeof c->msg)) refuse_test(c);
}

/* What the system would not give after the limits allowed it. */
static _Noreturn void refused_by_system(Ctx *c, const char *pool, size_t bytes, const char *what) {
    char size[32];
    format_bytes((double)bytes, size, sizeof size);
    snprintf(c->msg, sizeof c->msg, "refused: the system gave no %s for %s (%s)", pool, what, size);
    refuse_test(c);
}

/* Host memory held for a moment on top of the test's arrays (--verbose's peak). */
static void note_temp(Ctx *c, size_t bytes) {
    if (c->host_now + (double)bytes > c->host_peak) c->host_peak = c->host_now + (double)bytes;
}

static void *host_alloc(Ctx *c, size_t bytes) {
    if (c->n_host == MAX_HOST) {
        fprintf(stderr, "harness: more than %d host arrays in one test\n", MAX_HOST);
        exit(2);
    }
    claim(c, false, bytes, "a host array");
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) refused_by_system(c, "host memory", bytes, "a host array");
    c->host_now += (double)bytes;
    note_temp(c, 0);
    c->host_bytes[c->n_host] = bytes;
    return c->host[c->n_host++] = p;
}

float *host_f(Ctx *c, size_t n) { return host_alloc(c, bytes_of(n, sizeof(float))); }
double *host_d(Ctx *c, size_t n) { return host_alloc(c, bytes_of(n, sizeof(double))); }

void guard_fill(uint32_t *g, size_t n) {
    for (size_t i = 0; i < n; i++) g[i] = GUARD_WORD;
}

long guard_first_damage(const uint32_t *g, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (g[i] != GUARD_WORD) return (long)i;
    return -1;
}

/* Allocates guard | n floats | guard and fills all of it with `fill`
 * (the data part with `data`, or NaN when data is NULL). */
static float *dev_alloc(Ctx *c, const char *name, const float *data, size_t n) {
    if (c->n_bufs == MAX_BUFS) {
        fprintf(stderr, "harness: more than %d device buffers in one test\n", MAX_BUFS);
        exit(2);
    }
    size_t total = n + 2 * GUARD_FLOATS, bytes = bytes_of(total, sizeof(float));
    char what[64], image_what[96];
    snprintf(what, sizeof what, "buffer '%.40s'", name);
    snprintf(image_what, sizeof image_what, "the upload image of '%.40s'", name);
    claim(c, true, bytes, what);
    float *base = kdn_malloc(bytes);
    if (!base) refused_by_system(c, "device memory", bytes, what);
    DevBuf *b = &c->bufs[c->n_bufs++]; /* held from here: a refusal below frees it */
    snprintf(b->name, sizeof b->name, "%s", name);
    b->base = base;
    b->n = n;
    c->dev_now += (double)bytes;
    if (c->dev_now > c->dev_peak) c->dev_peak = c->dev_now;
    claim(c, false, bytes, image_what);
    uint32_t *image = malloc(bytes); /* the buffer's first contents, guards included */
    if (!image) refused_by_system(c, "host memory", bytes, image_what);
    note_temp(c, bytes);
    guard_fill(image, total);
    float *payload = (float *)(image + GUARD_FLOATS);
    for (size_t i = 0; i < n; i++) payload[i] = data ? data[i] : NAN;
    kdn_upload(base, image, total * sizeof(float));
    free(image);
    return base + GUARD_FLOATS;
}

/* --dump: a test without structured inputs (dump_input) dumps each input buffer, 1-D. */
float *dev_in(Ctx *c, const char *name, const float *host, size_t n) {
    if (!c->inputs_dumped) dump_floats(c, name, host, 1, &n);
    return dev_alloc(c, name, host, n);
}
float *dev_out(Ctx *c, const char *name, size_t n) { return dev_alloc(c, name, NULL, n); }

TestMark test_mark(const Ctx *c) {
    TestMark m = {c->n_bufs, c->n_host};
    return m;
}

void test_release(Ctx *c, TestMark m) {
    while (c->n_bufs > m.bufs) {
        DevBuf *b = &c->bufs[--c->n_bufs];
        if (!c->heap_damaged) kdn_free(b->base);
        c->dev_now -= (double)((b->n + 2 * GUARD_FLOATS) * sizeof(float));
    }
    while (c->n_host > m.host) {
        if (!c->heap_damaged) free(c->host[c->n_host - 1]);
        c->n_host--;
        c->host_now -= (double)c->host_bytes[c->n_host];
    }
}

static void check_guard(Ctx *c, const DevBuf *b, const float *dev, const char *where) {
    uint32_t g[GUARD_FLOATS];
    kdn_download(g, dev, sizeof g);
    long bad = guard_first_damage(g, GUARD_FLOATS);
    if (bad < 0) return;
    /* the guard's outer word hit: the store may have gone on past it */
    const uint32_t *outer = dev == b->base ? &g[0] : &g[GUARD_FLOATS - 1];
    c->heap_damaged |= c->limits.dev_room == 0.0 && *outer != GUARD_WORD;
    if (dev == b->base)
        test_fail(c, "out-of-bounds write %s buffer '%s': element %ld", where, b->name, bad - GUARD_FLOATS);
    else
        test_fail(c, "out-of-bounds write %s buffer '%s': element %zu (size %zu)", where, b->name, b->n + (size_t)bad, b->n);
}

int dev_sync(Ctx *c) {
    const char *err = kdn_sync();
    if (err) {
        test_fail(c, "runtime error: %s", err);
        return -1;
    }
    bool was = c->failed;
    for (int i = 0; i < c->n_bufs; i++) {
        DevBuf *b = &c->bufs[i];
        check_guard(c, b, b->base, "before");
        check_guard(c, b, b->base + GUARD_FLOATS + b->n, "past the end of");
    }
    return c->failed && !was ? -1 : 0;
}

void download(Ctx *c, float *host, const float *dev, size_t n) {
    if (kdn_download(host, dev, n * sizeof(float)) != 0) test_fail(c, "download failed");
}

static void report_element(Ctx *c, const char *what, size_t i, int cols, float got, double ref) {
    test_fail(c, "  %s[%zu, %zu] got %.9g expected %.9g", what, i / (size_t)cols, i % (size_t)cols, got, ref);
}

/* Keeps the test's largest max_diff (with its element) and normwise error. */
static void record_comparison(Ctx *c, const char *what, const Comparison *r, int cols) {
    if (!c->compared || r->max_diff > c->max_diff) {
        c->max_diff = r->max_diff;
        snprintf(c->worst, sizeof c->worst, "%.40s[%zu,%zu]", what, r->worst / (size_t)cols, r->worst % (size_t)cols);
    }
    if (!c->compared || r->nrel > c->nrel) c->nrel = r->nrel, c->nmse = r->nmse;
    c->compared = true;
}

int expect_close_host(Ctx *c, const char *what, const float *got, const double *ref, int rows, int cols, Tol tol) {
    size_t n = (size_t)rows * (size_t)cols, shape[2] = {(size_t)rows, (size_t)cols};
    char ref_name[96];
    snprintf(ref_name, sizeof ref_name, "%s ref", what);
    dump_floats(c, what, got, 2, shape);
    dump_doubles(c, ref_name, ref, 2, shape);
    Comparison r = compare_arrays(got, ref, n, tol);
    record_comparison(c, what, &r, cols);
    size_t used = strlen(c->outputs);
    snprintf(c->outputs + used, sizeof c->outputs - used, "%s: max_diff %.3e at [%zu, %zu], nrel %.3e, nmse %.3e, scale %.3g\n",
             what, r.max_diff, r.worst / (size_t)cols, r.worst % (size_t)cols, r.nrel, r.nmse, r.scale);
    if (r.n_nonfinite)
        test_fail(c, "%s: %zu NaN/Inf values, first at [%zu, %zu] (%g)", what, r.n_nonfinite,
                  r.first_nonfinite / (size_t)cols, r.first_nonfinite % (size_t)cols, got[r.first_nonfinite]);
    if (r.n_bad > r.n_nonfinite)
        test_fail(c, "%s: %zu of %zu elements out of tolerance; worst [%zu, %zu] got %.9g expected %.9g (diff %.3e, bound %.3e*%.3g+%.1e*|ref|)",
                  what, r.n_bad, n, r.worst / (size_t)cols, r.worst % (size_t)cols, got[r.worst], ref[r.worst], r.max_diff,
                  tol.atol, r.scale, tol.rtol);
    if (r.nrel_bad)
        test_fail(c, "%s: normwise relative error %.3e above its bound %.1e (nmse %.3e)", what, r.nrel, tol.nrel, r.nmse);
    if (r.n_bad && c->verbose)
        for (size_t k = 0; k < r.n_bad && k < MAX_REPORTED; k++)
            report_element(c, what, r.first_bad[k], cols, got[r.first_bad[k]], ref[r.first_bad[k]]);
    return r.n_bad || r.nrel_bad ? -1 : 0;
}

int expect_close(Ctx *c, const char *what, const float *dev, const double *ref, int rows, int cols, Tol tol) {
    size_t n = (size_t)rows * (size_t)cols, bytes = bytes_of(n, sizeof(float));
    char download_what[96];
    snprintf(download_what, sizeof download_what, "%.60s's download", what);
    claim(c, false, bytes, download_what);
    float *got = malloc(bytes);
    if (!got) refused_by_system(c, "host memory", bytes, download_what);
    note_temp(c, bytes);
    if (kdn_download(got, dev, n * sizeof(float)) != 0) {
        free(got);
        test_fail(c, "%s: download failed", what);
        return -1;
    }
    int rc = expect_close_host(c, what, got, ref, rows, cols, tol);
    free(got);
    return rc;
}

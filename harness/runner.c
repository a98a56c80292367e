/* Runs the selected tests and prints one aligned line per test. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "../kernels/backend/runtime.h" /* the device runtime: buffers, sync, timing (kdn_*: the library's prefix) */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Lines of text, each indented under the test's line. */
static void print_indented(FILE *out, const char *s) {
    fputs("       ", out);
    for (; *s; s++) {
        fputc(*s, out);
        if (*s == '\n' && s[1]) fputs("       ", out);
    }
    if (s[-1] != '\n') fputc('\n', out);
}

/* The memory the test held at most, and its time, under --verbose. */
static void print_memory(FILE *out, const TestResult *r) {
    char host[32], dev[32], secs[32];
    format_bytes(r->host_peak, host, sizeof host), format_bytes(r->dev_peak, dev, sizeof dev);
    format_seconds(r->seconds, secs, sizeof secs);
    fprintf(out, "       memory: host %s, device %s at most; %s\n", host, dev, secs);
}

static void print_result(FILE *out, const TestResult *c, bool verbose) {
    const Test *t = c->test;
    char tol[64];
    /* an input or I/O error is FAIL in the log, named for what it is here */
    fprintf(out, "[%s] phase %d  %-24s %-8s ", c->refused ? "REFUSED" : c->errored ? "ERROR" : result_status(c),
            t->phase, t->name, t->variant);
    if (c->skipped || c->refused || (c->errored && !c->compared)) { /* nothing was compared: the reason alone */
        fprintf(out, "%s\n", c->msg);
        return;
    }
    if (c->compared)
        fprintf(out, "max_diff=%.2e nrel=%.1e nmse=%.1e", c->max_diff, c->nrel, c->nmse);
    else
        fprintf(out, "max_diff=%-8s %-22s", "n/a", "");
    describe_tol(&t->tol, tol, sizeof tol);
    fprintf(out, "  tol=%-22s", tol);
    if (c->shape[0]) fprintf(out, "  %s", c->shape);
    fputc('\n', out);
    if (verbose && c->outputs[0]) print_indented(out, c->outputs);
    if (verbose) print_memory(out, c);
    if (!c->passed && c->msg[0]) print_indented(out, c->msg);
}

/* "test i of n, m:ss so far: name" on a terminal's stderr, rewritten in
 * place and erased before the test's line; never written to a pipe or a
 * file (there each test's line, flushed as it ends, is the progress). */
static bool progress_on;
static double progress_start;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(int i, int n, const char *name) {
    if (!progress_on) return;
    const int s = (int)(now_seconds() - progress_start);
    fprintf(stderr, "\rtest %d of %d, %d:%02d so far: %s\033[K", i, n, s / 60, s % 60, name);
}

static void progress_clear(void) {
    if (progress_on) fputs("\r\033[K", stderr);
}

/* src into dst of `size` bytes, cut short if need be. */
static void copy_text(char *dst, size_t size, const char *src) {
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* A row estimated over --max-seconds, not run: its line, the refusal in
 * the log's shape column (its only text). */
static bool refuse_for_time(const Test *row, const Options *o, FILE *out, TestResult *r) {
    r->test = row;
    r->refused = true;
    copy_text(r->msg, sizeof r->msg, r->shape);
    progress_clear();
    print_result(out, r, o->verbose);
    fflush(out);
    return false;
}

bool run_test(const Test *row, const Options *o, FILE *out, TestResult *r) {
    Test shaped;
    char err[256];
    TestCase *room = malloc(registry_suite()->case_size);
    if (!room) {
        fprintf(stderr, "%s: out of memory\n", registry_suite()->program);
        exit(2);
    }
    apply_set(o, row, &shaped, room, err, sizeof err); /* validated when parsed */
    const Test *t = &shaped;
    static Ctx ctx; /* static: its contents must survive the longjmp of an abandoned test */
    Ctx *c = &ctx;
    jmp_buf abandon;
    double start = now_seconds();
    Work work;
    memset(r, 0, sizeof *r);
    if (registry_least_work(row, t, &work) && time_refusal(&work, o->max_seconds, r->shape, sizeof r->shape)) {
        free(room);
        return refuse_for_time(row, o, out, r);
    }
    const long stopped = kdn_launches_out_of_time();
    kdn_set_launch_time_limit(o->max_seconds); /* the estimate is a floor: the run is held to the limit too */
    ctx_begin(c, t, o->seed, o->verbose, o->bench_reps, o->max_mem);
    c->abandon = &abandon;
    if (setjmp(abandon) == 0) t->run(t, c); /* else: refused for its memory, the refusal recorded */
    c->abandon = NULL;
    /* A leftover error must not leak into the next test. */
    const char *late = kdn_sync();
    if (late) test_fail(c, "runtime error: %s", late);
    if (kdn_launches_out_of_time() > stopped) {
        time_stop_refusal(o->max_seconds, c->msg, sizeof c->msg);
        c->refused = c->failed = true;
    }
    if (!c->failed && !c->compared && !c->skipped) test_fail(c, "test compared nothing");
    c->skipped &= !c->failed;
    ctx_end(c);
    free(room);
    r->test = row;
    r->host_peak = c->host_peak;
    r->dev_peak = c->dev_peak;
    r->passed = !c->failed;
    r->errored = c->errored;
    r->refused = c->refused;
    r->compared = c->compared;
    r->skipped = c->skipped;
    r->max_diff = c->max_diff;
    r->nrel = c->nrel;
    r->nmse = c->nmse;
    memcpy(r->worst, c->worst, sizeof r->worst);
    memcpy(r->outputs, c->outputs, sizeof r->outputs);
    /* a refusal is the log's shape column, its only text */
    copy_text(r->shape, sizeof r->shape, c->refused ? c->msg : c->shape);
    if (o->set_fields && !registry_reshapes(row)) { /* apply_set left it alone */
        size_t used = strlen(r->shape);
        snprintf(r->shape + used, sizeof r->shape - used, "%s(--set does not apply)", used ? " " : "");
    }
    memcpy(r->msg, c->msg, sizeof r->msg);
    memcpy(r->bench, c->bench, sizeof r->bench);
    r->n_bench = c->n_bench;
    r->seconds = now_seconds() - start;
    progress_clear();
    print_result(out, r, o->verbose);
    bench_print(out, r->bench, r->n_bench);
    if (o->bench_reps && r->passed && !r->skipped && r->n_bench == 0)
        fprintf(out, "       bench: none: %s registers no timed work\n", t->name);
    fflush(out);
    return r->passed;
}

int run_selected(const Options *o, FILE *out, TestResult **results, int *n) {
    int passed = 0, failed = 0, skipped = 0, last_phase = 0;
    *results = calloc((size_t)registry_count() + 1, sizeof **results);
    *n = 0;
    if (!*results) {
        fprintf(stderr, "%s: out of memory\n", registry_suite()->program);
        exit(2);
    }
    if (o->bench_reps) bench_print_method(out, o->bench_reps);
    int total = 0;
    for (int i = 0; i < registry_count(); i++) total += test_selected(o, registry_get(i));
    progress_on = isatty(fileno(stderr));
    progress_start = now_seconds();
    for (int i = 0; i < registry_count(); i++) {
        const Test *t = registry_get(i);
        if (!test_selected(o, t)) continue;
        if (t->phase != last_phase) {
            fprintf(out, "== phase %d: %s ==\n", t->phase, registry_suite()->phase_titles[t->phase]);
            last_phase = t->phase;
        }
        fflush(out);
        progress(*n + 1, total, t->name);
        TestResult *r = &(*results)[(*n)++];
        if (!run_test(t, o, out, r))
            failed++;
        else if (r->skipped)
            skipped++;
        else
            passed++;
        reports_progress(*results, *n); /* what finished survives a signal */
    }
    int errors = 0, refused = 0;
    for (int i = 0; i < *n; i++) errors += (*results)[i].errored, refused += (*results)[i].refused;
    if (errors) fprintf(out, "%d of the failures are input or I/O errors, not the kernels'\n", errors);
    if (refused) fprintf(out, "%d of the failures are tests refused for a memory or time limit\n", refused);
    if (skipped)
        fprintf(out, "%d passed, %d failed, %d skipped (--set does not apply)\n", passed, failed, skipped);
    else
        fprintf(out, "%d passed, %d failed\n", passed, failed);
    return failed;
}

/* Result logs (--log) and JUnit reports (--junit); docs/ci.md describes both. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "end_signals.h"

#include "../kernels/backend/runtime.h" /* the device runtime: buffers, sync, timing (kdn_*: the library's prefix) */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The tolerance as printed on a line and in JUnit: "exact", or the element
 * bound and, where the class has one, the normwise bound. */
void describe_tol(const Tol *tol, char *out, size_t size) {
    if (tol->atol == 0.0 && tol->rtol == 0.0 && tol->nrel == 0.0)
        snprintf(out, size, "exact");
    else if (tol->nrel > 0.0)
        snprintf(out, size, "%.1e+%.1e*|ref|,nrel<=%.0e", tol->atol, tol->rtol, tol->nrel);
    else
        snprintf(out, size, "%.1e+%.1e*|ref|", tol->atol, tol->rtol);
}

const char *result_status(const TestResult *r) { return r->skipped ? "SKIP" : r->passed ? "PASS" : "FAIL"; }

/* The commit the binary was built from, "-dirty" if its tracked files
 * differed (the Makefile bakes it in): not the directory it runs in. */
#ifndef BUILD_PROVENANCE
#define BUILD_PROVENANCE "unknown"
#endif
const char *build_commit(void) { return BUILD_PROVENANCE; }

const char *log_magic(void) {
    static char magic[96];
    snprintf(magic, sizeof magic, "# %s log v3", registry_suite()->program);
    return magic;
}

/* The host compiler by name and version (gcc's __VERSION__ is the number alone). */
static const char *host_compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

static void utc_now(char *out, size_t size, const char *fmt) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, size, fmt, &tm);
}

/* A field as one log column: tabs and line breaks would split it. */
static void one_field(const char *s, char *out, size_t size) {
    snprintf(out, size, "%s", s);
    for (char *p = out; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
}

/* The log of results r[0..n) of `total` selected tests; n < total: the run
 * was cut short, and the log says so before its end line. */
static void format_log(FILE *f, const Options *o, const TestResult *r, int n, int total) {
    char date[32];
    utc_now(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ");
    fprintf(f, "%s\n# backend\t%s\n# target\t%s\n# host compiler\t%s\n# commit\t%s\n# device\t%s\n# seed\t%llu\n# date\t%s\n",
            log_magic(), kdn_backend(), kdn_target(), host_compiler(), build_commit(), kdn_device_name(),
            (unsigned long long)o->seed, date);
    fprintf(f, "%s\n", LOG_COLUMNS);
    int rows = 0;
    for (int i = 0; i < n; i++, rows++) {
        const Test *t = r[i].test;
        char diff[32] = "n/a", worst[sizeof r[i].worst] = "n/a", nrel[32] = "n/a", nmse[32] = "n/a",
             nrel_tol[32] = "n/a", shape[sizeof r[i].shape];
        one_field(r[i].shape, shape, sizeof shape);
        if (r[i].compared) {
            snprintf(diff, sizeof diff, "%.6e", r[i].max_diff);
            one_field(r[i].worst, worst, sizeof worst);
            snprintf(nrel, sizeof nrel, "%.6e", r[i].nrel);
            snprintf(nmse, sizeof nmse, "%.6e", r[i].nmse);
        }
        if (t->tol.nrel > 0.0) snprintf(nrel_tol, sizeof nrel_tol, "%.3e", t->tol.nrel);
        fprintf(f, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3e\t%.3e\t%s\t%s\t\t\t\t\n", t->phase, t->name, t->variant, shape,
                diff, worst, nrel, nmse, t->tol.atol, t->tol.rtol, nrel_tol, result_status(&r[i]));
        /* one row per timed variant, keyed by name and "bench:<label>": its
         * times and the bytes and flops of one call (GB/s and GFLOP/s) */
        for (int b = 0; b < r[i].n_bench; b++, rows++) {
            const BenchResult *br = &r[i].bench[b];
            fprintf(f, "%d\t%s\tbench:%s\t%s\tn/a\tn/a\tn/a\tn/a\t0\t0\tn/a\tTIME\t%.3f\t%.3f\t%.6e\t%.6e\n", t->phase,
                    t->name, br->label, shape, br->median_ms * 1e3, br->min_ms * 1e3, br->bytes, br->flops);
        }
    }
    if (n < total) fprintf(f, "%scut short after %d of %d tests\n", LOG_INCOMPLETE, n, total);
    fprintf(f, "%s%d\n", LOG_END, rows);
}

/* A JUnit <failure> (the kernels'); other tests that did not pass are <error>s. */
static bool is_failure(const TestResult *r) { return !r->passed && !r->errored && !r->refused; }

static void xml_escaped(FILE *f, const char *s) {
    for (; *s; s++) switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\n': fputs("&#10;", f); break;
        case '\t': fputs("&#9;", f); break;
        /* other control characters are not allowed in XML 1.0, even escaped */
        default: fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
        }
}

/* <failure>: max_diff, normwise error and tolerance in its message, shape
 * and the test's message in its text; <error> for an input or I/O error and
 * for a test refused before it ran (its message the refusal). */
static void junit_failure(FILE *f, const TestResult *r) {
    char head[256], diff[128] = "n/a", tol[64];
    if (r->compared)
        snprintf(diff, sizeof diff, "%.3e at %s nrel=%.3e nmse=%.3e", r->max_diff, r->worst, r->nrel, r->nmse);
    describe_tol(&r->test->tol, tol, sizeof tol);
    snprintf(head, sizeof head, "max_diff=%s tol=%s", diff, tol);
    const char *element = r->errored || r->refused ? "error" : "failure";
    fprintf(f, "      <%s message=\"", element);
    xml_escaped(f, r->refused ? r->msg : head);
    fputs("\">", f);
    if (r->shape[0] && !r->refused) {
        xml_escaped(f, r->shape);
        fputs("&#10;", f);
    }
    xml_escaped(f, r->msg);
    fprintf(f, "</%s>\n", element);
}

/* The JUnit report of r[0..n) of `total` selected tests; n < total adds a
 * suite "incomplete" with one error saying how many tests did not run. */
static void format_junit(FILE *f, const Options *o, const TestResult *r, int n, int total) {
    (void)o;
    int failures = 0, errors = n < total;
    for (int i = 0; i < n; i++) failures += is_failure(&r[i]), errors += !r[i].passed && !is_failure(&r[i]);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"%s\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n", registry_suite()->program,
            n + (n < total), failures, errors);
    for (int i = 0; i < n;) {
        int phase = r[i].test->phase, end = i, fails = 0, errs = 0;
        double secs = 0.0;
        for (; end < n && r[end].test->phase == phase; end++)
            fails += is_failure(&r[end]), errs += !r[end].passed && !is_failure(&r[end]), secs += r[end].seconds;
        fprintf(f, "  <testsuite name=\"phase %d\" tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.6f\">\n", phase,
                end - i, fails, errs, secs);
        for (; i < end; i++) {
            const Test *t = r[i].test;
            char name[160];
            snprintf(name, sizeof name, "%s/%s", t->name, t->variant);
            fprintf(f, "    <testcase classname=\"phase %d\" name=\"", phase);
            xml_escaped(f, name);
            fprintf(f, "\" time=\"%.6f\"", r[i].seconds);
            if (r[i].passed && !r[i].skipped) {
                fputs("/>\n", f);
                continue;
            }
            fputs(">\n", f);
            if (r[i].skipped) {
                fputs("      <skipped message=\"", f);
                xml_escaped(f, r[i].msg);
                fputs("\"/>\n", f);
            } else
                junit_failure(f, &r[i]);
            fputs("    </testcase>\n", f);
        }
        fputs("  </testsuite>\n", f);
    }
    if (n < total)
        fprintf(f, "  <testsuite name=\"incomplete\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"0\">\n"
                   "    <testcase classname=\"incomplete\" name=\"run cut short\" time=\"0\">\n"
                   "      <error message=\"cut short after %d of %d tests\"/>\n    </testcase>\n  </testsuite>\n",
                n, total);
    fputs("</testsuites>\n", f);
}

/* ---- the run's outputs: snapshots renamed into place ---------------------
 * Each output (--log, --junit) is written whole to OUT.<pid>.tmp and renamed
 * to OUT: before the first test and after every test (the results so far,
 * marked incomplete), and complete at the end. Whatever ends the run, even
 * SIGKILL, OUT holds every finished test and says whether the run ended;
 * never a torn file, never a previous run's results. */
typedef void (*Formatter)(FILE *f, const Options *o, const TestResult *r, int n, int total);
typedef struct {
    const char *what;
    Formatter format;
    bool on, failed;
    char path[PATH_MAX], tmp[PATH_MAX + 32];
} Output;

static Output outputs[2] = {{.what = "log", .format = format_log}, {.what = "JUnit report", .format = format_junit}};
enum { N_OUTPUTS = sizeof outputs / sizeof outputs[0] };
static const Options *run_options;
static int run_total;
static volatile sig_atomic_t snapshot_ready; /* every output's OUT holds a snapshot */

/* Writes the output's text for r[0..n) to its temp file and renames it to
 * OUT. 0, or -1 with the reason printed. */
static int write_staged(Output *out, const TestResult *r, int n) {
    int fd = open(out->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write the %s '%s': %s\n", registry_suite()->program, out->what, out->path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    out->format(f, run_options, r, n, run_total);
    int bad = fflush(f) != 0 || ferror(f) ? errno : 0;
    if (fclose(f) != 0 && !bad) bad = errno;
    if (!bad && rename(out->tmp, out->path) != 0) bad = errno;
    if (bad) {
        fprintf(stderr, "%s: cannot write the %s '%s': %s\n", registry_suite()->program, out->what, out->path, strerror(bad));
        unlink(out->tmp);
        return -1;
    }
    return 0;
}

/* Async-signal-safe: a snapshot being written is dropped (OUT keeps the one
 * before), a note on stderr, then the signal's own end (128 + signal). */
static void put(const char *s) {
    ssize_t unused = write(2, s, strlen(s));
    (void)unused;
}

static void on_signal(int sig) {
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGPIPE ? "SIGPIPE" : "SIGHUP";
    for (int i = 0; i < N_OUTPUTS; i++) {
        if (!outputs[i].on) continue;
        if (snapshot_ready) {
            put(registry_suite()->program);
            put(": ");
            put(name);
            put(": the results so far, marked incomplete, are in ");
            put(outputs[i].path);
            put("\n");
        }
        unlink(outputs[i].tmp);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* `--log DIR`: DIR/<UTC time to the microsecond>-<pid>-<backend>-<device>.tsv,
 * created here (O_EXCL) so no other run can take the name. */
static int unique_log_name(const char *dir, char *out, size_t size, char *err, size_t err_size) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y%m%dT%H%M%S", &tm);
    size_t len = strlen(dir);
    const char *sep = len && dir[len - 1] == '/' ? "" : "/";
    int w = snprintf(out, size, "%s%s%s.%06ldZ-%ld-%s-%s.tsv", dir, sep, when, ts.tv_nsec / 1000, (long)getpid(),
                     kdn_backend(), kdn_device_name());
    if (w < 0 || (size_t)w >= size) return snprintf(err, err_size, "--log: the path in '%s' is too long", dir), 2;
    for (size_t i = len + strlen(sep); out[i]; i++)
        if (out[i] == ' ' || out[i] == '/') out[i] = '_';
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return snprintf(err, err_size, "--log: cannot create '%s': %s", out, strerror(errno)), 2;
    close(fd);
    return 0;
}

/* The final name of an output, its temp names, and a first snapshot (no test
 * run yet): an output that cannot be written stops the run before it starts. */
static int output_open(Output *out, const char *path, const char *flag, char *err, size_t size) {
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode) && out->format == format_log) {
        if (unique_log_name(path, out->path, sizeof out->path, err, size)) return 2;
    } else if (exists && !S_ISREG(st.st_mode)) {
        return snprintf(err, size, "%s '%s': not a regular file or (--log) a directory", flag, path), 2;
    } else if ((size_t)snprintf(out->path, sizeof out->path, "%s", path) >= sizeof out->path) {
        return snprintf(err, size, "%s: the path is too long (%zu characters)", flag, strlen(path)), 2;
    }
    snprintf(out->tmp, sizeof out->tmp, "%s.%ld.tmp", out->path, (long)getpid());
    int fd = open(out->tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    /* the user's path named: the temporary file beside it is ours */
    if (fd < 0) return snprintf(err, size, "%s: cannot write '%s': %s", flag, out->path, strerror(errno)), 2;
    close(fd);
    out->on = true;
    if (write_staged(out, NULL, 0) != 0)
        return snprintf(err, size, "%s: cannot write '%s' (see above)", flag, out->path), 2;
    return 0;
}

/* The same file by name, or by inode where it exists. */
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (strcmp(a, b) == 0) return true;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int reports_open(const Options *o, int total, char *err, size_t size) {
    run_options = o;
    run_total = total;
    if (o->log_path && o->junit_path && same_file(o->log_path, o->junit_path))
        return snprintf(err, size, "--log and --junit name the same file '%s'", o->junit_path), 2;
    const char *paths[N_OUTPUTS] = {o->log_path, o->junit_path}, *flags[N_OUTPUTS] = {"--log", "--junit"};
    for (int i = 0; i < N_OUTPUTS; i++)
        if (paths[i] && output_open(&outputs[i], paths[i], flags[i], err, size)) return 2;
    snapshot_ready = 1;
    static const int signals[] = {SIGINT, SIGTERM, SIGPIPE, SIGHUP};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) signal(signals[i], on_signal);
    return 0;
}

/* end_signals.h: blocked, the handler never sees a half-renamed state. */
sigset_t block_end_signals(void) {
    sigset_t all, old;
    sigemptyset(&all);
    sigaddset(&all, SIGINT), sigaddset(&all, SIGTERM), sigaddset(&all, SIGPIPE), sigaddset(&all, SIGHUP);
    sigprocmask(SIG_BLOCK, &all, &old);
    return old;
}

void reports_progress(const TestResult *r, int n) {
    for (int i = 0; i < N_OUTPUTS; i++)
        if (outputs[i].on && !outputs[i].failed && write_staged(&outputs[i], r, n) != 0)
            outputs[i].failed = true;
}

int reports_close(const TestResult *r, int n) {
    sigset_t old = block_end_signals();
    int rc = 0;
    for (int i = 0; i < N_OUTPUTS; i++) {
        Output *out = &outputs[i];
        if (!out->on) continue;
        if (out->failed || write_staged(out, r, n) != 0) rc = 2;
        unlink(out->tmp);
        if (rc == 0 && out->path[0] && out->format == format_log && run_options->log_path &&
            strcmp(out->path, run_options->log_path) != 0)
            fprintf(stderr, "%s: log written to %s\n", registry_suite()->program, out->path);
        out->on = false;
    }
    snapshot_ready = 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* One output written whole by temp-and-rename, outside a run (tests). */
static int write_whole(int which, const char *path, const Options *o, const TestResult *r, int n) {
    Output *out = &outputs[which];
    run_options = o;
    run_total = n;
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->tmp, sizeof out->tmp, "%s.%ld.tmp", path, (long)getpid());
    return write_staged(out, r, n);
}

int write_log(const char *path, const Options *o, const TestResult *r, int n) { return write_whole(0, path, o, r, n); }
int write_junit(const char *path, const TestResult *r, int n) {
    static const Options none;
    return write_whole(1, path, &none, r, n);
}

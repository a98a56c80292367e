/* Result logs (--log) and JUnit reports (--junit); docs/ci.md describes both. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "../kernels/kdn.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The commit the binary runs in, read at run time ("unknown" outside git). */
static void git_commit(char *out, size_t size) {
    snprintf(out, size, "unknown");
    FILE *p = popen("git rev-parse --short HEAD 2>/dev/null", "r");
    if (!p) return;
    char line[64];
    if (fgets(line, sizeof line, p) && line[0] != '\n') {
        line[strcspn(line, "\n")] = 0;
        snprintf(out, size, "%s", line);
    }
    pclose(p);
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

/* A directory gets <UTC time>-<backend>-<device>.tsv, spaces as '_'. */
static void log_file_name(const char *path, char *out, size_t size) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(out, size, "%s", path);
        return;
    }
    char when[32];
    utc_now(when, sizeof when, "%Y%m%dT%H%M%SZ");
    size_t dir = strlen(path);
    const char *sep = dir && path[dir - 1] == '/' ? "" : "/";
    int w = snprintf(out, size, "%s%s%s-%s-%s.tsv", path, sep, when, kdn_backend(), kdn_device_name());
    for (int i = (int)(dir + strlen(sep)); i < w && (size_t)i < size; i++)
        if (out[i] == ' ' || out[i] == '/') out[i] = '_';
}

/* A field as one log column: tabs and line breaks would split it. */
static void one_field(const char *s, char *out, size_t size) {
    snprintf(out, size, "%s", s);
    for (char *p = out; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
}

int write_log(const char *path, const Options *o, const TestResult *r, int n) {
    char name[1024], commit[64], date[32];
    log_file_name(path, name, sizeof name);
    FILE *f = fopen(name, "w");
    if (!f) {
        fprintf(stderr, "test_deltanet: cannot write the log '%s'\n", name);
        return -1;
    }
    git_commit(commit, sizeof commit);
    utc_now(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ");
    fprintf(f, "%s\n# backend\t%s\n# target\t%s\n# host compiler\t%s\n# commit\t%s\n# device\t%s\n# seed\t%llu\n# date\t%s\n",
            LOG_MAGIC, kdn_backend(), kdn_target(), host_compiler(), commit, kdn_device_name(),
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
        fprintf(f, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3e\t%.3e\t%s\t%s\t\t\n", t->phase, t->name, t->variant, shape,
                diff, worst, nrel, nmse, t->tol.atol, t->tol.rtol, nrel_tol, r[i].passed ? "PASS" : "FAIL");
        /* one row per timed variant, keyed by name and "bench:<label>" */
        for (int b = 0; b < r[i].n_bench; b++, rows++)
            fprintf(f, "%d\t%s\tbench:%s\t%s\tn/a\tn/a\tn/a\tn/a\t0\t0\tn/a\tTIME\t%.3f\t%.3f\n", t->phase, t->name,
                    r[i].bench[b].label, shape, r[i].bench[b].median_ms * 1e3, r[i].bench[b].min_ms * 1e3);
    }
    fprintf(f, "%s%d\n", LOG_END, rows);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "test_deltanet: error writing the log '%s'\n", name);
        return -1;
    }
    if (strcmp(name, path) != 0) fprintf(stderr, "test_deltanet: log written to %s\n", name);
    return 0;
}

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

/* <failure>: max_diff and tolerance in its message, shape and the test's
 * message in its text. */
/* <failure>: max_diff, normwise error and tolerance in its message, shape
 * and the test's message in its text. */
static void junit_failure(FILE *f, const TestResult *r) {
    char head[256], diff[128] = "n/a", tol[64];
    if (r->compared)
        snprintf(diff, sizeof diff, "%.3e at %s nrel=%.3e nmse=%.3e", r->max_diff, r->worst, r->nrel, r->nmse);
    describe_tol(&r->test->tol, tol, sizeof tol);
    snprintf(head, sizeof head, "max_diff=%s tol=%s", diff, tol);
    fputs("      <failure message=\"", f);
    xml_escaped(f, head);
    fputs("\">", f);
    if (r->shape[0]) {
        xml_escaped(f, r->shape);
        fputs("&#10;", f);
    }
    xml_escaped(f, r->msg);
    fputs("</failure>\n", f);
}

int write_junit(const char *path, const TestResult *r, int n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "test_deltanet: cannot write the JUnit report '%s'\n", path);
        return -1;
    }
    int failures = 0;
    for (int i = 0; i < n; i++) failures += !r[i].passed;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"test_deltanet\" tests=\"%d\" failures=\"%d\">\n",
            n, failures);
    for (int i = 0; i < n;) {
        int phase = r[i].test->phase, end = i, fails = 0;
        double secs = 0.0;
        for (; end < n && r[end].test->phase == phase; end++) fails += !r[end].passed, secs += r[end].seconds;
        fprintf(f, "  <testsuite name=\"phase %d\" tests=\"%d\" failures=\"%d\" errors=\"0\" time=\"%.6f\">\n", phase,
                end - i, fails, secs);
        for (; i < end; i++) {
            const Test *t = r[i].test;
            char name[160];
            snprintf(name, sizeof name, "%s/%s", t->name, t->variant);
            fprintf(f, "    <testcase classname=\"phase %d\" name=\"", phase);
            xml_escaped(f, name);
            fprintf(f, "\" time=\"%.6f\"", r[i].seconds);
            if (r[i].passed) {
                fputs("/>\n", f);
                continue;
            }
            fputs(">\n", f);
            junit_failure(f, &r[i]);
            fputs("    </testcase>\n", f);
        }
        fputs("  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "test_deltanet: error writing the JUnit report '%s'\n", path);
        return -1;
    }
    return 0;
}

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
            LOG_MAGIC, kdn_backend(), kdn_target(), __VERSION__, commit, kdn_device_name(),
            (unsigned long long)o->seed, date);
    fprintf(f, "%s\n", LOG_COLUMNS);
    for (int i = 0; i < n; i++) {
        const Test *t = r[i].test;
        char diff[32] = "n/a";
        if (r[i].compared) snprintf(diff, sizeof diff, "%.6e", r[i].max_diff);
        fprintf(f, "%d\t%s\t%s\t%s\t%s\t%.3e\t%.3e\t%s\t\t\n", t->phase, t->name, t->variant, r[i].shape, diff,
                t->tol.atol, t->tol.rtol, r[i].passed ? "PASS" : "FAIL");
        /* one row per timed variant, keyed by name and "bench:<label>" */
        for (int b = 0; b < r[i].n_bench; b++)
            fprintf(f, "%d\t%s\tbench:%s\t%s\tn/a\t0\t0\tTIME\t%.3f\t%.3f\n", t->phase, t->name, r[i].bench[b].label,
                    r[i].shape, r[i].bench[b].median_ms * 1e3, r[i].bench[b].min_ms * 1e3);
    }
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
        default: fputc(*s, f);
        }
}

static double test_seconds(const TestResult *r) {
    double s = 0.0;
    for (int b = 0; b < r->n_bench; b++) s += r->bench[b].median_ms * 1e-3;
    return s;
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
        for (; end < n && r[end].test->phase == phase; end++) fails += !r[end].passed, secs += test_seconds(&r[end]);
        fprintf(f, "  <testsuite name=\"phase %d\" tests=\"%d\" failures=\"%d\" errors=\"0\" time=\"%.6f\">\n", phase,
                end - i, fails, secs);
        for (; i < end; i++) {
            const Test *t = r[i].test;
            fprintf(f, "    <testcase classname=\"phase %d\" name=\"%s/%s\" time=\"%.6f\"", phase, t->name, t->variant,
                    test_seconds(&r[i]));
            if (r[i].passed) {
                fputs("/>\n", f);
                continue;
            }
            fputs(">\n      <failure message=\"", f);
            char head[128];
            snprintf(head, sizeof head, "max_diff=%.3e tol=%.1e+%.1e*|ref|", r[i].compared ? r[i].max_diff : 0.0,
                     t->tol.atol, t->tol.rtol);
            xml_escaped(f, head);
            fputs("\">", f);
            xml_escaped(f, r[i].shape);
            fputs("&#10;", f);
            xml_escaped(f, r[i].msg);
            fputs("</failure>\n    </testcase>\n", f);
        }
        fputs("  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    if (fclose(f) != 0) {
        fprintf(stderr, "test_deltanet: error writing the JUnit report '%s'\n", path);
        return -1;
    }
    return 0;
}

/* --compare OLD NEW: regressions between two result logs (docs/ci.md). */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N_COLUMNS 10
/* max_diffs below this are rounding noise: growth from below it is not judged */
#define DIFF_FLOOR 1e-12

typedef struct {
    char key[160];         /* name \t variant */
    char status[8];
    double max_diff;       /* NAN for n/a */
    double median_us;      /* NAN when not timed */
} Row;

typedef struct {
    char device[256];
    Row *rows;
    int n;
} Log;

static int split_tabs(char *line, char **f, int max) {
    int n = 0;
    for (char *p = line;; p++) {
        if (n < max) f[n] = p;
        n++;
        p = strchr(p, '\t');
        if (!p) break;
        *p = 0;
    }
    return n;
}

/* "" or "n/a" -> NAN; otherwise a number or an error. */
static int parse_num(const char *s, double *out) {
    if (!*s || strcmp(s, "n/a") == 0) {
        *out = NAN;
        return 0;
    }
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return errno || *end ? -1 : 0;
}

/* One test's row; -1 with the reason in why. */
static int parse_row(char *line, Row *r, char *why, size_t size) {
    static const struct {
        int col;
        const char *name;
    } numeric[] = {{4, "max_diff"}, {5, "atol"}, {6, "rtol"}, {8, "median_us"}, {9, "min_us"}};
    char *fld[N_COLUMNS];
    int n = split_tabs(line, fld, N_COLUMNS);
    if (n != N_COLUMNS) return snprintf(why, size, "%d tab-separated columns, expected %d", n, N_COLUMNS), -1;
    char *end;
    long phase = strtol(fld[0], &end, 10);
    if (*end || phase < 1 || phase > MAX_PHASE || !*fld[1])
        return snprintf(why, size, "row does not start with a phase (1-%d) and a name", MAX_PHASE), -1;
    double value[5];
    for (int i = 0; i < 5; i++)
        if (parse_num(fld[numeric[i].col], &value[i]) != 0)
            return snprintf(why, size, "%s '%.40s' is not a number", numeric[i].name, fld[numeric[i].col]), -1;
    if (strcmp(fld[7], "PASS") && strcmp(fld[7], "FAIL") && strcmp(fld[7], "TIME"))
        return snprintf(why, size, "status '%.40s' is not PASS, FAIL or TIME", fld[7]), -1;
    snprintf(r->key, sizeof r->key, "%.79s\t%.79s", fld[1], fld[2]);
    snprintf(r->status, sizeof r->status, "%s", fld[7]);
    r->max_diff = value[0];
    r->median_us = value[3];
    return 0;
}

static int read_log(const char *path, Log *log, char *err, size_t size) {
    memset(log, 0, sizeof *log);
    FILE *f = fopen(path, "r");
    if (!f) return snprintf(err, size, "cannot read '%s': %s", path, strerror(errno)), -1;
    char line[4096];
    int lineno = 0, rc = -1, cap = 0, end_rows = -1;
    bool columns = false;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (end_rows >= 0) {
            snprintf(err, size, "%s:%d: a line after the '# end' line", path, lineno);
            goto out;
        }
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') {
            snprintf(err, size, "%s:%d: %s", path, lineno,
                     len == sizeof line - 1 ? "line too long" : "truncated line (no line end)");
            goto out;
        }
        line[len - 1] = 0;
        if (lineno == 1) {
            if (strcmp(line, LOG_MAGIC) != 0) {
                snprintf(err, size, "%s: not a test_deltanet log (first line is not '%s')", path, LOG_MAGIC);
                goto out;
            }
            continue;
        }
        if (columns && strncmp(line, LOG_END, strlen(LOG_END)) == 0) {
            end_rows = atoi(line + strlen(LOG_END));
            continue;
        }
        if (line[0] == '#') {
            if (strncmp(line, "# device\t", 9) == 0) snprintf(log->device, sizeof log->device, "%.255s", line + 9);
            continue;
        }
        if (!columns) {
            if (strcmp(line, LOG_COLUMNS) != 0 || !log->device[0]) {
                snprintf(err, size, "%s:%d: expected the column line after a header with a '# device' line", path,
                         lineno);
                goto out;
            }
            columns = true;
            continue;
        }
        if (log->n == cap) {
            cap = cap ? 2 * cap : 64;
            Row *grown = realloc(log->rows, (size_t)cap * sizeof *grown);
            if (!grown) {
                snprintf(err, size, "out of memory");
                goto out;
            }
            log->rows = grown;
        }
        char why[160];
        if (parse_row(line, &log->rows[log->n++], why, sizeof why) != 0) {
            snprintf(err, size, "%s:%d: %s", path, lineno, why);
            goto out;
        }
    }
    if (!columns || end_rows < 0) {
        snprintf(err, size, "%s: truncated log (no %s line)", path, columns ? "'# end'" : "column");
        goto out;
    }
    if (end_rows != log->n) {
        snprintf(err, size, "%s: %d rows, but its '# end' line says %d", path, log->n, end_rows);
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

static const Row *find_row(const Log *log, const char *key) {
    for (int i = 0; i < log->n; i++)
        if (strcmp(log->rows[i].key, key) == 0) return &log->rows[i];
    return NULL;
}

/* The key as "name (variant)" for messages. */
static const char *pretty(const char *key, char *buf, size_t size) {
    const char *tab = strchr(key, '\t');
    snprintf(buf, size, "%.*s (%s)", (int)(tab - key), key, tab + 1);
    return buf;
}

static int judge(const Options *o, const Log *old, const Log *cur, FILE *out) {
    int regressions = 0;
    bool same_device = strcmp(old->device, cur->device) == 0;
    char name[200];
    for (int i = 0; i < old->n; i++) {
        const Row *a = &old->rows[i], *b = find_row(cur, a->key);
        pretty(a->key, name, sizeof name);
        if (!b) {
            fprintf(out, "REGRESSION  %s: missing from the new log\n", name), regressions++;
            continue;
        }
        /* a test failing in NEW gates even if it failed in OLD too */
        if (strcmp(b->status, "FAIL") == 0) {
            fprintf(out, "REGRESSION  %s: %s\n", name, strcmp(a->status, "FAIL") ? "now fails" : "still fails"),
                regressions++;
            continue;
        }
        double base = a->max_diff > DIFF_FLOOR ? a->max_diff : DIFF_FLOOR;
        if (b->max_diff > o->max_diff_growth * base)
            fprintf(out, "REGRESSION  %s: max_diff %.3e -> %.3e (more than x%g)\n", name, a->max_diff, b->max_diff,
                    o->max_diff_growth), regressions++;
        if (same_device && !isnan(a->median_us) && !isnan(b->median_us) &&
            b->median_us > a->median_us * (1.0 + o->time_threshold_pct / 100.0))
            fprintf(out, "REGRESSION  %s: median %.1f us -> %.1f us (more than %g%% slower)\n", name, a->median_us,
                    b->median_us, o->time_threshold_pct), regressions++;
    }
    for (int i = 0; i < cur->n; i++)
        if (!find_row(old, cur->rows[i].key))
            fprintf(out, "new         %s: not in the old log\n", pretty(cur->rows[i].key, name, sizeof name));
    if (!same_device) fprintf(out, "note: devices differ (%s / %s): timings not compared\n", old->device, cur->device);
    fprintf(out, "%d regressions (%d rows before, %d now)\n", regressions, old->n, cur->n);
    return regressions ? 1 : 0;
}

int compare_logs(const Options *o, FILE *out) {
    Log old, cur;
    char err[512];
    int rc = 2;
    memset(&cur, 0, sizeof cur);
    if (read_log(o->compare_old, &old, err, sizeof err) == 0) {
        if (read_log(o->compare_new, &cur, err, sizeof err) == 0) rc = judge(o, &old, &cur, out);
        free(cur.rows);
    }
    free(old.rows);
    if (rc == 2) fprintf(stderr, "test_deltanet: --compare: %s\n", err);
    return rc;
}

/* --compare OLD NEW: regressions between two result logs (docs/ci.md).
 * Both logs are read whole and parsed strictly: a log the gate cannot fully
 * trust (cut, marked incomplete, a duplicate row, a field that is not what
 * its column holds) is exit 2, never a pass. Rows are found by a hash of
 * their full name and variant, so a log of millions of rows takes seconds. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* max_diffs below this are rounding noise: growth from below it is not judged */
#define DIFF_FLOOR 1e-12

/* What a column holds. */
enum {
    TEXT,     /* any text without tabs (may be empty: shape) */
    KEY,      /* non-empty text: name, variant */
    PHASE,    /* 1..MAX_PHASE */
    STATUS,   /* PASS, FAIL, SKIP or TIME */
    MEASURE,  /* a finite number >= 0, or n/a */
    RATIO,    /* a number >= 0, inf (a zero reference, a nonzero output), or n/a */
    TIMING,   /* a finite number >= 0, or empty (untimed rows): times, bytes, flops */
};
/* How --compare judges a numeric column between OLD and NEW. */
enum {
    SHOWN,    /* parsed and checked, not compared */
    ERROR,    /* an error size: growth past --max-diff-growth is a regression */
    BOUND,    /* a tolerance: a larger value in NEW is a loosened (weaker) test */
    TIME,     /* a median time: slower past --time-threshold on the same device */
};

#define AS_ENUM(id, name, kind, judged) COL_##id,
enum { LOG_COLUMN_TABLE(AS_ENUM) N_COLUMNS };
#define COUNT_JUDGED(id, name, kind, judged) +((judged) != SHOWN)
enum { N_JUDGED = 0 LOG_COLUMN_TABLE(COUNT_JUDGED) }; /* only these are kept per row */
#define AS_ROW(id, name, kind, judged) {name, kind, judged},
static const struct {
    const char *name;
    int kind, judged;
} columns[N_COLUMNS] = {LOG_COLUMN_TABLE(AS_ROW)};

typedef struct {
    const char *key;  /* "name\tvariant", inside the log's text, or renamed ... */
    size_t key_len;
    char *renamed;    /* ... in this string of its own (a former name made current) */
    int line;
    const char *shape; /* its shape column, inside the log's text */
    char status;      /* 'P', 'F', 'S' or 'T' */
    double v[N_JUDGED]; /* the judged columns' values (judged_slot); NAN for n/a or empty */
} Row;

/* The header lines that say how a log was made, besides its device: two
 * logs that differ in one compare results of different runs (another
 * commit is what a comparison is for, so it is not among them), said in the
 * report (a regression or its absence may be that difference's). */
static const char *const provenance_keys[] = {"seed", "backend", "target", "host compiler"};
enum { N_PROVENANCE = sizeof provenance_keys / sizeof provenance_keys[0] };

typedef struct {
    const char *path;
    char *text; /* the whole file, NUL-terminated; keys point into it */
    const char *device;
    const char *provenance[N_PROVENANCE]; /* NULL: the line is absent */
    Row *rows;
    size_t n;
    size_t *slots; /* hash table of row index + 1 (0: empty), power-of-two size */
    size_t mask;
} Log;

/* ---- reading ------------------------------------------------------------ */

/* "# KEY\tvalue" of a provenance key: its value kept (the first). */
static void note_provenance(Log *log, const char *line) {
    for (int i = 0; i < N_PROVENANCE; i++) {
        size_t n = strlen(provenance_keys[i]);
        if (strncmp(line + 2, provenance_keys[i], n) == 0 && line[2 + n] == '\t' && !log->provenance[i])
            log->provenance[i] = line + 3 + n;
    }
}

/* The file as one NUL-terminated string. Only a regular file: a FIFO or a
 * device could block or never end (opened non-blocking to find out). */
static char *read_whole(const char *path, size_t *len, char *err, size_t size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return snprintf(err, size, "cannot read '%s': %s", path, strerror(errno)), NULL;
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0)
        snprintf(err, size, "cannot read '%s': %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(err, size, "'%s' is not a regular file", path);
    else if (!(text = malloc((size_t)st.st_size + 1)))
        snprintf(err, size, "'%s': out of memory for %lld bytes", path, (long long)st.st_size);
    size_t got = 0;
    while (text && got < (size_t)st.st_size) {
        ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
        if (r <= 0) {
            snprintf(err, size, "cannot read '%s': %s", path, r ? strerror(errno) : "file shrank while read");
            free(text), text = NULL;
        } else
            got += (size_t)r;
    }
    close(fd);
    if (text) text[got] = 0, *len = got;
    return text;
}

/* A number as the log writes it: no blanks, fully consumed, finite, >= 0. */
static bool strict_number(const char *s, double *out) {
    if (!(*s >= '0' && *s <= '9') || strspn(s, "0123456789.eE+-") != strlen(s)) return false; /* no hex, no blanks */
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return !errno && !*end && isfinite(*out) && *out >= 0.0;
}

/* A count as the log writes it: digits only, no sign, no leading zero. */
static bool strict_count(const char *s, long max, long *out) {
    if (!*s || (s[0] == '0' && s[1]) || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9) return false;
    *out = strtol(s, NULL, 10);
    return *out <= max;
}

/* One field checked against its column; NULL if good, else why not. */
/* Row.v's index of each judged column, in table order; -1 for the others. */
static int judged_slot[N_COLUMNS];
static void number_judged_columns(void) {
    for (int c = 0, k = 0; c < N_COLUMNS; c++) judged_slot[c] = columns[c].judged != SHOWN ? k++ : -1;
}

/* One field checked against its column into v[col]; NULL if good, else why not. */
static const char *parse_field(int col, const char *s, Row *r, double *v) {
    long phase;
    v[col] = NAN;
    switch (columns[col].kind) {
    case TEXT: return NULL;
    case KEY: return *s ? NULL : "is empty";
    case PHASE: return strict_count(s, MAX_PHASE, &phase) && phase >= 1 ? NULL : "is not a phase 1-8";
    case STATUS:
        if (strcmp(s, "PASS") && strcmp(s, "FAIL") && strcmp(s, "SKIP") && strcmp(s, "TIME"))
            return "is not PASS, FAIL, SKIP or TIME";
        r->status = s[0];
        return NULL;
    case RATIO:
        if (strcmp(s, "inf") == 0) return v[col] = INFINITY, NULL;
        /* fall through */
    case MEASURE:
        if (strcmp(s, "n/a") == 0) return NULL;
        return strict_number(s, &v[col]) ? NULL : "is not a finite number >= 0 or n/a";
    case TIMING:
        if (!*s) return NULL;
        return strict_number(s, &v[col]) ? NULL : "is not a finite number >= 0 or empty";
    }
    return "has no column kind";
}

/* Rules across fields: a PASS compared something; a TIME row is a bench row
 * with its times, bytes and flops; a test row has none of them. */
static const char *check_row(const Row *r, const double *v, const char *variant) {
    static const int bench_cols[] = {COL_MEDIAN, COL_MIN, COL_BYTES, COL_FLOPS};
    bool bench = strncmp(variant, "bench:", 6) == 0;
    int given = 0;
    for (size_t i = 0; i < sizeof bench_cols / sizeof bench_cols[0]; i++) given += !isnan(v[bench_cols[i]]);
    if (r->status == 'P' && isnan(v[COL_MAX_DIFF])) return "a PASS row without a max_diff";
    if ((r->status == 'T') != bench) return "status TIME is for bench:<label> rows only, and they have no other";
    if (bench && given < 4) return "a TIME row without its times, bytes and flops";
    if (!bench && given) return "a test row with times, bytes or flops";
    return NULL;
}

/* Splits one row (NUL-terminated, no line end) into r. */
static int parse_row(char *line, Row *r, char *why, size_t size) {
    char *field[N_COLUMNS];
    double v[N_COLUMNS];
    int n = 0;
    for (char *p = line;; p++) {
        if (n == N_COLUMNS) return snprintf(why, size, "more than %d tab-separated columns", N_COLUMNS), -1;
        field[n++] = p;
        if (!(p = strchr(p, '\t'))) break;
        *p = 0;
    }
    if (n != N_COLUMNS) return snprintf(why, size, "%d tab-separated columns, expected %d", n, N_COLUMNS), -1;
    for (int c = 0; c < N_COLUMNS; c++) {
        const char *bad = parse_field(c, field[c], r, v);
        if (bad) return snprintf(why, size, "%s '%.40s' %s", columns[c].name, field[c], bad), -1;
    }
    const char *bad = check_row(r, v, field[COL_VARIANT]);
    if (bad) return snprintf(why, size, "%s", bad), -1;
    for (int c = 0; c < N_COLUMNS; c++)
        if (judged_slot[c] >= 0) r->v[judged_slot[c]] = v[c];
    r->shape = field[COL_SHAPE];
    const char *name = registry_current_name(field[COL_NAME]), *variant = registry_current_name(field[COL_VARIANT]);
    if (name != field[COL_NAME] || variant != field[COL_VARIANT]) { /* a renamed test or variant: today's key */
        size_t len = strlen(name) + 1 + strlen(variant);
        if (!(r->renamed = malloc(len + 1))) return snprintf(why, size, "out of memory"), -1;
        snprintf(r->renamed, len + 1, "%s\t%s", name, variant);
        r->key = r->renamed;
        r->key_len = len;
        return 0;
    }
    field[COL_VARIANT][-1] = '\t'; /* the key: name \t variant, full length */
    r->key = field[COL_NAME];
    r->key_len = strlen(r->key);
    return 0;
}

/* The column line, field by field against the table. */
static bool columns_match(const char *line) {
    for (int c = 0; c < N_COLUMNS; c++) {
        size_t len = strlen(columns[c].name);
        if (strncmp(line, columns[c].name, len) != 0) return false;
        line += len;
        if (*line != (c + 1 < N_COLUMNS ? '\t' : '\0')) return false;
        line++;
    }
    return true;
}

static uint64_t hash_key(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t *slot_of(const Log *log, const char *key, size_t len) {
    for (size_t i = hash_key(key, len) & log->mask;; i = (i + 1) & log->mask) {
        size_t *s = &log->slots[i];
        if (!*s) return s;
        const Row *r = &log->rows[*s - 1];
        if (r->key_len == len && memcmp(r->key, key, len) == 0) return s;
    }
}

static const Row *find_row(const Log *log, const Row *like) {
    size_t s = *slot_of(log, like->key, like->key_len);
    return s ? &log->rows[s - 1] : NULL;
}

/* The key as "name (variant)" for messages. */
static const char *pretty(const Row *r, char *buf, size_t size) {
    const char *tab = memchr(r->key, '\t', r->key_len);
    snprintf(buf, size, "%.*s (%s)", (int)(tab - r->key), r->key, tab + 1);
    return buf;
}

/* Every row into the hash table; a second row for a key is an error. */
static int index_rows(Log *log, char *err, size_t size) {
    size_t cap = 16;
    while (cap < 2 * log->n) cap *= 2;
    if (!(log->slots = calloc(cap, sizeof *log->slots)))
        return snprintf(err, size, "%s: out of memory for %zu rows", log->path, log->n), -1;
    log->mask = cap - 1;
    for (size_t i = 0; i < log->n; i++) {
        size_t *s = slot_of(log, log->rows[i].key, log->rows[i].key_len);
        if (*s) {
            char name[512];
            return snprintf(err, size, "%s:%d: a second row for %s (first at line %d)", log->path, log->rows[i].line,
                            pretty(&log->rows[i], name, sizeof name), log->rows[*s - 1].line), -1;
        }
        *s = i + 1;
    }
    return 0;
}

/* Why the text is not a log at all, before its lines are read: binary data
 * (a control character other than tab and line feed), Windows line ends
 * (CR LF: the log is written with LF alone), or another first line. NULL
 * when it starts as a log. */
static const char *not_a_log(const char *text, size_t len, char *why, size_t size) {
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '\r' && i + 1 < len && text[i + 1] == '\n')
            return snprintf(why, size, "CR LF line ends (byte %zu): a log's lines end in LF alone", i), why;
        if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f)
            return snprintf(why, size, "binary data (byte %zu is 0x%02x): not a text log", i, ch), why;
    }
    size_t magic = strlen(log_magic());
    if (len <= magic || memcmp(text, log_magic(), magic) != 0 || text[magic] != '\n')
        return snprintf(why, size, "not a %s log (first line is not '%s')", registry_suite()->program, log_magic()), why;
    return NULL;
}

/* Header, column line, rows, "# end\t<rows>" exactly; nothing after it. */
static int parse_log(Log *log, size_t len, char *err, size_t size) {
    char why[200];
    if (not_a_log(log->text, len, why, sizeof why)) return snprintf(err, size, "%s: %s", log->path, why), -1;
    if (log->text[len - 1] != '\n')
        return snprintf(err, size, "%s: truncated (the last line has no line end)", log->path), -1;
    size_t lines = 0; /* rows <= lines: one allocation */
    for (const char *p = log->text; (p = memchr(p, '\n', len - (size_t)(p - log->text))); p++) lines++;
    if (!(log->rows = malloc(lines * sizeof *log->rows)))
        return snprintf(err, size, "%s: out of memory for %zu rows", log->path, lines), -1;
    bool columns_seen = false, ended = false;
    int lineno = 0;
    for (char *line = log->text, *next; *line; line = next) {
        next = strchr(line, '\n');
        *next++ = 0;
        lineno++;
        if (ended) return snprintf(err, size, "%s:%d: a line after the '# end' line", log->path, lineno), -1;
        if (lineno == 1) continue; /* log_magic(): not_a_log */
        if (strncmp(line, LOG_INCOMPLETE, strlen(LOG_INCOMPLETE)) == 0)
            return snprintf(err, size, "%s:%d: an incomplete log (%s)", log->path, lineno, line + strlen(LOG_INCOMPLETE)), -1;
        if (columns_seen && strncmp(line, LOG_END, strlen(LOG_END)) == 0) {
            long rows;
            if (!strict_count(line + strlen(LOG_END), 999999999L, &rows) || (size_t)rows != log->n)
                return snprintf(err, size, "%s:%d: the '# end' line '%.40s' does not give the %zu rows above it",
                                log->path, lineno, line, log->n), -1;
            ended = true;
            continue;
        }
        if (!columns_seen) {
            if (strncmp(line, "# device\t", 9) == 0) {
                if (log->device) return snprintf(err, size, "%s:%d: a second '# device' line", log->path, lineno), -1;
                log->device = line + 9;
            } else if (line[0] == '#') {
                note_provenance(log, line);
            } else {
                if (!columns_match(line) || !log->device)
                    return snprintf(err, size, "%s:%d: expected the column line after a header with a '# device' line",
                                    log->path, lineno), -1;
                columns_seen = true;
            }
            continue;
        }
        Row *r = &log->rows[log->n++];
        r->line = lineno;
        r->renamed = NULL;
        if (parse_row(line, r, why, sizeof why) != 0)
            return snprintf(err, size, "%s:%d: %s", log->path, lineno, why), -1;
    }
    if (!ended)
        return snprintf(err, size, "%s: truncated log (no %s line)", log->path, columns_seen ? "'# end'" : "column"), -1;
    return index_rows(log, err, size);
}

static int read_log(const char *path, Log *log, char *err, size_t size) {
    memset(log, 0, sizeof *log);
    log->path = path;
    size_t len;
    if (!(log->text = read_whole(path, &len, err, size))) return -1;
    return parse_log(log, len, err, size);
}

static void free_log(Log *log) {
    for (size_t i = 0; log->rows && i < log->n; i++) free(log->rows[i].renamed);
    free(log->text);
    free(log->rows);
    free(log->slots);
}

/* ---- judging -------------------------------------------------------------- */

/* Regressions of one row present in both logs; the count. */
static int judge_row(const Options *o, const Row *a, const Row *b, bool same_device, const char *name, FILE *out) {
    if (b->status == 'F') {
        fprintf(out, "REGRESSION  %s: %s\n", name, a->status == 'F' ? "still fails" : "now fails");
        return 1; /* a test failing in NEW gates even if it failed in OLD too */
    }
    if (b->status == 'S' && a->status != 'S') {
        fprintf(out, "REGRESSION  %s: skipped (--set does not apply), so not checked\n", name);
        return 1; /* a skip hides the test as much as its absence would */
    }
    int regressions = 0;
    for (int c = 0; c < N_COLUMNS; c++) {
        if (judged_slot[c] < 0) continue;
        double was = a->v[judged_slot[c]], now = b->v[judged_slot[c]];
        if (isnan(was) || isnan(now)) continue;
        if (columns[c].judged == ERROR && now > o->max_diff_growth * (was > DIFF_FLOOR ? was : DIFF_FLOOR))
            fprintf(out, "REGRESSION  %s: %s %.3e -> %.3e (more than x%g)\n", name, columns[c].name, was, now,
                    o->max_diff_growth), regressions++;
        if (columns[c].judged == BOUND && now > was)
            fprintf(out, "REGRESSION  %s: tolerance %s loosened %.3e -> %.3e\n", name, columns[c].name, was, now),
                regressions++;
        if (columns[c].judged == TIME && same_device && now > was * (1.0 + o->time_threshold_pct / 100.0))
            fprintf(out, "REGRESSION  %s: median %.1f us -> %.1f us (more than %g%% slower)\n", name, was, now,
                    o->time_threshold_pct), regressions++;
    }
    return regressions;
}

/* A row's shape as it ran: the runner's "(--set does not apply)" on a row
 * that kept its own is no other shape. */
static bool same_shape(const char *a, const char *b) {
    const char *mark = "(--set does not apply)";
    const char *ma = strstr(a, mark), *mb = strstr(b, mark);
    size_t la = ma ? (size_t)(ma - a) : strlen(a), lb = mb ? (size_t)(mb - b) : strlen(b);
    while (la && a[la - 1] == ' ') la--;
    while (lb && b[lb - 1] == ' ') lb--;
    return la == lb && strncmp(a, b, la) == 0;
}

/* What differs between the runs besides the code: header lines, and rows
 * that ran another shape (the first named). */
static void note_differences(const Log *old, const Log *cur, FILE *out) {
    for (int i = 0; i < N_PROVENANCE; i++) {
        const char *a = old->provenance[i] ? old->provenance[i] : "(none)";
        const char *b = cur->provenance[i] ? cur->provenance[i] : "(none)";
        if (strcmp(a, b) != 0)
            fprintf(out, "note: the logs differ in their %s (%s / %s): results of different runs\n",
                    provenance_keys[i], a, b);
    }
    size_t reshaped = 0;
    const Row *first = NULL, *first_new = NULL;
    for (size_t i = 0; i < old->n; i++) {
        const Row *a = &old->rows[i], *b = find_row(cur, a);
        if (!b || same_shape(a->shape, b->shape)) continue;
        if (!reshaped++) first = a, first_new = b;
    }
    char name[512];
    if (reshaped)
        fprintf(out, "note: %zu row%s ran another shape (first %s: %s / %s)\n", reshaped, reshaped > 1 ? "s" : "",
                pretty(first, name, sizeof name), first->shape, first_new->shape);
}

static int judge(const Options *o, const Log *old, const Log *cur, FILE *out) {
    size_t regressions = 0;
    bool same_device = strcmp(old->device, cur->device) == 0;
    char name[512];
    for (size_t i = 0; i < old->n; i++) {
        const Row *a = &old->rows[i], *b = find_row(cur, a);
        pretty(a, name, sizeof name);
        if (b)
            regressions += (size_t)judge_row(o, a, b, same_device, name, out);
        else
            fprintf(out, "REGRESSION  %s: missing from the new log\n", name), regressions++;
    }
    for (size_t i = 0; i < cur->n; i++) {
        const Row *b = &cur->rows[i];
        if (find_row(old, b)) continue;
        /* a new test may join the gate, but not failing */
        bool fails = b->status == 'F';
        fprintf(out, "%s%s: not in the old log%s\n", fails ? "REGRESSION  " : "new         ", pretty(b, name, sizeof name),
                fails ? ", and fails" : "");
        regressions += fails;
    }
    if (!same_device) fprintf(out, "note: devices differ (%s / %s): timings not compared\n", old->device, cur->device);
    note_differences(old, cur, out);
    fprintf(out, "%zu regressions (%zu rows before, %zu now)\n", regressions, old->n, cur->n);
    return regressions ? 1 : 0;
}

int compare_logs(const Options *o, FILE *out) {
    number_judged_columns();
    Log old, cur;
    char err[1024];
    int rc = 2;
    memset(&cur, 0, sizeof cur);
    if (read_log(o->compare_old, &old, err, sizeof err) == 0 && read_log(o->compare_new, &cur, err, sizeof err) == 0)
        rc = judge(o, &old, &cur, out);
    free_log(&old);
    free_log(&cur);
    if (rc == 2) fprintf(stderr, "%s: --compare: %s\n", registry_suite()->program, err);
    return rc;
}

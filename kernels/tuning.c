/* A device's dispatch constants as a file (gated_delta_net.h's kdn_tuning;
 * docs/api.md, "Tuning"): checking a tuning, reading one whole or not at all,
 * writing one so that no reader sees half of it. The format, one record a
 * line, fields separated by a tab, every line ended by a newline:
 *
 *   kdn-tuning	1             the first line: the format and KDN_TUNING_VERSION
 *   backend	cuda          once: kdn_gdn_backend() of the build that measured it
 *   device	NVIDIA H200       once: the device's name as its runtime gives it
 *   chunk	64                once: 32, 64, or 0 (the built-in choice per shape)
 *   crossover	1	160       1..KDN_TUNING_MAX_ROWS: n_seqs, recurrent for T <= max_t
 *
 * Lines starting with '#' are comments; anything else is malformed. */
#define _POSIX_C_SOURCE 200809L
#include "kdn.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kMagic[] = "kdn-tuning";
enum { kLineMax = 512, kMaxFields = 4, kMaxSeqs = 65535 };

/* A string field of n bytes that holds its terminating NUL. */
static int terminated(const char *s, size_t n) { return memchr(s, 0, n) != NULL; }

kdn_status kdn_tuning_check(const kdn_tuning *t) {
    if (t->version != KDN_TUNING_VERSION) return KDN_ERR_TUNING_VERSION;
    if (!terminated(t->backend, sizeof t->backend) || !terminated(t->device, sizeof t->device))
        return KDN_ERR_TUNING_MALFORMED;
    if (strcmp(t->backend, kdn_backend()) != 0) return KDN_ERR_TUNING_DEVICE;
    if (t->chunk != 0 && !kdn_takes_chunk(&kdn_chunked_limits, t->chunk)) return KDN_ERR_TUNING_MALFORMED;
    if (t->n_rows < 1 || t->n_rows > KDN_TUNING_MAX_ROWS) return KDN_ERR_TUNING_MALFORMED;
    for (int i = 0; i < t->n_rows; i++) {
        const kdn_crossover *r = &t->rows[i];
        if (r->n_seqs < 1 || r->n_seqs > kMaxSeqs || r->max_t < 0) return KDN_ERR_TUNING_MALFORMED;
        if (i > 0 && r->n_seqs <= t->rows[i - 1].n_seqs) return KDN_ERR_TUNING_MALFORMED;
    }
    return KDN_OK;
}

/* ---- reading ------------------------------------------------------------- */
/* A decimal integer in [lo, hi], the whole field (no sign but '-', no space). */
static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    if (!((*s >= '0' && *s <= '9') || *s == '-')) return 0;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

/* Splits line (its newline removed) at tabs; the number of fields, or
 * kMaxFields + 1 when there are more. */
static int split(char *line, char *field[kMaxFields]) {
    int n = 0;
    for (char *at = line;; at++) {
        if (n == kMaxFields) return kMaxFields + 1;
        field[n++] = at;
        at = strchr(at, '\t');
        if (!at) return n;
        *at = 0;
    }
}

/* A name field: 1..size-1 bytes. */
static int take_name(const char *s, char *to, size_t size, int *seen) {
    size_t n = strlen(s);
    if (*seen || n == 0 || n >= size) return 0;
    memcpy(to, s, n + 1);
    return *seen = 1;
}

typedef struct {
    int backend, device, chunk;
} Seen;

/* One record after the first line: 1 when it is well formed and new. */
static int take_record(char *line, kdn_tuning *t, Seen *seen) {
    char *f[kMaxFields];
    int n = split(line, f);
    if (n == 2 && strcmp(f[0], "backend") == 0) return take_name(f[1], t->backend, sizeof t->backend, &seen->backend);
    if (n == 2 && strcmp(f[0], "device") == 0) return take_name(f[1], t->device, sizeof t->device, &seen->device);
    if (n == 2 && strcmp(f[0], "chunk") == 0 && !seen->chunk) return seen->chunk = parse_int(f[1], 0, 64, &t->chunk);
    if (n == 3 && strcmp(f[0], "crossover") == 0 && t->n_rows < KDN_TUNING_MAX_ROWS) {
        kdn_crossover *r = &t->rows[t->n_rows++];
        return parse_int(f[1], 1, kMaxSeqs, &r->n_seqs) && parse_int(f[2], 0, INT_MAX, &r->max_t);
    }
    return 0;
}

/* The next line without its newline: 1; 0 at the end of the file; -1 when
 * the line is longer than kLineMax or has no newline (a file cut short),
 * -2 on a read error. */
static int next_line(FILE *f, char line[kLineMax]) {
    if (!fgets(line, kLineMax, f)) return ferror(f) ? -2 : 0;
    size_t n = strlen(line);
    if (n == 0 || line[n - 1] != '\n') return -1;
    line[n - 1] = 0;
    return 1;
}

/* What a next_line other than 1 means where a line must follow. */
static kdn_status no_line(int got) { return got == -2 ? KDN_ERR_TUNING_FILE : KDN_ERR_TUNING_MALFORMED; }

/* The first line: KDN_OK for this version. */
static kdn_status read_header(FILE *f) {
    char line[kLineMax], *field[kMaxFields];
    int got = next_line(f, line);
    if (got != 1) return no_line(got);
    int version;
    if (split(line, field) != 2 || strcmp(field[0], kMagic) != 0 || !parse_int(field[1], 0, INT_MAX, &version))
        return KDN_ERR_TUNING_MALFORMED;
    return version == KDN_TUNING_VERSION ? KDN_OK : KDN_ERR_TUNING_VERSION;
}

static kdn_status read_tuning(FILE *f, kdn_tuning *t) {
    kdn_status st = read_header(f);
    if (st != KDN_OK) return st;
    t->version = KDN_TUNING_VERSION;
    Seen seen = {0, 0, 0};
    char line[kLineMax];
    int got;
    while ((got = next_line(f, line)) == 1)
        if (line[0] != '#' && !take_record(line, t, &seen)) return KDN_ERR_TUNING_MALFORMED;
    if (got != 0) return no_line(got);
    if (!seen.backend || !seen.device || !seen.chunk) return KDN_ERR_TUNING_MALFORMED;
    return kdn_tuning_check(t); /* the rows: at least one, in order, in range */
}

kdn_status kdn_tuning_load(const char *path, kdn_tuning *t) {
    if (!path || !t) return KDN_ERR_NULL_POINTER;
    FILE *f = fopen(path, "r");
    if (!f) return KDN_ERR_TUNING_FILE;
    kdn_tuning got;
    memset(&got, 0, sizeof got);
    kdn_status st = read_tuning(f, &got);
    fclose(f);
    char here[KDN_TUNING_NAME];
    if (st == KDN_OK && (kdn_current_device_name(here, sizeof here) != 0 || strcmp(here, got.device) != 0))
        st = KDN_ERR_TUNING_DEVICE;
    if (st == KDN_OK) *t = got; /* whole or not at all */
    return st;
}

/* ---- writing ------------------------------------------------------------- */
static int printable_name(const char *s) { return s[0] && !strpbrk(s, "\t\n\r"); }

static int write_tuning(FILE *f, const kdn_tuning *t) {
    int ok = fprintf(f, "%s\t%d\nbackend\t%s\ndevice\t%s\nchunk\t%d\n", kMagic, t->version, t->backend, t->device,
                     t->chunk) > 0;
    for (int i = 0; i < t->n_rows && ok; i++) ok = fprintf(f, "crossover\t%d\t%d\n", t->rows[i].n_seqs, t->rows[i].max_t) > 0;
    return ok;
}

kdn_status kdn_tuning_save(const char *path, const kdn_tuning *t) {
    if (!path || !t) return KDN_ERR_NULL_POINTER;
    kdn_status st = kdn_tuning_check(t);
    if (st != KDN_OK) return st;
    if (!printable_name(t->device)) return KDN_ERR_TUNING_MALFORMED; /* a file's device names one */
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) return KDN_ERR_TUNING_FILE;
    int fd = mkstemp(tmp);
    if (fd < 0) return KDN_ERR_TUNING_FILE;
    FILE *f = fdopen(fd, "w");
    int ok = f && fchmod(fd, 0644) == 0 && write_tuning(f, t);
    ok = (f ? fclose(f) == 0 : close(fd) == 0) && ok;
    if (ok && rename(tmp, path) == 0) return KDN_OK;
    unlink(tmp);
    return KDN_ERR_TUNING_FILE;
}

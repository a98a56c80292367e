/* .npy files, --dump and --load (tensors.h). */
#define _POSIX_C_SOURCE 200809L
#include "tensors.h"

#include "internal.h"
#include "end_signals.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- .npy ---------------------------------------------------------------- */
static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

int tensor_error(char *err, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -1;
}

void shape_tuple(int ndim, const size_t *shape, char *out, size_t size) {
    size_t w = (size_t)snprintf(out, size, "(");
    for (int i = 0; i < ndim && w < size; i++)
        w += (size_t)snprintf(out + w, size - w, i ? ", %zu" : "%zu", shape[i]);
    if (w < size) snprintf(out + w, size - w, ndim == 1 ? ",)" : ")");
}

/* Flat index i of a C-order array as "[a, b, c]". */
static void index_tuple(size_t i, int ndim, const size_t *shape, char *out, size_t size) {
    size_t idx[NPY_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) idx[d] = shape[d] ? i % shape[d] : 0, i = shape[d] ? i / shape[d] : 0;
    size_t w = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < ndim && w < size; d++) w += (size_t)snprintf(out + w, size - w, d ? ", %zu" : "%zu", idx[d]);
    if (w < size) snprintf(out + w, size - w, "]");
}

static size_t element_count(int ndim, const size_t *shape) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

/* tmp written whole (the 10-byte preamble, the dict padded to `header`, the
 * data), then renamed to path; on any error tmp is removed and -1 returned
 * with errno set. */
static int write_renamed(const char *tmp, const char *path, const unsigned char *pre, const char *dict, size_t len,
                         size_t header, const void *data, int word, size_t n) {
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, len, f) == len;
    for (size_t i = len; ok && i + 1 < header; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(data, (size_t)word, n, f) == n;
    if (fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) return 0;
    int why = errno;
    unlink(tmp);
    errno = why;
    return -1;
}

int npy_write(const char *path, const void *data, int word, int ndim, const size_t *shape, char *err, size_t size) {
    char tuple[NPY_MAX_DIMS * 24 + 8], dict[NPY_MAX_DIMS * 24 + 96];
    shape_tuple(ndim, shape, tuple, sizeof tuple);
    int len = snprintf(dict, sizeof dict, "{'descr': '<f%d', 'fortran_order': False, 'shape': %s, }", word, tuple);
    /* magic (6) + version (2) + length (2) + dict + spaces + '\n', a multiple of 64 */
    size_t header = ((10 + (size_t)len + 1 + 63) / 64) * 64 - 10;
    unsigned char pre[10];
    memcpy(pre, npy_magic, 6);
    pre[6] = 1, pre[7] = 0;
    pre[8] = (unsigned char)(header & 0xff), pre[9] = (unsigned char)(header >> 8);
    char tmp[4200]; /* written whole, then renamed: a reader never sees half a file */
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    /* a signal waits until the temp file is renamed or removed: none is left behind */
    sigset_t old = block_end_signals();
    int rc = write_renamed(tmp, path, pre, dict, (size_t)len, header, data, word, element_count(ndim, shape));
    int why = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc ? tensor_error(err, size, "writing %s failed: %s", path, strerror(why)) : 0;
}

/* The header dict is a Python literal, read as numpy reads it: exactly the
 * keys descr, fortran_order and shape, once each (numpy refuses others),
 * string keys and descr, False or True, a tuple of whole numbers. A cursor
 * over the dict's text: */
typedef struct {
    const char *p;
    const char *path;
    char *err;
    size_t size;
} Dict;

static void skip_blanks(Dict *d) {
    while (*d->p == ' ' || *d->p == '\t' || *d->p == '\n') d->p++;
}

static int malformed(Dict *d, const char *what) {
    return tensor_error(d->err, d->size, "%s: malformed .npy header: %s at '%.20s'", d->path, what, d->p);
}

/* A quoted string without escapes into out. */
static int read_string(Dict *d, char *out, size_t size) {
    char quote = *d->p;
    if (quote != '\'' && quote != '"') return malformed(d, "expected a quoted string");
    const char *end = strchr(d->p + 1, quote);
    size_t len = end ? (size_t)(end - d->p - 1) : 0;
    if (!end || memchr(d->p + 1, '\\', len) || len >= size) return malformed(d, "a string too long, unclosed or escaped");
    memcpy(out, d->p + 1, len);
    out[len] = 0;
    d->p = end + 1;
    return 0;
}

static int read_descr(Dict *d, NpyHeader *h) {
    char descr[16];
    const char *at = d->p;
    if (read_string(d, descr, sizeof descr) != 0) return -1;
    h->word = strcmp(descr, "<f4") == 0 ? 4 : strcmp(descr, "<f8") == 0 ? 8 : 0;
    if (!h->word)
        return tensor_error(d->err, d->size,
                            "%s: element type %.*s is not little-endian float32 or float64 ('<f4', '<f8')", d->path,
                            (int)(d->p - at), at);
    return 0;
}

static int read_fortran_order(Dict *d) {
    if (strncmp(d->p, "False", 5) == 0 && !isalnum((unsigned char)d->p[5])) return d->p += 5, 0;
    if (strncmp(d->p, "True", 4) == 0 && !isalnum((unsigned char)d->p[4]))
        return tensor_error(d->err, d->size, "%s: Fortran order; only C order is read", d->path);
    return malformed(d, "fortran_order is not False or True");
}

/* "(2, 3)", "(5,)" or "()": a one-element tuple has its comma. */
static int read_shape(Dict *d, NpyHeader *h) {
    if (*d->p != '(') return malformed(d, "shape is not a tuple");
    d->p++;
    h->ndim = 0;
    unsigned long long count = 1;
    bool comma = false;
    for (skip_blanks(d); *d->p != ')'; skip_blanks(d)) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(d->p, &end, 10);
        if (!isdigit((unsigned char)*d->p) || errno || h->ndim == NPY_MAX_DIMS) return malformed(d, "a bad dimension");
        if (v && count > (1ull << 40) / v) /* no size_t overflow below */
            return tensor_error(d->err, d->size, "%s: shape too large (over 2^40 elements)", d->path);
        count *= v ? v : 1;
        h->shape[h->ndim++] = (size_t)v;
        d->p = end;
        skip_blanks(d);
        if ((comma = *d->p == ',')) d->p++;
        else if (*d->p != ')') return malformed(d, "expected ',' or ')' in shape");
    }
    if (h->ndim == 1 && !comma) return malformed(d, "'(n)' is a number, a one-dimensional shape is '(n,)'");
    d->p++;
    return 0;
}

static int parse_dict(const char *path, const char *dict, NpyHeader *h, char *err, size_t size) {
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    Dict d = {dict, path, err, size};
    skip_blanks(&d);
    if (*d.p++ != '{') return d.p--, malformed(&d, "expected '{'");
    for (skip_blanks(&d); *d.p != '}'; skip_blanks(&d)) {
        char key[32];
        if (read_string(&d, key, sizeof key) != 0) return -1;
        int k = 0;
        while (k < 3 && strcmp(key, keys[k]) != 0) k++;
        if (k == 3 || seen[k])
            return tensor_error(err, size,
                                "%s: malformed .npy header: %s key '%s' (only descr, fortran_order, shape, once each)",
                                path, k == 3 ? "an extra" : "a repeated", key);
        seen[k] = true;
        skip_blanks(&d);
        if (*d.p != ':') return malformed(&d, "expected ':'");
        d.p++;
        skip_blanks(&d);
        int rc = k == 0 ? read_descr(&d, h) : k == 1 ? read_fortran_order(&d) : read_shape(&d, h);
        if (rc != 0) return -1;
        skip_blanks(&d);
        if (*d.p == ',') d.p++;
        else if (*d.p != '}') return malformed(&d, "expected ',' or '}'");
    }
    d.p++;
    skip_blanks(&d);
    if (*d.p) return malformed(&d, "text after the dict");
    if (!seen[0] || !seen[1] || !seen[2])
        return tensor_error(err, size, "%s: malformed .npy header (descr, fortran_order or shape missing)", path);
    return 0;
}

/* path opened for reading if it is a regular file: a FIFO or a device could
 * block for ever or never end (opened non-blocking to find out). NULL with
 * a message otherwise. */
static FILE *open_regular(const char *path, char *err, size_t size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    FILE *f = NULL;
    if (fd < 0 || fstat(fd, &st) != 0)
        tensor_error(err, size, "cannot read %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        tensor_error(err, size, "%s is not a regular file", path);
    else if (!(f = fdopen(fd, "rb")))
        tensor_error(err, size, "cannot read %s: %s", path, strerror(errno));
    if (!f && fd >= 0) close(fd);
    return f;
}

int npy_read_header(const char *path, NpyHeader *h, char *err, size_t size) {
    FILE *f = open_regular(path, err, size);
    if (!f) return -1;
    unsigned char pre[12];
    int rc = -1;
    char *dict = NULL;
    size_t len = 0, lenbytes = 0;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, npy_magic, 6) != 0) {
        tensor_error(err, size, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    lenbytes = pre[6] == 1 ? 2 : pre[6] == 2 || pre[6] == 3 ? 4 : 0;
    if (!lenbytes || fread(pre + 8, 1, lenbytes, f) != lenbytes) {
        tensor_error(err, size, "%s: unsupported .npy version %d.%d or truncated header", path, pre[6], pre[7]);
        goto out;
    }
    for (size_t i = lenbytes; i-- > 0;) len = len << 8 | pre[8 + i];
    if (len > (1u << 20) || !(dict = malloc(len + 1)) || fread(dict, 1, len, f) != len) {
        tensor_error(err, size, "%s: truncated or oversized .npy header", path);
        goto out;
    }
    dict[len] = 0;
    if (parse_dict(path, dict, h, err, size) != 0) goto out;
    h->data_offset = (long)(8 + lenbytes + len);
    size_t n = element_count(h->ndim, h->shape);
    if (fseek(f, 0, SEEK_END) != 0) {
        tensor_error(err, size, "%s: cannot seek: %s", path, strerror(errno));
        goto out;
    }
    long have = ftell(f) - h->data_offset;
    if (have < 0 || (size_t)have != n * (size_t)h->word) {
        tensor_error(err, size, "%s: %ld bytes of data, its shape needs %zu (truncated or padded file)", path, have,
                     n * (size_t)h->word);
        goto out;
    }
    rc = 0;
out:
    free(dict);
    fclose(f);
    return rc;
}

int npy_read_floats(const char *path, const NpyHeader *h, float *dst, char *err, size_t size) {
    FILE *f = open_regular(path, err, size);
    if (!f) return -1;
    size_t n = element_count(h->ndim, h->shape), done = 0;
    if (fseek(f, h->data_offset, SEEK_SET) == 0) {
        if (h->word == 4)
            done = fread(dst, 4, n, f);
        else
            for (double x; done < n && fread(&x, 8, 1, f) == 1; done++) dst[done] = (float)x;
    }
    fclose(f);
    return done == n ? 0 : tensor_error(err, size, "%s: read %zu of %zu elements", path, done, n);
}

/* ---- the run's directories ------------------------------------------------ */
static const char *dump_dir, *load_dir;

/* One run per --dump directory: a write lock on DIR/.<program>.lock,
 * held until the process ends (the system drops it even on SIGKILL). */
static int lock_dump_dir(const char *dir, char *err, size_t size) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/.%s.lock", dir, registry_suite()->program) >= sizeof path)
        return tensor_error(err, size, "--dump: the path '%.60s...' is too long", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) return tensor_error(err, size, "--dump: cannot write in %s: %s", dir, strerror(errno));
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &lk) == 0) return 0; /* fd stays open: the lock lasts the run */
    int why = errno;
    bool held = (why == EACCES || why == EAGAIN) && fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
    close(fd);
    if (held) return tensor_error(err, size, "--dump: %s is in use by another run (pid %ld)", dir, (long)lk.l_pid);
    return tensor_error(err, size, "--dump: cannot lock %s: %s", path, strerror(why));
}

int tensors_set_dirs(const char *dump, const char *load, char *err, size_t size) {
    struct stat st;
    if (dump && mkdir(dump, 0777) != 0 && errno != EEXIST)
        return tensor_error(err, size, "--dump: cannot create %s: %s", dump, strerror(errno));
    if (dump && (stat(dump, &st) != 0 || !S_ISDIR(st.st_mode)))
        return tensor_error(err, size, "--dump: %s is not a directory", dump);
    if (dump && lock_dump_dir(dump, err, size) != 0) return -1;
    dump_dir = dump;
    load_dir = load;
    return 0;
}

const char *tensors_load_dir(void) { return load_dir; }

/* ---- dumping -------------------------------------------------------------- */
/* Letters, digits and '_'; any other run of characters becomes one '_'. */
static void file_name_part(const char *in, char *out, size_t size) {
    size_t w = 0;
    for (; *in && w + 1 < size; in++) {
        if (isalnum((unsigned char)*in))
            out[w++] = *in;
        else if (w && out[w - 1] != '_')
            out[w++] = '_';
    }
    while (w && out[w - 1] == '_') w--;
    out[w] = 0;
}

/* The name to dump `tensor` under in this test: its first dump keeps the
 * reduced name, its k-th gets "__k". A reduced name never holds "__", so a
 * repeat cannot take another tensor's name ("state #2" is state_2, the
 * second "state" state__2). 0, or -1 when out of memory. */
static int unique_name(Ctx *c, const char *tensor, char *name, size_t size) {
    Dumped *d = c->dumped, *end = c->dumped + c->n_dumped;
    char base[sizeof d->name];
    file_name_part(tensor, base, sizeof base);
    while (d < end && strcmp(d->name, base) != 0) d++;
    if (d == end) {
        if (c->n_dumped == c->dumped_cap) {
            size_t cap = c->dumped_cap ? 2 * c->dumped_cap : 64;
            Dumped *grown = realloc(c->dumped, cap * sizeof *grown);
            if (!grown) return -1;
            c->dumped = grown, c->dumped_cap = cap;
        }
        d = &c->dumped[c->n_dumped++];
        memcpy(d->name, base, sizeof base);
        d->times = 0;
    }
    if (d->times++)
        snprintf(name, size, "%s__%d", base, d->times);
    else
        snprintf(name, size, "%s", base);
    return 0;
}

static void dump(Ctx *c, const char *name, const void *x, int word, int ndim, const size_t *shape) {
    char path[4096], err[4200];
    int w = snprintf(path, sizeof path, "%s/%s__%s.npy", dump_dir, c->test_name, name);
    if (w < 0 || (size_t)w >= sizeof path) {
        test_error(c, "--dump: the path of %s__%s.npy is over %zu characters", c->test_name, name, sizeof path - 1);
        return;
    }
    if (npy_write(path, x, word, ndim, shape, err, sizeof err) != 0) test_error(c, "--dump: %s", err);
}

/* A tensor of `word`-byte elements under the test's unique name for it. */
static void dump_named(Ctx *c, const char *tensor, const void *x, int word, int ndim, const size_t *shape) {
    if (!dump_dir) return;
    char name[80];
    if (unique_name(c, tensor, name, sizeof name) != 0)
        test_error(c, "--dump: out of memory for the names of %s's tensors", c->test_name);
    else
        dump(c, name, x, word, ndim, shape);
}

void dump_floats(Ctx *c, const char *tensor, const float *x, int ndim, const size_t *shape) {
    dump_named(c, tensor, x, 4, ndim, shape);
}

void dump_doubles(Ctx *c, const char *tensor, const double *x, int ndim, const size_t *shape) {
    dump_named(c, tensor, x, 8, ndim, shape);
}

void dump_input(Ctx *c, const char *tensor, const float *x, int ndim, const size_t *shape) {
    c->inputs_dumped = true;
    dump_floats(c, tensor, x, ndim, shape);
}

/* ---- loading ---------------------------------------------------------------- */
int tensor_path(const char *dir, const char *test, const char *tensor, char *path, size_t size, char *err,
                size_t err_size) {
    snprintf(path, size, "%s/%s__%s.npy", dir, test, tensor);
    if (access(path, F_OK) == 0) return 0;
    snprintf(path, size, "%s/%s.npy", dir, tensor);
    if (access(path, F_OK) == 0) return 0;
    return tensor_error(err, err_size, "--load: neither %s/%s__%s.npy nor %s exists", dir, test, tensor, path);
}

int tensor_read(const char *test, const char *tensor, float *dst, int ndim, const size_t *shape, char *err,
                size_t err_size) {
    char path[4096], why[4300];
    NpyHeader h;
    if (tensor_path(load_dir, test, tensor, path, sizeof path, err, err_size) != 0) return -1;
    if (npy_read_header(path, &h, why, sizeof why) != 0) return tensor_error(err, err_size, "--load: %s", why);
    if (h.ndim != ndim || memcmp(h.shape, shape, (size_t)ndim * sizeof *shape) != 0) {
        char got[128], want[128];
        shape_tuple(h.ndim, h.shape, got, sizeof got);
        shape_tuple(ndim, shape, want, sizeof want);
        return tensor_error(err, err_size, "--load: %s has shape %s, this test runs %s, a shape it derives itself "
                            "(such as a capped T): not run", path, got, want);
    }
    if (npy_read_floats(path, &h, dst, why, sizeof why) != 0) return tensor_error(err, err_size, "--load: %s", why);
    /* a NaN or Inf in the input is the file's, not the kernel's: say so */
    size_t n = element_count(ndim, shape);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i])) {
            char at[128];
            index_tuple(i, ndim, shape, at, sizeof at);
            return tensor_error(err, err_size, "--load: %s: element %s (flat %zu) is %g: inputs must be finite", path,
                                at, i, dst[i]);
        }
    return 0;
}


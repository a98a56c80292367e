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

static int fail(char *err, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* "(2, 3)", "(5,)" or "()" as numpy writes a shape tuple. */
static void shape_tuple(int ndim, const size_t *shape, char *out, size_t size) {
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
    return rc ? fail(err, size, "writing %s failed: %s", path, strerror(why)) : 0;
}

/* The value of 'key' in a header dict: the text after its colon. */
static const char *dict_value(const char *dict, const char *key) {
    size_t klen = strlen(key);
    for (const char *p = dict; (p = strstr(p, key)) != NULL; p += klen) {
        if (p == dict || (p[-1] != '\'' && p[-1] != '"') || p[klen] != p[-1]) continue;
        const char *s = p + klen + 1;
        while (*s == ' ') s++;
        if (*s != ':') return NULL;
        for (s++; *s == ' '; s++) {}
        return s;
    }
    return NULL;
}

static int parse_dict(const char *path, const char *dict, NpyHeader *h, char *err, size_t size) {
    const char *d = dict_value(dict, "descr"), *fo = dict_value(dict, "fortran_order"), *sh = dict_value(dict, "shape");
    if (!d || !fo || !sh) return fail(err, size, "%s: malformed .npy header (descr, fortran_order or shape missing)", path);
    if (strncmp(d + 1, "<f4", 3) == 0 && (d[0] == '\'' || d[0] == '"') && d[4] == d[0])
        h->word = 4;
    else if (strncmp(d + 1, "<f8", 3) == 0 && (d[0] == '\'' || d[0] == '"') && d[4] == d[0])
        h->word = 8;
    else
        return fail(err, size, "%s: element type %.*s is not little-endian float32 or float64 ('<f4', '<f8')", path,
                    (int)strcspn(d, ","), d);
    if (strncmp(fo, "False", 5) != 0) return fail(err, size, "%s: Fortran order; only C order is read", path);
    if (*sh != '(') return fail(err, size, "%s: malformed shape in .npy header", path);
    h->ndim = 0;
    unsigned long long count = 1;
    for (const char *p = sh + 1;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || !isdigit((unsigned char)*p) || h->ndim == NPY_MAX_DIMS)
            return fail(err, size, "%s: malformed shape in .npy header", path);
        if (v && count > (1ull << 40) / v) /* no size_t overflow below */
            return fail(err, size, "%s: shape too large (over 2^40 elements)", path);
        count *= v ? v : 1;
        h->shape[h->ndim++] = (size_t)v;
        p = end;
    }
    return 0;
}

int npy_read_header(const char *path, NpyHeader *h, char *err, size_t size) {
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, size, "cannot read %s: %s", path, strerror(errno));
    unsigned char pre[12];
    int rc = -1;
    char *dict = NULL;
    size_t len = 0, lenbytes = 0;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, npy_magic, 6) != 0) {
        fail(err, size, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    lenbytes = pre[6] == 1 ? 2 : pre[6] == 2 || pre[6] == 3 ? 4 : 0;
    if (!lenbytes || fread(pre + 8, 1, lenbytes, f) != lenbytes) {
        fail(err, size, "%s: unsupported .npy version %d.%d or truncated header", path, pre[6], pre[7]);
        goto out;
    }
    for (size_t i = lenbytes; i-- > 0;) len = len << 8 | pre[8 + i];
    if (len > (1u << 20) || !(dict = malloc(len + 1)) || fread(dict, 1, len, f) != len) {
        fail(err, size, "%s: truncated or oversized .npy header", path);
        goto out;
    }
    dict[len] = 0;
    if (parse_dict(path, dict, h, err, size) != 0) goto out;
    h->data_offset = (long)(8 + lenbytes + len);
    size_t n = element_count(h->ndim, h->shape);
    if (fseek(f, 0, SEEK_END) != 0) {
        fail(err, size, "%s: cannot seek: %s", path, strerror(errno));
        goto out;
    }
    long have = ftell(f) - h->data_offset;
    if (have < 0 || (size_t)have != n * (size_t)h->word) {
        fail(err, size, "%s: %ld bytes of data, its shape needs %zu (truncated or padded file)", path, have,
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
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, size, "cannot read %s: %s", path, strerror(errno));
    size_t n = element_count(h->ndim, h->shape), done = 0;
    if (fseek(f, h->data_offset, SEEK_SET) == 0) {
        if (h->word == 4)
            done = fread(dst, 4, n, f);
        else
            for (double x; done < n && fread(&x, 8, 1, f) == 1; done++) dst[done] = (float)x;
    }
    fclose(f);
    return done == n ? 0 : fail(err, size, "%s: read %zu of %zu elements", path, done, n);
}

/* ---- the run's directories ------------------------------------------------ */
static const char *dump_dir, *load_dir;

/* One run per --dump directory: a write lock on DIR/.test_deltanet.lock,
 * held until the process ends (the system drops it even on SIGKILL). */
static int lock_dump_dir(const char *dir, char *err, size_t size) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/.test_deltanet.lock", dir) >= sizeof path)
        return fail(err, size, "--dump: the path '%.60s...' is too long", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0) return fail(err, size, "--dump: cannot write in %s: %s", dir, strerror(errno));
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &lk) == 0) return 0; /* fd stays open: the lock lasts the run */
    int why = errno;
    bool held = (why == EACCES || why == EAGAIN) && fcntl(fd, F_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
    close(fd);
    if (held) return fail(err, size, "--dump: %s is in use by another run (pid %ld)", dir, (long)lk.l_pid);
    return fail(err, size, "--dump: cannot lock %s: %s", path, strerror(why));
}

int tensors_set_dirs(const char *dump, const char *load, char *err, size_t size) {
    struct stat st;
    if (dump && mkdir(dump, 0777) != 0 && errno != EEXIST)
        return fail(err, size, "--dump: cannot create %s: %s", dump, strerror(errno));
    if (dump && (stat(dump, &st) != 0 || !S_ISDIR(st.st_mode)))
        return fail(err, size, "--dump: %s is not a directory", dump);
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
 * name, later ones get _2, _3... */
static void unique_name(Ctx *c, const char *tensor, char *name, size_t size) {
    char base[sizeof c->dumped[0]];
    file_name_part(tensor, base, sizeof base);
    int seen = 0;
    for (int i = 0; i < c->n_dumped; i++) seen += strcmp(c->dumped[i], base) == 0;
    if (c->n_dumped < MAX_DUMPED) memcpy(c->dumped[c->n_dumped++], base, sizeof base);
    if (seen)
        snprintf(name, size, "%s_%d", base, seen + 1);
    else
        snprintf(name, size, "%s", base);
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
    unique_name(c, tensor, name, sizeof name);
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

/* ---- the Delta-Net layer's inputs ---------------------------------------- */
const char *const layer_inputs[6] = {"q", "k", "v", "g", "beta", "state"};

int layer_tensor_shape(const Shape *sh, const char *tensor, size_t *shape) {
    size_t B = (size_t)sh->n_seqs, T = (size_t)sh->T, Hk = (size_t)sh->H_k, Hv = (size_t)sh->H_v;
    size_t Dk = (size_t)sh->D_k, Dv = (size_t)sh->D_v;
    size_t qk[4] = {B, T, Hk, Dk}, v[4] = {B, T, Hv, Dv}, gb[3] = {B, T, Hv}, st[4] = {B, Hv, Dv, Dk};
    const size_t *src = st;
    int ndim = 4;
    if (strcmp(tensor, "q") == 0 || strcmp(tensor, "k") == 0)
        src = qk;
    else if (strcmp(tensor, "v") == 0)
        src = v;
    else if (strcmp(tensor, "g") == 0 || strcmp(tensor, "beta") == 0)
        src = gb, ndim = 3;
    memcpy(shape, src, (size_t)ndim * sizeof *shape);
    return ndim;
}

/* ---- loading ---------------------------------------------------------------- */
int tensor_path(const char *dir, const char *test, const char *tensor, char *path, size_t size, char *err,
                size_t err_size) {
    snprintf(path, size, "%s/%s__%s.npy", dir, test, tensor);
    if (access(path, F_OK) == 0) return 0;
    snprintf(path, size, "%s/%s.npy", dir, tensor);
    if (access(path, F_OK) == 0) return 0;
    return fail(err, err_size, "--load: neither %s/%s__%s.npy nor %s exists", dir, test, tensor, path);
}

int layer_shape_from_files(const char *dir, const char *test, Shape *sh, char *err, size_t size) {
    NpyHeader h[6];
    char path[4096], why[4300];
    for (int i = 0; i < 6; i++) {
        if (tensor_path(dir, test, layer_inputs[i], path, sizeof path, err, size) != 0) return -1;
        if (npy_read_header(path, &h[i], why, sizeof why) != 0) return fail(err, size, "--load: %s", why);
        int want = i == 3 || i == 4 ? 3 : 4;
        if (h[i].ndim != want)
            return fail(err, size, "--load: %s has %d dimensions, %s has %d (docs/bench.md)", path, h[i].ndim,
                        layer_inputs[i], want);
        for (int d = 0; d < want; d++)
            if (h[i].shape[d] == 0 || h[i].shape[d] > 65535 * 16)
                return fail(err, size, "--load: %s: dimension %d is %zu", path, d, h[i].shape[d]);
    }
    Shape s = *sh;
    s.n_seqs = (int)h[0].shape[0], s.T = (int)h[0].shape[1], s.H_k = (int)h[0].shape[2], s.D_k = (int)h[0].shape[3];
    s.H_v = (int)h[2].shape[2], s.D_v = (int)h[2].shape[3];
    for (int i = 0; i < 6; i++) {
        size_t want[4];
        int nd = layer_tensor_shape(&s, layer_inputs[i], want);
        if (memcmp(want, h[i].shape, (size_t)nd * sizeof want[0]) != 0) {
            char got[128], exp[128];
            shape_tuple(nd, h[i].shape, got, sizeof got);
            shape_tuple(nd, want, exp, sizeof exp);
            tensor_path(dir, test, layer_inputs[i], path, sizeof path, err, size);
            return fail(err, size, "--load: %s has shape %s; with q %s and v as given it must be %s", path, got,
                        "(n_seqs, T, H_k, D_k)", exp);
        }
    }
    if (s.H_v % s.H_k != 0)
        return fail(err, size, "--load: H_v = %d (v) is not a multiple of H_k = %d (q)", s.H_v, s.H_k);
    *sh = s;
    return 0;
}

int load_floats(Ctx *c, const char *tensor, float *dst, int ndim, const size_t *shape) {
    char path[4096], err[4300];
    NpyHeader h;
    if (tensor_path(load_dir, c->test_name, tensor, path, sizeof path, err, sizeof err) != 0) {
        test_error(c, "%s", err);
        return -1;
    }
    if (npy_read_header(path, &h, err, sizeof err) != 0) {
        test_error(c, "--load: %s", err);
        return -1;
    }
    if (h.ndim != ndim || memcmp(h.shape, shape, (size_t)ndim * sizeof *shape) != 0) {
        char got[128], want[128];
        shape_tuple(h.ndim, h.shape, got, sizeof got);
        shape_tuple(ndim, shape, want, sizeof want);
        test_fail(c, "--load: %s has shape %s, this test runs %s (a shape the test derives itself, e.g. a capped T)",
                  path, got, want);
        return -1;
    }
    if (npy_read_floats(path, &h, dst, err, sizeof err) != 0) {
        test_error(c, "--load: %s", err);
        return -1;
    }
    /* a NaN or Inf in the input is the file's, not the kernel's: say so */
    size_t n = element_count(ndim, shape);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i])) {
            char at[128];
            index_tuple(i, ndim, shape, at, sizeof at);
            test_error(c, "--load: %s: element %s (flat %zu) is %g: inputs must be finite", path, at, i, dst[i]);
            return -1;
        }
    return 0;
}

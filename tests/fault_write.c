/* LD_PRELOAD shim for tests/test_report.sh: a full disk without a tmpfs, and
 * a device out of memory (FAULT_MALLOC_OVER, below), a host out of memory
 * (FAULT_CALLOC_OVER).
 *   FAULT_PATH=SUBSTRING  files opened for writing whose path contains it...
 *   FAULT_AFTER=N         ...after the first N such opens (default 0)
 * are opened as /dev/full instead: the open succeeds and every write that
 * reaches the file fails with ENOSPC, as on a full disk. Opens for reading
 * and other paths are left alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int faulty(const char *path, int writing) {
    static int seen;
    const char *match = getenv("FAULT_PATH");
    if (!writing || !match || !*match || !strstr(path, match)) return 0;
    const char *after = getenv("FAULT_AFTER");
    return seen++ >= (after ? atoi(after) : 0);
}

static int open_as(const char *sym, const char *path, int flags, mode_t mode) {
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
    if (faulty(path, (flags & O_ACCMODE) != O_RDONLY)) return real("/dev/full", O_WRONLY);
    return real(path, flags, mode);
}

static FILE *fopen_as(const char *sym, const char *path, const char *mode) {
    FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, sym);
    if (faulty(path, strpbrk(mode, "wa+") != NULL)) return real("/dev/full", "w");
    return real(path, mode);
}

#define MODE_ARG(flags, mode)                \
    mode_t mode = 0;                         \
    if (flags & (O_CREAT | O_TMPFILE)) {     \
        va_list ap;                          \
        va_start(ap, flags);                 \
        mode = (mode_t)va_arg(ap, int);      \
        va_end(ap);                          \
    }

int open(const char *path, int flags, ...) {
    MODE_ARG(flags, mode)
    return open_as("open", path, flags, mode);
}
int open64(const char *path, int flags, ...) {
    MODE_ARG(flags, mode)
    return open_as("open64", path, flags, mode);
}
FILE *fopen(const char *path, const char *mode) { return fopen_as("fopen", path, mode); }
FILE *fopen64(const char *path, const char *mode) { return fopen_as("fopen64", path, mode); }

/* The limit in bytes an environment variable sets, or -1 (getenv does not allocate). */
static long limit_of(const char *var, long *cached) {
    if (*cached == -2) {
        const char *s = getenv(var);
        *cached = s ? atol(s) : -1;
    }
    return *cached;
}

/* FAULT_MALLOC_OVER=N: malloc of more than N bytes returns NULL (calloc is
 * left alone): on the CPU backend kdn_malloc is malloc, so this is a device
 * that runs out of memory while the host has plenty. FAULT_MALLOC_SPARE=K:
 * the first K such mallocs still succeed (K = 1: a device buffer is had, the
 * host staging image that fills it is not). */
extern void *__libc_malloc(size_t);
void *malloc(size_t bytes) {
    static long over = -2, spare = -2;
    long limit = limit_of("FAULT_MALLOC_OVER", &over);
    if (limit < 0 || bytes <= (size_t)limit) return __libc_malloc(bytes);
    if (limit_of("FAULT_MALLOC_SPARE", &spare) > 0) return spare--, __libc_malloc(bytes);
    return NULL;
}

/* FAULT_CALLOC_OVER=N: calloc of more than N bytes returns NULL: the test's
 * host arrays (harness/context.c) cannot be had although the estimate said
 * they fit (memory another process took meanwhile). */
extern void *__libc_calloc(size_t, size_t);
void *calloc(size_t n, size_t size) {
    static long over = -2;
    long limit = limit_of("FAULT_CALLOC_OVER", &over);
    return limit >= 0 && size && n > (size_t)limit / size ? NULL : __libc_calloc(n, size);
}

/* A test's verdict: failed, errored or skipped, with its message, and the
 * shape it ran (the lowest layer of a test's context: dumping, loading and
 * the memory helpers report through it). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void test_fail(Ctx *c, const char *fmt, ...) {
    size_t used = strlen(c->msg);
    if (used + 2 >= sizeof c->msg) return;
    if (used) c->msg[used++] = '\n', c->msg[used] = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + used, sizeof c->msg - used, fmt, ap);
    va_end(ap);
    c->failed = true;
}

void test_skip(Ctx *c, const char *fmt, ...) {
    int n = snprintf(c->msg, sizeof c->msg, "--set does not apply: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + n, sizeof c->msg - (size_t)n, fmt, ap);
    va_end(ap);
    c->skipped = true;
}

void test_error(Ctx *c, const char *fmt, ...) {
    char why[sizeof c->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    test_fail(c, "%s", why);
    c->errored = true;
}

int test_failed(const Ctx *c) { return c->failed; }

void set_shape_desc(Ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->shape, sizeof c->shape, fmt, ap);
    va_end(ap);
}

/* Tensors in and out (--dump DIR, --load DIR) as .npy files (docs/bench.md,
 * "Tensors in and out"). A numpy shape is the ggml shape reversed: ggml
 * ne [a, b, c, d] is numpy (d, c, b, a). Which tensors a test reads and
 * their shapes are its phase's. */
#ifndef HARNESS_TENSORS_H
#define HARNESS_TENSORS_H

#include "harness.h"

#include <stddef.h>

#define NPY_MAX_DIMS 8

/* ---- .npy files (format 1.0 written; 1.x-3.x read; little-endian, C order) */
typedef struct {
    int ndim;
    size_t shape[NPY_MAX_DIMS];
    int word;         /* 4 ('<f4') or 8 ('<f8') bytes per element */
    long data_offset; /* where the elements start */
} NpyHeader;

/* word 4: data is float, 8: double. 0, or -1 with a message in err. */
int npy_write(const char *path, const void *data, int word, int ndim, const size_t *shape, char *err, size_t err_size);
/* Reads and checks the header (and that the file holds all its elements). */
int npy_read_header(const char *path, NpyHeader *h, char *err, size_t err_size);
/* Writes the message (printf-style) to err; returns -1, as the readers do. */
int tensor_error(char *err, size_t size, const char *fmt, ...);
/* "(2, 3)", "(5,)" or "()" as numpy writes a shape tuple. */
void shape_tuple(int ndim, const size_t *shape, char *out, size_t size);
/* Reads the elements as float ('<f8' is narrowed) into dst, which holds
 * h->shape's product; h from npy_read_header of the same path. */
int npy_read_floats(const char *path, const NpyHeader *h, float *dst, char *err, size_t err_size);

/* ---- the run's directories (main sets them; NULL: off) ------------------
 * Creates dump_dir if it does not exist; 0, or -1 with a message. */
int tensors_set_dirs(const char *dump_dir, const char *load_dir, char *err, size_t err_size);
const char *tensors_load_dir(void);

/* ---- dumping from a test (no-ops without --dump) ------------------------
 * Files are DIR/<test>__<tensor>.npy, the tensor's name reduced to letters,
 * digits and '_'; a name dumped twice in one test gets _2, _3... */
void dump_floats(Ctx *c, const char *tensor, const float *x, int ndim, const size_t *shape);
void dump_doubles(Ctx *c, const char *tensor, const double *x, int ndim, const size_t *shape);
/* The same for a test's structured inputs: once a test has dumped one, its
 * device input buffers are no longer dumped one by one (dev_in). */
void dump_input(Ctx *c, const char *tensor, const float *x, int ndim, const size_t *shape);

/* ---- loading into a test (--load) ---------------------------------------
 * The file of a tensor: DIR/<test>__<tensor>.npy, else DIR/<tensor>.npy;
 * -1 with a message when neither exists. */
int tensor_path(const char *dir, const char *test, const char *tensor, char *path, size_t size, char *err,
                size_t err_size);
/* The --load file of a test's tensor, whose shape must be exactly `shape`,
 * into dst: 0, or -1 with why in err (missing, malformed, another shape, a
 * NaN or Inf). */
int tensor_read(const char *test, const char *tensor, float *dst, int ndim, const size_t *shape, char *err,
                size_t err_size);
/* Reads a tensor whose shape must be exactly `shape` into dst (context.c). A file that
 * is missing, malformed, of another shape or holds a NaN or Inf is an input
 * error naming the file: the test is left at once (test_abandon), nothing
 * run on inputs it was not given, and the run exits 2. */
void load_floats(Ctx *c, const char *tensor, float *dst, int ndim, const size_t *shape);

#endif

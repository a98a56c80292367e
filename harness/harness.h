/* The test harness: a test is a row of data (phase, name, variant, tolerance,
 * shape, function); the function builds inputs, runs kernels, computes the
 * double-precision reference and compares through the helpers below. */
#ifndef HARNESS_H
#define HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_PHASE 8

/* An output passes when every element has
 *     |got - ref| <= atol * max(1, rms(ref)) + rtol * |ref|
 * (atol is absolute for outputs of magnitude up to 1 and scales with the
 * output's RMS past it) and, when nrel > 0, its normwise relative error
 * ||got - ref|| / ||ref|| <= nrel. docs/tolerances.md derives the classes. */
typedef struct {
    double atol, rtol;
    double nrel; /* normwise bound; 0: none */
} Tol;

/* A test's case parameters: typed data the suite defines (struct TestCase,
 * in the suite's own header). The harness never reads its fields: it holds
 * a row's case by pointer, writes the --set keys the suite registers
 * (SetKey) at their offsets, and hands the case to the suite's hooks. */
typedef struct TestCase TestCase;

typedef struct Ctx Ctx;
typedef struct Test Test;
struct Test {
    int phase;
    const char *name;
    const char *variant; /* the implementation the row tests (the suite's words) */
    Tol tol;
    const TestCase *shape; /* the row's case (static: a compound literal of the table) */
    void (*run)(const Test *t, Ctx *c);
};

/* ---- the least a test does, known before it runs -------------------------
 * Memory needs no estimate: every host array and device buffer of a test is
 * taken through the helpers below, which refuse the test where a limit
 * (--max-mem, the machine's memory) would be passed. Time does: a table
 * whose rows take their shape from --set or --load gives the least
 * arithmetic a row does at its shape, and a row estimated over --max-seconds
 * is refused before it runs (docs/ci.md). */
typedef struct {
    double ref_flops;    /* the host reference's arithmetic (double precision) */
    double kernel_flops; /* the kernels' arithmetic */
} Work;

typedef struct {
    const Test *tests;
    int count;
    /* the least work of test t (a row of this table with --set applied);
     * NULL: the table's shapes are fixed and small */
    Work (*least_work)(const Test *t);
    /* the rows' shapes are the test (literal results, a named length): --set
     * and --load leave them alone, and the log says so */
    bool fixed_shapes;
    /* the rows' shape from --load's files (DIR, the test's name; 0, or -1 with
     * a message); NULL: the table's rows keep theirs */
    int (*shape_from_files)(const char *dir, const char *test, TestCase *sh, char *err, size_t err_size);
} TestList;

/* ---- what a program registers: its suite ----------------------------------
 * A --set key: an int field of the suite's TestCase. The harness parses
 * KEY=VALUE, checks the value against the key's range (once, when parsed)
 * and writes it at `offset` into the case of every row the suite reshapes. */
typedef struct {
    const char *key;
    size_t offset;            /* of the int field in struct TestCase */
    long lo, hi;              /* the range; with `pair`, the two values taken */
    bool pair;                /* lo or hi, nothing between */
    const char *const *names; /* the values' names, of 0, 1, ... (NULL-ended; NULL: numbers only) */
    const char *note;         /* appended to the range where errors say it (NULL: none) */
    bool dims;                /* a tensor dimension: --load takes it from the files */
} SetKey;

/* A test renamed: its rows keep their former name's inputs (the seed hashes
 * it) and logs under the former name compare with the current one. */
typedef struct {
    const char *former, *current;
} Rename;

typedef struct {
    const char *program;             /* the program's name: messages, the log's first line */
    const char *const *phase_titles; /* [1..MAX_PHASE]: the phases' headings */
    const TestList *const *tables;   /* in run order; a phase may have several */
    int n_tables;
    size_t case_size;                /* sizeof (struct TestCase) */
    const SetKey *set_keys;
    int n_set_keys;
    const char *set_rows;            /* the rows --set reshapes, as its refusal names them */
    /* whether --set and --load reshape a row of this case (the tables of
     * fixed shapes are never reshaped, whatever this says) */
    bool (*takes_set)(const TestCase *c);
    /* the rules between keys on a reshaped case: 0, or 2 with why */
    int (*check_case)(const Test *row, const TestCase *c, char *err, size_t err_size);
    const Rename *renames;
    int n_renames;
} Suite;

/* ---- random inputs (deterministic per seed and test name; rng.c) ------ */
uint64_t rng_next(Ctx *c);
double rng_uniform(Ctx *c);              /* [0, 1) */
double rng_normal(Ctx *c);               /* N(0, 1) */
void fill_uniform(Ctx *c, float *x, size_t n, double lo, double hi);
void fill_normal(Ctx *c, float *x, size_t n, double mean, double sd);

/* ---- memory: host arrays and guarded device buffers, freed after the test
 * (context.c, as the comparison below) */
float *host_f(Ctx *c, size_t n);
double *host_d(Ctx *c, size_t n);
/* Device buffer holding a copy of host[0..n). */
float *dev_in(Ctx *c, const char *name, const float *host, size_t n);
/* Device buffer filled with NaN, so an element the kernel never writes fails. */
float *dev_out(Ctx *c, const char *name, size_t n);
/* Waits for queued kernels; checks runtime errors and every buffer's guards.
 * Returns 0 if all is well, else records the failure and returns -1. */
int dev_sync(Ctx *c);
void download(Ctx *c, float *host, const float *dev, size_t n);
/* A test that runs many cases in turn (the generated grid) frees each case's
 * host arrays and device buffers before the next: test_mark before the case,
 * test_release after it (after its dev_sync, which checks the guards). */
typedef struct {
    int bufs, host;
} TestMark;
TestMark test_mark(const Ctx *c);
void test_release(Ctx *c, TestMark m);

/* ---- comparison --------------------------------------------------------- */
/* Compares a device output (rows x cols) with its reference. Records
 * max |got - ref| and its element, the normwise relative error and NMSE,
 * NaN/Inf, and fails the test when any element is outside the tolerance or
 * the normwise error exceeds its bound. Returns 0 on pass. */
int expect_close(Ctx *c, const char *what, const float *dev, const double *ref, int rows, int cols, Tol tol);
/* The same for an output already on the host. */
int expect_close_host(Ctx *c, const char *what, const float *got, const double *ref, int rows, int cols, Tol tol);
/* The verdict (verdict.c, up to is_cpu_backend: limits.c).
 * Marks the test failed with a message (printf-style). */
void test_fail(Ctx *c, const char *fmt, ...);
/* The shape --set asked for is one the test cannot run: the test is skipped
 * with "--set does not apply: <why>" on its line (never a failure, never an
 * abort). The test returns right after. */
void test_skip(Ctx *c, const char *fmt, ...);
/* Whether the test has failed so far. */
int test_failed(const Ctx *c);
/* Describes the shape actually run, printed on the test's line. */
void set_shape_desc(Ctx *c, const char *fmt, ...);
/* Whether --set gave the running test's case this key (a key of the suite's
 * table): a value the user chose, which a test should run as given. */
int set_key_given(const char *key);
int is_cpu_backend(void);

/* ---- benchmarking (bench.c) ----------------------------------------------
 * The device work a test would time under --bench goes through bench_work:
 * normally it runs `work` once; with --bench it also runs it repeatedly,
 * timed, and records the timing under `label` (several labels per test make
 * a side-by-side comparison). `work` must be re-runnable on the same buffers.
 * bytes and flops: the work's algorithmic traffic and arithmetic, for GB/s
 * and GFLOP/s (docs/bench.md says how each kernel's are counted). */
void bench_work(Ctx *c, const char *label, void (*work)(void *arg), void *arg, double bytes, double flops);

#endif

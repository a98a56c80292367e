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

/* A test's case parameters: each field has one meaning (0: the test does
 * not use it). Phases 1-3 size their building-block operands with the
 * first group; the Delta-Net tests (phases 4-8) use the rest. */
typedef struct {
    int len;        /* a vector operation's elements; cumsum: tokens per segment */
    int rows, cols; /* a matrix operand (broadcast_mul, transpose; GEMM: the M x N output) */
    int inner;      /* GEMM: the summed dimension K */
    int order;      /* an order x order matrix (masks, the triangular system) */
    int rhs;        /* triangular solve: right-hand sides (columns of B and X) */
    int count;      /* independent problems in one launch: cumsum segments, decay-mask heads */
    int T, n_seqs, H_k, H_v, D_k, D_v, chunk;
    int head_map; /* HEAD_MAP_* */
    int decay;    /* DECAY_*: which log-decays the inputs draw */
    int state;    /* initial state's scale: 0 zero, s > 0 entries N(0, (0.3 s)^2) */
    int chunk_index;  /* a single-chunk test (phase 7): the chunk it checks */
    int decode_steps; /* prefill_then_decode: one-token recurrent steps after the prefill */
    int past_split;   /* auto_*: T = the backend's recurrent/chunked split + past_split */
    /* the library's entry point (gdn_* rows, phases/phase8_gdn.c) */
    int kda;       /* 1: the per-key-dimension gate g [D_k, H_v, T, n_seqs]; 0: scalar */
    int permuted;  /* 1: q, k, v passed as non-contiguous views */
    int snapshots; /* K: state snapshots in dst (>= 1) */
    int path;      /* kdn_path the call asks for (0: KDN_PATH_AUTO) */
    int state_dst; /* STATE_IN_DST, or where the call's state_dst points (phases/phase8_gdn.c) */
} Shape;

enum { HEAD_MAP_TILED = 0, HEAD_MAP_BLOCK = 1, HEAD_MAP_BOTH = 2 /* a test that runs each */ };
enum { DECAY_QWEN = 0, DECAY_STRONG = 1, DECAY_WEAK = 2, DECAY_BURSTY = 3 /* weak, with strong bursts */ };

typedef struct Ctx Ctx;
typedef struct Test Test;
struct Test {
    int phase;
    const char *name;
    const char *variant; /* the implementation the row tests: "unfused", "recurrent", "two_launch", "auto", "library", "all" */
    Tol tol;
    Shape shape;
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
    int (*shape_from_files)(const char *dir, const char *test, Shape *sh, char *err, size_t err_size);
} TestList;

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

/* Harness internals shared by its own files and its unit tests (tests/). */
#ifndef HARNESS_INTERNAL_H
#define HARNESS_INTERNAL_H

#include "harness.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>

/* ---- comparison core (compare.c) ---------------------------------------- */
#define MAX_REPORTED 5
typedef struct {
    double max_diff;        /* over finite elements */
    size_t worst;           /* index of max_diff */
    size_t n_bad;           /* outside tolerance, NaN/Inf included */
    size_t n_nonfinite;     /* NaN or Inf in got */
    size_t first_nonfinite;
    size_t first_bad[MAX_REPORTED];
    double scale;           /* max(1, rms(ref)): the unit of atol */
    double nrel;            /* ||got - ref|| / ||ref|| over finite pairs */
    double nmse;            /* nrel^2: ggml's NMSE */
    bool nrel_bad;          /* nrel above tol.nrel */
} Comparison;
Comparison compare_arrays(const float *got, const double *ref, size_t n, Tol tol);

/* ---- guard regions (context.c) ------------------------------------------ */
#define GUARD_FLOATS 64
#define GUARD_WORD 0x7fa5a5a5u /* a NaN no kernel computes */
void guard_fill(uint32_t *g, size_t n);
/* Index of the first word that differs from the pattern, or -1. */
long guard_first_damage(const uint32_t *g, size_t n);

/* ---- one test's context (context.c) ------------------------------------- */
typedef struct {
    char name[32];
    float *base;    /* allocation: guard | data | guard */
    size_t n;
} DevBuf;

/* One bench_work label's timing (--bench). A label a test times again
 * (the same variant on another head map) is kept as "<label>#2", "#3"...:
 * a log row's key (name, bench:<label>) is unique. */
#define MAX_BENCH 8
typedef struct {
    char label[48];
    double median_ms, min_ms;
    double bytes, flops;
    long launches; /* kernel launches per call */
    int runs;
} BenchResult;

#define MAX_BUFS 96
#define MAX_HOST 128
/* ---- limits (limits.c) -------------------------------------------------- */
/* The memory a test may take: --max-mem for each of host and device
 * memory, and what the machine has (taken when the test starts). */
typedef struct {
    double max_mem;
    double host_room;      /* physical memory, or ulimit -v/-d less what was mapped */
    const char *host_what; /* which of them */
    double dev_room;       /* the device's memory; 0: device buffers are host memory */
} MemoryLimits;
MemoryLimits memory_limits(double max_mem);
/* 0 when `more` bytes on top of `held` (of host or device memory) fit; else
 * 1 with the numbers in why, naming `what` (short enough for the log's
 * shape column). */
int memory_refusal(const MemoryLimits *m, bool device, double held, double more, const char *what, char *why,
                   size_t size);
double least_seconds(const Work *w);
/* 0 when the work's estimate fits max_seconds; else 1 with the numbers. */
int time_refusal(const Work *w, double max_seconds, char *why, size_t size);
/* The refusal of a test whose launch the CPU executor stopped at max_seconds. */
void time_stop_refusal(double max_seconds, char *why, size_t size);
/* "812 bytes", "12.0 KiB", "16.0 GiB"; "3.2 ms", "4.1 s" */
void format_bytes(double bytes, char *out, size_t size);
void format_seconds(double s, char *out, size_t size);

/* A tensor name dumped in this test and how often (its repeats' suffixes). */
typedef struct {
    char name[48];
    int times;
} Dumped;
struct Ctx {
    const char *test_name; /* for --dump and --load file names (tensors.c) */
    bool inputs_dumped;    /* a structured input was dumped: dev_in dumps no more */
    Dumped *dumped;        /* malloc'd, n_dumped of them (ctx_end frees it) */
    size_t n_dumped, dumped_cap;
    uint64_t rng_state;
    bool verbose;
    int bench_reps; /* 0: not benchmarking */
    BenchResult bench[MAX_BENCH];
    int n_bench;
    bool failed;
    bool skipped; /* test_skip: msg says why */
    bool errored; /* failed by bad input or an I/O error, not by the kernels (exit 2) */
    bool compared;
    /* a guard damaged to its outer word where device memory is host memory
     * (the CPU build): the store may have reached the allocator's own data
     * past the guard, so nothing of this test is freed (freeing would abort
     * the run) */
    bool heap_damaged;
    double max_diff;  /* the largest over the outputs compared ... */
    char worst[96];   /* ... at this element, "<output>[row,col]" */
    double nrel, nmse; /* the largest over the outputs compared */
    char outputs[4096]; /* a line per output compared, shown by --verbose */
    char msg[1024];
    char shape[160];
    DevBuf bufs[MAX_BUFS];
    int n_bufs;
    void *host[MAX_HOST];
    int n_host;
    /* where a test refused for its memory is abandoned (run_test's
     * setjmp); NULL outside a run: such a refusal ends the process */
    jmp_buf *abandon;
    bool refused; /* its memory would pass a limit: msg says which */
    MemoryLimits limits;
    /* bytes held through the helpers: host arrays and device buffers now
     * (test_release frees a case's mid-test), and their peaks with the
     * moment's temporaries (upload images, downloads) */
    double host_now, host_peak, dev_now, dev_peak;
    size_t host_bytes[MAX_HOST]; /* each host array's size, for test_release */
};
void ctx_begin(Ctx *c, const Test *t, uint64_t seed, bool verbose, int bench_reps, double max_mem);
void ctx_end(Ctx *c); /* frees everything the test allocated */
/* Leaves the test at once, its verdict and message already recorded (a
 * refusal, an input it cannot take): longjmp to run_test, which reports it;
 * ctx_end frees what it had and the run goes on with the next test. Outside
 * a run (no abandon point) the message goes to stderr and the process exits
 * with `status`. */
_Noreturn void test_abandon(Ctx *c, int status);

/* ---- options (options.c) ------------------------------------------------ */
#define MAX_PATTERNS 32
#define MAX_SET_KEYS 32 /* bits of Options.set_fields */
#define MAX_SEED 0x7fffffffL
#define MAX_SEED_TEXT "2147483647"
typedef struct {
    bool list, help, verbose, env;
    int bench_reps; /* --bench: timed runs per label (--reps), 0 without --bench */
    bool phase_selected[MAX_PHASE + 1];
    bool any_phase;
    const char *patterns[MAX_PATTERNS];
    int n_patterns;
    uint64_t seed;
    const char *log_path;              /* --log FILE or DIR */
    const char *junit_path;            /* --junit FILE */
    const char *compare_old, *compare_new; /* --compare OLD NEW */
    double max_diff_growth;            /* --max-diff-growth (default 2) */
    double time_threshold_pct;         /* --time-threshold (default 10) */
    const char *dump_dir, *load_dir;   /* --dump DIR, --load DIR */
    double max_mem;                    /* --max-mem: bytes of host, and of device, memory per test (0: the default) */
    double max_seconds;                /* --max-seconds: estimated seconds per test */
    int set_values[MAX_SET_KEYS];      /* --set KEY=VALUE: the suite's key i's value ... */
    unsigned set_fields;               /* ... where bit i is set */
} Options;
#define DEFAULT_SEED 20261122u
/* --max-mem's default: 16 GiB, or the device's memory where that is larger (memory_limits) */
#define DEFAULT_MAX_MEM (16.0 * 1024 * 1024 * 1024)
#define DEFAULT_MAX_SECONDS 3600.0
/* 0 on success; otherwise writes a message into err and returns the exit
 * status to use (2). */
int parse_options(int argc, char **argv, Options *o, char *err, size_t err_size);
bool test_selected(const Options *o, const Test *t);
/* ---- --set (set.c) ----------------------------------------------------- */
/* A whole number in [lo, hi] (the options' and the keys' values). */
bool parse_whole(const char *s, long lo, long hi, long *out);
/* One --set KEY=VALUE into o: 0, or 2 with a message (an unknown key, a
 * value out of its key's range). */
int parse_set(const char *arg, Options *o, char *err, size_t err_size);
/* The row with the --set values (and --load's dimensions) applied, its case
 * written to room (the suite's case_size bytes), where the suite reshapes the
 * row; else *out = *t. 0, or 2 with a message when the shape is impossible. */
int apply_set(const Options *o, const Test *t, Test *out, TestCase *room, char *err, size_t err_size);

/* ---- registry (registry.c) ---------------------------------------------- */
/* The suite the program runs (main passes the phases'; it must outlive the
 * run). Before parse_options. */
void registry_use(const Suite *suite);
const Suite *registry_suite(void);
int registry_count(void);
const Test *registry_get(int i);
/* Levenshtein distance (b's first 64 characters), for "did you mean". */
int edit_distance(const char *a, const char *b);
/* Up to n names closest to `name` (edit distance), for "did you mean". */
int registry_suggest(const char *name, const char **out, int n);
/* The least work of row (with shaped: --set applied); false when its table
 * has no least_work hook. */
bool registry_least_work(const Test *row, const Test *shaped, Work *w);
/* Whether --set and --load reshape row: the suite's takes_set says so, and
 * its table is not one of fixed shapes. */
bool registry_reshapes(const Test *row);
/* --load: row's shape from the files in dir, by its table's hook (0 where it
 * has none), or -1 with a message. */
int registry_shape_from_files(const Test *row, const char *dir, TestCase *sh, char *err, size_t err_size);
/* A renamed test's or variant's former name (name itself where none is
 * registered): its inputs' seed hashes it, so a rename changes no input. */
const char *registry_former_name(const char *name);
/* The current name of a former one (name itself where none): --compare
 * keys an old log's rows by today's names. */
const char *registry_current_name(const char *name);

/* ---- benchmarking (bench.c) -------------------------------------------- */
#define DEFAULT_REPS 20
/* The lines under a test's result: one per label, with speed-ups against the first. */
void bench_print(FILE *out, const BenchResult *bench, int n);
/* One line before the first test: how timings are taken. */
void bench_print_method(FILE *out, int reps);

/* ---- running (runner.c; test_error: verdict.c) -------------------------- */
/* What a test left behind, for the line, the log and the JUnit report. */
typedef struct {
    const Test *test;
    bool passed, compared, skipped; /* skipped: passed too, msg says why */
    bool errored; /* an input or I/O error (test_error), not a kernel failure */
    bool refused; /* its memory or time would pass a limit (msg says which) */
    double host_peak, dev_peak; /* bytes it held at most (Ctx) */
    double max_diff;
    char worst[96];
    double nrel, nmse;
    char outputs[4096];
    char shape[256]; /* the shape run, or the refusal */
    char msg[1024];
    BenchResult bench[MAX_BENCH];
    int n_bench;
    double seconds; /* wall time of the test, for the JUnit report */
} TestResult;

/* Runs one test and prints its line; fills r, returns r->passed. */
bool run_test(const Test *t, const Options *o, FILE *out, TestResult *r);
/* Runs the selected tests, printing a line each and the closing summary.
 * *results (malloc'd, *n of them) receives every test's outcome. Returns
 * the number of failures. */
int run_selected(const Options *o, FILE *out, TestResult **results, int *n);
/* Fails the test for a reason outside the kernels (an unreadable or non-finite
 * --load input, a --dump write error): printf-style; the run exits 2. */
void test_error(Ctx *c, const char *fmt, ...);

/* ---- reports (report.c, compare_logs.c) ---------------------------------- */
/* The log's first line, "# <program> log v3" (report.c). */
const char *log_magic(void);
/* The log's columns in order, one line each: X(id, name, kind, judged), kind
 * saying what the column holds and judged how --compare compares it (their
 * values: compare_logs.c). report.c writes a row's values in this order; the
 * column line is made from the names here. */
#define LOG_COLUMN_TABLE(X)                  \
    X(PHASE_COL, "phase", PHASE, SHOWN)      \
    X(NAME, "name", KEY, SHOWN)              \
    X(VARIANT, "variant", KEY, SHOWN)        \
    X(SHAPE, "shape", TEXT, SHOWN)           \
    X(MAX_DIFF, "max_diff", MEASURE, ERROR)  \
    X(WORST, "worst", TEXT, SHOWN)           \
    X(NREL, "nrel", RATIO, ERROR)            \
    X(NMSE, "nmse", RATIO, SHOWN)            \
    X(ATOL, "atol", MEASURE, BOUND)          \
    X(RTOL, "rtol", MEASURE, BOUND)          \
    X(NREL_TOL, "nrel_tol", MEASURE, BOUND)  \
    X(STATUS_COL, "status", STATUS, SHOWN)   \
    X(MEDIAN, "median_us", TIMING, TIME)     \
    X(MIN, "min_us", TIMING, SHOWN)          \
    X(BYTES, "bytes", TIMING, SHOWN)         \
    X(FLOPS, "flops", TIMING, SHOWN)
#define LOG_COLUMN_WITH_TAB(id, name, kind, judged) "\t" name
/* "phase\tname\t...\tflops": the names joined by tabs (past the first tab) */
#define LOG_COLUMNS (LOG_COLUMN_TABLE(LOG_COLUMN_WITH_TAB) + 1)
#define LOG_END "# end\t" /* last line: "# end\t<rows>", so a log cut between rows is seen */
/* "# incomplete\t<why>" before the end line of a run cut short (a signal):
 * its rows are true, but tests are missing; --compare refuses it. */
#define LOG_INCOMPLETE "# incomplete\t"
/* The run's outputs (--log FILE|DIR, --junit FILE), written as tests finish:
 * reports_open before the first test (an unwritable path or --log equal to
 * --junit: 2 with the reason in err; installs the SIGINT/SIGTERM/SIGPIPE/
 * SIGHUP handler that keeps the results so far, marked incomplete, of the
 * `total` selected tests), reports_progress after each test, reports_close at
 * the end (0, or 2 after printing why). */
int reports_open(const Options *o, int total, char *err, size_t err_size);
void reports_progress(const TestResult *r, int n);
int reports_close(const TestResult *r, int n);
/* "PASS", "FAIL" or "SKIP" (--set does not apply). */
const char *result_status(const TestResult *r);
/* "exact" or "<atol>+<rtol>*|ref|[,nrel<=<bound>]", for lines and reports. */
void describe_tol(const Tol *tol, char *out, size_t size);
/* The commit the binary was built from, with "-dirty" (build time). */
const char *build_commit(void);
/* A whole log or JUnit report by temp-and-rename (tests/report_escape.c). */
int write_log(const char *path, const Options *o, const TestResult *r, int n);
int write_junit(const char *path, const TestResult *r, int n);
/* Compares two logs: 0 no regression, 1 regression, 2 unreadable log. */
int compare_logs(const Options *o, FILE *out);

#endif

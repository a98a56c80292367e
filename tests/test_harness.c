/* Unit tests of the harness and the CPU SIMT executor: the comparison and
 * its NaN handling, guards, options, determinism, the verdict path, and
 * kernels that are wrong on purpose (tests/executor_kernels.cpp). */
#define _POSIX_C_SOURCE 200809L
#include "../harness/internal.h"
#include "../harness/tensors.h"
#include "../kernels/kdn.h"
#include "../reference/linalg.h"
#include "../phases/phases.h"
#include "executor_kernels.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int checks, failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            printf("test_harness: FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

static const Test dummy = {1, "unit", "unfused", {0, 0, 0}, CASE(0), NULL};

/* ---- comparison ---------------------------------------------------------- */
static void test_compare(void) {
    float got[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    double ref[4] = {1.0, 2.0, 3.0, 4.0};
    Tol tol = {1e-6, 1e-6, 0};
    CHECK(compare_arrays(got, ref, 4, tol).n_bad == 0);
    ref[2] = 3.0 + 2e-5; /* outside 1e-6 * rms(ref) + 1e-6 * 3 = 5.7e-6 */
    Comparison r = compare_arrays(got, ref, 4, tol);
    CHECK(r.n_bad == 1 && r.worst == 2 && r.first_bad[0] == 2);
    CHECK(fabs(r.max_diff - 2e-5) < 1e-9);
    Tol rel = {0.0, 1e-5, 0}; /* the relative part admits it: 1e-5 * 3 > 2e-5 */
    CHECK(compare_arrays(got, ref, 4, rel).n_bad == 0);
    ref[2] = 3.0;
    /* NaN and Inf fail however small the other differences are */
    got[1] = NAN;
    r = compare_arrays(got, ref, 4, (Tol){1e30, 1e30, 0});
    CHECK(r.n_bad == 1 && r.n_nonfinite == 1 && r.first_nonfinite == 1 && r.max_diff == 0.0);
    got[1] = INFINITY;
    CHECK(compare_arrays(got, ref, 4, (Tol){1e30, 1e30, 0}).n_nonfinite == 1);
    got[1] = 2.0f;
    /* a NaN in the reference fails too */
    ref[3] = NAN;
    CHECK(compare_arrays(got, ref, 4, tol).n_bad == 1);
    ref[3] = 4.0;
    /* exact: equal passes, one ulp fails */
    Tol exact = {0.0, 0.0, 0.0};
    CHECK(compare_arrays(got, ref, 4, exact).n_bad == 0);
    got[0] = nextafterf(1.0f, 2.0f);
    CHECK(compare_arrays(got, ref, 4, exact).n_bad == 1);
}

/* atol scales with the output's RMS (never below 1); the normwise bound. */
static void test_compare_scaled(void) {
    float got[4];
    double ref[4];
    for (int i = 0; i < 4; i++) ref[i] = 1000.0 * (i + 1), got[i] = (float)ref[i];
    got[3] += 0.25f; /* 1 ulp of 4000: 2.5e-4 relative to the RMS 2739 */
    Comparison r = compare_arrays(got, ref, 4, (Tol){2e-5, 0.0, 1e-5});
    CHECK(r.n_bad == 1 && fabs(r.scale - sqrt(7.5e6)) < 1e-6); /* 0.25 > 2e-5 * 2739 */
    CHECK(compare_arrays(got, ref, 4, (Tol){1e-4, 0.0, 1e-4}).n_bad == 0); /* 0.25 < 1e-4 * 2739 */
    /* small outputs: the scale stays 1, atol is absolute */
    for (int i = 0; i < 4; i++) ref[i] = 0.5, got[i] = 0.5f;
    got[0] = 0.5f + 3e-5f;
    r = compare_arrays(got, ref, 4, (Tol){2e-5, 0.0, 0.0});
    CHECK(r.scale == 1.0 && r.n_bad == 1);
    /* a 0.1 % error everywhere: inside the element bound, outside the normwise one */
    for (int i = 0; i < 4; i++) ref[i] = 0.25 * (i + 1), got[i] = (float)(ref[i] * 1.001);
    r = compare_arrays(got, ref, 4, (Tol){1e-2, 0.0, 1e-5});
    CHECK(r.n_bad == 0 && r.nrel_bad && fabs(r.nrel - 1e-3) < 1e-6 && fabs(r.nmse - 1e-6) < 1e-8);
    CHECK(!compare_arrays(got, ref, 4, (Tol){1e-2, 0.0, 2e-3}).nrel_bad);
    CHECK(!compare_arrays(got, ref, 4, (Tol){1e-2, 0.0, 0.0}).nrel_bad); /* 0: no normwise bound */
    /* a zero reference: nrel 0 when got is zero too, infinite otherwise */
    for (int i = 0; i < 4; i++) ref[i] = 0.0, got[i] = 0.0f;
    CHECK(compare_arrays(got, ref, 4, (Tol){1.0, 0.0, 1e-5}).nrel == 0.0);
    got[2] = 1e-30f;
    r = compare_arrays(got, ref, 4, (Tol){1.0, 0.0, 1e-5});
    CHECK(isinf(r.nrel) && r.nrel_bad && r.n_bad == 0);
}

/* A store past a buffer's guard, where device memory is the host's heap
 * (the CPU build): the guard check names the buffer, and the test frees
 * nothing (the allocator's data past the guard may be overwritten: freeing
 * aborted the whole run with glibc's "free(): invalid next size"). The bytes
 * past the guard are put back before the test ends, so this process's heap
 * stays whole; ASan's build would rightly stop the stray store itself. */
static void guard_past_heap(void) {
#if !defined(__SANITIZE_ADDRESS__)
    Ctx c;
    ctx_begin(&c, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    float *o = dev_out(&c, "o", 16);
    if (c.limits.dev_room == 0.0) {
        float *past = o + 16 + GUARD_FLOATS, saved[8];
        memcpy(saved, past, sizeof saved);
        for (int i = 0; i < 16 + GUARD_FLOATS + 8; i++) o[i] = 1.0f; /* the stray store */
        CHECK(dev_sync(&c) == -1 && strstr(c.msg, "out-of-bounds write past the end of buffer 'o': element 16"));
        CHECK(c.heap_damaged);
        memcpy(past, saved, sizeof saved);
        void *held = c.bufs[0].base;
        ctx_end(&c);
        kdn_free(held); /* what ctx_end left, now that the heap is whole again */
        return;
    }
    ctx_end(&c);
#endif
}

static void test_guards(void) {
    uint32_t g[GUARD_FLOATS];
    guard_fill(g, GUARD_FLOATS);
    CHECK(guard_first_damage(g, GUARD_FLOATS) == -1);
    g[17] = 0;
    CHECK(guard_first_damage(g, GUARD_FLOATS) == 17);
    guard_past_heap();
}

/* ---- options ------------------------------------------------------------- */
static int parse(Options *o, char *err, const char *a1, const char *a2, const char *a3) {
    char *argv[5] = {"test_deltanet", (char *)a1, (char *)a2, (char *)a3, NULL};
    int argc = 1 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
    return parse_options(argc, argv, o, err, 256);
}

static const Test *find(const char *name) {
    for (int i = 0; i < registry_count(); i++)
        if (strcmp(registry_get(i)->name, name) == 0) return registry_get(i);
    return NULL;
}

static void test_options(void) {
    Options o;
    char err[256];
    CHECK(parse(&o, err, NULL, NULL, NULL) == 0 && o.seed == DEFAULT_SEED && !o.any_phase && o.bench_reps == 0);
    CHECK(parse(&o, err, "--phase", "3", NULL) == 0 && o.phase_selected[3] && !o.phase_selected[2]);
    CHECK(parse(&o, err, "--phase", "1,4", NULL) == 0 && o.phase_selected[1] && o.phase_selected[4] &&
          !o.phase_selected[3]);
    CHECK(parse(&o, err, "--phase", "2-5", NULL) == 0 && o.phase_selected[2] && o.phase_selected[5] &&
          !o.phase_selected[6]);
    CHECK(parse(&o, err, "--phase", "0", NULL) == 2);
    CHECK(parse(&o, err, "--phase", "9", NULL) == 2);
    CHECK(parse(&o, err, "--phase", "x", NULL) == 2);
    CHECK(parse(&o, err, "--bogus", NULL, NULL) == 2 && strstr(err, "--bogus"));
    CHECK(parse(&o, err, "--test", "solve_trii", NULL) == 2 && strstr(err, "did you mean: solve_tri"));
    CHECK(parse(&o, err, "--test", "solve_tri*", NULL) == 0);
    CHECK(test_selected(&o, find("solve_tri_64")) && !test_selected(&o, find("sigmoid")));
    CHECK(parse(&o, err, "--seed", "42", NULL) == 0 && o.seed == 42);
    CHECK(parse(&o, err, "--bench", "--reps", "5") == 0 && o.bench_reps == 5);
    CHECK(parse(&o, err, "--reps", "0", NULL) == 2);
    const char *near[3];
    CHECK(registry_suggest("sigmiod", near, 3) >= 1 && strcmp(near[0], "sigmoid") == 0);
}

/* ---- determinism and verdicts ------------------------------------------- */
static void test_rng(void) {
    /* the same seed and name: the same stream; another seed or name: another */
    const Test other = {1, "unit2", "unfused", {0, 0, 0}, CASE(0), NULL};
    Ctx a, b, c, d;
    ctx_begin(&a, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    ctx_begin(&b, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    ctx_begin(&c, &dummy, 2, false, 0, DEFAULT_MAX_MEM);
    ctx_begin(&d, &other, 1, false, 0, DEFAULT_MAX_MEM);
    bool same = true, other_seed = false, other_name = false;
    for (int i = 0; i < 100; i++) {
        double x = rng_uniform(&a);
        same &= x == rng_uniform(&b);
        other_seed |= x != rng_uniform(&c);
        other_name |= x != rng_uniform(&d);
    }
    CHECK(same);
    CHECK(other_seed);
    CHECK(other_name);
    ctx_end(&a), ctx_end(&b), ctx_end(&c), ctx_end(&d);
}

/* ---- renames ------------------------------------------------------------- */
/* A log of one passing row of test `name`, variant `variant`, at path. */
static int log_one(const char *path, const char *name, const char *variant) {
    const Test row = {1, name, variant, {1e-6, 0, 0}, CASE(0), NULL};
    TestResult r = {.test = &row, .passed = true, .compared = true, .max_diff = 1e-7};
    Options o = {.seed = DEFAULT_SEED};
    return write_log(path, &o, &r, 1);
}

/* Whether --compare OLD NEW finds no regression; the report goes to /dev/null. */
static bool compares_clean(const char *old_log, const char *new_log) {
    Options o = {.compare_old = old_log, .compare_new = new_log, .max_diff_growth = 2.0, .time_threshold_pct = 10.0};
    FILE *sink = fopen("/dev/null", "w");
    int rc = sink ? compare_logs(&o, sink) : 2;
    if (sink) fclose(sink);
    return rc == 0;
}

/* A rename the suite registers keeps the test's inputs (the seed hashes its
 * former name) and a log under the former names compares with one under the
 * current names; without the rename, neither holds. */
static void test_renames(void) {
    static const Rename renames[] = {{"unit", "unit_renamed"}, {"old_variant", "new_variant"}};
    Suite with = *ladder_suite();
    with.renames = renames, with.n_renames = 2;
    const Test renamed = {1, "unit_renamed", "unfused", {0, 0, 0}, CASE(0), NULL};
    char old_log[] = "/tmp/test_harness_old_XXXXXX", new_log[] = "/tmp/test_harness_new_XXXXXX";
    int fo = mkstemp(old_log), fn = mkstemp(new_log);
    CHECK(fo >= 0 && fn >= 0);
    if (fo < 0 || fn < 0) return;
    close(fo), close(fn);
    for (int registered = 0; registered < 2; registered++) {
        registry_use(registered ? &with : ladder_suite());
        Ctx a, b;
        ctx_begin(&a, &dummy, 7, false, 0, DEFAULT_MAX_MEM);
        ctx_begin(&b, &renamed, 7, false, 0, DEFAULT_MAX_MEM);
        bool same = true;
        for (int i = 0; i < 16; i++) same &= rng_next(&a) == rng_next(&b);
        CHECK(same == (registered == 1));
        ctx_end(&a), ctx_end(&b);
        CHECK(log_one(old_log, "unit", "old_variant") == 0 && log_one(new_log, "unit_renamed", "new_variant") == 0);
        CHECK(compares_clean(old_log, new_log) == (registered == 1));
    }
    registry_use(ladder_suite());
    unlink(old_log), unlink(new_log);
}

/* --test by a former name (a glob too) selects the test under its current
 * one, and only while the rename is registered. */
static void test_renamed_selection(void) {
    static const Rename renames[] = {{"sigmoid_former", "sigmoid"}};
    Suite with = *ladder_suite();
    with.renames = renames, with.n_renames = 1;
    Options o;
    char err[256];
    for (int registered = 0; registered < 2; registered++) {
        registry_use(registered ? &with : ladder_suite());
        CHECK(parse(&o, err, "--test", "sigmoid_form*", NULL) == (registered ? 0 : 2));
        CHECK(!registered || (test_selected(&o, find("sigmoid")) && !test_selected(&o, find("solve_tri_64"))));
    }
    registry_use(ladder_suite());
}

static void test_verdicts(void) {
    Ctx c;
    float got[2] = {1.0f, 2.0f};
    double ref[2] = {1.0, 2.0};
    ctx_begin(&c, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    CHECK(expect_close_host(&c, "x", got, ref, 1, 2, (Tol){1e-6, 0, 0}) == 0 && !test_failed(&c) && c.compared);
    ref[1] = 2.1;
    CHECK(expect_close_host(&c, "x", got, ref, 1, 2, (Tol){1e-6, 0, 0}) != 0 && test_failed(&c));
    CHECK(fabs(c.max_diff - 0.1) < 1e-6 && strstr(c.msg, "x"));
    ctx_end(&c);

    /* test_fail: a verdict without a comparison, its message kept */
    ctx_begin(&c, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    CHECK(!test_failed(&c));
    test_fail(&c, "refused shape %d", 48);
    CHECK(test_failed(&c) && strstr(c.msg, "refused shape 48"));
    ctx_end(&c);

    /* an output the kernel never writes is NaN, so it fails */
    ctx_begin(&c, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    float *y = dev_out(&c, "never_written", 8);
    double zeros[8] = {0};
    CHECK(dev_sync(&c) == 0);
    CHECK(expect_close(&c, "y", y, zeros, 1, 8, (Tol){1e30, 1e30, 0}) != 0);
    ctx_end(&c);

    /* a write one past the end is caught by the guard, naming the buffer */
    ctx_begin(&c, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    y = dev_out(&c, "short_buffer", 100);
    exec_write_past_end(y, 100);
    CHECK(dev_sync(&c) != 0 && strstr(c.msg, "short_buffer"));
    CHECK(!c.heap_damaged); /* inside the guard: the test's memory is freed */
    ctx_end(&c);
}

/* ---- the runner's verdict (exit status 1 comes from it) ----------------- */
static void run_wrong(const Test *t, Ctx *c) {
    float got = 1.5f;
    double ref = 1.0;
    expect_close_host(c, "wrong", &got, &ref, 1, 1, t->tol);
}
static void run_right(const Test *t, Ctx *c) {
    float got = 1.0f;
    double ref = 1.0;
    expect_close_host(c, "right", &got, &ref, 1, 1, t->tol);
}
static void run_nothing(const Test *t, Ctx *c) { (void)t, (void)c; }
/* passes its comparison but leaves a kernel error it never synced for */
static void run_unsynced_error(const Test *t, Ctx *c) {
    static float y[64];
    exec_divergent_barrier(y);
    run_right(t, c);
}

/* a launch that keeps reaching its barrier and never ends */
static void run_endless(const Test *t, Ctx *c) {
    (void)t;
    exec_endless_barriers(dev_out(c, "flag", 1));
    dev_sync(c);
}
static void run_spin_wait(const Test *t, Ctx *c) {
    (void)t;
    exec_spin_wait(dev_out(c, "flag", 1));
    dev_sync(c);
}

/* The line run_test prints for a row running fn (malloc'd), its result in r. */
static char *run_line(void (*fn)(const Test *, Ctx *), double max_seconds, TestResult *r) {
    Test t = {1, "unit_row", "unfused", {1e-6, 0, 0}, CASE(0), fn};
    Options o;
    char err[256];
    parse(&o, err, NULL, NULL, NULL);
    o.max_seconds = max_seconds;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    run_test(&t, &o, out, r);
    fclose(out);
    return text;
}

static bool runs_under(void (*fn)(const Test *, Ctx *), const char *expect_text, double max_seconds) {
    TestResult r;
    char *text = run_line(fn, max_seconds, &r);
    bool passed = r.passed;
    if (!strstr(text, expect_text)) printf("test_harness: expected '%s' in: %s", expect_text, text);
    CHECK(strstr(text, expect_text) != NULL);
    free(text);
    return passed;
}

static bool runs(void (*fn)(const Test *, Ctx *), const char *expect_text) {
    return runs_under(fn, expect_text, DEFAULT_MAX_SECONDS);
}

static void test_runner(void) {
    CHECK(!runs(run_wrong, "[FAIL] phase 1  unit_row"));
    CHECK(runs(run_right, "[PASS] phase 1  unit_row"));
    CHECK(!runs(run_nothing, "compared nothing"));
    CHECK(!runs(run_unsynced_error, "runtime error: kernel kernel_divergent_barrier"));
    /* --max-seconds holds the run too: a launch past it is stopped, the test
     * refused for its time, not failed; a thread without progress is a hang,
     * the kernel's failure */
    CHECK(!runs_under(run_endless, "[REFUSED] phase 1  unit_row                 unfused  refused: a kernel launch ran "
                                   "past --max-seconds 100 ms of CPU time", 0.1));
    exec_set_timeout(0.1);
    CHECK(!runs(run_spin_wait, "without reaching a barrier, a wave operation or its end (KDN_CPU_TIMEOUT): a hang"));
    CHECK(!runs(run_spin_wait, "[FAIL] phase 1  unit_row"));
    exec_set_timeout(300.0);
}

/* --load: a file of another shape than the test runs (one it derives
 * itself) leaves the test at once, an input error: [ERROR], status 2, the
 * reason on its line, no max_diff, nothing run on stand-in inputs (it was a
 * [FAIL] with the max_diff of generated inputs: status 1) */
static volatile bool ran_past_load;
static void run_load_four(const Test *t, Ctx *c) {
    float x[4];
    load_floats(c, "x", x, 1, (size_t[]){4});
    ran_past_load = true;
    run_right(t, c);
}

static void test_load_of_another_shape(void) {
    char dir[] = "/tmp/test_harness.XXXXXX", path[64], err[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    CHECK(npy_write(path, (const float[]){1.0f, 2.0f, 3.0f}, 4, 1, (size_t[]){3}, err, sizeof err) == 0); /* 3 of 4 */
    CHECK(tensors_set_dirs(NULL, dir, err, sizeof err) == 0);
    TestResult r;
    char *line = run_line(run_load_four, DEFAULT_MAX_SECONDS, &r);
    CHECK(strncmp(line, "[ERROR] phase 1  unit_row", 25) == 0 && strstr(line, "x.npy has shape (3,), this test runs (4,)"));
    CHECK(!strstr(line, "max_diff") && !ran_past_load && r.errored && !r.passed && !r.compared);
    if (!r.errored || ran_past_load) printf("test_harness: the --load of another shape: %s", line);
    free(line);
    CHECK(tensors_set_dirs(NULL, NULL, err, sizeof err) == 0);
    unlink(path), rmdir(dir);
}

/* ---- the CPU SIMT executor ----------------------------------------------- */
/* Two correct launches: a wave reduction (128 threads, two waves) and an LDS
 * reversal through a barrier over all 1024 threads, so every fiber runs. */
static bool correct_launches_work(void) {
    float sums[2] = {0}, x[1024], y[1024];
    exec_wave_sum(sums, 128);
    bool ok = kdn_sync() == NULL && sums[0] == 64.0f * 63.0f / 2.0f && sums[1] == sums[0];
    for (int i = 0; i < 1024; i++) x[i] = (float)i, y[i] = -1.0f;
    exec_lds_reverse(x, y, 1024);
    ok &= kdn_sync() == NULL;
    for (int i = 0; i < 1024; i++) ok &= y[i] == (float)(1023 - i);
    return ok;
}

static bool mentions(const char *e, const char *kernel, const char *what) {
    bool ok = e != NULL && strstr(e, kernel) != NULL && strstr(e, what) != NULL;
    if (!ok) printf("test_harness: expected an error naming %s and '%s', got: %s\n", kernel, what, e ? e : "(none)");
    return ok;
}

/* A broken launch: kdn_sync() reports an error naming the kernel and the
 * fault, and the next correct launches run normally (fibers are reused
 * across launches; those abandoned inside a kernel are made afresh). */
static void fails_then_recovers(void (*launch)(float *), const char *kernel, const char *what) {
    static float out[1025];
    launch(out);
    CHECK(mentions(kdn_sync(), kernel, what));
    CHECK(correct_launches_work());
}

/* DPP row rotation as gfx906 defines it (row_ror:3: lane i of a row of 16
 * reads lane (i - 3) mod 16), and the row sum bitwise equal to the xor
 * butterfly on every lane, on two waves. */
static void test_row_ops(void) {
    enum { N = 128 };
    float x[N], ror3[N], sum[N], butterfly[N];
    for (int i = 0; i < N; i++) x[i] = 1.0f / ((float)i + 1.3f);
    exec_row_ops(x, ror3, sum, butterfly, N);
    CHECK(kdn_sync() == NULL);
    bool rot = true, same = true;
    for (int i = 0; i < N; i++) {
        rot &= ror3[i] == x[(i & ~15) | ((i - 3) & 15)];
        same &= memcmp(&sum[i], &butterfly[i], sizeof(float)) == 0 && sum[i] == sum[i & ~15];
    }
    CHECK(rot);
    CHECK(same);
}

/* The 64-bit row primitives' lane mapping. Values k + 2^-40 k' sum exactly
 * in any order, so the scan and the sum must equal the in-order sums; the
 * shift's inputs have low halves that are signalling-NaN bit patterns as
 * floats (the CPU executor moves them as floats) and must arrive intact. */
static void test_row_ops_f64(void) {
    enum { N = 128 };
    double x[N], y[N], shr3[N], scan[N], sum[N], yshr3[N], yscan[N], ysum[N];
    for (int i = 0; i < N; i++) {
        x[i] = (double)(i % 7 + 1) + ldexp((double)(i % 5), -40);
        uint64_t b = 0x3ff0000000000000ull | 0x7f800001u | (uint64_t)i << 40; /* 1.x, low half an sNaN float */
        memcpy(&y[i], &b, sizeof b);
    }
    exec_row_ops_f64(x, shr3, scan, sum, N);
    CHECK(kdn_sync() == NULL);
    exec_row_ops_f64(y, yshr3, yscan, ysum, N);
    CHECK(kdn_sync() == NULL);
    bool shifted = true, scanned = true, summed = true;
    for (int i = 0; i < N; i++) {
        const int r0 = i & ~15;
        double pre = 0.0, all = 0.0;
        for (int j = r0; j < r0 + 16; j++) {
            if (j <= i) pre += x[j];
            all += x[j];
        }
        shifted &= (i & 15) >= 3 ? memcmp(&yshr3[i], &y[i - 3], sizeof(double)) == 0 && shr3[i] == x[i - 3]
                                 : yshr3[i] == 0.0 && shr3[i] == 0.0;
        scanned &= scan[i] == pre;
        summed &= sum[i] == all;
    }
    CHECK(shifted);
    CHECK(scanned);
    CHECK(summed);
}

/* The quad primitives' lane mapping: quad_perm:[3,0,2,1] (lane i of a quad
 * reads lane P_i), and the quad sum: (x0 + x1) + (x2 + x3) in lanes 0, 1 and
 * the mirror order in lanes 2, 3, which is the same float (addition
 * commutes), so all four lanes agree bitwise. */
static void test_quad_ops(void) {
    enum { N = 128 };
    static const int perm_of[4] = {3, 0, 2, 1};
    float x[N], perm[N], sum[N];
    for (int i = 0; i < N; i++) x[i] = 1.0f / ((float)i + 0.7f);
    exec_quad_ops(x, perm, sum, N);
    CHECK(kdn_sync() == NULL);
    bool permuted = true, summed = true;
    for (int i = 0; i < N; i++) {
        const int q = i & ~3;
        permuted &= perm[i] == x[q + perm_of[i & 3]];
        summed &= sum[i] == (x[q] + x[q + 1]) + (x[q + 2] + x[q + 3]);
    }
    CHECK(permuted);
    CHECK(summed);
}

static void test_executor(void) {
    CHECK(kdn_flush_bytes() == 0); /* the CPU build has no cache to evict (kdn.h) */
    kdn_flush_cache();
    void *none = kdn_malloc(0); /* a valid pointer, like malloc(0) where it returns one */
    CHECK(none != NULL);
    kdn_free(none);
    float out[256];
    exec_wave_sum(out, 256);
    CHECK(kdn_sync() == NULL);
    bool ok = true;
    for (int w = 0; w < 256 / 64; w++) ok &= out[w] == 64.0f * 63.0f / 2.0f;
    CHECK(ok);
    float x96[96], y96[96]; /* a workgroup of a wave and a partial one of 32 lanes */
    for (int i = 0; i < 96; i++) x96[i] = (float)i;
    exec_lds_reverse(x96, y96, 96);
    ok = kdn_sync() == NULL;
    for (int i = 0; i < 96; i++) ok &= y96[i] == (float)(95 - i);
    CHECK(ok);
    CHECK(correct_launches_work());

    fails_then_recovers(exec_divergent_barrier, "kernel_divergent_barrier", "__syncthreads() not reached");
    fails_then_recovers(exec_partial_wave, "kernel_partial_wave", "not reached by all lanes");
    fails_then_recovers(exec_too_many_threads, "kernel_wave_sum", "1025 threads");
    fails_then_recovers(exec_too_much_lds, "kernel_read_unwritten_lds", "64 KB");
    fails_then_recovers(exec_empty_launch, "kernel_wave_sum", "empty launch");
    fails_then_recovers(exec_lane_outside_wave, "kernel_lane_outside_wave", "outside its wave");

    /* the first error stands until it is taken: a later good launch does not hide it */
    exec_divergent_barrier(out);
    exec_wave_sum(out, 64);
    CHECK(mentions(kdn_sync(), "kernel_divergent_barrier", "__syncthreads()"));
    CHECK(kdn_sync() == NULL);

    /* through a test's context: dev_sync fails the test and names the kernel */
    Ctx c;
    ctx_begin(&c, &dummy, 1, false, 0, DEFAULT_MAX_MEM);
    exec_partial_wave(dev_out(&c, "y", 64));
    CHECK(dev_sync(&c) != 0 && test_failed(&c) && strstr(c.msg, "kernel_partial_wave"));
    ctx_end(&c);
    CHECK(correct_launches_work());

    exec_read_unwritten_lds(out, 64);
    CHECK(kdn_sync() == NULL && isnan(out[0]) && isnan(out[63]));
}

/* A hang, a stack overflow and an integer division by zero become errors
 * naming the kernel, and the executor goes on (before: the run hung
 * forever, or died of SIGSEGV or SIGFPE). */
static void spin_wait(float *y) { exec_spin_wait(y); }
static void divide_by_zero(float *y) { exec_divide(y, 0); }

static void test_executor_limits(void) {
    exec_set_timeout(0.1);
    fails_then_recovers(spin_wait, "kernel_spin_wait", "ran 0.1 s of CPU time without reaching a barrier");
    /* a launch that makes progress for longer than that is no hang: only its
     * own time limit, when one is set, stops it (and counts it) */
    const long stopped = kdn_launches_out_of_time();
    kdn_set_launch_time_limit(0.3);
    fails_then_recovers(exec_endless_barriers, "kernel_endless_barriers", "launch stopped after 0.3 s of CPU time");
    CHECK(kdn_launches_out_of_time() == stopped + 1);
    kdn_set_launch_time_limit(0);
    exec_set_timeout(300.0);
    fails_then_recovers(exec_huge_private, "kernel_huge_private", "overflowed its");
    fails_then_recovers(divide_by_zero, "kernel_divide", "thread 0: integer division by zero");
    float y[64];
    exec_divide(y, 2); /* the same kernel, a divisor that is not 0 */
    CHECK(kdn_sync() == NULL && y[0] == 0.0f && y[63] == 31.0f);
}

/* The race detector (build/cpu-race only: other builds have no hooks). Each
 * planted race is reported with the kernel, the LDS address and both
 * threads; the correct kernels and the synchronised exchanges are not. */
static void read_then_write(float *y) { exec_read_then_write(y, 256); }
static void rmw_after_read(float *y) { exec_rmw_after_read(y, 256); }
static void wave_exchange_unsynced(float *y) { exec_wave_exchange(y, 0); }

static bool wave_exchange_ok(int synced) {
    float y[64];
    exec_wave_exchange(y, synced);
    bool ok = kdn_sync() == NULL;
    for (int t = 0; t < 64; t++) ok &= y[t] == (float)(t ^ 1);
    return ok;
}

static void test_race_detector(void) {
    if (!exec_race_detector()) return;
    long before = exec_lds_checked();
    CHECK(correct_launches_work());
    CHECK(exec_lds_checked() >= before + 2048); /* the reversal's 1024 writes and 1024 reads */
    CHECK(wave_exchange_ok(1));
    float x[256], y[256];
    for (int i = 0; i < 256; i++) x[i] = (float)i;
    exec_missing_barrier(x, y, 256);
    const char *e = kdn_sync();
    CHECK(mentions(e, "kernel_missing_barrier", "LDS race at dynamic LDS byte"));
    CHECK(mentions(e, "kernel_missing_barrier", "thread 0 wrote it, then thread 1 reads it"));
    fails_then_recovers(exec_write_write, "kernel_write_write", "thread 0 wrote it, then thread 1 writes it");
    fails_then_recovers(read_then_write, "kernel_read_then_write", "thread 0 read it, then thread 1 writes it");
    fails_then_recovers(rmw_after_read, "kernel_rmw_after_read", "thread 0 read it, then thread 1 writes it");
    fails_then_recovers(wave_exchange_unsynced, "kernel_wave_exchange", "lanes of wave 0, no wave operation");
    fails_then_recovers(exec_waves_without_barrier, "kernel_waves_without_barrier", "(waves 1 and 0)");
    fails_then_recovers(exec_static_race, "kernel_static_race", "LDS race at static __shared__");
    fails_then_recovers(exec_lds_past_end, "kernel_lds_past_end", "past the 256 bytes");
    fails_then_recovers(exec_static_lds_48k, "kernel_static_lds_48k", "49152 bytes of static __shared__");
}

/* The schedules: correct kernels agree under every one; a missing barrier,
 * a split barrier and a read of another workgroup's output are caught by at
 * least one (the default, ascending order hides the last two). */
static bool missing_barrier_ok(int n) {
    float x[256], y[256];
    for (int i = 0; i < n; i++) x[i] = (float)i + 1.0f;
    exec_missing_barrier(x, y, n);
    bool ok = kdn_sync() == NULL;
    for (int i = 0; i < n; i++) ok &= y[i] == x[i > 0 ? i - 1 : 0];
    return ok;
}

static bool other_workgroup_ok(int blocks) {
    float y[8 * 64];
    exec_reads_other_workgroup(y, blocks);
    bool ok = kdn_sync() == NULL;
    for (int b = 0; b < blocks; b++) ok &= y[b * 64 + 5] == (float)(b * (b + 1) / 2);
    return ok;
}

static void test_schedules(void) {
    static const char *const names[] = {"asc", "desc", "shuffle", "shuffle:12345"};
    for (int i = 0; i < 4; i++) {
        CHECK(exec_set_schedule(names[i]) == 0);
        CHECK(correct_launches_work());
    }
    CHECK(exec_set_schedule("asc") == 0);
    /* the races the old executor missed (the race detector reports the first) */
    CHECK(missing_barrier_ok(256) == !exec_race_detector() && other_workgroup_ok(8));
    CHECK(exec_set_schedule("desc") == 0);
    CHECK(!missing_barrier_ok(256) && !other_workgroup_ok(8));
    CHECK(exec_set_schedule("shuffle:7") == 0);
    CHECK(!missing_barrier_ok(256) && !other_workgroup_ok(8));
    CHECK(exec_set_schedule("shuffle:") != 0 && exec_set_schedule("descending") != 0);
    CHECK(exec_set_schedule("asc") == 0);
    fails_then_recovers(exec_split_barrier, "kernel_split_barrier", "different __syncthreads() calls");
}

/* Memory is limited where it is taken: an array or a buffer that would pass
 * --max-mem refuses the test with the numbers and leaves it through its
 * abandon point, what it held counted; the machine is a limit too; the time
 * refusal names its estimate; sizes and times in readable units. */
static void take_until_refused(Ctx *c, double max_mem, size_t floats, volatile int *reached) {
    jmp_buf out;
    ctx_begin(c, &dummy, 1, false, 0, max_mem);
    c->abandon = &out;
    *reached = 0;
    if (setjmp(out) == 0) {
        host_f(c, 1000);
        dev_out(c, "d", 10);
        *reached = 1;
        if (floats) host_f(c, floats);
        else dev_out(c, "big", 16 * 1024);
        *reached = 2;
    }
    c->abandon = NULL;
}

static void test_limits(void) {
    Ctx c;
    volatile int reached;
    take_until_refused(&c, 64 * 1024, 16 * 1024, &reached);
    CHECK(reached == 1 && c.refused && c.failed && strstr(c.msg, "(64.0 KiB of a host array), over --max-mem 64.0 KiB"));
    CHECK(c.n_host == 1 && c.host_now == 4000.0); /* the refused array was never taken */
    ctx_end(&c);
    take_until_refused(&c, 64 * 1024, 0, &reached);
    CHECK(reached == 1 && c.refused && strstr(c.msg, "of buffer 'big'), over --max-mem 64.0 KiB"));
    ctx_end(&c);
    take_until_refused(&c, 1024 * 1024, 16 * 1024, &reached);
    CHECK(reached == 2 && !c.refused && !c.failed && c.host_peak >= 4000.0 + 65536.0);
    ctx_end(&c);

    char why[256];
    MemoryLimits m = memory_limits(1e30);
    CHECK(memory_refusal(&m, false, 0.0, 1e15, "a host array", why, sizeof why) == 1 && strstr(why, "over physical memory"));
    CHECK(memory_refusal(&m, false, 0.0, 1e6, "a host array", why, sizeof why) == 0);
    Work slow = {1e14, 0.0}, quick = {1e3, 0.0};
    CHECK(time_refusal(&quick, 1.0, why, sizeof why) == 0);
    CHECK(time_refusal(&slow, 1e-6, why, sizeof why) == 1 && strstr(why, "estimated at least ") &&
          strstr(why, " s (1e+14 reference, 0 kernel flops), over --max-seconds 1 us"));
    const struct {
        double bytes;
        const char *text;
    } sizes[] = {{0, "0 bytes"}, {10239, "10239 bytes"}, {10240, "10.0 KiB"}, {3.5 * 1048576, "3584.0 KiB"},
                 {16.0 * 1073741824, "16.0 GiB"}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        format_bytes(sizes[i].bytes, why, sizeof why);
        CHECK(strcmp(why, sizes[i].text) == 0);
    }
    format_seconds(0.0025, why, sizeof why);
    CHECK(strcmp(why, "2.5 ms") == 0);

    Options o;
    char err[256];
    CHECK(parse(&o, err, NULL, NULL, NULL) == 0 && o.max_mem == 0.0 && o.max_seconds == DEFAULT_MAX_SECONDS);
    /* the default (0): 16 GiB, or the device's memory where larger; a size given is kept */
    const double device = (double)kdn_device_memory(), dflt = memory_limits(0.0).max_mem;
    CHECK(dflt >= DEFAULT_MAX_MEM && dflt >= device && (dflt == DEFAULT_MAX_MEM || dflt == device));
    CHECK(memory_limits(2048.0).max_mem == 2048.0);
    CHECK(parse(&o, err, "--max-mem", "1e30", NULL) == 2 && parse(&o, err, "--max-mem", "1000000G", NULL) == 0);
    CHECK(parse(&o, err, "--max-mem", "2K", NULL) == 0 && o.max_mem == 2048);
    CHECK(parse(&o, err, "--max-seconds", "-1", NULL) == 2 && parse(&o, err, "--max-mem", "0", NULL) == 2);
}

int main(void) {
    char msg[256];
    if (kdn_init(msg, sizeof msg) != 0) {
        printf("test_harness: no device: %s\n", msg);
        return 77;
    }
    registry_use(ladder_suite());
    test_compare();
    test_compare_scaled();
    test_guards();
    test_options();
    test_rng();
    test_renames();
    test_renamed_selection();
    test_verdicts();
    test_runner();
    test_load_of_another_shape();
    test_executor();
    test_executor_limits();
    test_race_detector();
    test_schedules();
    test_row_ops();
    test_row_ops_f64();
    test_limits();
    test_quad_ops();
    if (failures) {
        printf("test_harness: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test_harness: %d checks passed\n", checks);
    return 0;
}

/* test_deltanet: the product's ladder runner. It runs the ladder's phases
 * (the library's kernels and the ladder's own, each checked against a
 * double-precision host reference) through the harness; the binary keeps
 * the name it has always had, which CI, the logs and the docs call. */
#include "../harness/internal.h"
#include "../harness/tensors.h"

#include "../kernels/kdn.h"
#include "../phases/phases.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: test_deltanet [options]\n"
            "  --list           list the tests (phase, name, variant, tolerance) and exit\n"
            "  --phase N        run phase N only; repeatable, or a list: 1,4 or 2-5\n"
            "  --test NAME      run the named test; a glob such as 'solve_tri*'; repeatable\n"
                        "  --verbose        each output's errors; the first mismatching elements of a failing test\n"
            "  --bench          also time each test's device work (median and min, GB/s, GFLOP/s,\n"
            "                   launches per call, speed-up against the test's first variant)\n"
            "  --reps N         timed runs per variant with --bench (default %d; fewer past 3 s)\n"
            "  --seed N         seed of the input generator (default %u)\n"
            "  --set KEY=VALUE  override the shape of the Delta-Net tests (phases 4-8): T, n_seqs, H_k, H_v,\n"
            "                   D_k (<= %d), D_v, chunk (%d or %d), head_map (tiled|block), seed; repeatable\n"
            "  --dump DIR       write inputs, kernel outputs (float32) and references (float64) as\n"
            "                   DIR/<test>__<tensor>.npy (shapes: docs/bench.md)\n"
            "  --load DIR       phase-8 tests read q, k, v, g, beta, state from DIR/<test>__<name>.npy\n"
            "                   or DIR/<name>.npy; the dimensions are the files'\n"
            "  --log FILE|DIR   write a tab-separated result log (a DIR gets a timestamped file)\n"
            "  --junit FILE     write a JUnit XML report\n"
            "  --max-mem SIZE   refuse a test where its host, or device, memory would exceed SIZE bytes\n"
            "                   (a suffix K, M, G: 2^10, 2^20, 2^30; default 16G, or the device's memory\n"
            "                   where that is larger); the machine's memory\n"
            "                   (physical, ulimit -v, the device's) is always a limit\n"
            "  --max-seconds S  refuse a test whose least work is estimated over S seconds (default %.0f);\n"
            "                   CPU build: a kernel launch past S seconds of CPU time is stopped, its test refused\n"
            "  --compare OLD NEW  report regressions between two logs (runs no test):\n"
            "                   failing or missing tests, max_diff grown past --max-diff-growth X\n"
            "                   (default 2), timings slower than --time-threshold PCT (default 10)\n"
            "  --env            print backend, target and devices found, and exit\n"
            "  --help           this text\n"
            "exit status: 0 all passed, 1 a test failed (--compare: a regression), 2 bad usage,\n"
            "nothing tested (every selected test skipped), an unreadable or incomplete log, bad input\n"
            "or an I/O error, 3 a test was refused (its\n"
            "memory, its time estimate or its run over a limit; 1 and 2 take precedence), 77 no device\n",
            DEFAULT_REPS, DEFAULT_SEED, widest_D_k(), kdn_chunked_limits.chunks[0],
            kdn_chunked_limits.chunks[1], DEFAULT_MAX_SECONDS);
}

static void list_tests(const Options *o) {
    printf("%-5s  %-24s %-8s %s\n", "phase", "name", "variant", "tolerance (atol + rtol*|ref|)");
    for (int i = 0; i < registry_count(); i++) {
        const Test *t = registry_get(i);
        if (test_selected(o, t)) printf("%-5d  %-24s %-8s %.1e + %.1e*|ref|\n", t->phase, t->name, t->variant, t->tol.atol, t->tol.rtol);
    }
}

/* Runs the selected tests; their results go to stdout and the --log and
 * --junit outputs, written as the tests finish. */
static int run_tests(const Options *o) {
    char err[1024];
    if (tensors_set_dirs(o->dump_dir, o->load_dir, err, sizeof err) != 0) {
        fprintf(stderr, "test_deltanet: %s\n", err);
        return 2;
    }
    if (kdn_init(err, sizeof err) != 0) {
        fprintf(stderr, "test_deltanet: no device for the %s backend (%s): %s\n", kdn_backend(), kdn_target(), err);
        return 77;
    }
    int total = 0;
    for (int i = 0; i < registry_count(); i++) total += test_selected(o, registry_get(i));
    if (reports_open(o, total, err, sizeof err) != 0) {
        fprintf(stderr, "test_deltanet: %s\n", err);
        reports_close(NULL, 0);
        return 2;
    }
    printf("test_deltanet: backend %s, target %s, device %s, seed %llu\n", kdn_backend(), kdn_target(),
           kdn_device_name(), (unsigned long long)o->seed);
    TestResult *results;
    int n;
    int failed = run_selected(o, stdout, &results, &n);
    /* input, I/O and harness errors first, then the kernels' failures, then
     * tests refused for a limit */
    int errored = 0, refused = 0, skipped = 0;
    for (int i = 0; i < n; i++) errored += results[i].errored, refused += results[i].refused, skipped += results[i].skipped;
    int rc = reports_close(results, n) != 0 || errored ? 2 : failed > refused ? 1 : refused ? 3 : 0;
    free(results);
    /* a gate that tested nothing must not pass: as a selection of no test */
    if (n && skipped == n) {
        fprintf(stderr, "test_deltanet: nothing was tested: every selected test was skipped (the shape %s gave is "
                        "one none of them takes)\n", o->load_dir ? "--load" : "--set");
        return 2;
    }
    return rc;
}

static int run(int argc, char **argv) {
    Options o;
    char err[512];
    registry_use(ladder_suite());
    int rc = parse_options(argc, argv, &o, err, sizeof err);
    if (rc) {
        fprintf(stderr, "test_deltanet: %s\n", err);
        return rc;
    }
    if (o.help) {
        usage(stdout);
        return 0;
    }
    if (o.list) {
        list_tests(&o);
        return 0;
    }
    if (o.compare_old) return compare_logs(&o, stdout);
    if (o.env) {
        printf("backend %s, target %s, commit %s, devices %d\n", kdn_backend(), kdn_target(), build_commit(),
               kdn_device_count());
        if (kdn_init(err, sizeof err) == 0) printf("device 0: %s\n", kdn_device_name());
        return 0;
    }
    return run_tests(&o);
}

int main(int argc, char **argv) {
    int rc = run(argc, argv);
    /* what was printed must have arrived: a full disk or a closed pipe under
     * stdout is an I/O error, not a success */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "test_deltanet: cannot write to stdout: %s\n", strerror(errno));
        return 2;
    }
    return rc;
}

/* libkdn as a serving stack uses it (every build; the settings, time limit
 * and signal cases concern the CPU executor and run on the CPU build only):
 *   threads   several host threads call kdn_gated_delta_net at once on their
 *             own data, every path; each result must equal, bit for bit, the
 *             same call run alone on one thread first (the executor is
 *             deterministic); one thread meanwhile plants an error of its own
 *             that must stay its own;
 *   faults    each failure a call can meet returns its own status from that
 *             call, leaves dst unwritten where nothing ran, is not sticky, and
 *             an error of earlier work is neither consumed nor blamed on the
 *             call (KDN_CPU_SCHEDULE / KDN_CPU_TIMEOUT not understood, the
 *             time limit, a pending launch failure of kdn.h's launchers);
 *   signals   the program's SIGSEGV, SIGFPE and SIGVTALRM handlers, its
 *             alternate signal stack and its ITIMER_VIRTUAL are as it set
 *             them after every call, a SIGVTALRM sent to the launching thread
 *             during a launch reaches the program's handler, and a stray one
 *             after the calls re-arms nothing;
 *   caches    the runtime answers the launchers keep (query_cache.h) are
 *             kept per device, kernel and argument, asked once per key from
 *             many threads at once, not kept when the query failed, and still
 *             right once the table is full (a stand-in query in place of the
 *             runtime's, so the CPU build checks the keying of every build).
 * Exit 0 when every check passed, 1 otherwise (each failure printed). */
#define _GNU_SOURCE
#include "../kernels/gated_delta_net.h"
#include "../kernels/backend/query_cache.h"
#include "../kernels/kdn.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CHECK_PROGRAM "test_threads"
#include "check.h"

/* ---- one call's data ------------------------------------------------------ */
typedef struct {
    int S, H_k, H_v, T, B;
    kdn_path path;
} Shape;

/* Every path: decode, a short prompt (recurrent), a prompt past the
 * crossover (chunked, AUTO: past every backend's B = 1 threshold, which
 * test_signals_during_launch checks) and a forced chunked call with a
 * partial chunk. */
static const Shape shapes[] = {
    {32, 2, 4, 1, 2, KDN_PATH_AUTO},
    {32, 2, 4, 40, 1, KDN_PATH_RECURRENT},
    {32, 2, 4, 300, 1, KDN_PATH_AUTO},
    {16, 1, 2, 70, 2, KDN_PATH_CHUNKED},
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

/* Host arrays, their device copies (the same memory's copy on the CPU
 * build) and dst's host image. */
typedef struct {
    float *q, *k, *v, *g, *beta, *state, *dst;
    float *d_q, *d_k, *d_v, *d_g, *d_beta, *d_state, *d_dst;
    size_t n_dst;
    void *workspace;
    kdn_gdn_call call;
} Case;

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static kdn_tensor view(const float *data, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    kdn_tensor t = {data, {n0, n1, n2, n3}, {4, 4 * (size_t)n0, 4 * (size_t)(n0 * n1), 4 * (size_t)(n0 * n1 * n2)}};
    return t;
}

static float *filled(size_t n, float scale, float offset, unsigned *seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = scale * frand(seed) + offset;
    return p;
}

static float *on_device(const float *host, size_t n) {
    float *d = kdn_malloc(n * sizeof *d);
    if (!d || kdn_upload(d, host, n * sizeof *d) != 0) {
        printf("test_threads: no device memory for %zu floats\n", n);
        exit(1);
    }
    return d;
}

static void make_case(Case *c, const Shape *s, unsigned seed) {
    size_t nqk = (size_t)s->S * s->H_k * s->T * s->B, nv = (size_t)s->S * s->H_v * s->T * s->B;
    size_t ng = (size_t)s->H_v * s->T * s->B, ns = (size_t)s->S * s->S * s->H_v * s->B;
    c->q = filled(nqk, 0.2f, 0.0f, &seed), c->k = filled(nqk, 0.2f, 0.0f, &seed), c->v = filled(nv, 1.0f, 0.0f, &seed);
    c->g = filled(ng, 0.5f, -0.5f, &seed), c->beta = filled(ng, 0.5f, 0.5f, &seed);
    c->state = filled(ns, 0.1f, 0.0f, &seed);
    c->n_dst = nv + ns;
    c->dst = malloc(c->n_dst * sizeof *c->dst);
    for (size_t i = 0; i < c->n_dst; i++) c->dst[i] = NAN;
    c->d_q = on_device(c->q, nqk), c->d_k = on_device(c->k, nqk), c->d_v = on_device(c->v, nv);
    c->d_g = on_device(c->g, ng), c->d_beta = on_device(c->beta, ng), c->d_state = on_device(c->state, ns);
    c->d_dst = on_device(c->dst, c->n_dst);
    kdn_gdn_call call = {view(c->d_q, s->S, s->H_k, s->T, s->B), view(c->d_k, s->S, s->H_k, s->T, s->B),
                         view(c->d_v, s->S, s->H_v, s->T, s->B), view(c->d_g, 1, s->H_v, s->T, s->B),
                         view(c->d_beta, 1, s->H_v, s->T, s->B), view(c->d_state, s->S, s->S, s->H_v, s->B),
                         c->d_dst, 1, KDN_HEAD_MAP_TILED, s->path, 0, NULL, NULL, 0, NULL};
    c->call = call;
    size_t ws = 0;
    if (kdn_gdn_workspace_size(&c->call, &ws) != KDN_OK) ws = 0;
    c->workspace = ws ? kdn_malloc(ws) : NULL;
}

static kdn_status run_case(Case *c) {
    size_t ws = 0;
    kdn_status st = kdn_gdn_workspace_size(&c->call, &ws);
    return st == KDN_OK ? kdn_gated_delta_net(&c->call, c->workspace, ws) : st;
}

static void free_case(Case *c) {
    free(c->q), free(c->k), free(c->v), free(c->g), free(c->beta), free(c->state), free(c->dst);
    kdn_free(c->d_q), kdn_free(c->d_k), kdn_free(c->d_v), kdn_free(c->d_g), kdn_free(c->d_beta);
    kdn_free(c->d_state), kdn_free(c->d_dst);
    if (c->workspace) kdn_free(c->workspace);
}

/* dst as the device holds it now (its host image). */
static const float *result(Case *c) {
    if (kdn_download(c->dst, c->d_dst, c->n_dst * sizeof(float)) != 0) printf("test_threads: download failed\n");
    return c->dst;
}

static size_t written(Case *c) {
    const float *d = result(c);
    size_t w = 0;
    for (size_t i = 0; i < c->n_dst; i++) w += d[i] == d[i];
    return w;
}

/* The NaN-filled dst again, for another call on the same case. */
static void unwrite(Case *c) {
    for (size_t i = 0; i < c->n_dst; i++) c->dst[i] = NAN;
    if (kdn_upload(c->d_dst, c->dst, c->n_dst * sizeof(float)) != 0) printf("test_threads: upload failed\n");
}

/* ---- several host threads at once ---------------------------------------- */
enum { N_THREADS = 4, CALLS = 3, ROUNDS = 2 };

static const Shape *shape_of(int thread, int call) { return &shapes[(thread + call) % N_SHAPES]; }
static unsigned seed_of(int thread, int call) { return 1000u * (unsigned)thread + (unsigned)call + 1u; }

static float *expected[N_THREADS][CALLS];
static pthread_barrier_t start_together;

typedef struct {
    int thread;
    int mismatches, bad_status, pending_wrong;
} Worker;

/* Thread 0 first plants a launch failure of its own (a kdn.h launcher
 * refusing a shape, not taken): its call must be refused with
 * KDN_ERR_PENDING_ERROR while the other threads' calls run. */
static void plant_pending(Worker *w, Case *c) {
    const long ne[4] = {1L << 32, 1, 1, 1}, st[3] = {0, 0, 0};
    unwrite(c);
    kdn_gather_strided(c->d_q, ne, st, c->d_dst); /* refused: too large for one launch */
    w->pending_wrong += run_case(c) != KDN_ERR_PENDING_ERROR || written(c) != 0;
    const char *e = kdn_sync();
    w->pending_wrong += e == NULL || strstr(e, "kernel_gather_strided") == NULL;
}

static void *worker(void *arg) {
    Worker *w = arg;
    Case cases[CALLS];
    for (int i = 0; i < CALLS; i++) make_case(&cases[i], shape_of(w->thread, i), seed_of(w->thread, i));
    pthread_barrier_wait(&start_together);
    for (int r = 0; r < ROUNDS; r++) {
        if (w->thread == 0) plant_pending(w, &cases[0]);
        for (int i = 0; i < CALLS; i++) {
            unwrite(&cases[i]);
            kdn_status st = run_case(&cases[i]);
            if (st != KDN_OK) printf("test_threads: thread %d call %d: %s\n", w->thread, i, kdn_status_message(st));
            w->bad_status += st != KDN_OK;
            w->mismatches += memcmp(result(&cases[i]), expected[w->thread][i], cases[i].n_dst * sizeof(float)) != 0;
        }
    }
    for (int i = 0; i < CALLS; i++) free_case(&cases[i]);
    return NULL;
}

static void test_threads(void) {
    for (int t = 0; t < N_THREADS; t++)
        for (int i = 0; i < CALLS; i++) { /* each call alone, on this thread */
            Case c;
            make_case(&c, shape_of(t, i), seed_of(t, i));
            CHECK(run_case(&c) == KDN_OK && written(&c) == c.n_dst);
            expected[t][i] = malloc(c.n_dst * sizeof(float));
            memcpy(expected[t][i], result(&c), c.n_dst * sizeof(float));
            free_case(&c);
        }
    pthread_barrier_init(&start_together, NULL, N_THREADS);
    pthread_t th[N_THREADS];
    Worker w[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t].thread = t;
        CHECK(pthread_create(&th[t], NULL, worker, &w[t]) == 0);
    }
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        if (w[t].mismatches || w[t].bad_status || w[t].pending_wrong)
            printf("test_threads: thread %d: %d results differ from the single-threaded run, %d calls failed, "
                   "%d planted-error checks wrong\n", t, w[t].mismatches, w[t].bad_status, w[t].pending_wrong);
        CHECK(w[t].mismatches == 0 && w[t].bad_status == 0 && w[t].pending_wrong == 0);
    }
    pthread_barrier_destroy(&start_together);
    for (int t = 0; t < N_THREADS; t++)
        for (int i = 0; i < CALLS; i++) free(expected[t][i]);
}

/* ---- failures reach the caller --------------------------------------------- */
static void run_on_new_thread(void *(*fn)(void *)) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
    pthread_join(t, NULL);
}

static int mentions(const char *text, const char *what) {
    if (strstr(text, what)) return 1;
    printf("test_threads: expected a detail mentioning '%s', got '%s'\n", what, text);
    return 0;
}

/* The executor reads its settings at a host thread's first launch: each
 * case runs on a new thread with the environment set before it starts. Two
 * calls, each refused with its own status, nothing written. */
static void *bad_setting_calls(void *arg) {
    const char *variable = getenv("KDN_CPU_SCHEDULE") ? "KDN_CPU_SCHEDULE" : "KDN_CPU_TIMEOUT";
    Case c;
    make_case(&c, &shapes[1], 7u);
    for (int i = 0; i < 2; i++) {
        CHECK(run_case(&c) == KDN_ERR_EXECUTOR_SETTINGS);
        CHECK(mentions(kdn_gdn_error_detail(), variable));
        CHECK(written(&c) == 0);
    }
    free_case(&c);
    return arg;
}

static void test_bad_settings(void) {
    static const char *const settings[][2] = {{"KDN_CPU_SCHEDULE", "ascending"}, {"KDN_CPU_TIMEOUT", "ten"}};
    for (int i = 0; i < 2; i++) {
        setenv(settings[i][0], settings[i][1], 1);
        run_on_new_thread(bad_setting_calls);
        unsetenv(settings[i][0]);
    }
}

/* KDN_CPU_TIMEOUT of 50 ms: a call whose launch takes longer than that,
 * its threads reaching barriers and wave operations all along, is no hang:
 * it runs to its end, bitwise equal to the same call without the limit. */
static const Shape long_call = {32, 2, 4, 96, 1, KDN_PATH_RECURRENT};
static float *long_expected;

static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *time_limited_call(void *arg) {
    Case c;
    make_case(&c, &long_call, 3u);
    const double start = thread_cpu_seconds();
    kdn_status st = run_case(&c);
    const double spent = thread_cpu_seconds() - start;
    if (st != KDN_OK) printf("test_threads: the long call: %s %s\n", kdn_status_message(st), kdn_gdn_error_detail());
    CHECK(st == KDN_OK && kdn_gdn_error_detail()[0] == 0);
    if (spent <= 0.05) printf("test_threads: the long call took %.3f s of CPU time: make it longer\n", spent);
    CHECK(spent > 0.05);
    CHECK(memcmp(result(&c), long_expected, c.n_dst * sizeof(float)) == 0);
    free_case(&c);
    return arg;
}

static void test_time_limit(void) {
    Case c;
    make_case(&c, &long_call, 3u);
    CHECK(run_case(&c) == KDN_OK);
    long_expected = malloc(c.n_dst * sizeof(float));
    memcpy(long_expected, result(&c), c.n_dst * sizeof(float));
    setenv("KDN_CPU_TIMEOUT", "0.05", 1);
    run_on_new_thread(time_limited_call);
    unsetenv("KDN_CPU_TIMEOUT");
    free_case(&c);
    free(long_expected);
}

/* A launch failure of earlier work on this thread (kdn.h's launcher
 * refusing a shape, not yet taken): the call launches nothing, writes
 * nothing, returns KDN_ERR_PENDING_ERROR and leaves the error to its owner;
 * once it is taken the call runs. */
static void test_pending_error(void) {
    Case c;
    make_case(&c, &shapes[2], 11u);
    const long ne[4] = {1L << 32, 1, 1, 1}, st[3] = {0, 0, 0};
    kdn_gather_strided(c.d_q, ne, st, c.d_dst);
    long before = kdn_launch_count();
    CHECK(run_case(&c) == KDN_ERR_PENDING_ERROR);
    CHECK(kdn_launch_count() == before && written(&c) == 0);
    CHECK(mentions(kdn_gdn_error_detail(), "kernel_gather_strided"));
    const char *owner = kdn_sync();
    CHECK(owner != NULL && mentions(owner, "kernel_gather_strided"));
    CHECK(run_case(&c) == KDN_OK && written(&c) == c.n_dst);
    free_case(&c);
}

/* ---- the program's signal state ---------------------------------------------- */
static volatile sig_atomic_t vtalrm_seen;
static void program_vtalrm(int sig) { (void)sig, vtalrm_seen++; }
static void program_fpe(int sig) { (void)sig; }
static void program_segv(int sig, siginfo_t *info, void *uc) { (void)sig, (void)info, (void)uc; }

static const int watched[] = {SIGSEGV, SIGFPE, SIGVTALRM};
enum { N_WATCHED = 3 };

typedef struct {
    struct sigaction action[N_WATCHED];
    stack_t altstack;
    struct itimerval timer;
    double user_seconds, sys_seconds; /* the process's CPU time at the reading */
} SignalState;

static char program_altstack[64 * 1024];

static void install_program_state(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR1);
    sa.sa_sigaction = program_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
    sa.sa_handler = program_fpe;
    sa.sa_flags = 0;
    CHECK(sigaction(SIGFPE, &sa, NULL) == 0);
    sa.sa_handler = program_vtalrm;
    sa.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGVTALRM, &sa, NULL) == 0);
    stack_t ss = {program_altstack, 0, sizeof program_altstack};
    CHECK(sigaltstack(&ss, NULL) == 0);
    struct itimerval t = {{500, 0}, {100000, 0}}; /* never fires during the test */
    CHECK(setitimer(ITIMER_VIRTUAL, &t, NULL) == 0);
}

static SignalState signal_state(void) {
    SignalState s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < N_WATCHED; i++) sigaction(watched[i], NULL, &s.action[i]);
    sigaltstack(NULL, &s.altstack);
    getitimer(ITIMER_VIRTUAL, &s.timer);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    s.user_seconds = usage.ru_utime.tv_sec + 1e-6 * usage.ru_utime.tv_usec;
    s.sys_seconds = usage.ru_stime.tv_sec + 1e-6 * usage.ru_stime.tv_usec;
    return s;
}

/* The timer still counts down from the program's value: it lost no more
 * than the CPU time spent since (ITIMER_VIRTUAL samples user time by ticks,
 * getrusage splits the precise run time by the same ticks, so the two part
 * under load; 2 s covers whole-second readings) and at least half the user
 * time (it kept counting). A stopped, re-armed or restored timer falls
 * outside whatever the run's length (an ASan run spends over 100 s). */
static int timer_counting_down(const SignalState *a, const SignalState *b) {
    const double lost = (double)a->timer.it_value.tv_sec - (double)b->timer.it_value.tv_sec;
    const double user = b->user_seconds - a->user_seconds, cpu = user + b->sys_seconds - a->sys_seconds;
    const int counting = a->timer.it_interval.tv_sec == b->timer.it_interval.tv_sec &&
                         lost >= 0.5 * user - 2 && lost <= cpu + 2;
    if (!counting)
        printf("test_threads: the timer lost %.0f s while the process spent %.1f s user, %.1f s CPU\n", lost, user,
               cpu);
    return counting;
}

/* The same handlers (function, flags, mask), alternate stack and timer. */
static int same_signal_state(const SignalState *a, const SignalState *b, const char *when) {
    int same = a->altstack.ss_sp == b->altstack.ss_sp && a->altstack.ss_size == b->altstack.ss_size &&
               a->altstack.ss_flags == b->altstack.ss_flags && timer_counting_down(a, b);
    for (int i = 0; i < N_WATCHED; i++)
        same &= a->action[i].sa_sigaction == b->action[i].sa_sigaction &&
                a->action[i].sa_flags == b->action[i].sa_flags &&
                sigismember(&a->action[i].sa_mask, SIGUSR1) == sigismember(&b->action[i].sa_mask, SIGUSR1);
    if (!same) printf("test_threads: the program's signal handlers, alternate stack or timer changed %s\n", when);
    return same;
}

/* Sends SIGVTALRM to the launching thread, one at a time: each must reach
 * the program's handler (within 5 s) before the next is sent. */
enum { N_SENT = 20 };
static pthread_t launching_thread;
static volatile int sender_done, lost;

static void *send_vtalrm(void *arg) {
    for (int i = 1; i <= N_SENT; i++) {
        struct timespec pause = {0, 3000000};
        nanosleep(&pause, NULL);
        pthread_kill(launching_thread, SIGVTALRM);
        for (int waited = 0; vtalrm_seen < i && waited < 5000; waited++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        if (vtalrm_seen < i) lost++, vtalrm_seen = i;
    }
    sender_done = 1;
    return arg;
}

/* Calls run while the signals arrive (the chunked path: most of the time
 * inside launches), each result equal to the call run alone. */
static void test_signals_during_launch(void) {
    Case c;
    make_case(&c, &shapes[2], 13u);
    kdn_path path = KDN_PATH_AUTO;
    CHECK(kdn_gdn_chosen_path(&c.call, &path) == KDN_OK && path == KDN_PATH_CHUNKED);
    CHECK(run_case(&c) == KDN_OK);
    float *alone = malloc(c.n_dst * sizeof(float));
    memcpy(alone, result(&c), c.n_dst * sizeof(float));
    launching_thread = pthread_self();
    sender_done = lost = 0;
    vtalrm_seen = 0;
    pthread_t sender;
    CHECK(pthread_create(&sender, NULL, send_vtalrm, NULL) == 0);
    int wrong = 0;
    while (!sender_done) {
        unwrite(&c);
        wrong += run_case(&c) != KDN_OK || memcmp(result(&c), alone, c.n_dst * sizeof(float)) != 0;
    }
    pthread_join(sender, NULL);
    if (lost || wrong) printf("test_threads: %d of %d SIGVTALRM lost, %d calls wrong\n", lost, N_SENT, wrong);
    CHECK(lost == 0 && wrong == 0);
    free(alone);
    free_case(&c);
}

/* ---- caches -------------------------------------------------------------- */
static int query_calls; /* the stand-in query runs under the cache's lock */
static int answer_of(const void *kernel, int device, int arg) {
    return (int)((uintptr_t)kernel % 977) * 100000 + device * 1000 + arg;
}
static int stand_in_query(const void *kernel, int device, int arg) {
    query_calls++;
    return device == 7 ? -1 : answer_of(kernel, device, arg); /* device 7: the runtime cannot say */
}
static const char kernels_a[64]; /* distinct addresses stand for distinct kernels */
static KdnQueryCache shared_cache = KDN_QUERY_CACHE_INIT;
enum { CACHE_KEYS = 16, CACHE_LOOKUPS = 2000 };
static void *cache_lookups(void *arg) {
    long bad = 0;
    for (int i = 0; i < CACHE_LOOKUPS; i++) {
        const int key = (i + (int)(intptr_t)arg) % CACHE_KEYS;
        const void *kernel = &kernels_a[key % 4];
        bad += kdn_cached_query(&shared_cache, kernel, key / 4, 64, stand_in_query) != answer_of(kernel, key / 4, 64);
    }
    return (void *)bad;
}

static void test_query_cache(void) {
    KdnQueryCache c = KDN_QUERY_CACHE_INIT;
    const void *k1 = &kernels_a[0], *k2 = &kernels_a[1];
    const struct { const void *kernel; int device, arg; } keys[] = {{k1, 0, 0}, {k1, 1, 0}, {k2, 0, 0}, {k1, 0, 256}};
    query_calls = 0;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 4; i++)
            CHECK(kdn_cached_query(&c, keys[i].kernel, keys[i].device, keys[i].arg, stand_in_query) ==
                  answer_of(keys[i].kernel, keys[i].device, keys[i].arg));
    CHECK(query_calls == 4); /* each key asked once, each answered its own */
    CHECK(kdn_cached_query(&c, k1, 7, 0, stand_in_query) == -1);
    CHECK(kdn_cached_query(&c, k1, 7, 0, stand_in_query) == -1 && query_calls == 6); /* a failure is asked again */
    for (int i = 0; i < 2 * KDN_QUERY_CACHE_SLOTS; i++) /* past a full table: still each key's own answer */
        CHECK(kdn_cached_query(&c, &kernels_a[i % 64], i / 64 + 2, i, stand_in_query) ==
              answer_of(&kernels_a[i % 64], i / 64 + 2, i));
    pthread_t t[N_THREADS];
    query_calls = 0;
    for (int i = 0; i < N_THREADS; i++) pthread_create(&t[i], NULL, cache_lookups, (void *)(intptr_t)i);
    long bad = 0;
    for (int i = 0; i < N_THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    CHECK(bad == 0 && query_calls == CACHE_KEYS); /* many threads: every answer right, each key asked once */
}

int main(void) {
    char why[256];
    if (kdn_init(why, sizeof why) != 0) {
        printf("test_threads: no device: %s\n", why);
        return 77;
    }
    const int cpu = strcmp(kdn_gdn_backend(), "cpu") == 0;
    alarm(600); /* a hang (threads sharing state, a lost wake-up) fails the test instead of stalling make test */
    test_query_cache();
    install_program_state();
    const SignalState program = signal_state();
    test_threads();
    SignalState now = signal_state();
    CHECK(same_signal_state(&program, &now, "after the threaded calls"));
    if (cpu) test_bad_settings();
    if (cpu) test_time_limit();
    test_pending_error();
    now = signal_state();
    CHECK(same_signal_state(&program, &now, "after the failing calls"));
    test_signals_during_launch();
    now = signal_state();
    CHECK(same_signal_state(&program, &now, "after calls interrupted by SIGVTALRM"));
    vtalrm_seen = 0;
    raise(SIGVTALRM); /* a stray one, after the calls: the program's handler, nothing re-armed */
    now = signal_state();
    CHECK(vtalrm_seen == 1 && same_signal_state(&program, &now, "after a stray SIGVTALRM"));
    if (failures) return 1;
    printf("test_threads (%s): %d host threads x %d calls x %d rounds equal to single-threaded runs; %spending "
           "errors reported by their own calls; the program's signal state kept; runtime answers "
           "cached per device and kernel\n", kdn_gdn_backend(), N_THREADS,
           CALLS, ROUNDS, cpu ? "settings, time limit and " : "");
    return 0;
}

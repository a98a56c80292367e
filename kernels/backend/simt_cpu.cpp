// SIMT executor for the CPU backend.
//
// A launch runs its workgroups one after another. Inside a workgroup every
// thread is a fiber with its own stack; a fiber runs until it
// reaches __syncthreads(), a wave-level exchange, or its end, then control
// returns to the scheduler below. The scheduler releases a wave when all of
// its lanes wait at an exchange, and the workgroup when all threads wait at
// the barrier. Anything else is a divergence bug on a real GPU and is
// reported with the kernel's name; the rest of the launch is abandoned.
//
// The order is a schedule (KDN_CPU_SCHEDULE, read at the first launch):
// "asc" (default) runs the ready threads of a workgroup in ascending order
// and workgroups in grid order; "desc" both in descending order; "shuffle" or
// "shuffle:SEED" a new seeded permutation of the threads between every two
// barriers and a seeded permutation of the workgroups. A kernel correct on a
// GPU gives the same result under every schedule; one that reads LDS before
// another thread's write in the same barrier interval, lets two threads write
// one address, or reads another workgroup's output, does not (tests/tests.mk
// runs the product kernels under desc and shuffle). Threads that wait at
// different __syncthreads() calls are an error too (divergent barrier).
//
// Lanes of a wave are NOT run in lockstep: between two wave operations
// (kdn_shfl and what wave.h builds on it, kdn_wave_sync) each lane runs on
// its own, one lane after another, as CUDA's independent threads may. Two
// lanes' LDS accesses are ordered only by a wave operation of their wave or
// a barrier; code that relies on gfx906's lockstep instead is a race here.
//
// The race detector (the build/cpu-race build, `make RACECHECK=1`): its
// kernels are compiled with -fsanitize=thread but linked without its
// runtime, so every load and store of a kernel calls __tsan_{read,write}N
// below. Those that fall in LDS (the dynamic
// buffer or the kdn_lds section, where simt_cpu.h puts static __shared__
// arrays) are checked against a shadow word per 4 bytes that holds the last
// writer and up to two readers with the epoch of their access. Epochs: one
// clock, ticked at every barrier release (all waves take the new value) and
// every wave release (that wave takes it). Two accesses to one word by
// different threads, at least one a write, are a race unless a barrier lies
// between them (the earlier epoch is older than the last barrier) or they
// are lanes of one wave with a wave operation between them (different
// epochs). The first race fails the launch, naming the kernel, the LDS
// address and both threads. Two reader slots: a write after reads by three
// or more threads of which only older ones raced may go unreported; nothing
// is reported that is not a race by the rule above.
//
// Limits turned into errors: a launch that runs longer than KDN_CPU_TIMEOUT
// seconds of CPU time (default 300; 0: no limit) is stopped as a hang; a
// fiber that overflows its stack hits a guard page and the launch fails
// with that message (kernels are built with -fstack-clash-protection, so a
// large frame probes its way down instead of jumping past the guard); an
// integer division by zero in a kernel (SIGFPE) fails the launch too.
//
// Fibers are made once (ucontext) and then reused for every workgroup of
// every launch: a fiber loops over "run the kernel body, report done". All
// switches are _setjmp/_longjmp, which unlike swapcontext make no system call
// (swapcontext saves the signal mask each time, and that dominated the run
// time of the ladder). glibc's fortified longjmp refuses to jump between
// stacks, hence the #undef before any header.
#undef _FORTIFY_SOURCE
#include "simt_cpu.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define KDN_ASAN 1
#else
#define KDN_ASAN 0
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace {

const int kWave = 64;
const int kMaxThreads = 1024;
const size_t kMaxLds = 64 * 1024;          // gfx906: 64 KB LDS per workgroup
const size_t kStack = KDN_ASAN ? 512 * 1024 : 128 * 1024;
const size_t kGuard = 64 * 1024;           // PROT_NONE below every fiber stack
const double kDefaultTimeout = 300.0;      // seconds of CPU time per launch

enum State { READY, AT_BARRIER, AT_WAVE, DONE };

struct Fiber {
    jmp_buf ctx;
    bool started;                          // its stack holds a live fiber_main
    State state;
    int parity;                            // which exchange buffer its next wave op uses
    int barrier_site;                      // the __syncthreads() call it waits at
};

// The race detector's record of one 4-byte LDS word (see the top).
struct ShadowWord {
    uint64_t w_epoch, r_epoch[2];
    int16_t w_thread, r_thread[2];
};

// An LDS region the race detector watches: the dynamic buffer or the
// static __shared__ section; shadow[i] describes bytes 4i .. 4i+3.
struct LdsRegion {
    uintptr_t base;
    size_t bytes;
    const char *name;
    ShadowWord *shadow;
};

struct RaceDetector {
    bool active;                           // a kernel of this build called a hook
    long checked;                          // LDS accesses checked
    uint64_t clock, barrier_epoch;
    uint64_t wave_epoch[1024 / 64];
    LdsRegion dynamic_lds, static_lds;
};

enum Order { ASCENDING, DESCENDING, SHUFFLED };

struct Schedule {
    bool read;                             // KDN_CPU_SCHEDULE parsed
    bool bad;                              // ... and not understood: every launch fails
    Order order;
    uint64_t rng;                          // xorshift64 state for SHUFFLED
};

struct Executor {
    const char *kernel;
    void (*body)(void *);
    void *arg;
    int nthreads;
    int cur;
    Fiber fibers[kMaxThreads];
    jmp_buf sched;
    ucontext_t boot;                       // only to enter a fiber's stack the first time
    char *stacks;
    float exchange[2][kMaxThreads];
    alignas(16) unsigned char lds[kMaxLds];
    int order[kMaxThreads];                // threads in the order the scheduler runs them
    Schedule sched_order;
    RaceDetector race;
    bool in_fiber;                         // a fiber runs now (signal handlers look)
    bool in_launch;
    double timeout;                        // seconds of CPU time per launch, 0: none
    bool timeout_read;
    char error[512];
    bool failed;
    // AddressSanitizer's view of the stack switches.
    void *fake_stack;
    const void *sched_stack_bottom;
    size_t sched_stack_size;
};

Executor E;

void fail(const char *fmt, ...) {
    if (E.failed) return;
    E.failed = true;
    int n = snprintf(E.error, sizeof E.error, "kernel %s, workgroup (%u,%u,%u): ", E.kernel,
                     blockIdx.x, blockIdx.y, blockIdx.z);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(E.error + n, sizeof E.error - (size_t)n, fmt, ap);
    va_end(ap);
}

void set_thread_index(int t) {
    threadIdx.x = (unsigned)t % blockDim.x;
    threadIdx.y = ((unsigned)t / blockDim.x) % blockDim.y;
    threadIdx.z = (unsigned)t / (blockDim.x * blockDim.y);
}

uint64_t next_random(void) {
    uint64_t x = E.sched_order.rng;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return E.sched_order.rng = x;
}

// The schedule from its name: asc, desc, shuffle or shuffle:SEED; false
// (schedule unchanged) for anything else.
bool parse_schedule(const char *v, Schedule *s) {
    Schedule p = {true, false, ASCENDING, 0x9e3779b97f4a7c15ull};
    if (strcmp(v, "desc") == 0) p.order = DESCENDING;
    else if (strncmp(v, "shuffle", 7) == 0 && (v[7] == 0 || v[7] == ':')) {
        p.order = SHUFFLED;
        if (v[7] == ':') {
            char *end;
            p.rng ^= strtoull(v + 8, &end, 10) * 0xbf58476d1ce4e5b9ull;
            if (end == v + 8 || *end) return false;
        }
    } else if (strcmp(v, "asc") != 0)
        return false;
    *s = p;
    return true;
}

// KDN_CPU_SCHEDULE, read at the first launch; anything but a schedule name
// fails every launch, so a typo cannot silently test the default order.
void read_schedule(void) {
    Schedule *s = &E.sched_order;
    const char *v = getenv("KDN_CPU_SCHEDULE");
    if (!s->read) {
        s->read = true;
        s->order = ASCENDING;
        if (v && *v && !parse_schedule(v, s)) s->bad = true;
    }
    if (s->bad) fail("KDN_CPU_SCHEDULE='%s': expected asc, desc, shuffle or shuffle:SEED", v ? v : "");
}

// The order the ready threads of the next barrier interval run in.
void order_threads(void) {
    int n = E.nthreads;
    for (int i = 0; i < n; i++) E.order[i] = E.sched_order.order == DESCENDING ? n - 1 - i : i;
    if (E.sched_order.order != SHUFFLED) return;
    for (int i = n - 1; i > 0; i--) { // Fisher-Yates
        int j = (int)(next_random() % (uint64_t)(i + 1)), t = E.order[i];
        E.order[i] = E.order[j];
        E.order[j] = t;
    }
}

unsigned long gcd(unsigned long a, unsigned long b) { return b ? gcd(b, a % b) : a; }

// The i-th workgroup to run, as a linear index into the grid: grid order,
// reversed, or (SHUFFLED) i -> (a i + b) mod n with a coprime to n, a
// permutation that needs no table however large the grid.
struct GridOrder {
    unsigned long n, a, b;
    Order order;
};

GridOrder grid_order(unsigned long n) {
    GridOrder g = {n, 1, 0, E.sched_order.order};
    if (g.order == SHUFFLED && n > 1) {
        g.a = 1 + next_random() % n;
        while (gcd(g.a, n) != 1) g.a = g.a % n + 1;
        g.b = next_random() % n;
    }
    return g;
}

unsigned long grid_pick(const GridOrder *g, unsigned long i) {
    if (g->order == DESCENDING) return g->n - 1 - i;
    if (g->order == SHUFFLED) return (unsigned long)(((unsigned __int128)g->a * i + g->b) % g->n);
    return i;
}

// Fiber t's stack: kStack bytes above its own guard region.
char *stack_of(int t) { return E.stacks + (size_t)t * (kGuard + kStack) + kGuard; }

// Fiber -> scheduler; returns when the scheduler resumes this fiber.
void to_scheduler(void) {
#if KDN_ASAN
    __sanitizer_start_switch_fiber(&E.fake_stack, E.sched_stack_bottom, E.sched_stack_size);
#endif
    if (!_setjmp(E.fibers[E.cur].ctx)) _longjmp(E.sched, 1);
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(E.fake_stack, NULL, NULL);
#endif
}

// From a signal handler on a fiber's stack or the alternate stack: the
// launch has failed, the running fiber is dropped (made afresh next time)
// and the scheduler goes on, sees the error and ends the launch.
[[noreturn]] void abandon_fiber(int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
#if KDN_ASAN
    __sanitizer_start_switch_fiber(NULL, E.sched_stack_bottom, E.sched_stack_size);
#endif
    _longjmp(E.sched, 1);
}

void fiber_main(void) {
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(NULL, &E.sched_stack_bottom, &E.sched_stack_size);
#endif
    for (;;) {
        E.body(E.arg);
        E.fibers[E.cur].state = DONE;
        to_scheduler();
    }
}

// Scheduler -> fiber t, returning when it blocks or ends.
void run_fiber(int t) {
    E.cur = t;
    set_thread_index(t);
    Fiber *f = &E.fibers[t];
#if KDN_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, stack_of(t), kStack);
#endif
    if (!_setjmp(E.sched)) {
        E.in_fiber = true;
        if (f->started) _longjmp(f->ctx, 1);
        f->started = true;
        getcontext(&E.boot);
        E.boot.uc_stack.ss_sp = stack_of(t);
        E.boot.uc_stack.ss_size = kStack;
        E.boot.uc_link = NULL;
        makecontext(&E.boot, fiber_main, 0);
        setcontext(&E.boot);
    }
    E.in_fiber = false;
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

void yield(State s) {
    E.fibers[E.cur].state = s;
    to_scheduler();
}

// ---- limits that would otherwise hang or crash the run ---------------------

struct sigaction previous_segv, previous_fpe;

// A fault the executor does not own goes to the handler that was there
// before (AddressSanitizer's, the harness's, or the default: a crash) by
// returning to the faulting instruction with that handler back in place.
void pass_on(int sig) { sigaction(sig, sig == SIGSEGV ? &previous_segv : &previous_fpe, NULL); }

// A fault in a guard region is a fiber's stack overflow: the launch fails
// with that message.
void on_segv(int sig, siginfo_t *info, void *uc) {
    (void)uc;
    uintptr_t a = (uintptr_t)info->si_addr, base = (uintptr_t)E.stacks, slot = kGuard + kStack;
    const bool in_guard = E.stacks && a >= base && a < base + slot * kMaxThreads && (a - base) % slot < kGuard;
    if (!E.in_fiber || !in_guard) return pass_on(sig);
    fail("thread %d overflowed its %zu KB fiber stack (private arrays too large: gfx906 has no scratch "
         "for them either)", E.cur, kStack / 1024);
    abandon_fiber(sig);
}

// An integer division by zero (or INT_MIN / -1) in a kernel traps on the
// host; a GPU does not trap and carries garbage on. Either way a kernel bug:
// the launch fails naming the kernel and the thread, like the faults above.
// A trap outside a kernel (host code) is passed on.
void on_fpe(int sig, siginfo_t *info, void *uc) {
    (void)uc;
    if (!E.in_fiber) return pass_on(sig);
    fail("thread %d: %s (SIGFPE on the host; a GPU does not trap, the result would be garbage)", E.cur,
         info->si_code == FPE_INTDIV ? "integer division by zero" : "arithmetic trap, e.g. INT_MIN / -1");
    abandon_fiber(sig);
}

void on_timeout(int sig) {
    if (!E.in_fiber) { // between fibers: the scheduler itself always ends; catch the next fiber
        struct itimerval soon = {{0, 0}, {0, 10000}};
        setitimer(ITIMER_VIRTUAL, &soon, NULL);
        return;
    }
    fail("thread %d still running after %g s of CPU time (KDN_CPU_TIMEOUT): a hang, e.g. a spin-wait on "
         "another thread", E.cur, E.timeout);
    abandon_fiber(sig);
}

void arm_timeout(double seconds) {
    struct itimerval t = {{0, 0}, {(time_t)seconds, (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)}};
    setitimer(ITIMER_VIRTUAL, &t, NULL);
}

void set_timeout(double seconds) {
    E.timeout_read = true;
    E.timeout = seconds;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_timeout;
    sigaction(SIGVTALRM, &sa, NULL);
}

// KDN_CPU_TIMEOUT (seconds of CPU time per launch, 0: none), read at the
// first launch; a value that is not a number fails every launch.
void read_timeout(void) {
    static const char *bad;
    if (!E.timeout_read) {
        double seconds = kDefaultTimeout;
        const char *v = getenv("KDN_CPU_TIMEOUT");
        if (v && *v) {
            char *end;
            double x = strtod(v, &end);
            if (*end || !(x >= 0.0) || x > 1e6) bad = v;
            else seconds = x;
        }
        set_timeout(seconds);
    }
    if (bad) fail("KDN_CPU_TIMEOUT='%s': expected seconds (0: no limit)", bad);
}

// Fiber stacks, each above a PROT_NONE guard region, the SIGSEGV handler
// (on its own stack: the faulting one is full) that names an overflow, and
// the SIGFPE one.
bool ensure_stacks(void) {
    if (E.stacks) return true;
    const size_t slot = kGuard + kStack;
    void *p = mmap(NULL, slot * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    for (int t = 0; t < kMaxThreads; t++)
        if (mprotect((char *)p + (size_t)t * slot, kGuard, PROT_NONE) != 0) return false;
    static char alt[64 * 1024];
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, &previous_segv) != 0) return false;
    sa.sa_sigaction = on_fpe;
    if (sigaction(SIGFPE, &sa, &previous_fpe) != 0) return false;
    E.stacks = (char *)p;
    return true;
}

// ---- the race detector -----------------------------------------------------

// Epochs (see the top): a barrier (or a workgroup's start) gives every wave
// the new clock value, a wave release only its wave.
void tick_barrier(void) {
    RaceDetector &R = E.race;
    R.barrier_epoch = ++R.clock;
    for (int w = 0; w < kMaxThreads / kWave; w++) R.wave_epoch[w] = R.clock;
}

void tick_wave(int w) { E.race.wave_epoch[w] = ++E.race.clock; }

// Whether an access by thread `other` at `epoch` and one by the running
// thread now are unordered: same barrier interval, and different waves or
// one wave with no wave operation between.
bool concurrent(int other, uint64_t epoch) {
    const RaceDetector &R = E.race;
    if (epoch < R.barrier_epoch || other == E.cur) return false;
    return other / kWave != E.cur / kWave || epoch == R.wave_epoch[E.cur / kWave];
}

void report_race(const LdsRegion &r, size_t word, int other, bool other_wrote, bool write) {
    char how[96];
    if (other / kWave == E.cur / kWave)
        snprintf(how, sizeof how, "lanes of wave %d, no wave operation between them", other / kWave);
    else
        snprintf(how, sizeof how, "waves %d and %d", other / kWave, E.cur / kWave);
    fail("LDS race at %s byte %zu (%p): thread %d %s it, then thread %d %s it, with no barrier between (%s)",
         r.name, word * 4, (void *)(r.base + word * 4), other, other_wrote ? "wrote" : "read", E.cur,
         write ? "writes" : "reads", how);
}

// The reader slot the running thread's read goes to: its own, a free one
// (its read ordered before now for everyone), or the older of the two.
int reader_slot(const ShadowWord &w) {
    for (int k = 0; k < 2; k++)
        if (w.r_thread[k] == E.cur) return k;
    for (int k = 0; k < 2; k++)
        if (w.r_epoch[k] < E.race.barrier_epoch) return k;
    return w.r_epoch[0] <= w.r_epoch[1] ? 0 : 1;
}

void check_word(const LdsRegion &r, size_t i, bool write) {
    ShadowWord &w = r.shadow[i];
    const uint64_t now = E.race.wave_epoch[E.cur / kWave];
    if (concurrent(w.w_thread, w.w_epoch)) return report_race(r, i, w.w_thread, true, write);
    if (!write) {
        int k = reader_slot(w);
        w.r_thread[k] = (int16_t)E.cur, w.r_epoch[k] = now;
        return;
    }
    for (int k = 0; k < 2; k++)
        if (concurrent(w.r_thread[k], w.r_epoch[k])) return report_race(r, i, w.r_thread[k], false, true);
    w.w_thread = (int16_t)E.cur, w.w_epoch = now;
    w.r_epoch[0] = w.r_epoch[1] = 0;
}

// Every load and store of an instrumented kernel: those in LDS are checked.
void lds_access(const void *p, size_t n, bool write) {
    RaceDetector &R = E.race;
    R.active = true;
    if (!E.in_fiber || E.failed || n == 0) return;
    const uintptr_t a = (uintptr_t)p;
    LdsRegion *r = a - R.dynamic_lds.base < kMaxLds ? &R.dynamic_lds
                 : a - R.static_lds.base < R.static_lds.bytes ? &R.static_lds : NULL;
    if (!r) return;
    const size_t off = a - r->base;
    if (r == &R.dynamic_lds && off + n > r->bytes) {
        fail("thread %d %s dynamic LDS byte %zu, past the %zu bytes the launch asked for", E.cur,
             write ? "writes" : "reads", off + n - 1, r->bytes);
        return;
    }
    if (!r->shadow) r->shadow = (ShadowWord *)calloc((r == &R.dynamic_lds ? kMaxLds : r->bytes) / 4 + 1,
                                                    sizeof(ShadowWord));
    R.checked++;
    for (size_t i = off / 4; i <= (off + n - 1) / 4 && !E.failed; i++) check_word(*r, i, write);
}

int wave_width(int first_lane) {
    int rest = E.nthreads - first_lane;
    return rest < kWave ? rest : kWave;
}

// Releases every wave whose lanes all wait at an exchange. True if any did.
bool release_waves(void) {
    bool released = false;
    for (int w = 0; w < E.nthreads; w += kWave) {
        int n = wave_width(w), waiting = 0;
        for (int l = 0; l < n; l++) waiting += E.fibers[w + l].state == AT_WAVE;
        if (waiting == n) {
            for (int l = 0; l < n; l++) E.fibers[w + l].state = READY;
            tick_wave(w / kWave);
            released = true;
        }
    }
    return released;
}

// Nothing runnable: either every thread waits at the barrier, or it is a bug.
void resolve_barrier(int at_barrier, int done) {
    if (at_barrier + done == E.nthreads && done == 0) {
        for (int t = 1; t < E.nthreads; t++)
            if (E.fibers[t].barrier_site != E.fibers[0].barrier_site) {
                fail("threads 0 and %d wait at different __syncthreads() calls (a divergent barrier)", t);
                return;
            }
        for (int t = 0; t < E.nthreads; t++) E.fibers[t].state = READY;
        tick_barrier();
    } else if (at_barrier + done == E.nthreads) {
        fail("__syncthreads() not reached by all threads: %d of %d threads had exited", done, E.nthreads);
    } else {
        for (int t = 0; t < E.nthreads; t++)
            if (E.fibers[t].state == AT_WAVE) {
                fail("wave-level operation not reached by all lanes of wave %d (thread %d waits, "
                     "others exited or wait at __syncthreads())", t / kWave, t);
                return;
            }
    }
}

// A fiber abandoned inside a kernel body (the launch failed) must not be
// resumed there: it is made afresh the next time it runs.
void abandon_fibers(void) {
    for (int t = 0; t < E.nthreads; t++)
        if (E.fibers[t].state != DONE) E.fibers[t].started = false;
}

void run_workgroup(void) {
    for (int t = 0; t < E.nthreads; t++) {
        E.fibers[t].state = READY;
        E.fibers[t].parity = 0;
    }
    tick_barrier();
    for (;;) {
        order_threads();
        for (int i = 0; i < E.nthreads && !E.failed; i++)
            if (E.fibers[E.order[i]].state == READY) run_fiber(E.order[i]);
        if (E.failed) return;
        int at_barrier = 0, done = 0;
        for (int t = 0; t < E.nthreads; t++) {
            at_barrier += E.fibers[t].state == AT_BARRIER;
            done += E.fibers[t].state == DONE;
        }
        if (done == E.nthreads) return;
        if (release_waves()) continue;
        resolve_barrier(at_barrier, done);
        if (E.failed) return;
    }
}

bool check_launch(dim3 grid, dim3 block, size_t shmem) {
    unsigned long threads = (unsigned long)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0)
        fail("empty launch: grid (%u,%u,%u), block (%u,%u,%u)", grid.x, grid.y, grid.z, block.x, block.y, block.z);
    else if (threads > (unsigned long)kMaxThreads)
        fail("workgroup of %lu threads exceeds the limit of %d", threads, kMaxThreads);
    else if (shmem > kMaxLds)
        fail("%zu bytes of dynamic LDS exceed gfx906's 64 KB", shmem);
    else if (!ensure_stacks())
        fail("cannot map fiber stacks");
    return !E.failed;
}

}  // namespace

static long launches;

long kdn_cpu_launch_count(void) { return launches; }

// The static __shared__ arrays (simt_cpu.h puts them in this section; weak:
// a program may have none).
extern "C" char __start_kdn_lds[] __attribute__((weak)), __stop_kdn_lds[] __attribute__((weak));

static void watch_lds(size_t shmem) {
    LdsRegion &d = E.race.dynamic_lds, &s = E.race.static_lds;
    d.base = (uintptr_t)E.lds, d.bytes = shmem, d.name = "dynamic LDS";
    s.base = (uintptr_t)__start_kdn_lds, s.name = "static __shared__";
    s.bytes = __start_kdn_lds ? (size_t)(__stop_kdn_lds - __start_kdn_lds) : 0;
}

// Bytes of static __shared__ arrays the workgroup that began at `epoch`
// used (words it read or wrote): only the race detector's build sees them.
static size_t static_lds_used(uint64_t epoch) {
    const LdsRegion &s = E.race.static_lds;
    size_t words = 0;
    for (size_t i = 0; s.shadow && i < s.bytes / 4; i++) {
        const ShadowWord &w = s.shadow[i];
        words += w.w_epoch >= epoch || w.r_epoch[0] >= epoch || w.r_epoch[1] >= epoch;
    }
    return words * 4;
}

// gfx906's 64 KB hold static and dynamic LDS together. The static part is
// known from the first workgroup's accesses, where the race detector runs.
static void check_static_lds(uint64_t epoch, size_t shmem) {
    const size_t used = static_lds_used(epoch);
    if (used + shmem > kMaxLds)
        fail("%zu bytes of static __shared__ arrays + %zu bytes of dynamic LDS exceed gfx906's 64 KB", used, shmem);
}

static void run_grid(dim3 grid, size_t shmem) {
    GridOrder order = grid_order((unsigned long)grid.x * grid.y * grid.z);
    for (unsigned long i = 0; i < order.n; i++) {
        unsigned long w = grid_pick(&order, i);
        blockIdx.x = (unsigned)(w % grid.x);
        blockIdx.y = (unsigned)(w / grid.x % grid.y);
        blockIdx.z = (unsigned)(w / grid.x / grid.y);
        // Uninitialised LDS reads as NaN, so a kernel that forgets to fill it fails its test.
        memset(E.lds, 0xff, shmem);
        const uint64_t epoch = E.race.clock + 1; // run_workgroup's first tick
        run_workgroup();
        if (i == 0 && E.race.active && !E.failed) check_static_lds(epoch, shmem);
        if (E.failed) {
            abandon_fibers();
            return;
        }
    }
}

void kdn_cpu_launch(const char *kernel, dim3 grid, dim3 block, size_t shmem, void (*body)(void *), void *ctx) {
    launches++;
    if (E.failed) return;  // an earlier error stands until it is taken
    E.kernel = kernel;
    blockIdx.x = blockIdx.y = blockIdx.z = 0;
    read_schedule();
    read_timeout();
    if (E.failed || !check_launch(grid, block, shmem)) return;
    E.body = body;
    E.arg = ctx;
    E.nthreads = (int)(block.x * block.y * block.z);
    gridDim = grid;
    blockDim = block;
    watch_lds(shmem);
    if (E.timeout > 0) arm_timeout(E.timeout);
    run_grid(grid, shmem);
    arm_timeout(0);
}

void kdn_cpu_barrier(int site) {
    E.fibers[E.cur].barrier_site = site;
    yield(AT_BARRIER);
}

void kdn_cpu_wave_sync(void) { yield(AT_WAVE); }

int kdn_cpu_set_schedule(const char *name) { return parse_schedule(name, &E.sched_order) ? 0 : -1; }

void *kdn_cpu_dynamic_shared(void) { return E.lds; }

int kdn_cpu_lane(void) { return E.cur % kWave; }

float kdn_cpu_wave_read(float v, int src_lane) {
    int t = E.cur;
    // Two buffers: a lane may run one exchange ahead of a slower lane of its
    // wave, never two, since the next exchange waits for the whole wave.
    int p = E.fibers[t].parity;
    E.fibers[t].parity ^= 1;
    E.exchange[p][t] = v;
    yield(AT_WAVE);
    int first = t - t % kWave;
    if (src_lane < 0 || src_lane >= wave_width(first)) {
        fail("thread %d reads lane %d, outside its wave of %d lanes", t, src_lane, wave_width(first));
        return 0.0f;
    }
    return E.exchange[p][first + src_lane];
}

const char *kdn_cpu_take_error(void) {
    if (!E.failed) return NULL;
    E.failed = false;
    return E.error;
}

void kdn_cpu_set_timeout(double seconds) { set_timeout(seconds); }

bool kdn_cpu_race_detector(void) { return E.race.active; }
long kdn_cpu_lds_checked(void) { return E.race.checked; }

// The hooks of -fsanitize=thread without its runtime (the build/cpu-race
// kernels): the race detector sees every load and store, a read-modify-write
// as a read and a write (AddressSanitizer's hooks, tried first, check such
// an access once, as a read: a race on it went unseen). Other builds never
// call them.
extern "C" {
#define KDN_RACE_HOOKS(n)                                                                    \
    void __tsan_read##n(const void *p) { lds_access(p, n, false); }                          \
    void __tsan_write##n(const void *p) { lds_access(p, n, true); }                          \
    void __tsan_unaligned_read##n(const void *p) { lds_access(p, n, false); }                \
    void __tsan_unaligned_write##n(const void *p) { lds_access(p, n, true); }
KDN_RACE_HOOKS(1)
KDN_RACE_HOOKS(2)
KDN_RACE_HOOKS(4)
KDN_RACE_HOOKS(8)
KDN_RACE_HOOKS(16)
void __tsan_read_range(const void *p, unsigned long n) { lds_access(p, n, false); }
void __tsan_write_range(const void *p, unsigned long n) { lds_access(p, n, true); }
void __tsan_init(void) {}
}

// The CPU SIMT executor's scheduler (simt_executor.h): one host thread's
// executor, its failure record and its settings, the fibers and the loop
// that runs them. The other parts: simt_cpu.cpp (simt_cpu.h's functions),
// simt_watchdog.cpp (signals and timers) and simt_race.cpp (the race
// detector).
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
// (kdn_shfl and what wave.h builds on it) each lane runs on
// its own, one lane after another, as CUDA's independent threads may. Two
// lanes' LDS accesses are ordered only by a wave operation of their wave or
// a barrier; code that relies on gfx906's lockstep instead is a race here.
//
// Host threads: every host thread that launches gets its own executor
// (fibers, stacks, LDS, schedule, race detector state, made at its first
// launch and freed when it exits), its own kernel indices and static
// __shared__ arrays (simt_cpu.h), and its own record of the first failure
// since the last take; launches on different host threads run at once and
// do not meet.
//
// Fibers are made once (ucontext) and then reused for every workgroup of
// every launch: a fiber loops over "run the kernel body, report done". All
// switches are _setjmp/_longjmp, which unlike swapcontext make no system call
// (swapcontext saves the signal mask each time, and that dominated the run
// time of the ladder). glibc's fortified longjmp refuses to jump between
// stacks, hence the #undef before any header.
#undef _FORTIFY_SOURCE
#include "simt_executor.h"
#include "runtime.h"
#include "simt_race.h"
#include "simt_watchdog.h"

#include <new>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

namespace kdn_simt {

__thread Fault fault;
// Initial-exec: read by the signal handlers, which must not allocate.
__thread Executor *current __attribute__((tls_model("initial-exec")));

static void destroy_executor(Executor *e) {
    if (e->timer_made) timer_delete(e->timer);
    if (e->stacks) munmap(e->stacks, (kGuard + kStack) * kMaxThreads);
    free(e->altstack);
    free(e->race.dynamic_lds.shadow);
    free(e->race.static_lds.shadow);
    e->~Executor();
    munmap(e, sizeof *e);
}

namespace {

// Frees the thread's executor when the thread exits.
struct ExecutorOwner {
    Executor *e;
    ~ExecutorOwner() {
        if (!e) return;
        current = nullptr;
        destroy_executor(e);
    }
};
thread_local ExecutorOwner owner;

}  // namespace

// The calling thread's executor, made at its first launch (NULL if out of
// memory). Mapped, not allocated: like the fiber stacks it is the
// executor's memory, not the program's heap (a program that limits malloc,
// as tests/test_report.sh's shim does, still runs kernels).
Executor *executor(void) {
    if (!current) {
        void *p = mmap(NULL, sizeof(Executor), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return nullptr;
        owner.e = current = new (p) Executor();
    }
    return current;
}

bool failed(void) { return fault.kind != KDN_FAULT_NONE; }

static void vrecord(int kind, const char *kernel, const char *fmt, va_list ap) {
    if (failed()) return;
    fault.kind = kind;
    int n = snprintf(fault.msg, sizeof fault.msg, "kernel %s, workgroup (%u,%u,%u): ", kernel, blockIdx.x,
                     blockIdx.y, blockIdx.z);
    vsnprintf(fault.msg + n, sizeof fault.msg - (size_t)n, fmt, ap);
}

// The running launch fails (the executor stopped the kernel).
void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vrecord(KDN_FAULT_LAUNCH, current->kernel, fmt, ap);
    va_end(ap);
}

// The running launch fails before it starts: an executor setting is not understood.
void fail_setting(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vrecord(KDN_FAULT_SETTINGS, current->kernel, fmt, ap);
    va_end(ap);
}

static void set_thread_index(int t) {
    threadIdx.x = (unsigned)t % blockDim.x;
    threadIdx.y = ((unsigned)t / blockDim.x) % blockDim.y;
    threadIdx.z = (unsigned)t / (blockDim.x * blockDim.y);
}

static uint64_t next_random(Executor &E) {
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

// KDN_CPU_SCHEDULE, read at the thread's first launch; anything but a
// schedule name fails every launch, so a typo cannot silently test the
// default order.
void read_schedule(Executor &E) {
    Schedule *s = &E.sched_order;
    const char *v = getenv("KDN_CPU_SCHEDULE");
    if (!s->read) {
        s->read = true;
        s->order = ASCENDING;
        if (v && *v && !parse_schedule(v, s)) s->bad = true;
    }
    if (s->bad) fail_setting("KDN_CPU_SCHEDULE='%s': expected asc, desc, shuffle or shuffle:SEED", v ? v : "");
}

// KDN_CPU_TIMEOUT (seconds of CPU time without progress, 0: none), read at the
// thread's first launch; a value that is not a number fails every launch.
void read_timeout(Executor &E) {
    if (!E.timeout_read) {
        E.timeout_read = true;
        E.timeout = kDefaultTimeout;
        const char *v = getenv("KDN_CPU_TIMEOUT");
        if (v && *v) {
            char *end;
            double x = strtod(v, &end);
            if (*end || !(x >= 0.0) || x > 1e6) E.bad_timeout = v;
            else E.timeout = x;
        }
    }
    if (E.bad_timeout) fail_setting("KDN_CPU_TIMEOUT='%s': expected seconds (0: no limit)", E.bad_timeout);
}

// The order the ready threads of the next barrier interval run in.
static void order_threads(Executor &E) {
    int n = E.nthreads;
    for (int i = 0; i < n; i++) E.order[i] = E.sched_order.order == DESCENDING ? n - 1 - i : i;
    if (E.sched_order.order != SHUFFLED) return;
    for (int i = n - 1; i > 0; i--) { // Fisher-Yates
        int j = (int)(next_random(E) % (uint64_t)(i + 1)), t = E.order[i];
        E.order[i] = E.order[j];
        E.order[j] = t;
    }
}

static unsigned long gcd(unsigned long a, unsigned long b) { return b ? gcd(b, a % b) : a; }

namespace {

// The i-th workgroup to run, as a linear index into the grid: grid order,
// reversed, or (SHUFFLED) i -> (a i + b) mod n with a coprime to n, a
// permutation that needs no table however large the grid.
struct GridOrder {
    unsigned long n, a, b;
    Order order;
};

}  // namespace

static GridOrder grid_order(Executor &E, unsigned long n) {
    GridOrder g = {n, 1, 0, E.sched_order.order};
    if (g.order == SHUFFLED && n > 1) {
        g.a = 1 + next_random(E) % n;
        while (gcd(g.a, n) != 1) g.a = g.a % n + 1;
        g.b = next_random(E) % n;
    }
    return g;
}

static unsigned long grid_pick(const GridOrder *g, unsigned long i) {
    if (g->order == DESCENDING) return g->n - 1 - i;
    if (g->order == SHUFFLED) return (unsigned long)(((unsigned __int128)g->a * i + g->b) % g->n);
    return i;
}

// Fiber t's stack: kStack bytes above its own guard region.
static char *stack_of(const Executor &E, int t) { return E.stacks + (size_t)t * (kGuard + kStack) + kGuard; }

// Fiber -> scheduler; returns when the scheduler resumes this fiber.
// in_fiber is set only while the fiber runs its own code, never during a
// switch: a signal handler may then switch away (abandon_fiber) at once.
static void to_scheduler(Executor &E) {
    E.in_fiber = 0;
    E.switches = E.switches < SIG_ATOMIC_MAX ? E.switches + 1 : 0;
#if KDN_ASAN
    __sanitizer_start_switch_fiber(&E.fake_stack, E.sched_stack_bottom, E.sched_stack_size);
#endif
    if (!_setjmp(E.fibers[E.cur].ctx)) _longjmp(E.sched, 1);
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(E.fake_stack, NULL, NULL);
#endif
    E.in_fiber = 1;
}

static void fiber_main(void) {
    Executor &E = *current;
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(NULL, &E.sched_stack_bottom, &E.sched_stack_size);
#endif
    E.in_fiber = 1;
    for (;;) {
        E.body(E.arg);
        E.fibers[E.cur].state = DONE;
        to_scheduler(E);
    }
}

// Scheduler -> fiber t, returning when it blocks or ends. A launch whose
// CPU time ran out between two fibers fails here, at the next fiber.
static void run_fiber(Executor &E, int t) {
    E.cur = t;
    if (E.expired) return fail_expired(E, t);
    set_thread_index(t);
    Fiber *f = &E.fibers[t];
#if KDN_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, stack_of(E, t), kStack);
#endif
    if (!_setjmp(E.sched)) {
        if (f->started) _longjmp(f->ctx, 1);
        f->started = true;
        getcontext(&E.boot);
        E.boot.uc_stack.ss_sp = stack_of(E, t);
        E.boot.uc_stack.ss_size = kStack;
        E.boot.uc_link = NULL;
        makecontext(&E.boot, fiber_main, 0);
        setcontext(&E.boot);
    }
    E.in_fiber = 0;
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

void yield(Executor &E, State s) {
    E.fibers[E.cur].state = s;
    to_scheduler(E);
}

int wave_width(const Executor &E, int first_lane) {
    int rest = E.nthreads - first_lane;
    return rest < kWave ? rest : kWave;
}

// Releases every wave whose lanes all wait at an exchange. True if any did.
static bool release_waves(Executor &E) {
    bool released = false;
    for (int w = 0; w < E.nthreads; w += kWave) {
        int n = wave_width(E, w), waiting = 0;
        for (int l = 0; l < n; l++) waiting += E.fibers[w + l].state == AT_WAVE;
        if (waiting == n) {
            for (int l = 0; l < n; l++) E.fibers[w + l].state = READY;
            tick_wave(E, w / kWave);
            released = true;
        }
    }
    return released;
}

// Nothing runnable: either every thread waits at the barrier, or it is a bug.
static void resolve_barrier(Executor &E, int at_barrier, int done) {
    if (at_barrier + done == E.nthreads && done == 0) {
        for (int t = 1; t < E.nthreads; t++)
            if (E.fibers[t].barrier_site != E.fibers[0].barrier_site) {
                fail("threads 0 and %d wait at different __syncthreads() calls (a divergent barrier)", t);
                return;
            }
        for (int t = 0; t < E.nthreads; t++) E.fibers[t].state = READY;
        tick_barrier(E);
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
static void abandon_fibers(Executor &E) {
    for (int t = 0; t < E.nthreads; t++)
        if (E.fibers[t].state != DONE) E.fibers[t].started = false;
}

static void run_workgroup(Executor &E) {
    for (int t = 0; t < E.nthreads; t++) {
        E.fibers[t].state = READY;
        E.fibers[t].parity = 0;
    }
    tick_barrier(E);
    for (;;) {
        order_threads(E);
        for (int i = 0; i < E.nthreads && !failed(); i++)
            if (E.fibers[E.order[i]].state == READY) run_fiber(E, E.order[i]);
        if (failed()) return;
        int at_barrier = 0, done = 0;
        for (int t = 0; t < E.nthreads; t++) {
            at_barrier += E.fibers[t].state == AT_BARRIER;
            done += E.fibers[t].state == DONE;
        }
        if (done == E.nthreads) return;
        if (release_waves(E)) continue;
        resolve_barrier(E, at_barrier, done);
        if (failed()) return;
    }
}

bool check_launch(Executor &E, dim3 grid, dim3 block, size_t shmem) {
    unsigned long threads = (unsigned long)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0)
        fail("empty launch: grid (%u,%u,%u), block (%u,%u,%u)", grid.x, grid.y, grid.z, block.x, block.y, block.z);
    else if (threads > (unsigned long)kMaxThreads)
        fail("workgroup of %lu threads exceeds the limit of %d", threads, kMaxThreads);
    else if (shmem > kMaxLds)
        fail("%zu bytes of dynamic LDS exceed gfx906's 64 KB", shmem);
    else if (!ensure_resources(E)) fail("cannot map fiber stacks or make the CPU-time timer");
    return !failed();
}

void run_grid(Executor &E, dim3 grid, size_t shmem) {
    GridOrder order = grid_order(E, (unsigned long)grid.x * grid.y * grid.z);
    for (unsigned long i = 0; i < order.n; i++) {
        unsigned long w = grid_pick(&order, i);
        blockIdx.x = (unsigned)(w % grid.x);
        blockIdx.y = (unsigned)(w / grid.x % grid.y);
        blockIdx.z = (unsigned)(w / grid.x / grid.y);
        // Uninitialised LDS reads as NaN, so a kernel that forgets to fill it fails its test.
        memset(E.lds, 0xff, shmem);
        const uint64_t epoch = E.race.clock + 1; // run_workgroup's first tick
        run_workgroup(E);
        if (i == 0 && E.race.active && !failed()) check_static_lds(E, epoch, shmem);
        if (failed()) {
            abandon_fibers(E);
            return;
        }
    }
}

}  // namespace kdn_simt

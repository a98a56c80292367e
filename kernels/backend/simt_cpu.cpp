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
#include <setjmp.h>
#include <ucontext.h>

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

enum State { READY, AT_BARRIER, AT_WAVE, DONE };

struct Fiber {
    jmp_buf ctx;
    bool started;                          // its stack holds a live fiber_main
    State state;
    int parity;                            // which exchange buffer its next wave op uses
    int barrier_site;                      // the __syncthreads() call it waits at
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

char *stack_of(int t) { return E.stacks + (size_t)t * kStack; }

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
        if (f->started) _longjmp(f->ctx, 1);
        f->started = true;
        getcontext(&E.boot);
        E.boot.uc_stack.ss_sp = stack_of(t);
        E.boot.uc_stack.ss_size = kStack;
        E.boot.uc_link = NULL;
        makecontext(&E.boot, fiber_main, 0);
        setcontext(&E.boot);
    }
#if KDN_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

void yield(State s) {
    E.fibers[E.cur].state = s;
    to_scheduler();
}

bool ensure_stacks(void) {
    if (E.stacks) return true;
    void *p = mmap(NULL, kStack * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    E.stacks = (char *)p;
    return true;
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

void kdn_cpu_launch(const char *kernel, dim3 grid, dim3 block, size_t shmem, void (*body)(void *), void *ctx) {
    launches++;
    if (E.failed) return;  // an earlier error stands until it is taken
    E.kernel = kernel;
    blockIdx.x = blockIdx.y = blockIdx.z = 0;
    read_schedule();
    if (E.failed || !check_launch(grid, block, shmem)) return;
    E.body = body;
    E.arg = ctx;
    E.nthreads = (int)(block.x * block.y * block.z);
    gridDim = grid;
    blockDim = block;
    GridOrder order = grid_order((unsigned long)grid.x * grid.y * grid.z);
    for (unsigned long i = 0; i < order.n; i++) {
        unsigned long w = grid_pick(&order, i);
        blockIdx.x = (unsigned)(w % grid.x);
        blockIdx.y = (unsigned)(w / grid.x % grid.y);
        blockIdx.z = (unsigned)(w / grid.x / grid.y);
        // Uninitialised LDS reads as NaN, so a kernel that forgets to fill it fails its test.
        memset(E.lds, 0xff, shmem);
        run_workgroup();
        if (E.failed) {
            abandon_fibers();
            return;
        }
    }
}

void kdn_cpu_barrier(int site) {
    E.fibers[E.cur].barrier_site = site;
    yield(AT_BARRIER);
}

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

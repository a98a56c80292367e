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
        for (int t = 0; t < E.nthreads && !E.failed; t++)
            if (E.fibers[t].state == READY) run_fiber(t);
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
    if (!check_launch(grid, block, shmem)) return;
    E.body = body;
    E.arg = ctx;
    E.nthreads = (int)(block.x * block.y * block.z);
    gridDim = grid;
    blockDim = block;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx.x = x;
                blockIdx.y = y;
                blockIdx.z = z;
                // Uninitialised LDS reads as NaN, so a kernel that forgets to fill it fails its test.
                memset(E.lds, 0xff, shmem);
                run_workgroup();
                if (E.failed) {
                    abandon_fibers();
                    return;
                }
            }
}

void __syncthreads(void) { yield(AT_BARRIER); }

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

// The CPU SIMT executor's internals, shared by its files of kernels/backend/
// (simt_cpu.cpp, simt_executor.cpp, simt_watchdog.cpp, simt_race.cpp; no
// kernel includes it): the limits, one host thread's Executor, its failure
// record, and what the scheduler gives the other files. Implemented by
// simt_executor.cpp; simt_watchdog.h and simt_race.h declare the others'.
#pragma once
#include "simt_cpu.h"

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define KDN_ASAN 1
#else
#define KDN_ASAN 0
#endif

namespace kdn_simt {

const int kWave = 64;
const int kMaxThreads = 1024;
const size_t kMaxLds = 64 * 1024;          // gfx906: 64 KB LDS per workgroup
const size_t kStack = KDN_ASAN ? 512 * 1024 : 128 * 1024;
const size_t kGuard = 64 * 1024;           // PROT_NONE below every fiber stack
const size_t kAltStack = 64 * 1024;        // the signal handlers' stack during a launch
const double kDefaultTimeout = 300.0;      // seconds of CPU time a thread may run without progress
const int kTimerSignal = SIGVTALRM;

enum State { READY, AT_BARRIER, AT_WAVE, DONE };
enum Expiry { RUNS_ON, HUNG, OUT_OF_TIME };

struct Fiber {
    jmp_buf ctx;
    bool started;                          // its stack holds a live fiber_main
    State state;
    int parity;                            // which exchange buffer its next wave op uses
    int barrier_site;                      // the __syncthreads() call it waits at
};

// The race detector's record of one 4-byte LDS word (see simt_race.cpp).
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
    bool static_lds_found;                 // static_lds located for this host thread
};

enum Order { ASCENDING, DESCENDING, SHUFFLED };

struct Schedule {
    bool read;                             // KDN_CPU_SCHEDULE parsed
    bool bad;                              // ... and not understood: every launch fails
    Order order;
    uint64_t rng;                          // xorshift64 state for SHUFFLED
};

// What a launch changes on its host thread, restored when it ends.
struct SavedThreadState {
    bool altstack_set;
    stack_t altstack;
    sigset_t mask;
};

// One host thread's executor.
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
    char *altstack;
    float exchange[2][kMaxThreads];
    alignas(16) unsigned char lds[kMaxLds];
    int order[kMaxThreads];                // threads in the order the scheduler runs them
    Schedule sched_order;
    RaceDetector race;
    volatile sig_atomic_t in_fiber;        // a fiber runs now (signal handlers look)
    volatile sig_atomic_t in_launch;       // this thread's launch has the handlers in place
    volatile sig_atomic_t expired;         // the launch stops: HUNG or OUT_OF_TIME (0: runs on)
    volatile sig_atomic_t switches;        // fiber -> scheduler switches: the launch's progress
    sig_atomic_t seen_switches;            // at the last timer tick that saw progress
    double launch_start, last_progress;    // this thread's CPU seconds at both
    double timeout;                        // seconds of CPU time without progress, 0: none
    double launch_limit;                   // seconds of CPU time per launch, 0: none
    long out_of_time;                      // launches stopped by launch_limit
    bool timeout_read;
    const char *bad_timeout;               // KDN_CPU_TIMEOUT's value when not understood
    bool timer_made;
    timer_t timer;                         // on this thread's CPU-time clock
    SavedThreadState saved;
    // AddressSanitizer's view of the stack switches.
    void *fake_stack;
    const void *sched_stack_bottom;
    size_t sched_stack_size;
};

// This host thread's first launch failure since the last take.
struct Fault {
    int kind;                              // a kdn_fault; KDN_FAULT_NONE: none
    char msg[512];
};

// This host thread's failure record and executor (simt_executor.cpp).
// Initial-exec: read by the signal handlers, which must not allocate.
extern __thread Fault fault;
extern __thread Executor *current __attribute__((tls_model("initial-exec")));

// The calling thread's executor, made at its first launch (NULL if out of memory).
Executor *executor(void);
// Whether a failure of this host thread waits to be taken.
bool failed(void);
// The running launch fails (the executor stopped the kernel), unless a failure stands.
void fail(const char *fmt, ...);
// The running launch fails before it starts: an executor setting is not understood.
void fail_setting(const char *fmt, ...);
// KDN_CPU_SCHEDULE's names; the settings read at the thread's first launch,
// which fail every launch while not understood.
bool parse_schedule(const char *v, Schedule *s);
void read_schedule(Executor &E);
void read_timeout(Executor &E);
// The running fiber waits at a barrier or a wave exchange (s), returning
// when the scheduler releases it.
void yield(Executor &E, State s);
// The lanes of the wave whose first lane is first_lane.
int wave_width(const Executor &E, int first_lane);
// The launch's shape within gfx906's limits and the thread's resources made;
// false (the launch failed) if not.
bool check_launch(Executor &E, dim3 grid, dim3 block, size_t shmem);
// The grid's workgroups in the schedule's order, until one fails.
void run_grid(Executor &E, dim3 grid, size_t shmem);

}  // namespace kdn_simt

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
// (kdn_shfl and what wave.h builds on it) each lane runs on
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
// Limits turned into errors: a thread that runs KDN_CPU_TIMEOUT seconds of
// its host thread's CPU time (default 300; 0: no limit) without reaching a
// barrier, a wave operation or its end is stopped as a hang (a launch that
// makes progress is never cut by it, however long it runs); a launch that
// takes more CPU time in all than the host thread's launch time limit
// (kdn_cpu_set_launch_limit; none unless set: the harness sets its
// --max-seconds) is stopped and counted; a fiber that overflows its stack
// hits a guard page and the launch fails with that message (kernels are
// built with -fstack-clash-protection, so a large frame probes its way down
// instead of jumping past the guard); an integer division by zero in a
// kernel (SIGFPE) fails the launch too.
//
// Host threads: every host thread that launches gets its own executor
// (fibers, stacks, LDS, schedule, race detector state, made at its first
// launch and freed when it exits), its own kernel indices and static
// __shared__ arrays (simt_cpu.h), and its own record of the first failure
// since the last take; launches on different host threads run at once and
// do not meet. Signal handling is scoped to launches: while at least one
// launch runs in the process, SIGSEGV, SIGFPE and SIGVTALRM go to the
// executor's handler, which handles only what its own launch caused (a
// guard page of the faulting thread's fibers, a trap in one of its fibers,
// its own per-thread CPU-time timer) and hands everything else to the
// handler that was installed before; the last launch to end puts those
// handlers back. Per launch, the launching thread gets the executor's
// alternate signal stack and the three signals unblocked, and both are
// restored after. The time limit is a POSIX timer on the thread's CPU-time
// clock, so the process's interval timers are never touched.
//
// Fibers are made once (ucontext) and then reused for every workgroup of
// every launch: a fiber loops over "run the kernel body, report done". All
// switches are _setjmp/_longjmp, which unlike swapcontext make no system call
// (swapcontext saves the signal mask each time, and that dominated the run
// time of the ladder). glibc's fortified longjmp refuses to jump between
// stacks, hence the #undef before any header.
#undef _FORTIFY_SOURCE
#include "simt_cpu.h"
#include "runtime.h"

#include <link.h>
#include <new>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <setjmp.h>
#include <signal.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define KDN_ASAN 1
#else
#define KDN_ASAN 0
#endif

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

__thread uint3 threadIdx, blockIdx;
__thread dim3 blockDim, gridDim;

namespace {

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

__thread Fault fault;
// Initial-exec: read by the signal handlers, which must not allocate.
__thread Executor *current __attribute__((tls_model("initial-exec")));

void destroy_executor(Executor *e) {
    if (e->timer_made) timer_delete(e->timer);
    if (e->stacks) munmap(e->stacks, (kGuard + kStack) * kMaxThreads);
    free(e->altstack);
    free(e->race.dynamic_lds.shadow);
    free(e->race.static_lds.shadow);
    e->~Executor();
    munmap(e, sizeof *e);
}

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

void vrecord(int kind, const char *kernel, const char *fmt, va_list ap) {
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

void set_thread_index(int t) {
    threadIdx.x = (unsigned)t % blockDim.x;
    threadIdx.y = ((unsigned)t / blockDim.x) % blockDim.y;
    threadIdx.z = (unsigned)t / (blockDim.x * blockDim.y);
}

uint64_t next_random(Executor &E) {
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
void order_threads(Executor &E) {
    int n = E.nthreads;
    for (int i = 0; i < n; i++) E.order[i] = E.sched_order.order == DESCENDING ? n - 1 - i : i;
    if (E.sched_order.order != SHUFFLED) return;
    for (int i = n - 1; i > 0; i--) { // Fisher-Yates
        int j = (int)(next_random(E) % (uint64_t)(i + 1)), t = E.order[i];
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

GridOrder grid_order(Executor &E, unsigned long n) {
    GridOrder g = {n, 1, 0, E.sched_order.order};
    if (g.order == SHUFFLED && n > 1) {
        g.a = 1 + next_random(E) % n;
        while (gcd(g.a, n) != 1) g.a = g.a % n + 1;
        g.b = next_random(E) % n;
    }
    return g;
}

unsigned long grid_pick(const GridOrder *g, unsigned long i) {
    if (g->order == DESCENDING) return g->n - 1 - i;
    if (g->order == SHUFFLED) return (unsigned long)(((unsigned __int128)g->a * i + g->b) % g->n);
    return i;
}

// Fiber t's stack: kStack bytes above its own guard region.
char *stack_of(const Executor &E, int t) { return E.stacks + (size_t)t * (kGuard + kStack) + kGuard; }

// Fiber -> scheduler; returns when the scheduler resumes this fiber.
// in_fiber is set only while the fiber runs its own code, never during a
// switch: a signal handler may then switch away (abandon_fiber) at once.
void to_scheduler(Executor &E) {
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

// From a signal handler on a fiber's stack or the alternate stack: the
// launch has failed, the running fiber is dropped (made afresh next time)
// and the scheduler goes on, sees the error and ends the launch.
[[noreturn]] void abandon_fiber(Executor &E, int sig) {
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

void fail_expired(Executor &E, int t) {
    if (E.expired == HUNG)
        return fail("thread %d ran %g s of CPU time without reaching a barrier, a wave operation or its end "
                    "(KDN_CPU_TIMEOUT): a hang, e.g. a spin-wait on another thread", t, E.timeout);
    E.out_of_time++;
    fail("launch stopped after %g s of CPU time, its time limit (thread %d running)", E.launch_limit, t);
}

// Scheduler -> fiber t, returning when it blocks or ends. A launch whose
// CPU time ran out between two fibers fails here, at the next fiber.
void run_fiber(Executor &E, int t) {
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

// ---- limits that would otherwise hang or crash the run ---------------------

// A fault in a guard region of this thread's fiber stacks is a fiber's
// stack overflow: the launch fails with that message.
bool on_segv(Executor &E, siginfo_t *info) {
    uintptr_t a = (uintptr_t)info->si_addr, base = (uintptr_t)E.stacks, slot = kGuard + kStack;
    const bool in_guard = E.stacks && a >= base && a < base + slot * kMaxThreads && (a - base) % slot < kGuard;
    if (!E.in_fiber || !in_guard) return false;
    fail("thread %d overflowed its %zu KB fiber stack (private arrays too large: gfx906 has no scratch "
         "for them either)", E.cur, kStack / 1024);
    abandon_fiber(E, SIGSEGV);
}

// An integer division by zero (or INT_MIN / -1) in a kernel traps on the
// host; a GPU does not trap and carries garbage on. Either way a kernel bug:
// the launch fails naming the kernel and the thread, like the faults above.
// A trap outside a kernel (host code) is not the executor's.
bool on_fpe(Executor &E, siginfo_t *info) {
    if (!E.in_fiber || info->si_code <= 0) return false;
    fail("thread %d: %s (SIGFPE on the host; a GPU does not trap, the result would be garbage)", E.cur,
         info->si_code == FPE_INTDIV ? "integer division by zero" : "arithmetic trap, e.g. INT_MIN / -1");
    abandon_fiber(E, SIGFPE);
}

double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// This launch's own timer (any other SIGVTALRM is not the executor's),
// ticking while it runs: a tick that sees no switch since the last tick
// that saw one, E.timeout or more ago, finds a thread that ran that long
// without progress (a hang); past the launch limit the launch is out of
// time. In a fiber the launch fails now; between fibers (the scheduler
// itself always ends) run_fiber fails it at the next fiber.
bool on_timer(Executor &E, siginfo_t *info) {
    if (info->si_code != SI_TIMER || info->si_value.sival_ptr != &E) return false;
    const double now = thread_cpu_seconds();
    if (E.switches != E.seen_switches) E.seen_switches = E.switches, E.last_progress = now;
    if (E.launch_limit > 0 && now - E.launch_start >= E.launch_limit) E.expired = OUT_OF_TIME;
    else if (E.timeout > 0 && now - E.last_progress >= E.timeout) E.expired = HUNG;
    if (!E.expired || !E.in_fiber) return true;
    fail_expired(E, E.cur);
    abandon_fiber(E, kTimerSignal);
}

// The signals the executor handles while launches run, and the handlers
// that were installed before the first of them began (process-wide state by
// nature: the dispositions are the process's). `launches`, under the lock,
// counts the launches running now on all host threads.
const int kSignals[] = {SIGSEGV, SIGFPE, kTimerSignal};
enum { N_SIGNALS = sizeof kSignals / sizeof kSignals[0] };

struct ProcessSignals {
    pthread_mutex_t lock;
    int launches;
    struct sigaction before[N_SIGNALS];
};
ProcessSignals process_signals = {PTHREAD_MUTEX_INITIALIZER, 0, {}};

int signal_slot(int sig) { return sig == kSignals[0] ? 0 : sig == kSignals[1] ? 1 : 2; }

// A signal the executor does not own goes to the handler installed before:
// called as it would have been; a default or ignored disposition is put
// back and takes effect (a fault re-executes its instruction, another
// signal is raised again; an ignored one that is not a fault stays ignored).
void pass_on(int sig, siginfo_t *info, void *uc) {
    const struct sigaction &b = process_signals.before[signal_slot(sig)];
    const bool fault = (sig == SIGSEGV || sig == SIGFPE) && info->si_code > 0;
    if (b.sa_flags & SA_SIGINFO) return b.sa_sigaction(sig, info, uc);
    if (b.sa_handler != SIG_DFL && b.sa_handler != SIG_IGN) return b.sa_handler(sig);
    if (b.sa_handler == SIG_IGN && !fault) return;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    if (!fault) raise(sig);
}

void on_signal(int sig, siginfo_t *info, void *uc) {
    Executor *e = current;
    bool mine = false;
    if (e && e->in_launch) mine = sig == SIGSEGV ? on_segv(*e, info) : sig == SIGFPE ? on_fpe(*e, info) : on_timer(*e, info);
    if (!mine) pass_on(sig, info, uc);
}

bool is_executor_handler(const struct sigaction &a) {
    return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == on_signal;
}

// The first launch running in the process installs the handler (on the
// alternate stack: an overflowing fiber's stack is full).
bool install_handlers(void) {
    ProcessSignals &P = process_signals;
    bool ok = true;
    pthread_mutex_lock(&P.lock);
    if (P.launches == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        for (int i = 0; i < N_SIGNALS && ok; i++)
            ok = sigaction(kSignals[i], NULL, &P.before[i]) == 0 && sigaction(kSignals[i], &sa, NULL) == 0;
    }
    P.launches += ok;
    pthread_mutex_unlock(&P.lock);
    return ok;
}

// The last launch to end puts the handlers back, unless the program
// replaced the executor's meanwhile (then the program's stays).
void restore_handlers(void) {
    ProcessSignals &P = process_signals;
    pthread_mutex_lock(&P.lock);
    if (--P.launches == 0)
        for (int i = 0; i < N_SIGNALS; i++) {
            struct sigaction now;
            if (sigaction(kSignals[i], NULL, &now) == 0 && is_executor_handler(now))
                sigaction(kSignals[i], &P.before[i], NULL);
        }
    pthread_mutex_unlock(&P.lock);
}

// The timer ticks every `seconds` of the thread's CPU time (0: stopped).
void arm_timer(Executor &E, double seconds) {
    struct itimerspec t;
    memset(&t, 0, sizeof t);
    t.it_value.tv_sec = (time_t)seconds;
    t.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
    t.it_interval = t.it_value;
    timer_settime(E.timer, 0, &t, NULL);
}

// A quarter of the shorter limit: a hang is found within 1.5 times its
// limit (the tick after its last switch, then the limit, then a tick), a
// launch stopped within 1.25 times its own.
double tick_seconds(const Executor &E) {
    double shorter = E.timeout > 0 && (E.launch_limit <= 0 || E.timeout < E.launch_limit) ? E.timeout : E.launch_limit;
    return shorter > 0 ? shorter / 4 : 0;
}

// The launch takes its host thread's signal state: the handlers, the
// alternate stack, the three signals unblocked, the CPU-time timer armed.
// False (nothing changed) if a handler cannot be installed.
bool enter_launch(Executor &E) {
    if (!install_handlers()) return false;
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = E.altstack;
    ss.ss_size = kAltStack;
    // fails only if the caller runs on its own alternate stack now: then a
    // stack overflow is not caught
    E.saved.altstack_set = sigaltstack(&ss, &E.saved.altstack) == 0;
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < N_SIGNALS; i++) sigaddset(&set, kSignals[i]);
    pthread_sigmask(SIG_UNBLOCK, &set, &E.saved.mask);
    E.expired = RUNS_ON;
    E.seen_switches = E.switches;
    E.launch_start = E.last_progress = thread_cpu_seconds();
    E.in_launch = 1;
    arm_timer(E, tick_seconds(E));
    return true;
}

void leave_launch(Executor &E) {
    arm_timer(E, 0);
    E.in_launch = 0;
    pthread_sigmask(SIG_SETMASK, &E.saved.mask, NULL);
    if (E.saved.altstack_set) sigaltstack(&E.saved.altstack, NULL);
    restore_handlers();
}

// The thread's fiber stacks, each above a PROT_NONE guard region, the
// alternate signal stack and the CPU-time timer, made at its first launch.
bool ensure_resources(Executor &E) {
    if (E.stacks) return true;
    if (!E.altstack && !(E.altstack = (char *)malloc(kAltStack))) return false;
    if (!E.timer_made) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = kTimerSignal;
        sev.sigev_value.sival_ptr = &E;
        sev.sigev_notify_thread_id = gettid();
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &E.timer) != 0) return false;
        E.timer_made = true;
    }
    const size_t slot = kGuard + kStack;
    void *p = mmap(NULL, slot * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    bool guarded = true;
    for (int t = 0; t < kMaxThreads && guarded; t++) guarded = mprotect((char *)p + (size_t)t * slot, kGuard, PROT_NONE) == 0;
    if (guarded) E.stacks = (char *)p;
    else munmap(p, slot * kMaxThreads);
    return guarded;
}

// ---- the race detector -----------------------------------------------------

// Epochs (see the top): a barrier (or a workgroup's start) gives every wave
// the new clock value, a wave release only its wave.
void tick_barrier(Executor &E) {
    RaceDetector &R = E.race;
    R.barrier_epoch = ++R.clock;
    for (int w = 0; w < kMaxThreads / kWave; w++) R.wave_epoch[w] = R.clock;
}

void tick_wave(Executor &E, int w) { E.race.wave_epoch[w] = ++E.race.clock; }

// Whether an access by thread `other` at `epoch` and one by the running
// thread now are unordered: same barrier interval, and different waves or
// one wave with no wave operation between.
bool concurrent(const Executor &E, int other, uint64_t epoch) {
    const RaceDetector &R = E.race;
    if (epoch < R.barrier_epoch || other == E.cur) return false;
    return other / kWave != E.cur / kWave || epoch == R.wave_epoch[E.cur / kWave];
}

void report_race(const Executor &E, const LdsRegion &r, size_t word, int other, bool other_wrote, bool write) {
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
int reader_slot(const Executor &E, const ShadowWord &w) {
    for (int k = 0; k < 2; k++)
        if (w.r_thread[k] == E.cur) return k;
    for (int k = 0; k < 2; k++)
        if (w.r_epoch[k] < E.race.barrier_epoch) return k;
    return w.r_epoch[0] <= w.r_epoch[1] ? 0 : 1;
}

void check_word(const Executor &E, const LdsRegion &r, size_t i, bool write) {
    ShadowWord &w = r.shadow[i];
    const uint64_t now = E.race.wave_epoch[E.cur / kWave];
    if (concurrent(E, w.w_thread, w.w_epoch)) return report_race(E, r, i, w.w_thread, true, write);
    if (!write) {
        int k = reader_slot(E, w);
        w.r_thread[k] = (int16_t)E.cur, w.r_epoch[k] = now;
        return;
    }
    for (int k = 0; k < 2; k++)
        if (concurrent(E, w.r_thread[k], w.r_epoch[k])) return report_race(E, r, i, w.r_thread[k], false, true);
    w.w_thread = (int16_t)E.cur, w.w_epoch = now;
    w.r_epoch[0] = w.r_epoch[1] = 0;
}

// Every load and store of an instrumented kernel: those in LDS are checked.
void lds_access(const void *p, size_t n, bool write) {
    Executor *e = current;
    if (!e) return;
    Executor &E = *e;
    RaceDetector &R = E.race;
    R.active = true;
    if (!E.in_fiber || failed() || n == 0) return;
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
    for (size_t i = off / 4; i <= (off + n - 1) / 4 && !failed(); i++) check_word(E, *r, i, write);
}

int wave_width(const Executor &E, int first_lane) {
    int rest = E.nthreads - first_lane;
    return rest < kWave ? rest : kWave;
}

// Releases every wave whose lanes all wait at an exchange. True if any did.
bool release_waves(Executor &E) {
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
void resolve_barrier(Executor &E, int at_barrier, int done) {
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
void abandon_fibers(Executor &E) {
    for (int t = 0; t < E.nthreads; t++)
        if (E.fibers[t].state != DONE) E.fibers[t].started = false;
}

void run_workgroup(Executor &E) {
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

}  // namespace

static __thread long launches;

long kdn_cpu_launch_count(void) { return launches; }

// The static __shared__ arrays (simt_cpu.h puts them in this thread-local
// section; weak: a program may have none). __start/__stop are the section's
// place in its module's TLS image; this host thread's copy lies at the same
// offset in the thread's block of that module.
extern "C" char __start_kdn_lds[] __attribute__((weak)), __stop_kdn_lds[] __attribute__((weak));

static int find_thread_copy(struct dl_phdr_info *info, size_t, void *arg) {
    uintptr_t *at = (uintptr_t *)arg, image = (uintptr_t)__start_kdn_lds;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type != PT_TLS || image < start || image >= start + ph.p_memsz || !info->dlpi_tls_data) continue;
        *at = (uintptr_t)info->dlpi_tls_data + (image - start);
        return 1;
    }
    return 0;
}

static void watch_lds(Executor &E, size_t shmem) {
    LdsRegion &d = E.race.dynamic_lds, &s = E.race.static_lds;
    d.base = (uintptr_t)E.lds, d.bytes = shmem, d.name = "dynamic LDS";
    if (E.race.static_lds_found || !__start_kdn_lds) return;
    uintptr_t base = 0;
    if (!dl_iterate_phdr(find_thread_copy, &base)) return;
    s.base = base, s.name = "static __shared__";
    s.bytes = (size_t)(__stop_kdn_lds - __start_kdn_lds);
    E.race.static_lds_found = true;
}

// Bytes of static __shared__ arrays the workgroup that began at `epoch`
// used (words it read or wrote): only the race detector's build sees them.
static size_t static_lds_used(const Executor &E, uint64_t epoch) {
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
static void check_static_lds(const Executor &E, uint64_t epoch, size_t shmem) {
    const size_t used = static_lds_used(E, epoch);
    if (used + shmem > kMaxLds)
        fail("%zu bytes of static __shared__ arrays + %zu bytes of dynamic LDS exceed gfx906's 64 KB", used, shmem);
}

static void run_grid(Executor &E, dim3 grid, size_t shmem) {
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

void kdn_cpu_launch(const char *kernel, dim3 grid, dim3 block, size_t shmem, void (*body)(void *), void *ctx) {
    launches++;
    if (failed()) return;  // an earlier error stands until it is taken
    Executor *e = executor();
    if (!e) return kdn_cpu_record_fault(KDN_FAULT_LAUNCH, "no memory for the CPU executor");
    Executor &E = *e;
    E.kernel = kernel;
    blockIdx.x = blockIdx.y = blockIdx.z = 0;
    read_schedule(E);
    read_timeout(E);
    if (failed() || !check_launch(E, grid, block, shmem)) return;
    E.body = body;
    E.arg = ctx;
    E.nthreads = (int)(block.x * block.y * block.z);
    gridDim = grid;
    blockDim = block;
    watch_lds(E, shmem);
    if (!enter_launch(E)) return fail("cannot install the executor's signal handlers");
    run_grid(E, grid, shmem);
    leave_launch(E);
}

void kdn_cpu_barrier(int site) {
    Executor &E = *current;
    E.fibers[E.cur].barrier_site = site;
    yield(E, AT_BARRIER);
}

int kdn_cpu_set_schedule(const char *name) {
    Executor *e = executor();
    return e && parse_schedule(name, &e->sched_order) ? 0 : -1;
}

void *kdn_cpu_dynamic_shared(void) { return current->lds; }

int kdn_cpu_lane(void) { return current->cur % kWave; }

float kdn_cpu_wave_read(float v, int src_lane) {
    Executor &E = *current;
    int t = E.cur;
    // Two buffers: a lane may run one exchange ahead of a slower lane of its
    // wave, never two, since the next exchange waits for the whole wave.
    int p = E.fibers[t].parity;
    E.fibers[t].parity ^= 1;
    E.exchange[p][t] = v;
    yield(E, AT_WAVE);
    int first = t - t % kWave;
    if (src_lane < 0 || src_lane >= wave_width(E, first)) {
        fail("thread %d reads lane %d, outside its wave of %d lanes", t, src_lane, wave_width(E, first));
        return 0.0f;
    }
    return E.exchange[p][first + src_lane];
}

int kdn_cpu_take_fault(char *msg, size_t size) {
    const int kind = fault.kind;
    if (size) snprintf(msg, size, "%s", kind ? fault.msg : "");
    fault.kind = KDN_FAULT_NONE;
    return kind;
}

bool kdn_cpu_fault_pending(char *msg, size_t size) {
    if (size) snprintf(msg, size, "%s", failed() ? fault.msg : "");
    return failed();
}

void kdn_cpu_record_fault(int kind, const char *msg) {
    if (failed()) return;
    fault.kind = kind;
    snprintf(fault.msg, sizeof fault.msg, "%s", msg);
}

void kdn_cpu_set_timeout(double seconds) {
    Executor *e = executor();
    if (!e) return;
    e->timeout_read = true;
    e->timeout = seconds;
}

void kdn_cpu_set_launch_limit(double seconds) {
    Executor *e = executor();
    if (e) e->launch_limit = seconds;
}

long kdn_cpu_launches_out_of_time(void) { return current ? current->out_of_time : 0; }

bool kdn_cpu_race_detector(void) { return current && current->race.active; }
long kdn_cpu_lds_checked(void) { return current ? current->race.checked : 0; }

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

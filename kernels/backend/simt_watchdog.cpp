// The CPU SIMT executor's limits (simt_watchdog.h): signals and timers.
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
// Signal handling is scoped to launches: while at least one
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
// A handler that fails the launch leaves the fiber with _longjmp (see
// simt_executor.cpp): glibc's fortified longjmp refuses to jump between
// stacks, hence the #undef before any header.
#undef _FORTIFY_SOURCE
#include "simt_watchdog.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

namespace kdn_simt {

// From a signal handler on a fiber's stack or the alternate stack: the
// launch has failed, the running fiber is dropped (made afresh next time)
// and the scheduler goes on, sees the error and ends the launch.
[[noreturn]] static void abandon_fiber(Executor &E, int sig) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
#if KDN_ASAN
    __sanitizer_start_switch_fiber(NULL, E.sched_stack_bottom, E.sched_stack_size);
#endif
    _longjmp(E.sched, 1);
}

void fail_expired(Executor &E, int t) {
    if (E.expired == HUNG)
        return fail("thread %d ran %g s of CPU time without reaching a barrier, a wave operation or its end "
                    "(KDN_CPU_TIMEOUT): a hang, e.g. a spin-wait on another thread", t, E.timeout);
    E.out_of_time++;
    fail("launch stopped after %g s of CPU time, its time limit (thread %d running)", E.launch_limit, t);
}

// A fault in a guard region of this thread's fiber stacks is a fiber's
// stack overflow: the launch fails with that message.
static bool on_segv(Executor &E, siginfo_t *info) {
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
static bool on_fpe(Executor &E, siginfo_t *info) {
    if (!E.in_fiber || info->si_code <= 0) return false;
    fail("thread %d: %s (SIGFPE on the host; a GPU does not trap, the result would be garbage)", E.cur,
         info->si_code == FPE_INTDIV ? "integer division by zero" : "arithmetic trap, e.g. INT_MIN / -1");
    abandon_fiber(E, SIGFPE);
}

static double thread_cpu_seconds(void) {
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
static bool on_timer(Executor &E, siginfo_t *info) {
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

namespace {

struct ProcessSignals {
    pthread_mutex_t lock;
    int launches;
    struct sigaction before[N_SIGNALS];
};
ProcessSignals process_signals = {PTHREAD_MUTEX_INITIALIZER, 0, {}};

}  // namespace

static int signal_slot(int sig) { return sig == kSignals[0] ? 0 : sig == kSignals[1] ? 1 : 2; }

// A signal the executor does not own goes to the handler installed before:
// called as it would have been; a default or ignored disposition is put
// back and takes effect (a fault re-executes its instruction, another
// signal is raised again; an ignored one that is not a fault stays ignored).
static void pass_on(int sig, siginfo_t *info, void *uc) {
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

static void on_signal(int sig, siginfo_t *info, void *uc) {
    Executor *e = current;
    bool mine = false;
    if (e && e->in_launch) mine = sig == SIGSEGV ? on_segv(*e, info) : sig == SIGFPE ? on_fpe(*e, info) : on_timer(*e, info);
    if (!mine) pass_on(sig, info, uc);
}

static bool is_executor_handler(const struct sigaction &a) {
    return (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == on_signal;
}

// The first launch running in the process installs the handler (on the
// alternate stack: an overflowing fiber's stack is full).
static bool install_handlers(void) {
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
static void restore_handlers(void) {
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
static void arm_timer(Executor &E, double seconds) {
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
static double tick_seconds(const Executor &E) {
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

}  // namespace kdn_simt

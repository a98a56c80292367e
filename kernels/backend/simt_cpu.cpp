// SIMT executor for the CPU backend: simt_cpu.h's functions, what kernels
// and the runtime call.
//
// A launch runs its workgroups one after another on the calling host
// thread's executor; the threads of a workgroup are fibers, in waves of 64.
// The executor is four files of kernels/backend/:
//   simt_cpu.cpp       this one: the launch, the barrier, the wave exchange,
//                      the host thread's failure record and settings as
//                      simt_cpu.h declares them;
//   simt_executor.cpp  one host thread's executor (simt_executor.h), its
//                      failure record, the fibers and the scheduler;
//   simt_watchdog.cpp  the signal handlers and the CPU-time timer: hangs,
//                      launches out of time, stack overflows, SIGFPE;
//   simt_race.cpp      the race detector (build/cpu-race) and the lookup of
//                      the static __shared__ section.
#include "simt_cpu.h"
#include "runtime.h"
#include "simt_executor.h"
#include "simt_race.h"
#include "simt_watchdog.h"

#include <stdio.h>

__thread uint3 threadIdx, blockIdx;
__thread dim3 blockDim, gridDim;

using namespace kdn_simt;

static __thread long launches;

long kdn_cpu_launch_count(void) { return launches; }

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

// CPU backend: the CUDA/HIP kernel vocabulary on the host, executed by the
// SIMT executor, whose entry points simt_cpu.cpp implements (workgroups one
// after another, the threads of a workgroup as cooperative fibers, waves of
// 64 lanes as on gfx906; its scheduler, limits and race detector are the
// other simt_*.cpp files beside it).
#pragma once
#include <stddef.h>

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 { unsigned x, y, z; };

// Set by the executor before it switches to a thread's fiber. Per host
// thread (each host thread that launches has its own executor), so launches
// on different host threads do not see each other's indices.
extern __thread uint3 threadIdx, blockIdx;
extern __thread dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// One copy per host thread: a host thread's workgroups run one after
// another, so a static array is exactly one workgroup's LDS at a time. The
// section (a thread-local one) lets the race detector tell these arrays from
// other memory (gcc ignores it for statics of templates: a template kernel
// uses KDN_DYNAMIC_SHARED, as all do).
#define __shared__ static __thread __attribute__((section("kdn_lds")))

// A barrier names its call site (__COUNTER__: one number per textual call in
// a translation unit, kept when the compiler duplicates the code around it),
// so the executor sees threads waiting at different barriers.
void kdn_cpu_barrier(int site);
#define __syncthreads() kdn_cpu_barrier(__COUNTER__)
void *kdn_cpu_dynamic_shared(void);
// Every lane of the calling wave contributes v; returns lane src's value.
float kdn_cpu_wave_read(float v, int src_lane);
int kdn_cpu_lane(void);

// Runs the launch on the calling host thread's executor. While an earlier
// failure of this host thread stands (until kdn_cpu_take_fault), it only
// counts the launch.
void kdn_cpu_launch(const char *kernel, dim3 grid, dim3 block, size_t shmem,
                    void (*body)(void *), void *ctx);
// This host thread's first launch failure since the last take: its kind (a
// kdn_fault of kdn.h; 0: none) and message, copied to msg; then cleared.
int kdn_cpu_take_fault(char *msg, size_t size);
// Whether a failure of this host thread waits to be taken (message to msg).
bool kdn_cpu_fault_pending(char *msg, size_t size);
// Records a failure of `kind` for this host thread unless one stands.
void kdn_cpu_record_fault(int kind, const char *msg);
// Launches by this host thread so far.
long kdn_cpu_launch_count(void);
// The thread and workgroup order of this host thread's later launches (asc,
// desc, shuffle, shuffle:SEED; simt_executor.cpp); KDN_CPU_SCHEDULE sets it
// for a whole run. 0, or -1 (unchanged) for an unknown name.
int kdn_cpu_set_schedule(const char *name);
// The seconds of CPU time a thread may run without reaching a barrier, a
// wave operation or its end before it is stopped as a hang (0: none), as
// KDN_CPU_TIMEOUT, for this host thread's later launches.
void kdn_cpu_set_timeout(double seconds);
// The seconds of CPU time one launch of this host thread may take in all
// (0: none, the default), for its later launches; the launches it stopped.
void kdn_cpu_set_launch_limit(double seconds);
long kdn_cpu_launches_out_of_time(void);
// Whether this program's kernels are instrumented for the race detector
// (build/cpu-race) and have called it on this host thread, and how many LDS
// accesses it checked there.
bool kdn_cpu_race_detector(void);
long kdn_cpu_lds_checked(void);

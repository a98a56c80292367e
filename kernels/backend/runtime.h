/* The device runtime every kernel build provides (runtime_gpu.cpp for HIP
 * and CUDA, runtime_cpu.cpp for the CPU executor): device choice, memory,
 * copies, the stream kernels are enqueued on, errors and timing. */
#ifndef KDN_RUNTIME_H
#define KDN_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device runtime ---------------------------------------------------- */
const char *kdn_backend(void);       /* "hip", "cuda" or "cpu" */
const char *kdn_target(void);        /* e.g. "gfx906", "sm_90", "host-wave64" */
/* 0 when a device is usable; otherwise fills msg with why not. */
int kdn_init(char *msg, size_t msg_size);
const char *kdn_device_name(void);
int kdn_device_count(void);
/* The name of the device the calling host thread launches on now (the
 * runtime's current device, whether or not kdn_init ran): 0, or 1 when the
 * runtime cannot say (name ""; its error taken, not left for a launch). */
int kdn_current_device_name(char *name, size_t size);
/* Bytes of memory of the device kdn_init chose (after kdn_init); 0 on the
 * CPU build, whose device memory is host memory. */
size_t kdn_device_memory(void);
void *kdn_malloc(size_t bytes);      /* NULL on failure */
void kdn_free(void *p);
int kdn_upload(void *dst, const void *src, size_t bytes);
int kdn_download(void *dst, const void *src, size_t bytes);
/* Device-to-device copy, enqueued like a kernel (the runtime's own copy:
 * the bandwidth reference of --bench). */
int kdn_copy(void *dst, const void *src, size_t bytes);
/* Waits for all queued work. Returns NULL when everything succeeded, else a
 * message naming the failing kernel; the error is consumed. Launch failures
 * are per host thread: this reports the calling thread's (the message is
 * the thread's own until its next kdn_sync). */
const char *kdn_sync(void);
/* Kernels of this host thread are enqueued on `stream` (hipStream_t /
 * cudaStream_t; NULL: the default stream; kept but unused on the cpu build)
 * from now on; returns the previous one. */
void *kdn_set_stream(void *stream);

/* A launch failure of this host thread, kept from the launch that failed
 * until it is taken (by kdn_sync or kdn_take_fault); while one stands, this
 * thread's later launches are only counted, not run. */
typedef enum {
    KDN_FAULT_NONE = 0,
    KDN_FAULT_REFUSED,  /* a launcher refused the shape (kdn_launch_refused) */
    KDN_FAULT_LAUNCH,   /* the runtime failed the launch or a runtime call, or the CPU executor stopped the kernel */
    KDN_FAULT_SETTINGS  /* CPU executor: KDN_CPU_SCHEDULE or KDN_CPU_TIMEOUT not understood; nothing ran */
} kdn_fault;
/* Takes this host thread's launch failure, without waiting for the device:
 * its kind (KDN_FAULT_NONE if none) and its message (the kernel and why, ""
 * if none) in msg; then none stands. */
kdn_fault kdn_take_fault(char *msg, size_t msg_size);
/* 1 when an error of earlier work waits on this host thread: a launch
 * failure not yet taken, or (GPU builds) an error the runtime holds for the
 * thread (cuda/hipPeekAtLastError: looked at, not cleared); its message in msg. */
int kdn_error_pending(char *msg, size_t msg_size);

/* ---- time limit (the harness's --max-seconds) ----------------------------- */
/* CPU build: a launch of this host thread that takes more than `seconds` of
 * CPU time in all is stopped, a launch failure naming the limit (0: none,
 * the default), and counted. GPU builds: kernels are not watched; nothing
 * changes and the count stays 0. */
void kdn_set_launch_time_limit(double seconds);
long kdn_launches_out_of_time(void);

/* ---- timing (--bench) ---------------------------------------------------- */
long kdn_launch_count(void);       /* kernel launches this host thread enqueued so far */
/* Waits for earlier work, then returns the milliseconds work(arg) takes on
 * the device (GPU events; on the CPU build a host clock: emulation). */
double kdn_time_ms(void (*work)(void *arg), void *arg);
/* Evicts the last-level cache by writing kdn_flush_bytes() bytes (GPU: a
 * buffer larger than it), so a timed run reads its inputs from memory;
 * nothing on the CPU build (0 bytes). */
void kdn_flush_cache(void);
size_t kdn_flush_bytes(void);

#ifdef __cplusplus
}

/* ---- what the kernels' launch macros and launchers call (backend.h) ------
 * C++ only. GPU builds (runtime_gpu.cpp): KDN_LAUNCH's bookkeeping,
 * kdn_launch_may_run counts the launch and says whether it may run (not
 * while an earlier launch failure of this host thread stands, as on the CPU
 * executor); kdn_note_launch records its outcome, the runtime's last error
 * (a hipError_t / cudaError_t) taken right after the launch, so kdn_sync()
 * or the library call reports it. The runtime's error is the launch's own:
 * the library refuses to start while one is pending (kdn_error_pending), and
 * the ladder takes each at kdn_sync(). kdn_launch_stream: the stream
 * KDN_LAUNCH enqueues on (kdn_set_stream; NULL: the default stream), per
 * host thread, so callers on different threads keep theirs. */
bool kdn_launch_may_run(void);
void kdn_note_launch(const char *kernel, int code);
extern thread_local void *kdn_launch_stream;
/* CUDA: 1 when `kernel`, as loaded on the current device, carries the
 * programmatic-launch wait (PTX of sm_90 or later; asked of the runtime once
 * per device and kernel); the outcome of a runtime call a launcher makes
 * (KDN_ALLOW_LDS: the launch would fail), recorded as the kernel's launch
 * failure. */
int kdn_pdl_capable(const void *kernel);
void kdn_note_runtime_call(const char *what, const char *kernel, int code);
/* GPU builds: KDN_ROUND_WORKGROUPS (backend.h). */
int kdn_round_workgroups(const void *kernel, int threads);
/* Every build (runtime_gpu.cpp, runtime_cpu.cpp): a launcher that cannot run
 * a shape (beyond a kernel's documented limits) calls this instead of
 * launching; kdn_sync() then reports it as the error (KDN_FAULT_REFUSED),
 * and this host thread's later launches do not run until it is taken. */
void kdn_launch_refused(const char *kernel, const char *why);
#endif
#endif

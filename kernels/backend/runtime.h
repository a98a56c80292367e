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
 * message naming the failing kernel; the error is consumed. */
const char *kdn_sync(void);
/* Kernels of this host thread are enqueued on `stream` (hipStream_t /
 * cudaStream_t; NULL: the default stream; kept but unused on the cpu build)
 * from now on; returns the previous one. */
void *kdn_set_stream(void *stream);

/* ---- timing (--bench) ---------------------------------------------------- */
long kdn_launch_count(void);       /* kernel launches enqueued so far */
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
#endif
#endif

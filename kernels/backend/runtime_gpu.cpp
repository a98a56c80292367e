// Device runtime for the GPU backends (HIP and CUDA share it through the
// gpu* names that backend.h maps).
//
// Errors. The runtime keeps a last error per host thread
// (cuda/hipGetLastError returns it and clears it, cuda/hipPeekAtLastError
// returns it and leaves it); a kernel launch reports its own failure only
// there. This file takes the runtime's error right after every launch and
// runtime call it makes and keeps the first failure per host thread (`fault`)
// until kdn_sync() or kdn_take_fault() takes it. Taking (not peeking) is
// right because the error is then this file's own: the library refuses to
// start while the runtime holds an error for the thread
// (kdn_error_pending peeks, leaving the caller's error where it is), so an
// error present after one of its launches was caused by that launch. A
// sticky error (a device fault: the context is lost) cannot be cleared; it
// shows as a pending error or as the launch's failure. hipErrorNotReady /
// cudaErrorNotReady (an event or stream query's "not yet") is not an error.
#include "backend.h"
#include "query_cache.h"
#include "runtime.h"

#include <stdio.h>
#include <string.h>

#ifndef KDN_TARGET
#define KDN_TARGET "unknown"
#endif

// This host thread's first launch failure since the last take.
struct Fault {
    kdn_fault kind;
    char msg[512];
};
static __thread Fault fault;
static __thread long launches;
// Set by kdn_init (the harness, once, before any launch); read after.
static gpuDeviceProp props;

static void record_fault(kdn_fault kind, const char *fmt, const char *a, const char *b) {
    if (fault.kind != KDN_FAULT_NONE) return;
    fault.kind = kind;
    snprintf(fault.msg, sizeof fault.msg, fmt, a, b);
}

// A runtime call's result: false, and the failure recorded as this thread's
// (the runtime's copy of the error taken: it is reported here, once), if it
// failed.
static bool checked(gpuError_t e, const char *what) {
    if (e == gpuSuccess) return true;
    record_fault(KDN_FAULT_LAUNCH, "%s failed: %s", what, gpuGetErrorString(e));
    (void)gpuGetLastError(); // the error just recorded: the runtime's copy must not be reported again
    return false;
}

bool kdn_launch_may_run(void) {
    launches++;
    return fault.kind == KDN_FAULT_NONE;
}

void kdn_note_launch(const char *kernel, int error) {
    const gpuError_t code = (gpuError_t)error;
    if (code != gpuSuccess) record_fault(KDN_FAULT_LAUNCH, "launch of %s failed: %s", kernel, gpuGetErrorString(code));
}

void kdn_note_runtime_call(const char *what, const char *kernel, int error) {
    const gpuError_t code = (gpuError_t)error;
    if (code == gpuSuccess) return;
    char call[160];
    snprintf(call, sizeof call, "%s for %s", what, kernel);
    checked(code, call);
}

thread_local void *kdn_launch_stream = nullptr;

void *kdn_set_stream(void *stream) {
    void *previous = kdn_launch_stream;
    kdn_launch_stream = stream;
    return previous;
}

// The device the calling host thread launches on (-1: the runtime cannot say).
static int current_device(void) {
    int dev = -1;
    if (gpuGetDevice(&dev) == gpuSuccess) return dev;
    (void)gpuGetLastError(); // not a launch error: the next launch must not report it
    return -1;
}

// Queries of the runtime, failures answered -1 (then asked again next time).
// Not launch errors: each failed query's own error is taken, so that no later check sees it.
static int query_round(const void *kernel, int dev, int threads) {
    int mps = 0, per_mp = 0;
    if (gpuDeviceGetAttribute(&mps, gpuDevAttrMultiProcessorCount, dev) != gpuSuccess ||
        gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_mp, kernel, threads, 0) != gpuSuccess) {
        (void)gpuGetLastError();
        return -1;
    }
    return mps * per_mp;
}

static KdnQueryCache rounds = KDN_QUERY_CACHE_INIT;

int kdn_round_workgroups(const void *kernel, int threads) {
    const int dev = current_device();
    const int n = dev < 0 ? -1 : kdn_cached_query(&rounds, kernel, dev, threads, query_round);
    return n < 0 ? 0 : n; // 0: the launchers then size the grid without the round
}

#if defined(KDN_BACKEND_CUDA)
static int query_pdl(const void *kernel, int dev, int unused) {
    (void)dev, (void)unused; // cudaFuncGetAttributes answers for the current device, the one keyed
    cudaFuncAttributes a;
    if (cudaFuncGetAttributes(&a, kernel) == cudaSuccess) return a.ptxVersion >= 90 ? 1 : 0;
    (void)cudaGetLastError();
    return -1;
}

static KdnQueryCache pdl = KDN_QUERY_CACHE_INIT;

int kdn_pdl_capable(const void *kernel) {
    const int dev = current_device();
    return dev >= 0 && kdn_cached_query(&pdl, kernel, dev, 0, query_pdl) == 1;
}
#endif

void kdn_launch_refused(const char *kernel, const char *why) {
    record_fault(KDN_FAULT_REFUSED, "%s refused the shape: %s", kernel, why);
}

extern "C" {

const char *kdn_backend(void) {
#if defined(KDN_BACKEND_HIP)
    return "hip";
#else
    return "cuda";
#endif
}

const char *kdn_target(void) { return KDN_TARGET; }

int kdn_device_count(void) {
    int n = 0;
    if (gpuGetDeviceCount(&n) != gpuSuccess) {
        (void)gpuGetLastError(); // "no device" is the answer (0), not an error for later calls
        return 0;
    }
    return n;
}

int kdn_init(char *msg, size_t msg_size) {
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e == gpuSuccess && n > 0) e = gpuGetDeviceProperties(&props, 0);
    if (e != gpuSuccess || n == 0) {
        snprintf(msg, msg_size, "%s", e != gpuSuccess ? gpuGetErrorString(e) : "no devices");
        (void)gpuGetLastError(); // reported through msg
        return 1;
    }
    return 0;
}

const char *kdn_device_name(void) { return props.name; }

int kdn_current_device_name(char *name, size_t size) {
    int dev = 0;
    gpuDeviceProp p;
    if (gpuGetDevice(&dev) != gpuSuccess || gpuGetDeviceProperties(&p, dev) != gpuSuccess) {
        (void)gpuGetLastError(); // the answer is "cannot say", not an error for a later launch
        snprintf(name, size, "%s", "");
        return 1;
    }
    snprintf(name, size, "%s", p.name);
    return 0;
}
size_t kdn_device_memory(void) { return props.totalGlobalMem; }

void *kdn_malloc(size_t bytes) {
    void *p = NULL;
    if (gpuMalloc(&p, bytes) == gpuSuccess) return p;
    (void)gpuGetLastError(); // reported as NULL, as documented
    return NULL;
}

void kdn_free(void *p) { checked(gpuFree(p), "free"); }

int kdn_upload(void *dst, const void *src, size_t bytes) {
    return checked(gpuMemcpy(dst, src, bytes, gpuMemcpyHostToDevice), "upload") ? 0 : -1;
}

int kdn_copy(void *dst, const void *src, size_t bytes) {
    return checked(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, 0), "device copy") ? 0 : -1;
}

int kdn_download(void *dst, const void *src, size_t bytes) {
    return checked(gpuMemcpy(dst, src, bytes, gpuMemcpyDeviceToHost), "download") ? 0 : -1;
}

kdn_fault kdn_take_fault(char *msg, size_t msg_size) {
    const kdn_fault kind = fault.kind;
    if (msg_size && kind == KDN_FAULT_NONE) msg[0] = 0; // every call takes: no formatting on its way
    else if (msg_size) snprintf(msg, msg_size, "%s", fault.msg);
    fault.kind = KDN_FAULT_NONE;
    return kind;
}

int kdn_error_pending(char *msg, size_t msg_size) {
    if (fault.kind != KDN_FAULT_NONE) {
        if (msg_size) snprintf(msg, msg_size, "%s", fault.msg);
        return 1;
    }
    const gpuError_t e = gpuPeekAtLastError();
    if (e == gpuSuccess || e == gpuErrorNotReady) return 0;
    if (msg_size) snprintf(msg, msg_size, "the runtime's last error on this host thread: %s", gpuGetErrorString(e));
    return 1;
}

const char *kdn_sync(void) {
    static __thread char msg[512];
    const gpuError_t e = gpuDeviceSynchronize();
    if (kdn_take_fault(msg, sizeof msg) != KDN_FAULT_NONE) {
        (void)gpuGetLastError(); // a device error behind the launch failure is reported with it
        return msg;
    }
    if (e != gpuSuccess) {
        snprintf(msg, sizeof msg, "device error: %s", gpuGetErrorString(e));
        (void)gpuGetLastError(); // reported here: later launches must not report it again
        return msg;
    }
    return NULL;
}

long kdn_launch_count(void) { return launches; }

// GPU kernels are not watched: the device runs them to their end.
void kdn_set_launch_time_limit(double) {}
long kdn_launches_out_of_time(void) { return 0; }

// -1 (and the failure recorded for kdn_sync) when an event call fails.
double kdn_time_ms(void (*work)(void *arg), void *arg) {
    gpuEvent_t start = NULL, stop = NULL;
    float ms = -1.0f;
    bool ok = checked(gpuDeviceSynchronize(), "synchronise before timing") &&
              checked(gpuEventCreate(&start), "event create") && checked(gpuEventCreate(&stop), "event create") &&
              checked(gpuEventRecord(start, 0), "event record");
    if (ok) work(arg);
    ok = ok && checked(gpuEventRecord(stop, 0), "event record") && checked(gpuEventSynchronize(stop), "event synchronise") &&
         checked(gpuEventElapsedTime(&ms, start, stop), "event elapsed time");
    if (start) checked(gpuEventDestroy(start), "event destroy");
    if (stop) checked(gpuEventDestroy(stop), "event destroy");
    return ok ? ms : -1.0;
}

// 256 MB: larger than the last-level cache of MI50 (4 MB), H100 (50 MB) and H200 (60 MB).
size_t kdn_flush_bytes(void) { return (size_t)256 << 20; }

// The flush buffer is made on the first call and kept (the harness's, one thread).
void kdn_flush_cache(void) {
    static void *junk;
    if (!junk) junk = kdn_malloc(kdn_flush_bytes());
    if (junk) checked(gpuMemset(junk, 0, kdn_flush_bytes()), "cache flush");
}

}  // extern "C"

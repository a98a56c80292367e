// Device runtime for the GPU backends (HIP and CUDA share it through the
// gpu* names that backend.h maps).
#include "backend.h"
#include "runtime.h"

#include <stdio.h>
#include <string.h>

#ifndef KDN_TARGET
#define KDN_TARGET "unknown"
#endif

static char launch_error[512];
static gpuDeviceProp props;
static long launches;

void kdn_note_launch(const char *kernel, int code, const char *message) {
    launches++;
    if (code != 0 && launch_error[0] == 0)
        snprintf(launch_error, sizeof launch_error, "launch of %s failed: %s", kernel, message);
}

thread_local void *kdn_launch_stream = nullptr;

void *kdn_set_stream(void *stream) {
    void *previous = kdn_launch_stream;
    kdn_launch_stream = stream;
    return previous;
}

int kdn_round_workgroups(const void *kernel, int threads) {
    int dev = 0, mps = 0, per_mp = 0;
    if (gpuGetDevice(&dev) != gpuSuccess || gpuDeviceGetAttribute(&mps, gpuDevAttrMultiProcessorCount, dev) != gpuSuccess ||
        gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_mp, kernel, threads, 0) != gpuSuccess) {
        (void)gpuGetLastError(); // not a launch error: the next launch must not report it
        return 0;
    }
    return mps * per_mp;
}

#if defined(KDN_BACKEND_CUDA)
int kdn_pdl_capable(const void *kernel) {
    static const int capable = [kernel] {
        cudaFuncAttributes a;
        if (cudaFuncGetAttributes(&a, kernel) == cudaSuccess) return a.ptxVersion >= 90 ? 1 : 0;
        (void)cudaGetLastError(); // not a launch error: the next launch must not report it
        return 0;
    }();
    return capable;
}
#endif

void kdn_launch_refused(const char *kernel, const char *why) {
    if (launch_error[0] == 0) snprintf(launch_error, sizeof launch_error, "%s refused the shape: %s", kernel, why);
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
    if (gpuGetDeviceCount(&n) != gpuSuccess) return 0;
    return n;
}

int kdn_init(char *msg, size_t msg_size) {
    int n = 0;
    gpuError_t e = gpuGetDeviceCount(&n);
    if (e != gpuSuccess || n == 0) {
        snprintf(msg, msg_size, "%s", e != gpuSuccess ? gpuGetErrorString(e) : "no devices");
        return 1;
    }
    e = gpuGetDeviceProperties(&props, 0);
    if (e != gpuSuccess) {
        snprintf(msg, msg_size, "%s", gpuGetErrorString(e));
        return 1;
    }
    return 0;
}

const char *kdn_device_name(void) { return props.name; }
size_t kdn_device_memory(void) { return props.totalGlobalMem; }

void *kdn_malloc(size_t bytes) {
    void *p = NULL;
    return gpuMalloc(&p, bytes) == gpuSuccess ? p : NULL;
}

void kdn_free(void *p) { gpuFree(p); }

int kdn_upload(void *dst, const void *src, size_t bytes) {
    return gpuMemcpy(dst, src, bytes, gpuMemcpyHostToDevice) == gpuSuccess ? 0 : -1;
}

int kdn_copy(void *dst, const void *src, size_t bytes) {
    return gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, 0) == gpuSuccess ? 0 : -1;
}

int kdn_download(void *dst, const void *src, size_t bytes) {
    return gpuMemcpy(dst, src, bytes, gpuMemcpyDeviceToHost) == gpuSuccess ? 0 : -1;
}

const char *kdn_sync(void) {
    static char msg[512];
    gpuError_t e = gpuDeviceSynchronize();
    if (launch_error[0]) {
        snprintf(msg, sizeof msg, "%s", launch_error);
        launch_error[0] = 0;
        return msg;
    }
    if (e != gpuSuccess) {
        snprintf(msg, sizeof msg, "device error: %s", gpuGetErrorString(e));
        return msg;
    }
    return NULL;
}

long kdn_launch_count(void) { return launches; }

double kdn_time_ms(void (*work)(void *arg), void *arg) {
    gpuEvent_t start, stop;
    float ms = 0.0f;
    gpuDeviceSynchronize();
    gpuEventCreate(&start);
    gpuEventCreate(&stop);
    gpuEventRecord(start, 0);
    work(arg);
    gpuEventRecord(stop, 0);
    gpuEventSynchronize(stop);
    gpuEventElapsedTime(&ms, start, stop);
    gpuEventDestroy(start);
    gpuEventDestroy(stop);
    return ms;
}

// 256 MB: larger than the last-level cache of MI50 (4 MB), H100 (50 MB) and H200 (60 MB).
size_t kdn_flush_bytes(void) { return (size_t)256 << 20; }

void kdn_flush_cache(void) {
    static void *junk;
    if (!junk && gpuMalloc(&junk, kdn_flush_bytes()) != gpuSuccess) junk = NULL;
    if (junk) gpuMemset(junk, 0, kdn_flush_bytes());
}

}  // extern "C"

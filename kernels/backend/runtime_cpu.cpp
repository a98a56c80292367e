// Device runtime for the CPU backend: "device" memory is host memory and
// kernels have already run when their launcher returns.
#include "backend.h"
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Kernels run synchronously on the host: the stream is kept only to be
// returned, so a caller's save/restore works the same on every build.
static thread_local void *cpu_stream = nullptr;

void *kdn_set_stream(void *stream) {
    void *previous = cpu_stream;
    cpu_stream = stream;
    return previous;
}

void kdn_launch_refused(const char *kernel, const char *why) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s refused the shape: %s", kernel, why);
    kdn_cpu_record_fault(KDN_FAULT_REFUSED, msg);
}

extern "C" {

const char *kdn_backend(void) { return "cpu"; }
const char *kdn_target(void) { return "host-wave64"; }
int kdn_init(char *msg, size_t msg_size) {
    (void)msg;
    (void)msg_size;
    return 0;
}
const char *kdn_device_name(void) { return "cpu-simt-executor"; }
int kdn_current_device_name(char *name, size_t size) {
    snprintf(name, size, "%s", kdn_device_name());
    return 0;
}
int kdn_device_count(void) { return 1; }
size_t kdn_device_memory(void) { return 0; }
void *kdn_malloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
void kdn_free(void *p) { free(p); }
int kdn_upload(void *dst, const void *src, size_t bytes) {
    memcpy(dst, src, bytes);
    return 0;
}
int kdn_copy(void *dst, const void *src, size_t bytes) {
    memmove(dst, src, bytes);
    return 0;
}

int kdn_download(void *dst, const void *src, size_t bytes) {
    memcpy(dst, src, bytes);
    return 0;
}

const char *kdn_sync(void) {
    static __thread char msg[512];
    return kdn_cpu_take_fault(msg, sizeof msg) != KDN_FAULT_NONE ? msg : NULL;
}

kdn_fault kdn_take_fault(char *msg, size_t msg_size) { return (kdn_fault)kdn_cpu_take_fault(msg, msg_size); }

int kdn_error_pending(char *msg, size_t msg_size) { return kdn_cpu_fault_pending(msg, msg_size); }

long kdn_launch_count(void) { return kdn_cpu_launch_count(); }

void kdn_set_launch_time_limit(double seconds) { kdn_cpu_set_launch_limit(seconds); }
long kdn_launches_out_of_time(void) { return kdn_cpu_launches_out_of_time(); }

double kdn_time_ms(void (*work)(void *arg), void *arg) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    work(arg);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6;
}

// Host caches are not flushed: CPU timings are emulation, never performance.
void kdn_flush_cache(void) {}
size_t kdn_flush_bytes(void) { return 0; }

}  // extern "C"

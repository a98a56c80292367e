// Kernels for the harness's unit tests (tests/test_harness.c). The broken
// ones are broken on purpose: each is a bug the executor or the guards must
// report instead of computing garbage.
#include "../kernels/backend/backend.h"
#include "../kernels/backend/wave.h"
#include "executor_kernels.h"

__global__ void kernel_wave_sum(float *out) {
    float s = kdn_wave_sum((float)kdn_lane());
    if (kdn_lane() == 0) out[threadIdx.x / KDN_WAVE] = s;
}

// A wave exchange from lane 64 of a 64-lane wave (there is none).
__global__ void kernel_lane_outside_wave(float *y) { y[threadIdx.x] = kdn_shfl(1.0f, KDN_WAVE); }

// The DPP row primitives as the executor runs them: a rotation by 3 (the
// direction and the wrap inside a row of 16), the row sum, and the xor
// butterfly it must equal bitwise.
__global__ void kernel_row_ops(const float *x, float *ror3, float *sum, float *butterfly) {
    const int t = (int)threadIdx.x;
    ror3[t] = kdn_row_ror<3>(x[t]);
    sum[t] = kdn_row_sum16(x[t]);
    float v = x[t];
    for (int m = 8; m > 0; m >>= 1) v += kdn_shfl_xor(v, m);
    butterfly[t] = v;
}

// The 64-bit row primitives: a shift by 3 (zero for the first 3 lanes of a
// row), the row scan and the row sum, each half of a double moved intact.
__global__ void kernel_row_ops_f64(const double *x, double *shr3, double *scan, double *sum) {
    const int t = (int)threadIdx.x;
    shr3[t] = kdn_row_shr_f64<3>(x[t]);
    scan[t] = kdn_row_scan16_f64(x[t]);
    sum[t] = kdn_row_sum16(x[t]);
}

// The quad primitives: an uneven permutation (each lane reads a different
// lane of its quad) and the quad sum.
__global__ void kernel_quad_ops(const float *x, float *perm, float *sum) {
    const int t = (int)threadIdx.x;
    perm[t] = kdn_quad_perm<3, 0, 2, 1>(x[t]);
    sum[t] = kdn_quad_sum(x[t]);
}

__global__ void kernel_lds_reverse(const float *x, float *y, int n) {
    __shared__ float buf[1024];
    int t = (int)threadIdx.x;
    buf[t] = x[t];
    __syncthreads();
    y[t] = buf[n - 1 - t];
}

__global__ void kernel_divergent_barrier(float *y) {
    if (threadIdx.x >= 32) return;
    __syncthreads();
    y[threadIdx.x] = 1.0f;
}

__global__ void kernel_partial_wave(float *y) {
    if (kdn_lane() < 10) y[threadIdx.x] = kdn_wave_sum(1.0f);
}

__global__ void kernel_write_past_end(float *y, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i <= n) y[i] = 0.0f; // the bug: <= instead of <
}

__global__ void kernel_read_unwritten_lds(float *y) {
    KDN_DYNAMIC_SHARED(float, lds);
    y[threadIdx.x] = lds[threadIdx.x];
}

// Both halves of the workgroup wait at a barrier, but not the same one.
__global__ void kernel_split_barrier(float *y) {
    if (threadIdx.x & 1)
        __syncthreads();
    else
        __syncthreads();
    y[threadIdx.x] = 1.0f;
}

// The race: thread t reads what thread t - 1 wrote, with no barrier between.
__global__ void kernel_missing_barrier(const float *x, float *y) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = x[t];
    y[t] = buf[t > 0 ? t - 1 : 0];
}

// Workgroup b reads what workgroup b - 1 wrote: no order between workgroups.
__global__ void kernel_reads_other_workgroup(float *y) {
    int b = (int)blockIdx.x, t = (int)threadIdx.x;
    y[b * 64 + t] = (float)b;
    if (b > 0) y[b * 64 + t] += y[(b - 1) * 64 + t];
}

// ---- the race detector's cases (build/cpu-race) ----------------------------

// Every thread writes one word: a write-write race.
__global__ void kernel_write_write(float *y) {
    KDN_DYNAMIC_SHARED(float, buf);
    buf[0] = (float)threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = buf[0];
}

// Thread t reads word t + 1, then writes word t: a read-write race (thread
// t + 1 writes what t read, no barrier between).
__global__ void kernel_read_then_write(float *y, int n) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = (float)t;
    __syncthreads();
    float v = buf[(t + 1) % n];
    buf[t] = v;
    __syncthreads();
    y[t] = buf[t];
}

// The same race with the write a read-modify-write (buf[t] *= 2): the
// detector must see it as a write (AddressSanitizer's hooks saw a read only).
__global__ void kernel_rmw_after_read(float *y, int n) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = (float)t;
    __syncthreads();
    y[t] = buf[(t + 1) % n];
    buf[t] *= 2.0f;
}

// Lanes of one wave exchange through LDS: lane t writes word t and reads
// word t ^ 1. Without a wave operation between, that holds only in gfx906's
// lockstep (not CUDA's independent threads, not the executor): a race. With
// a shuffle between: correct everywhere.
__global__ void kernel_wave_exchange(float *y, int synced) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = (float)t;
    if (synced) (void)kdn_shfl(0.0f, 0);
    y[t] = buf[t ^ 1];
}

// Waves 0 and 1 exchange through LDS with only a wave operation between: a
// wave operation orders the lanes of its own wave, not other waves.
__global__ void kernel_waves_without_barrier(float *y) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = (float)t;
    (void)kdn_shfl(0.0f, 0);
    y[t] = buf[(t + 64) % 128];
}

// The race in a static __shared__ array: thread t reads t - 1's word.
__global__ void kernel_static_race(float *y) {
    __shared__ float buf[64];
    int t = (int)threadIdx.x;
    buf[t] = (float)t;
    y[t] = buf[t > 0 ? t - 1 : 0];
}

// Reads one float past the dynamic LDS the launch asked for.
__global__ void kernel_lds_past_end(float *y, int n) {
    KDN_DYNAMIC_SHARED(float, buf);
    int t = (int)threadIdx.x;
    buf[t] = 1.0f;
    __syncthreads();
    y[t] = buf[t + 1 < n + 1 ? t + 1 : t];
}

// 48 KB of static LDS, every word used; launched with 20 KB of dynamic LDS.
__global__ void kernel_static_lds_48k(float *y) {
    __shared__ float big[12 * 1024];
    KDN_DYNAMIC_SHARED(float, dyn);
    int t = (int)threadIdx.x;
    for (int i = t; i < 12 * 1024; i += (int)blockDim.x) big[i] = (float)i;
    dyn[t] = 0.0f;
    __syncthreads();
    y[t] = big[t] + dyn[t];
}

// ---- hangs and crashes the executor turns into errors ----------------------

// Thread 0 waits for thread 1's flag; thread 1 runs only when 0 yields: a
// spin-wait that never ends (on a GPU too, for threads of one wave).
__global__ void kernel_spin_wait(volatile float *flag) {
    if (threadIdx.x == 1) flag[0] = 1.0f;
    while (flag[0] == 0.0f) {
    }
}

// Every thread waits at the barrier for a flag no thread sets: progress
// (barriers) without end, never a hang by the no-progress rule; only the
// launch's time limit stops it.
__global__ void kernel_endless_barriers(volatile float *flag) {
    while (flag[0] == 0.0f) __syncthreads();
}

// A 1 MB private array: far more than a fiber's stack.
__global__ void kernel_huge_private(float *y) {
    volatile float big[256 * 1024];
    for (int i = 0; i < 256 * 1024; i++) big[i] = (float)i;
    y[threadIdx.x] = big[threadIdx.x * 1000];
}

// Thread t divides t by d: d = 0 traps on the host (SIGFPE). Not checked by
// UBSan (the SANITIZE=1 build would report the division and end the process
// before it traps), so every build tests the executor's own handler.
__attribute__((no_sanitize("integer-divide-by-zero"))) __global__ void kernel_divide(float *y, int d) {
    y[threadIdx.x] = (float)((int)threadIdx.x / d);
}

extern "C" {

int exec_race_detector(void) {
    float y[64];
    exec_wave_sum(y, 64); // a launch, so that instrumented code has run
    return kdn_cpu_take_fault(NULL, 0) == 0 && kdn_cpu_race_detector();
}
long exec_lds_checked(void) { return kdn_cpu_lds_checked(); }
void exec_write_write(float *y) { KDN_LAUNCH(kernel_write_write, dim3(1), dim3(128), 4, y); }
void exec_read_then_write(float *y, int n) {
    KDN_LAUNCH(kernel_read_then_write, dim3(1), dim3(n), n * sizeof(float), y, n);
}
void exec_rmw_after_read(float *y, int n) {
    KDN_LAUNCH(kernel_rmw_after_read, dim3(1), dim3(n), n * sizeof(float), y, n);
}
void exec_wave_exchange(float *y, int synced) { KDN_LAUNCH(kernel_wave_exchange, dim3(1), dim3(64), 64 * 4, y, synced); }
void exec_waves_without_barrier(float *y) { KDN_LAUNCH(kernel_waves_without_barrier, dim3(1), dim3(128), 128 * 4, y); }
void exec_static_race(float *y) { KDN_LAUNCH(kernel_static_race, dim3(1), dim3(64), 0, y); }
void exec_lds_past_end(float *y) { KDN_LAUNCH(kernel_lds_past_end, dim3(1), dim3(64), 64 * 4, y, 64); }
void exec_static_lds_48k(float *y) { KDN_LAUNCH(kernel_static_lds_48k, dim3(1), dim3(64), 20 * 1024, y); }
void exec_set_timeout(double seconds) { kdn_cpu_set_timeout(seconds); }
void exec_spin_wait(float *flag) {
    flag[0] = 0.0f;
    KDN_LAUNCH(kernel_spin_wait, dim3(1), dim3(64), 0, flag);
}
void exec_endless_barriers(float *flag) {
    flag[0] = 0.0f;
    KDN_LAUNCH(kernel_endless_barriers, dim3(1), dim3(64), 0, flag);
}
void exec_huge_private(float *y) { KDN_LAUNCH(kernel_huge_private, dim3(1), dim3(64), 0, y); }
void exec_divide(float *y, int d) { KDN_LAUNCH(kernel_divide, dim3(1), dim3(64), 0, y, d); }

int exec_set_schedule(const char *name) { return kdn_cpu_set_schedule(name); }
void exec_split_barrier(float *y) { KDN_LAUNCH(kernel_split_barrier, dim3(1), dim3(64), 0, y); }
void exec_missing_barrier(const float *x, float *y, int n) {
    KDN_LAUNCH(kernel_missing_barrier, dim3(1), dim3(n), n * sizeof(float), x, y);
}
void exec_reads_other_workgroup(float *y, int blocks) { KDN_LAUNCH(kernel_reads_other_workgroup, dim3(blocks), dim3(64), 0, y); }

void exec_wave_sum(float *out, int threads) { KDN_LAUNCH(kernel_wave_sum, dim3(1), dim3(threads), 0, out); }
void exec_row_ops(const float *x, float *ror3, float *sum, float *butterfly, int n) {
    KDN_LAUNCH(kernel_row_ops, dim3(1), dim3(n), 0, x, ror3, sum, butterfly);
}
void exec_row_ops_f64(const double *x, double *shr3, double *scan, double *sum, int n) {
    KDN_LAUNCH(kernel_row_ops_f64, dim3(1), dim3(n), 0, x, shr3, scan, sum);
}
void exec_quad_ops(const float *x, float *perm, float *sum, int n) {
    KDN_LAUNCH(kernel_quad_ops, dim3(1), dim3(n), 0, x, perm, sum);
}
void exec_lds_reverse(const float *x, float *y, int n) { KDN_LAUNCH(kernel_lds_reverse, dim3(1), dim3(n), 0, x, y, n); }
void exec_divergent_barrier(float *y) { KDN_LAUNCH(kernel_divergent_barrier, dim3(1), dim3(64), 0, y); }
void exec_partial_wave(float *y) { KDN_LAUNCH(kernel_partial_wave, dim3(1), dim3(64), 0, y); }
void exec_write_past_end(float *y, int n) {
    KDN_LAUNCH(kernel_write_past_end, dim3(KDN_CEIL_DIV(n + 1, 64)), dim3(64), 0, y, n);
}
void exec_read_unwritten_lds(float *y, int n) {
    KDN_LAUNCH(kernel_read_unwritten_lds, dim3(1), dim3(n), n * sizeof(float), y);
}
void exec_too_many_threads(float *y) { KDN_LAUNCH(kernel_wave_sum, dim3(1), dim3(1025), 0, y); }
void exec_too_much_lds(float *y) { KDN_LAUNCH(kernel_read_unwritten_lds, dim3(1), dim3(64), 64 * 1024 + 4, y); }
void exec_empty_launch(float *y) { KDN_LAUNCH(kernel_wave_sum, dim3(0), dim3(64), 0, y); }
void exec_lane_outside_wave(float *y) { KDN_LAUNCH(kernel_lane_outside_wave, dim3(1), dim3(64), 0, y); }

}  // extern "C"

/* Kernels that exercise the CPU SIMT executor and the harness's guards
 * (tests/executor_kernels.cpp): some correct, some broken on purpose. */
#ifndef EXECUTOR_KERNELS_H
#define EXECUTOR_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* out[w] = sum of the lane indices of wave w (workgroup of `threads`). */
void exec_wave_sum(float *out, int threads);
/* The DPP row primitives of wave.h on n threads: ror3 = kdn_row_ror<3>(x),
 * sum = kdn_row_sum16(x), butterfly = the xor butterfly (8, 4, 2, 1) of x. */
void exec_row_ops(const float *x, float *ror3, float *sum, float *butterfly, int n);
/* The 64-bit row primitives on n threads: shr3 = kdn_row_shr_f64<3>(x),
 * scan = kdn_row_scan16_f64(x), sum = kdn_row_sum16(x). */
void exec_row_ops_f64(const double *x, double *shr3, double *scan, double *sum, int n);
/* The DPP quad primitives on n threads: perm = kdn_quad_perm<3, 0, 2, 1>(x),
 * sum = kdn_quad_sum(x). */
void exec_quad_ops(const float *x, float *perm, float *sum, int n);
/* y = x reversed through LDS and a barrier (n <= 1024 threads). */
void exec_lds_reverse(const float *x, float *y, int n);
/* Threads 32.. return before __syncthreads(): a divergent barrier. */
void exec_divergent_barrier(float *y);
/* Only lanes 0..9 of the wave take part in a wave sum. */
void exec_partial_wave(float *y);
/* Writes y[0..n], one element past the end. */
void exec_write_past_end(float *y, int n);
/* y[i] = dynamic LDS never written (n <= 256). */
void exec_read_unwritten_lds(float *y, int n);
/* Launches over gfx906's limits: 1025 threads; 64 KB + 4 bytes of LDS. */
void exec_too_many_threads(float *y);
void exec_too_much_lds(float *y);
/* A grid of 0 workgroups; a wave exchange reading lane 64 of a 64-lane wave. */
void exec_empty_launch(float *y);
void exec_lane_outside_wave(float *y);
/* The executor's schedule (asc, desc, shuffle, shuffle:SEED): 0 or -1. */
int exec_set_schedule(const char *name);
/* Odd and even threads wait at two different __syncthreads() calls. */
void exec_split_barrier(float *y);
/* y[t] = x[t - 1] through LDS without a barrier (y[0] = x[0]; n <= 1024). */
void exec_missing_barrier(const float *x, float *y, int n);
/* y[b*64 + t] = b + y[(b-1)*64 + t]: reads another workgroup's output. */
void exec_reads_other_workgroup(float *y, int blocks);

/* The race detector (build/cpu-race): whether this build has it (after a
 * launch), how many LDS accesses it has checked, and its planted races. */
int exec_race_detector(void);
long exec_lds_checked(void);
/* 128 threads write one LDS word (write-write race). */
void exec_write_write(float *y);
/* Thread t reads LDS word t + 1 mod n, then writes word t (n <= 1024). */
void exec_read_then_write(float *y, int n);
/* Thread t reads LDS word t + 1 mod n, then doubles word t in place. */
void exec_rmw_after_read(float *y, int n);
/* y[t] = t ^ 1 through LDS in one wave; synced 0: nothing between the write
 * and the read (relies on lockstep: a race), 1: a shuffle. */
void exec_wave_exchange(float *y, int synced);
/* Two waves exchange through LDS with only a shuffle between. */
void exec_waves_without_barrier(float *y);
/* exec_missing_barrier's race in a static __shared__ array (64 threads). */
void exec_static_race(float *y);
/* Reads one float past the 256 bytes of dynamic LDS it launched with. */
void exec_lds_past_end(float *y);
/* 48 KB of static LDS, all used, plus 20 KB dynamic: over gfx906's 64 KB. */
void exec_static_lds_48k(float *y);
/* The CPU time a thread may run without progress (KDN_CPU_TIMEOUT), seconds. */
void exec_set_timeout(double seconds);
/* Thread 0 spins on flag[0], which thread 1 sets: hangs. */
void exec_spin_wait(float *flag);
/* 64 threads loop over a barrier for a flag never set: runs until stopped. */
void exec_endless_barriers(float *flag);
/* Each thread fills a 1 MB private array: overflows its fiber stack. */
void exec_huge_private(float *y);
/* y[t] = t / d, 64 threads: d = 0 is an integer division by zero. */
void exec_divide(float *y, int d);

#ifdef __cplusplus
}
#endif
#endif

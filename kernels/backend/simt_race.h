// The CPU SIMT executor's race detector (simt_race.cpp): the epochs the
// scheduler ticks, the LDS regions a launch watches, and gfx906's LDS limit
// on static and dynamic LDS together.
#pragma once
#include "simt_executor.h"

namespace kdn_simt {

// A barrier (or a workgroup's start) gives every wave the new clock value,
// a wave release only its wave w.
void tick_barrier(Executor &E);
void tick_wave(Executor &E, int w);
// The launch's dynamic LDS (shmem bytes) and the thread's static __shared__
// arrays, watched by the race detector.
void watch_lds(Executor &E, size_t shmem);
// The launch fails if the static __shared__ arrays its first workgroup used
// (since epoch) and its dynamic LDS exceed gfx906's 64 KB.
void check_static_lds(const Executor &E, uint64_t epoch, size_t shmem);

}  // namespace kdn_simt

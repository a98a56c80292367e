// The CPU SIMT executor's race detector (simt_race.h) and the lookup of the
// static __shared__ section.
//
// The race detector (the build/cpu-race build, `make RACECHECK=1`): its
// kernels are compiled with -fsanitize=thread but linked without its
// runtime, so every load and store of a kernel calls __tsan_{read,write}N
// below. Those that fall in LDS (the dynamic
// buffer or the kdn_lds section, where simt_cpu.h puts static __shared__
// arrays) are checked against a shadow word per 4 bytes that holds the last
// writer and up to two readers with the epoch of their access. Epochs: one
// clock, ticked at every barrier release (all waves take the new value) and
// every wave release (that wave takes it). Two accesses to one word by
// different threads, at least one a write, are a race unless a barrier lies
// between them (the earlier epoch is older than the last barrier) or they
// are lanes of one wave with a wave operation between them (different
// epochs). The first race fails the launch, naming the kernel, the LDS
// address and both threads. Two reader slots: a write after reads by three
// or more threads of which only older ones raced may go unreported; nothing
// is reported that is not a race by the rule above.
#include "simt_race.h"

#include <link.h>
#include <stdio.h>
#include <stdlib.h>

// The static __shared__ arrays (simt_cpu.h puts them in this thread-local
// section; weak: a program may have none). __start/__stop are the section's
// place in its module's TLS image; this host thread's copy lies at the same
// offset in the thread's block of that module.
extern "C" char __start_kdn_lds[] __attribute__((weak)), __stop_kdn_lds[] __attribute__((weak));

namespace kdn_simt {

// Epochs (see the top): a barrier (or a workgroup's start) gives every wave
// the new clock value, a wave release only its wave.
void tick_barrier(Executor &E) {
    RaceDetector &R = E.race;
    R.barrier_epoch = ++R.clock;
    for (int w = 0; w < kMaxThreads / kWave; w++) R.wave_epoch[w] = R.clock;
}

void tick_wave(Executor &E, int w) { E.race.wave_epoch[w] = ++E.race.clock; }

// Whether an access by thread `other` at `epoch` and one by the running
// thread now are unordered: same barrier interval, and different waves or
// one wave with no wave operation between.
static bool concurrent(const Executor &E, int other, uint64_t epoch) {
    const RaceDetector &R = E.race;
    if (epoch < R.barrier_epoch || other == E.cur) return false;
    return other / kWave != E.cur / kWave || epoch == R.wave_epoch[E.cur / kWave];
}

static void report_race(const Executor &E, const LdsRegion &r, size_t word, int other, bool other_wrote, bool write) {
    char how[96];
    if (other / kWave == E.cur / kWave)
        snprintf(how, sizeof how, "lanes of wave %d, no wave operation between them", other / kWave);
    else
        snprintf(how, sizeof how, "waves %d and %d", other / kWave, E.cur / kWave);
    fail("LDS race at %s byte %zu (%p): thread %d %s it, then thread %d %s it, with no barrier between (%s)",
         r.name, word * 4, (void *)(r.base + word * 4), other, other_wrote ? "wrote" : "read", E.cur,
         write ? "writes" : "reads", how);
}

// The reader slot the running thread's read goes to: its own, a free one
// (its read ordered before now for everyone), or the older of the two.
static int reader_slot(const Executor &E, const ShadowWord &w) {
    for (int k = 0; k < 2; k++)
        if (w.r_thread[k] == E.cur) return k;
    for (int k = 0; k < 2; k++)
        if (w.r_epoch[k] < E.race.barrier_epoch) return k;
    return w.r_epoch[0] <= w.r_epoch[1] ? 0 : 1;
}

static void check_word(const Executor &E, const LdsRegion &r, size_t i, bool write) {
    ShadowWord &w = r.shadow[i];
    const uint64_t now = E.race.wave_epoch[E.cur / kWave];
    if (concurrent(E, w.w_thread, w.w_epoch)) return report_race(E, r, i, w.w_thread, true, write);
    if (!write) {
        int k = reader_slot(E, w);
        w.r_thread[k] = (int16_t)E.cur, w.r_epoch[k] = now;
        return;
    }
    for (int k = 0; k < 2; k++)
        if (concurrent(E, w.r_thread[k], w.r_epoch[k])) return report_race(E, r, i, w.r_thread[k], false, true);
    w.w_thread = (int16_t)E.cur, w.w_epoch = now;
    w.r_epoch[0] = w.r_epoch[1] = 0;
}

// Every load and store of an instrumented kernel: those in LDS are checked.
static void lds_access(const void *p, size_t n, bool write) {
    Executor *e = current;
    if (!e) return;
    Executor &E = *e;
    RaceDetector &R = E.race;
    R.active = true;
    if (!E.in_fiber || failed() || n == 0) return;
    const uintptr_t a = (uintptr_t)p;
    LdsRegion *r = a - R.dynamic_lds.base < kMaxLds ? &R.dynamic_lds
                 : a - R.static_lds.base < R.static_lds.bytes ? &R.static_lds : NULL;
    if (!r) return;
    const size_t off = a - r->base;
    if (r == &R.dynamic_lds && off + n > r->bytes) {
        fail("thread %d %s dynamic LDS byte %zu, past the %zu bytes the launch asked for", E.cur,
             write ? "writes" : "reads", off + n - 1, r->bytes);
        return;
    }
    if (!r->shadow) r->shadow = (ShadowWord *)calloc((r == &R.dynamic_lds ? kMaxLds : r->bytes) / 4 + 1,
                                                    sizeof(ShadowWord));
    R.checked++;
    for (size_t i = off / 4; i <= (off + n - 1) / 4 && !failed(); i++) check_word(E, *r, i, write);
}

static int find_thread_copy(struct dl_phdr_info *info, size_t, void *arg) {
    uintptr_t *at = (uintptr_t *)arg, image = (uintptr_t)__start_kdn_lds;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type != PT_TLS || image < start || image >= start + ph.p_memsz || !info->dlpi_tls_data) continue;
        *at = (uintptr_t)info->dlpi_tls_data + (image - start);
        return 1;
    }
    return 0;
}

void watch_lds(Executor &E, size_t shmem) {
    LdsRegion &d = E.race.dynamic_lds, &s = E.race.static_lds;
    d.base = (uintptr_t)E.lds, d.bytes = shmem, d.name = "dynamic LDS";
    if (E.race.static_lds_found || !__start_kdn_lds) return;
    uintptr_t base = 0;
    if (!dl_iterate_phdr(find_thread_copy, &base)) return;
    s.base = base, s.name = "static __shared__";
    s.bytes = (size_t)(__stop_kdn_lds - __start_kdn_lds);
    E.race.static_lds_found = true;
}

// Bytes of static __shared__ arrays the workgroup that began at `epoch`
// used (words it read or wrote): only the race detector's build sees them.
static size_t static_lds_used(const Executor &E, uint64_t epoch) {
    const LdsRegion &s = E.race.static_lds;
    size_t words = 0;
    for (size_t i = 0; s.shadow && i < s.bytes / 4; i++) {
        const ShadowWord &w = s.shadow[i];
        words += w.w_epoch >= epoch || w.r_epoch[0] >= epoch || w.r_epoch[1] >= epoch;
    }
    return words * 4;
}

// gfx906's 64 KB hold static and dynamic LDS together. The static part is
// known from the first workgroup's accesses, where the race detector runs.
void check_static_lds(const Executor &E, uint64_t epoch, size_t shmem) {
    const size_t used = static_lds_used(E, epoch);
    if (used + shmem > kMaxLds)
        fail("%zu bytes of static __shared__ arrays + %zu bytes of dynamic LDS exceed gfx906's 64 KB", used, shmem);
}

}  // namespace kdn_simt

using kdn_simt::lds_access;

// The hooks of -fsanitize=thread without its runtime (the build/cpu-race
// kernels): the race detector sees every load and store, a read-modify-write
// as a read and a write (AddressSanitizer's hooks, tried first, check such
// an access once, as a read: a race on it went unseen). Other builds never
// call them.
extern "C" {
#define KDN_RACE_HOOKS(n)                                                                    \
    void __tsan_read##n(const void *p) { lds_access(p, n, false); }                          \
    void __tsan_write##n(const void *p) { lds_access(p, n, true); }                          \
    void __tsan_unaligned_read##n(const void *p) { lds_access(p, n, false); }                \
    void __tsan_unaligned_write##n(const void *p) { lds_access(p, n, true); }
KDN_RACE_HOOKS(1)
KDN_RACE_HOOKS(2)
KDN_RACE_HOOKS(4)
KDN_RACE_HOOKS(8)
KDN_RACE_HOOKS(16)
void __tsan_read_range(const void *p, unsigned long n) { lds_access(p, n, false); }
void __tsan_write_range(const void *p, unsigned long n) { lds_access(p, n, true); }
void __tsan_init(void) {}
}

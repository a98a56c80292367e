"""Timing: one compute unit, clock by clock."""
import math

from lens.fastforward import KEEP, in_steady_loop, iterations_left, jump, register_plan, snapshot, steady_state
from lens.machine import (BARRIER_LAT, CLOCK, DISPATCH_BASE, KERNARG_BASE, LAT_EXPORT, LAT_LDS, LAT_SMEM, LAT_STORE,
                          LAT_VMEM, LDS_BYTES_PER_CLK, M32, SIMDS, VMEM_BYTES_PER_CLK, WAVE)
from lens.semantics import Regs, exec_mask, set64, uniform


# ---- timing: one CU --------------------------------------------------------------------------
INF = float("inf")
UNKNOWN_MAX = 1000  # branches on unknown values one CU may take (the product kernels take none)
PERIOD_SPREAD = 1.1  # the live waves' loop periods agree within this factor for a fast-forward
TYPE_BIT = {"valu": 1, "salu": 2, "lds": 4, "vmem": 8, "smem": 16, "branch": 32, "internal": 0}


class Wave:
    __slots__ = ("r", "pc", "simd", "wg", "ready", "vm", "lgkm", "exp", "done", "at_barrier", "end", "stall",
                 "issued", "barrier_t", "barrier_loop", "hist", "steady", "pending", "bsum")

    def __init__(self, regs, simd, wg):
        self.r, self.pc, self.simd, self.wg = regs, 0, simd, wg
        self.ready, self.vm, self.lgkm, self.exp = simd, [], [], []
        self.done, self.at_barrier, self.end = False, False, 0
        self.stall = {}   # (loop, cause) -> clocks this wave waited
        self.issued = 0
        self.hist = {}      # loop header -> the wave's last arrivals there (fast-forward)
        self.steady = {}    # loop header -> (header, period, signature) while its iterations repeat
        self.pending = None # the jump (header, iterations, ...) to make at its next arrival there
        self.bsum = 0       # running sum of taken branch targets: a cheap signature of the path


def init_wave(code, launch, mem, wg_id, first_thread):
    """A wave's initial registers (AMDGPU ABI: user SGPRs, then workgroup ids; v0-v2 work-item ids)."""
    d, r = code.desc, Regs(mem)
    at = 0
    for flag, n, value in (("private_buffer", 4, None), ("dispatch_ptr", 2, DISPATCH_BASE), ("queue_ptr", 2, None),
                           ("kernarg_ptr", 2, KERNARG_BASE), ("dispatch_id", 2, 0), ("flat_scratch", 2, None),
                           ("private_size", 1, 0)):
        if d[flag]:
            for j in range(n):
                r.s[at + j] = None if value is None else (value >> (32 * j)) & M32
            at += n
    at = d["user_sgprs"]
    for axis in range(3):
        if d["wg_id"][axis]:
            r.s[at] = wg_id[axis]
            at += 1
    if d["wg_info"]:
        at += 1
    bx, by, bz = launch.block
    threads = bx * by * bz
    ids = [first_thread + i for i in range(WAVE)]
    r.v[0] = uniform(tuple(t % bx for t in ids))
    if d["workitem_ids"] >= 1:
        r.v[1] = uniform(tuple(t // bx % by for t in ids))
    if d["workitem_ids"] >= 2:
        r.v[2] = uniform(tuple(t // (bx * by) for t in ids))
    live = min(WAVE, threads - first_thread)
    set64(r.s, 126, (1 << live) - 1)
    return r


def align(c, simd):
    """The first clock >= c at which SIMD simd has its issue turn."""
    c = math.ceil(c)
    return c + ((simd - c) & 3)


def counter_ready(times, n, t):
    """The earliest clock >= t at which at most n of these operations are outstanding."""
    live = [c for c in times if c > t]
    times[:] = live
    if len(live) <= n:
        return t
    live.sort()
    return live[len(live) - n - 1]


class CU:
    """One compute unit running a set of resident workgroups to completion."""

    def __init__(self, code, launch, wg_ids, fast=True, clock=CLOCK):
        self.code, self.launch = code, launch
        self.lat_vmem, self.lat_store = LAT_VMEM * clock / CLOCK, LAT_STORE * clock / CLOCK  # fixed times
        mem = launch.memory(code)
        threads = launch.block[0] * launch.block[1] * launch.block[2]
        self.waves, self.groups = [], []
        k = 0
        for g, wg in enumerate(wg_ids):
            members = []
            for first in range(0, threads, WAVE):
                w = Wave(init_wave(code, launch, mem, wg, first), k % SIMDS, g)
                k += 1
                members.append(w)
                self.waves.append(w)
            self.groups.append(members)
        self.by_simd = [[w for w in self.waves if w.simd == s] for s in range(SIMDS)]
        self.simd_free = [0] * SIMDS
        self.valu_busy = [0] * SIMDS
        self.lds_free = self.vmem_free = 0
        self.lds_busy = self.vmem_busy = 0
        self.vmem_bytes = self.lds_bytes = 0
        self.unknown = 0
        self.fast = fast
        self.history = []   # (clock, CU counters) at loop arrivals: rates for fast-forward
        self.skipped = 0    # clocks fast-forwarded
        self.phase = 0      # the clock the live waves last changed (a wave ended): older periods are stale

    def stall(self, w, x, cause, clocks):
        if clocks > 0:
            key = (x.loop, cause)
            w.stall[key] = w.stall.get(key, 0) + clocks

    def run(self, limit=INF):
        insts = self.code.insts
        live = [w for w in self.waves]
        t = 0
        while live:
            s = t & 3
            used = 0
            for w in self.by_simd[s]:
                if w.done or w.ready > t:
                    continue
                x = insts[w.pc]
                typ = x.typ
                bit = TYPE_BIT[typ]
                if bit & used:
                    w.ready = t + 4
                    self.stall(w, x, "issue", 4)
                    continue
                if x.wait is not None:
                    vm, lgkm, ex = x.wait
                    sat = max(counter_ready(w.vm, vm, t), counter_ready(w.lgkm, lgkm, t),
                              counter_ready(w.exp, ex, t))
                    if sat > t:
                        w.ready = align(sat, s)
                        self.stall(w, x, "wait", w.ready - t)
                        continue
                if typ == "valu" and self.simd_free[s] > t:
                    w.ready = align(self.simd_free[s], s)
                    self.stall(w, x, "issue", w.ready - t)
                    continue
                used |= bit
                shift = self.issue(w, x, t)
                if shift:
                    t += shift
                    break
            live = [w for w in live if not w.done]
            if not live:
                break
            nt = min(w.ready for w in live)
            if nt == INF:
                raise RuntimeError("%s: every live wave waits at a barrier no other wave reaches" % self.code.name)
            t = max(t + 1, nt)
            if t > limit:
                raise RuntimeError("%s: more than %d clocks" % (self.code.name, limit))
        return max(w.end for w in self.waves)

    def issue(self, w, x, t):
        r = w.r
        typ = x.typ
        w.issued += 1
        w.ready = t + 4
        if typ == "valu":
            self.simd_free[w.simd] = t + x.clocks
            self.valu_busy[w.simd] += x.clocks
            if x.clocks > 4:
                w.ready = t + x.clocks  # the wave's next instruction waits for the multi-pass one
        elif typ in ("vmem", "lds"):
            ex = exec_mask(r)
            nbytes = (WAVE if ex is None else bin(ex).count("1")) * x.width
            if typ == "vmem":
                start = max(t, self.vmem_free)
                self.vmem_free = start + nbytes / VMEM_BYTES_PER_CLK
                self.vmem_busy += nbytes / VMEM_BYTES_PER_CLK
                self.vmem_bytes += nbytes
                done = self.vmem_free + (self.lat_store if x.is_store else self.lat_vmem)
                if w.vm and w.vm[-1] > done:
                    done = w.vm[-1]  # vmcnt counts down in issue order
                w.vm.append(done)
                if x.is_store:
                    w.exp.append(self.vmem_free + LAT_EXPORT)
            else:
                start = max(t, self.lds_free)
                self.lds_free = start + nbytes / LDS_BYTES_PER_CLK
                self.lds_busy += nbytes / LDS_BYTES_PER_CLK
                self.lds_bytes += nbytes
                done = self.lds_free + LAT_LDS
                w.lgkm.append(done)
        elif typ == "smem":
            w.lgkm.append(t + LAT_SMEM)
        elif x.mnem == "s_barrier":
            self.arrive(w, x, t)
        elif x.nop:
            w.ready = t + 4 + x.nop
        nxt = x.fn(r)
        if r.unknown:
            self.unknown += r.unknown
            r.unknown = 0
            if self.unknown > UNKNOWN_MAX:  # a loop spinning on a condition it cannot evaluate
                raise RuntimeError("%s: more than %d branches on unknown values, the last at 0x%x (an instruction "
                                   "without semantics here, or a value from memory)" % (self.code.name, UNKNOWN_MAX,
                                                                                        x.addr))
        if nxt == -1:
            w.done = True
            w.end = t + 4
            self.phase = t
            w.ready = INF
            self.release(w.wg, t)
            return 0
        if nxt is None:
            w.pc = x.index + 1
            return 0
        w.pc = nxt
        w.bsum += nxt
        if nxt <= x.index and self.fast:
            return self.arrived(w, nxt, t)
        return 0

    def arrive(self, w, x, t):
        w.at_barrier, w.barrier_t, w.barrier_loop = True, t, x.loop
        w.ready = INF
        self.release(w.wg, t)

    def release(self, g, t):
        members = self.groups[g]
        if all(m.at_barrier or m.done for m in members) and any(m.at_barrier for m in members):
            for m in members:
                if m.at_barrier:
                    m.at_barrier = False
                    m.ready = align(t + BARRIER_LAT, m.simd)
                    key = (m.barrier_loop, "barrier")
                    m.stall[key] = m.stall.get(key, 0) + m.ready - m.barrier_t

    # ---- fast-forward: loops whose iterations repeat ---------------------------------------------
    # When every live wave of the CU is inside one loop (any depth: the chunk loop of a kernel holds
    # its inner loops) whose last iterations took, per wave, the same path in periods within 2 %
    # of each other, the CU is in a periodic state: the simulator shifts every clock of the CU
    # forward by n periods and each wave n iterations on (at its next arrival at the loop's header),
    # where n leaves two iterations before any wave's path changes. n comes from replaying the
    # loop's control slice (the instructions its branches, exec and conditions depend on): the
    # replayed registers are exact after the jump (loop counters, exec masks that shrink lane by
    # lane); every other register moves by n times its step, or becomes unknown if irregular.
    # Busy and stall counters grow by their rates over the observed iterations (VALU busy per SIMD).
    # The observed iterations must all lie after the last wave ended (when one ends the others speed
    # up: a period from before is stale), and the live waves' periods must agree within PERIOD_SPREAD
    # (a wave the issue order starves runs a far longer period, which a jump of whole iterations of
    # each wave would round away).

    def counters(self):
        return tuple(self.valu_busy) + (self.lds_busy, self.vmem_busy, self.vmem_bytes, self.lds_bytes)

    def arrived(self, w, h, t):
        r = w.r
        if w.pending is not None and w.pending[0] == h:
            jump(r, w, w.pending)
            w.pending = None
            w.steady.pop(h, None)
            w.hist.pop(h, None)
            return 0
        self.history.append((t, self.counters()))
        if len(self.history) > 4096:
            del self.history[:2048]
        hs = w.hist.setdefault(h, [])
        hs.append((t, snapshot(r), w.issued, w.bsum, dict(w.stall)))
        if len(hs) > KEEP:
            del hs[0]
        st = steady_state(hs, h)
        if st is None:
            w.steady.pop(h, None)
            return 0
        w.steady[h] = st
        if w.pending is not None:
            return 0
        live = [v for v in self.waves if not v.done]
        if any(v.pending is not None or not in_steady_loop(v, self.code, h, t) for v in live):
            return 0
        return self.fast_forward(live, t, h)

    def fast_forward(self, live, t, h):
        periods = [v.steady[h][1] for v in live]
        if max(periods) > PERIOD_SPREAD * min(periods) or any(v.hist[h][0][0] < self.phase for v in live):
            return 0
        # the clocks every wave can skip: each wave stops two iterations before its path changes
        shift, plans = INF, {}
        for v in live:
            period = v.steady[h][1]
            m, steps = iterations_left(self.code, v, h)
            shift = min(shift, (m - 2) * period)
            if shift < 4 * period:
                return 0
            plans[v] = steps
        skip = {}
        for v in live:  # the waves of a workgroup skip alike (their barriers pair up)
            n = int(shift // v.steady[h][1])
            skip[v.wg] = min(skip.get(v.wg, n), n)
        # whole iterations: the clocks of the skipped iterations, not the clocks before the stop (a
        # wave shifted by more than its skipped iterations' clocks would lose the difference)
        shift = int(min(skip[v.wg] * v.steady[h][1] for v in live)) // 4 * 4
        start = min(v.hist[h][0][0] for v in live)
        base = next((c for tt, c in self.history if tt >= start), None)
        if base is not None and t > start:
            now = self.counters()
            rate = [(a - b) / (t - start) * shift for a, b in zip(now, base)]
            for s in range(SIMDS):
                self.valu_busy[s] += rate[s]
            lds, vmem, vmem_bytes, lds_bytes = rate[SIMDS:]
            self.lds_busy += lds
            self.vmem_busy += vmem
            self.vmem_bytes += vmem_bytes
            self.lds_bytes += lds_bytes
        for v in live:
            hs = v.hist[h]
            iters = len(hs) - 1
            per = lambda i: (hs[-1][i] - hs[0][i]) / iters  # noqa: E731
            per_stall = {k: (hs[-1][4].get(k, 0) - hs[0][4].get(k, 0)) / iters for k in hs[-1][4]}
            v.pending = (h, skip[v.wg], register_plan(hs, plans[v]), plans[v], per_stall, per(2), per(3))
            if v.ready != INF:
                v.ready += shift
            v.vm = [c + shift for c in v.vm]
            v.lgkm = [c + shift for c in v.lgkm]
            v.exp = [c + shift for c in v.exp]
            if v.at_barrier:
                v.barrier_t += shift
        self.simd_free = [c + shift for c in self.simd_free]
        self.lds_free += shift
        self.vmem_free += shift
        self.skipped += shift
        self.history.clear()
        return shift

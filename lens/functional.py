"""Functional mode: a gfx906 code object's kernel run on real data, wave by wave, instruction by
instruction (the semantics: lens/func_ops.py, lens/func_float.py).

What it models: global memory (the caller's buffers at their addresses; an access outside every buffer
stops the run), LDS per workgroup (an access past the launch's LDS stops it), exec masks, the memory
counters, barriers. A load's or LDS read's destination holds a poison value (None) from its issue
until the s_waitcnt that covers it; an LDS write lands in LDS when its wave's s_waitcnt covers it (or
when the same wave next reads LDS: one wave's LDS operations run in order), so a missing or short wait
shows as poison stored, branched on or used as an address, or as another wave reading stale LDS after
a barrier. Poison in any other use (arithmetic) propagates and stops the run where it is stored.
Waves of a workgroup run one at a time from barrier to barrier, in the order the schedule names
("forward": wave 0 first, "reverse": the last first), so code that needs an order the barriers do not
give shows as a difference between the schedules.
It does not model timing, caches, the HIP runtime's host side, scratch memory or the hardware's own
defects."""
import bisect
import struct

from lens.cu import init_wave
from lens.decode import Opnd
from lens.func_ops import BARRIER, Fault, functional, with_exec
from lens.machine import WAVE
from lens.semantics import vwrite

UNDEFINED = 0x7fbad000   # a NaN: what a VGPR holds before the kernel writes it
STEP_LIMIT = 20_000_000  # instructions one wave may run (a kernel that loops forever stops)


class Memory:
    """Global memory: byte buffers at their device addresses."""

    def __init__(self):
        self.bases, self.bufs = [], []

    def add(self, base, data):
        i = bisect.bisect(self.bases, base)
        self.bases.insert(i, base)
        self.bufs.insert(i, data if isinstance(data, bytearray) else bytearray(data))

    def find(self, addr, nbytes, x):
        i = bisect.bisect_right(self.bases, addr) - 1
        if i >= 0 and addr + nbytes <= self.bases[i] + len(self.bufs[i]):
            return self.bufs[i], addr - self.bases[i]
        raise Fault("%s at 0x%x: address 0x%x outside every buffer" % (x.mnem, x.addr, addr))

    def read(self, addr, n, x):
        buf, off = self.find(addr, 4 * n, x)
        return struct.unpack_from("<%dI" % n, buf, off)

    def write(self, addr, words, x):
        if None in words:
            raise Fault("%s at 0x%x stores a poison value (read before the s_waitcnt that covers it)" % (
                x.mnem, x.addr))
        buf, off = self.find(addr, 4 * len(words), x)
        struct.pack_into("<%dI" % len(words), buf, off, *words)


class Wave:
    """One wave's registers, program counter and outstanding memory operations."""

    def __init__(self, regs, group):
        self.r, self.group, self.mem = regs, group, group.mem
        self.pc, self.done, self.at_barrier, self.steps = 0, False, False, 0
        self.pending = []  # [counter, dst, words, lane values, exec, LDS stores], oldest first

    def issue(self, counter, x, d, words, vals, ex):
        if d is not None and d.kind == "v":
            for j in range(words):
                self.r.v[d.idx + j] = poisoned(self.r, d.idx + j, ex)
        elif d is not None:
            for j in range(words):
                self.r.s[d.idx + j] = None
        self.pending.append([counter, d, words, vals, ex, None])

    def issue_lds_write(self, x, stores):
        for _, words in stores:
            if None in words:
                raise Fault("%s at 0x%x writes a poison value to LDS" % (x.mnem, x.addr))
        self.pending.append(["lgkm", None, 0, None, None, (x, stores)])

    def retire(self, item):
        _, d, words, vals, ex, stores = item
        if stores:
            x, todo = stores
            for addr, ws in todo:
                buf, off = self.group.lds_at(addr, len(ws), x)
                struct.pack_into("<%dI" % len(ws), buf, off, *ws)
            item[5] = None
        elif d is not None and d.kind == "s":
            for j in range(words):
                self.r.s[d.idx + j] = vals[j]
        elif d is not None:
            for j in range(words):
                col = tuple(v[j] for v in vals)
                with_exec(self.r, ex, lambda j=j, col=col: vwrite_col(self.r, d.idx + j, col), False)

    def wait(self, vm, lgkm):
        for counter, limit in (("vm", vm), ("lgkm", lgkm)):
            mine = [p for p in self.pending if p[0] == counter]
            for item in mine[:max(0, len(mine) - limit)]:
                self.retire(item)
                self.pending.remove(item)

    def flush_lds(self):
        for item in self.pending:
            if item[5]:
                self.retire(item)

    def lds_read(self, addr, words, x):
        buf, off = self.group.lds_at(addr, words, x)
        return struct.unpack_from("<%dI" % words, buf, off)


def poisoned(r, idx, ex):
    """VGPR idx with the lanes in ex made poison."""
    old = r.v[idx]
    col = old if type(old) is tuple else (old,) * WAVE
    return tuple(None if ex >> i & 1 else col[i] for i in range(WAVE))


def vwrite_col(r, idx, col):
    vwrite(r, Opnd("v", idx), col)


class Group:
    """One workgroup: its waves and its LDS."""

    def __init__(self, code, launch, mem, kernarg, wg):
        self.mem, self.lds = mem, bytearray(code.meta.get("lds_static", 0) + launch.lds)
        threads = launch.block[0] * launch.block[1] * launch.block[2]
        self.waves = [Wave(init_wave(code, launch, kernarg, wg, first), self) for first in range(0, threads, WAVE)]
        for w in self.waves:  # a VGPR the kernel has not written holds garbage, not poison (code may read
            w.r.v = [UNDEFINED if v is None else v for v in w.r.v]  # it where only ignored bits depend on it)

    def lds_at(self, addr, words, x):
        if addr < 0 or addr + 4 * words > len(self.lds):
            raise Fault("%s at 0x%x: LDS bytes %d..%d outside the workgroup's %d" % (
                x.mnem, x.addr, addr, addr + 4 * words, len(self.lds)))
        return self.lds, addr


def compiled(code, i):
    fns = code.__dict__.setdefault("functional", {})
    if i not in fns:
        fns[i] = functional(code.insts[i])
    return fns[i]


def run_wave(code, w):
    """Runs w to its next barrier or its end."""
    while True:
        res = compiled(code, w.pc)(w)
        w.steps += 1
        if w.steps > STEP_LIMIT:
            raise Fault("a wave ran %d instructions without ending" % STEP_LIMIT)
        if w.r.unknown:
            raise Fault("a branch at 0x%x on a poison value" % code.insts[w.pc].addr)
        if res is None:
            w.pc += 1
        elif res == -1:
            w.wait(0, 0)
            w.done = True
            return
        elif res == BARRIER:
            w.pc += 1
            w.at_barrier = True
            return
        else:
            w.pc = res


def run_group(code, group, schedule):
    waves = group.waves if schedule == "forward" else group.waves[::-1]
    while not all(w.done for w in waves):
        for w in waves:
            if not w.done:
                run_wave(code, w)
        for w in waves:
            w.at_barrier = False


def run(code, launch, mem, schedule="forward"):
    """Runs every workgroup of a launch (lens/launch.py's Launch) on mem (Memory), which it changes."""
    kernarg = launch.memory(code)
    for base, data in kernarg.blobs:  # this launch's argument segment and packet replace the last one's
        if base in mem.bases:
            i = mem.bases.index(base)
            del mem.bases[i], mem.bufs[i]
        mem.add(base, data)
    gx, gy, gz = launch.grid
    for z in range(gz):
        for y in range(gy):
            for xg in range(gx):
                run_group(code, Group(code, launch, mem, kernarg, (xg, y, z)), schedule)
    return mem

"""Long loops: when every wave of a CU repeats one loop's iterations, the CU is shifted forward by
whole iterations (trip counts from replaying the loop's control slice)."""

from lens.machine import M32, WAVE
from lens.semantics import ACCUMULATE, CARRY, Regs, SAVEEXEC, lanes, uniform


def in_steady_loop(w, code, h, t):
    """Whether a wave runs loop h (its pc inside the loop's range) in a steady state observed at
    its latest arrivals (not a stale one from an earlier visit of the loop)."""
    st = w.steady.get(h)
    return st is not None and h <= w.pc <= code.loops.get(h, h) + 1 and t - w.hist[h][-1][0] <= 2 * st[1]


def snapshot(r):
    return (tuple(r.s), r.scc, tuple(r.v))


def affine(a, b, c):
    """How a value moved over two iterations: ('same',), ('add', d) or None (unknown or irregular)."""
    if a == b == c:
        return ("same",)
    if type(a) is int and type(b) is int and type(c) is int:
        d = (b - a) & M32
        return ("add", d) if (c - b) & M32 == d else None
    if c is None:
        return ("same",)
    if a is None or b is None:
        return None
    ca = a if type(a) is tuple else (a,) * WAVE
    cb = b if type(b) is tuple else (b,) * WAVE
    cc = c if type(c) is tuple else (c,) * WAVE
    if None in ca or None in cb or None in cc:
        return None
    d = tuple((y - x) & M32 for x, y in zip(ca, cb))
    if any((z - y) & M32 != e for y, z, e in zip(cb, cc, d)):
        return None
    return ("add", uniform(d))


KEEP = 4  # arrivals at a loop header a wave keeps: a steady state needs them all alike


def steady_state(hs, h):
    """(header, period, signature) when a wave's last KEEP arrivals at a loop header repeat: the
    same path (instructions issued, branch targets) and periods within 2 % of each other (a looser
    spread takes a loop's warm-up iterations for its period)."""
    if len(hs) < KEEP:
        return None
    sigs = {(b[2] - a[2], b[3] - a[3]) for a, b in zip(hs, hs[1:])}
    if len(sigs) != 1:
        return None
    periods = [b[0] - a[0] for a, b in zip(hs, hs[1:])]
    if max(periods) > 1.02 * min(periods) or min(periods) <= 0:
        return None
    return (h, sum(periods) / len(periods), sigs.pop())


def register_plan(hs, steps):
    """How the registers the control slice does not compute move per iteration (from the last three
    arrivals): [(kind, index, step)], step None for an irregular (then unknown) one."""
    (s1, c1, v1), (s2, c2, v2), (s3, c3, v3) = (x[1] for x in hs[-3:])
    exact = slice_defs(steps)
    plan = []
    for kind, A, B, C in (("s", s1, s2, s3), ("v", v1, v2, v3)):
        for i, (a, b, c) in enumerate(zip(A, B, C)):
            if (kind, i) in exact:
                continue
            m = affine(a, b, c)
            if m is None:
                plan.append((kind, i, None))
            elif m[0] == "add":
                plan.append((kind, i, m[1]))
    if not (c1 == c2 == c3) and "scc" not in exact:
        plan.append(("scc", 0, None))
    return plan


def slice_defs(steps):
    """The registers the control slice's instructions write."""
    out = set()
    for x, in_slice, _ in steps:
        if in_slice:
            out |= defs_uses(x)[0]
    return out


def jump(r, w, pending):
    """A wave's registers and counters n iterations of its loop on: the control slice replayed
    (exact: loop counters, exec, conditions), every other register moved by n times its step."""
    _, n, plan, steps, per_stall, per_issued, per_bsum = pending
    for _ in range(n):
        for x, in_slice, _ in steps:
            if in_slice:
                x.fn(r)
    r.unknown = 0
    apply_plan(r, plan, n)
    for k, v in per_stall.items():
        w.stall[k] = w.stall.get(k, 0) + v * n
    w.issued += per_issued * n
    w.bsum += per_bsum * n


def apply_plan(r, plan, n):
    """Registers n iterations on: each moving register by n times its step; irregular ones unknown."""
    for kind, i, d in plan:
        if kind == "scc":
            r.scc = None
            continue
        regs = r.s if kind == "s" else r.v
        cur = regs[i]
        if d is None or cur is None:
            regs[i] = None
        else:
            regs[i] = lanes(lambda x, y: (x + n * y) & M32, (cur, d))


REPLAY_MAX = 1 << 17


def iterations_left(code, w, h):
    """How many more iterations of its steady loop a wave runs on the same path: the iterations
    after its last arrival are replayed on the loop's control slice (the instructions of one
    iteration's path that branch conditions and exec depend on, loop-carried included) until a
    branch goes another way (at most 2^17 at a time: the replay is Python). Returns (iterations,
    the path's steps: (instruction, in the slice, the next index expected))."""
    base = w.hist[h][-1][1]
    tail = code.loops.get(h, h)
    r = Regs(w.r.mem)
    r.s, r.scc, r.v = list(base[0]), base[1], list(base[2])
    path = one_iteration(code, Regs.copy(r), h, tail, record=True)
    if path is None:
        return 0, []
    keep = control_slice(code, path)
    insts = code.insts
    steps = [(insts[i], i in keep, path[k + 1] if k + 1 < len(path) else h) for k, i in enumerate(path)]
    for m in range(REPLAY_MAX):
        for x, in_slice, expect in steps:
            if x.typ == "branch":
                nxt = x.fn(r)
                if r.unknown or (x.index + 1 if nxt is None else nxt) != expect:
                    return m, steps
            elif in_slice:
                x.fn(r)
    return REPLAY_MAX, steps


def operand_regs(o):
    if o.kind == "s":
        return {("s", o.idx + j) for j in range(o.n)}
    if o.kind == "v":
        return {("v", o.idx + j) for j in range(o.n)}
    if o.kind == "scc":
        return {"scc"}
    return set()


EXEC_REGS = {("s", 126), ("s", 127)}
VCC_REGS = {("s", 106), ("s", 107)}
BRANCH_USES = {"s_cbranch_scc0": {"scc"}, "s_cbranch_scc1": {"scc"}, "s_cbranch_vccz": VCC_REGS,
               "s_cbranch_vccnz": VCC_REGS, "s_cbranch_execz": EXEC_REGS, "s_cbranch_execnz": EXEC_REGS}


def defs_uses(x):
    """(registers an instruction writes, registers it reads), conservatively."""
    ops, b = x.ops, x.base
    if x.typ == "branch":
        return set(), set(BRANCH_USES.get(b, ()))
    if x.typ == "internal" or not ops:
        return set(), set()
    src = set()
    for o in ops[1:]:
        src |= operand_regs(o)
    if x.typ == "salu":
        if b.startswith(("s_cmp", "s_bitcmp")):
            return {"scc"}, operand_regs(ops[0]) | src
        d = operand_regs(ops[0]) | {"scc"}
        if b in SAVEEXEC:
            d |= EXEC_REGS
            src |= EXEC_REGS
        if b.startswith(("s_addc", "s_subb", "s_cselect", "s_cmov")):
            src.add("scc")
        return d, src
    if x.typ == "smem":
        return operand_regs(ops[0]), src
    if x.typ in ("vmem", "lds"):
        return (set() if x.is_store else operand_regs(ops[0])), src | EXEC_REGS | (operand_regs(ops[0]) if x.is_store
                                                                              else set())
    d = operand_regs(ops[0])
    if b in CARRY or b.startswith(("v_mad_u64", "v_mad_i64", "v_div_scale")):
        d |= operand_regs(ops[1])
    if b.startswith("v_cmpx"):
        d |= EXEC_REGS
    if b in ACCUMULATE or ("dpp" in x.mods):
        src |= operand_regs(ops[0])
    if b == "v_cndmask_b32" and len(ops) == 3:
        src |= VCC_REGS
    return d, src | EXEC_REGS


def control_slice(code, path):
    """Indices of the path's instructions that its branches depend on (fixpoint over iterations)."""
    insts = code.insts
    info = [(i, defs_uses(insts[i])) for i in path]
    need, keep = set(), set()
    for i, (d, u) in info:
        if insts[i].typ == "branch":
            need |= u
    while True:
        before = (len(need), len(keep))
        for i, (d, u) in reversed(info):
            if d & need:
                keep.add(i)
                need |= u
        if (len(need), len(keep)) == before:
            return keep


def one_iteration(code, r, h, tail, record=False):
    """(instructions, branch-target sum) of one iteration from the header h -- or, if record, the
    indices of its path -- or None when it leaves the loop or branches on an unknown value."""
    insts, pc, count, bsum, path = code.insts, h, 0, 0, []
    while True:
        x = insts[pc]
        if record:
            path.append(pc)
        nxt = x.fn(r)
        count += 1
        if r.unknown or nxt == -1 or count > 1 << 20:
            return None
        if nxt is None:
            pc += 1
        else:
            bsum += nxt
            if nxt == h:
                return path if record else (count, bsum)
            pc = nxt
        if not h <= pc <= tail:
            return None

"""The functional mode's instructions: each decoded instruction (lens/decode.py) as a function of a
wave (lens/functional.py). Scalar and integer vector instructions are lens/semantics.py's; this file adds
what values of real inputs need: gfx906's float ops (lens/func_float.py), DPP, vector memory, LDS,
scalar loads with their memory counters. An instruction it does not know raises Unimplemented."""
import re

from lens.decode import Opnd
from lens.func_float import F32, F32_TO_64, F64, F64_TO_32, neg64
from lens.machine import M32, M64, WAVE
from lens.semantics import (ACCUMULATE, BRANCH_COND, VOP, exec_mask, float_mods, get64, lanes, salu_semantics,
                            set64, valu_semantics, vread, vwrite)

BARRIER = "barrier"


class Fault(Exception):
    """The run stops: the kernel did something the MI50 would not do right (or the lens cannot follow)."""


class Unimplemented(Fault):
    pass


def with_exec(r, mask, fn, narrow=True):
    """fn() with exec narrowed to mask (a DPP lane that has no source), or set to it (narrow False: a
    load's lanes, whatever exec is when its data arrives)."""
    ex = exec_mask(r)
    set64(r.s, 126, ex & mask if narrow else mask)
    try:
        fn()
    finally:
        set64(r.s, 126, ex)


def column(v):
    return v if type(v) is tuple else (v,) * WAVE


# ---- DPP: src0 read across lanes -----------------------------------------------------------------
def dpp_source(mods):
    """lane -> source lane (or -1: none) of a DPP control."""
    if "quad_perm" in mods:
        p = [int(v) for v in mods["quad_perm"].strip("[]").split(",")]
        return [(i & ~3) | p[i & 3] for i in range(WAVE)]
    for key, f in (("row_shr", lambda j, n: j - n), ("row_shl", lambda j, n: j + n),
                   ("row_ror", lambda j, n: (j - n) & 15)):
        if key in mods:
            n = int(mods[key], 0)
            return [(i & ~15) | f(i & 15, n) if 0 <= f(i & 15, n) < 16 else -1 for i in range(WAVE)]
    if "row_mirror" in mods:
        return [(i & ~15) | (15 - (i & 15)) for i in range(WAVE)]
    if "row_half_mirror" in mods:
        return [(i & ~7) | (7 - (i & 7)) for i in range(WAVE)]
    raise Unimplemented("DPP control %s" % " ".join(k for k in mods if k != "dpp"))


def dpp_semantics(x):
    """A VOP1/VOP2 with its src0 moved across lanes (Vega ISA manual, DPP): a lane whose source lane
    is outside the row or off in exec reads 0 with bound_ctrl, else is not written; row_mask and
    bank_mask disable rows of 16 and banks of 4 lanes."""
    src_of = dpp_source(x.mods)
    row_mask, bank_mask = int(x.mods.get("row_mask", "0xf"), 0), int(x.mods.get("bank_mask", "0xf"), 0)
    bound = "bound_ctrl" in x.mods
    enabled = sum(1 << i for i in range(WAVE) if row_mask >> (i >> 4) & 1 and bank_mask >> ((i >> 2) & 3) & 1)
    name = ACCUMULATE.get(x.base, x.base)
    if name not in VOP:
        raise Unimplemented(x.mnem)
    n, f = VOP[name]
    is_float = name.endswith("_f32")
    d, srcs = x.ops[0], x.ops[1:1 + n - (name != x.base)]

    def dpp(w):
        r = w.r
        ex = exec_mask(r)
        col = column(vread(r, srcs[0]))
        moved, write = [], enabled
        for i, s in enumerate(src_of):
            moved.append(col[s] if s >= 0 and ex >> s & 1 else 0)
            if not (s >= 0 and ex >> s & 1 or bound):
                write &= ~(1 << i)
        vals = [tuple(moved)] + [vread(r, o) for o in srcs[1:]]
        if name != x.base:
            vals.append(r.v[d.idx])
        if is_float:
            vals = [float_mods(o, v) for o, v in zip(srcs, vals)] + vals[len(srcs):]
        with_exec(r, write, lambda: vwrite(r, d, lanes(f, vals)))
    return dpp


# ---- float ops gfx906 rounds its own way (lens/func_float.py) --------------------------------------
def float_semantics(x):
    b, ops = x.base, x.ops
    if b in ("v_madmk_f32", "v_madak_f32"):  # d = a * K + c, d = a * b + K (the constant is an operand)
        f = F32["v_mad_f32"][1]
        order = (1, 3, 2) if b == "v_madmk_f32" else (1, 2, 3)
        return vop(ops[0], [ops[i] for i in order], f, True)
    if b in ("v_fmac_f32", "v_mac_f32"):
        f = F32[ACCUMULATE[b]][1]
        return vop(ops[0], [ops[1], ops[2], Opnd("v", ops[0].idx)], f, True)
    if b in F32:
        n, f = F32[b]
        return vop(ops[0], ops[1:1 + n], f, True)
    if b in F64:
        n, f = F64[b]
        return vop(ops[0], ops[1:1 + n], f, 64)
    if b in F64_TO_32:
        return vop(ops[0], ops[1:2], F64_TO_32[b], 6432)
    if b in F32_TO_64:
        return vop(ops[0], ops[1:2], F32_TO_64[b], 3264)
    return None


def vop(d, srcs, f, kind):
    """kind True: f32 sources with modifiers; 64: f64 sources and result; 6432 / 3264: conversions."""
    wide_in, wide_out = kind in (64, 6432), kind in (64, 3264)

    def fn(w):
        vals = []
        for o in srcs:
            v = vread(w.r, o, wide_in)
            if wide_in:
                v = lanes(lambda a, o=o: neg64(a, o), (v,)) if (o.neg or o.abs) and v is not None else v
            else:
                v = float_mods(o, v)
            vals.append(v)
        vwrite(w.r, d, lanes(f, vals), wide_out)
    return fn


# ---- memory -------------------------------------------------------------------------------------------
def offset(x, key="offset"):
    v = int(x.mods.get(key, "0") or 0, 0)
    return v


def global_addresses(w, x, addr_op, saddr_op):
    """Per-lane byte addresses of a global_* instruction (None where the lane is off)."""
    r = w.r
    ex = exec_mask(r)
    off = offset(x)
    if saddr_op.kind == "s":
        base = get64(r.s, saddr_op.idx)
        vo = column(vread(r, addr_op))
        if base is None:
            raise Fault("%s: scalar base is a poison value" % x.mnem)
        return [None if not ex >> i & 1 else (None if vo[i] is None else base + vo[i] + off) for i in range(WAVE)]
    va = column(vread(r, addr_op, True))
    return [None if not ex >> i & 1 else (None if va[i] is None else (va[i] + off) & M64) for i in range(WAVE)]


def check_known(x, addrs, ex):
    for i in range(WAVE):
        if ex >> i & 1 and addrs[i] is None:
            raise Fault("%s at 0x%x: an address in lane %d is a poison value" % (x.mnem, x.addr, i))


def vmem_semantics(x):
    m = re.match(r"^global_(load|store)_dword(x[234])?$", x.base)
    if not m:
        raise Unimplemented(x.mnem)
    n = int(m.group(2)[1]) if m.group(2) else 1
    ops = x.ops
    if m.group(1) == "load":
        d, a, s = ops[0], ops[1], ops[2]

        def load(w):
            ex = exec_mask(w.r)
            addrs = global_addresses(w, x, a, s)
            check_known(x, addrs, ex)
            vals = [w.mem.read(addrs[i], n, x) if ex >> i & 1 else (0,) * n for i in range(WAVE)]
            w.issue("vm", x, d, n, vals, ex)
        return load
    a, data, s = ops[0], ops[1], ops[2]

    def store(w):
        ex = exec_mask(w.r)
        addrs = global_addresses(w, x, a, s)
        check_known(x, addrs, ex)
        cols = [column(w.r.v[data.idx + j]) for j in range(n)]
        for i in range(WAVE):
            if ex >> i & 1:
                w.mem.write(addrs[i], [c[i] for c in cols], x)
        w.issue("vm", x, None, 0, None, ex)
    return store


# an LDS address is the 32-bit sum of the VGPR and the offset (a negative base plus an offset wraps)
DS = re.compile(r"^ds_(read|write)(2st64|2)?_b(32|64|96|128)$")


def lds_semantics(x):
    if x.base == "ds_bpermute_b32":
        return bpermute(x)
    m = DS.match(x.base)
    if not m:
        raise Unimplemented(x.mnem)
    size = int(m.group(3)) // 8
    ops = x.ops
    if m.group(2):
        step = size * (64 if m.group(2) == "2st64" else 1)
        places = [(offset(x, "offset0") * step, 0), (offset(x, "offset1") * step, size // 4)]
    else:
        places = [(offset(x), 0)]
    words = size // 4
    if m.group(1) == "read":
        d, a = ops[0], ops[1]

        def read(w):
            w.flush_lds()
            ex = exec_mask(w.r)
            addrs = column(vread(w.r, a))
            check_known(x, [addrs[i] for i in range(WAVE)], ex)
            vals = []
            for i in range(WAVE):
                lane = []
                for off, _ in places:
                    lane.extend(w.lds_read((addrs[i] + off) & M32, words, x) if ex >> i & 1 else (0,) * words)
                vals.append(tuple(lane))
            w.issue("lgkm", x, d, words * len(places), vals, ex)
        return read
    a, datas = ops[0], ops[1:1 + len(places)]

    def write(w):
        ex = exec_mask(w.r)
        addrs = column(vread(w.r, a))
        check_known(x, list(addrs), ex)
        stores = []
        for (off, _), data in zip(places, datas):
            cols = [column(w.r.v[data.idx + j]) for j in range(words)]
            stores.extend(((addrs[i] + off) & M32, [c[i] for c in cols]) for i in range(WAVE) if ex >> i & 1)
        w.issue_lds_write(x, stores)
    return write


def bpermute(x):
    """ds_bpermute_b32 d, addr, data: lane i reads data of lane (addr_i + offset) / 4 mod 64; a source
    lane off in exec gives 0."""
    d, a, data = x.ops[0], x.ops[1], x.ops[2]

    def fn(w):
        ex = exec_mask(w.r)
        addrs, col = column(vread(w.r, a)), column(vread(w.r, data))
        check_known(x, list(addrs), ex)
        vals = []
        for i in range(WAVE):
            s = ((addrs[i] + offset(x)) >> 2) & 63 if ex >> i & 1 else 0
            vals.append((col[s] if ex >> s & 1 else 0,))
        w.issue("lgkm", x, d, 1, vals, ex)
    return fn


def smem_semantics(x):
    if not re.match(r"^s_load_dword(x\d+)?$", x.base):
        raise Unimplemented(x.mnem)
    d, base, off = x.ops[0], x.ops[1], x.ops[2]

    def load(w):
        a = get64(w.r.s, base.idx)
        o = off.val if off.kind == "k" else w.r.s[off.idx]
        if a is None or o is None:
            raise Fault("%s at 0x%x: a poison address" % (x.mnem, x.addr))
        w.issue("lgkm", x, d, d.n, w.mem.read((a & 0xffffffffffff) + o, d.n, x), None)
    return load


# ---- everything else -------------------------------------------------------------------------------
def control_semantics(x):
    b = x.base
    if b == "s_branch":
        return lambda w, t=x.tgt: t
    if b in BRANCH_COND:
        cond = BRANCH_COND[b]

        def branch(w):
            c = cond(w.r)
            if c is None:
                raise Fault("%s at 0x%x: the condition is a poison value" % (x.mnem, x.addr))
            return x.tgt if c else None
        return branch
    if b == "s_endpgm":
        return lambda w: -1
    if b == "s_barrier":
        return lambda w: BARRIER
    if b == "s_waitcnt":
        return lambda w, v=x.wait: w.wait(v[0], v[1])
    if b in ("s_nop", "s_setprio", "s_sleep", "s_icache_inv"):
        return lambda w: None
    raise Unimplemented(x.mnem)


def functional(x):
    """A function (wave) -> next instruction index, None (the next one), -1 (s_endpgm) or BARRIER."""
    if x.typ in ("branch", "internal"):
        return control_semantics(x)
    if x.typ == "vmem":
        return vmem_semantics(x)
    if x.typ == "lds":
        return lds_semantics(x)
    if x.typ == "smem":
        return smem_semantics(x)
    if "sdwa" in x.mods or any(k in x.mods for k in ("clamp", "mul", "div")):
        raise Unimplemented(x.mnem + " " + x.text)
    if "dpp" in x.mods:
        return dpp_semantics(x)
    f = float_semantics(x) if x.typ == "valu" else None
    if f is None:
        g = valu_semantics(x) if x.typ == "valu" else salu_semantics(x)
        if g is None:
            raise Unimplemented(x.mnem)
        f = lambda w, g=g: g(w.r)  # noqa: E731
    return f

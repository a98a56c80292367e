"""The functional side: one wave's registers and what each instruction does to them (values are
32-bit unsigned ints or None, unknown)."""
import math
import re
import struct

from lens.decode import Opnd
from lens.machine import M32, M64, WAVE


# ---- values: 32-bit unsigned ints, or None (unknown); a VGPR holds None, an int (all lanes), or a
# tuple of 64 (int or None) ------------------------------------------------------------------------
def f2b(x):
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except (OverflowError, struct.error):
        return 0x7f800000 if x > 0 else 0xff800000


def b2f(b):
    return struct.unpack("<f", struct.pack("<I", b & M32))[0]


def sext(v, bits=32):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def fop(fn):
    """A float op on bit patterns (None in, None out)."""
    def op(*a):
        try:
            return f2b(fn(*[b2f(x) for x in a]))
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
    return op


def cvt_u32(x):
    if x != x:
        return 0
    return max(0, min(M32, int(x)))


def cvt_i32(x):
    if x != x:
        return 0
    return max(-(1 << 31), min((1 << 31) - 1, int(x))) & M32


def rcp(x):
    return 1.0 / x if x != 0 else math.copysign(math.inf, x)


# per-lane ops on 32-bit values: name -> (number of sources, function)
VOP = {
    "v_mov_b32": (1, lambda a: a),
    "v_not_b32": (1, lambda a: ~a & M32),
    "v_bfrev_b32": (1, lambda a: int("{:032b}".format(a)[::-1], 2)),
    "v_add_u32": (2, lambda a, b: (a + b) & M32),
    "v_sub_u32": (2, lambda a, b: (a - b) & M32),
    "v_subrev_u32": (2, lambda a, b: (b - a) & M32),
    "v_mul_lo_u32": (2, lambda a, b: (a * b) & M32),
    "v_mul_lo_i32": (2, lambda a, b: (a * b) & M32),
    "v_mul_hi_u32": (2, lambda a, b: (a * b) >> 32),
    "v_mul_hi_i32": (2, lambda a, b: ((sext(a) * sext(b)) >> 32) & M32),
    "v_mul_u32_u24": (2, lambda a, b: ((a & 0xffffff) * (b & 0xffffff)) & M32),
    "v_mul_hi_u32_u24": (2, lambda a, b: ((a & 0xffffff) * (b & 0xffffff)) >> 32),
    "v_mul_i32_i24": (2, lambda a, b: (sext(a, 24) * sext(b, 24)) & M32),
    "v_mul_lo_u16": (2, lambda a, b: ((a & 0xffff) * (b & 0xffff)) & 0xffff),
    "v_add_u16": (2, lambda a, b: (a + b) & 0xffff),
    "v_sub_u16": (2, lambda a, b: (a - b) & 0xffff),
    "v_subrev_u16": (2, lambda a, b: (b - a) & 0xffff),
    "v_mad_u32_u24": (3, lambda a, b, c: ((a & 0xffffff) * (b & 0xffffff) + c) & M32),
    "v_mad_i32_i24": (3, lambda a, b, c: (sext(a, 24) * sext(b, 24) + c) & M32),
    "v_lshlrev_b32": (2, lambda a, b: (b << (a & 31)) & M32),
    "v_lshrrev_b32": (2, lambda a, b: b >> (a & 31)),
    "v_ashrrev_i32": (2, lambda a, b: (sext(b) >> (a & 31)) & M32),
    "v_lshrrev_b16": (2, lambda a, b: (b & 0xffff) >> (a & 15)),
    "v_lshlrev_b16": (2, lambda a, b: ((b & 0xffff) << (a & 15)) & 0xffff),
    "v_and_b32": (2, lambda a, b: a & b),
    "v_or_b32": (2, lambda a, b: a | b),
    "v_xor_b32": (2, lambda a, b: a ^ b),
    "v_min_u32": (2, min), "v_max_u32": (2, max),
    "v_min_i32": (2, lambda a, b: a if sext(a) < sext(b) else b),
    "v_max_i32": (2, lambda a, b: a if sext(a) > sext(b) else b),
    "v_bfe_u32": (3, lambda a, b, c: (a >> (b & 31)) & ((1 << (c & 31)) - 1)),
    "v_bfe_i32": (3, lambda a, b, c: (sext((a >> (b & 31)) & ((1 << (c & 31)) - 1), c & 31) & M32) if c & 31 else 0),
    "v_bfi_b32": (3, lambda a, b, c: (a & b) | (~a & c & M32)),
    "v_bfm_b32": (2, lambda a, b: (((1 << (a & 31)) - 1) << (b & 31)) & M32),
    "v_alignbit_b32": (3, lambda a, b, c: (((a << 32) | b) >> (c & 31)) & M32),
    "v_lshl_add_u32": (3, lambda a, b, c: ((a << (b & 31)) + c) & M32),
    "v_add_lshl_u32": (3, lambda a, b, c: ((a + b) << (c & 31)) & M32),
    "v_lshl_or_b32": (3, lambda a, b, c: ((a << (b & 31)) | c) & M32),
    "v_and_or_b32": (3, lambda a, b, c: (a & b) | c),
    "v_or3_b32": (3, lambda a, b, c: a | b | c),
    "v_add3_u32": (3, lambda a, b, c: (a + b + c) & M32),
    "v_xad_u32": (3, lambda a, b, c: ((a ^ b) + c) & M32),
    "v_med3_u32": (3, lambda a, b, c: sorted((a, b, c))[1]),
    "v_med3_i32": (3, lambda a, b, c: sorted((a, b, c), key=sext)[1]),
    "v_bcnt_u32_b32": (2, lambda a, b: (bin(a).count("1") + b) & M32),
    "v_ffbh_u32": (1, lambda a: 31 - a.bit_length() + 1 if a else M32),
    "v_ffbl_b32": (1, lambda a: (a & -a).bit_length() - 1 if a else M32),
    "v_cvt_f32_u32": (1, lambda a: f2b(float(a))),
    "v_cvt_f32_i32": (1, lambda a: f2b(float(sext(a)))),
    "v_cvt_u32_f32": (1, lambda a: cvt_u32(b2f(a))),
    "v_cvt_i32_f32": (1, lambda a: cvt_i32(b2f(a))),
    "v_cvt_f32_ubyte0": (1, lambda a: f2b(float(a & 0xff))),
    "v_rcp_iflag_f32": (1, fop(rcp)),
    "v_rcp_f32": (1, fop(rcp)),
    "v_mul_f32": (2, fop(lambda a, b: a * b)),
    "v_add_f32": (2, fop(lambda a, b: a + b)),
    "v_sub_f32": (2, fop(lambda a, b: a - b)),
    "v_subrev_f32": (2, fop(lambda a, b: b - a)),
    "v_fma_f32": (3, fop(lambda a, b, c: a * b + c)),
    "v_mad_f32": (3, fop(lambda a, b, c: a * b + c)),
    "v_trunc_f32": (1, fop(math.trunc)),
    "v_floor_f32": (1, fop(math.floor)),
    "v_ceil_f32": (1, fop(math.ceil)),
    "v_rndne_f32": (1, fop(round)),
    "v_max_f32": (2, fop(max)), "v_min_f32": (2, fop(min)),
}
ACCUMULATE = {"v_mac_f32": "v_mad_f32", "v_fmac_f32": "v_fma_f32"}  # dst = a * b + dst
CARRY = {  # name -> (sources incl. carry-in, function returning a wide result)
    "v_add_co_u32": (2, lambda a, b: a + b),
    "v_addc_co_u32": (3, lambda a, b, c: a + b + c),
    "v_sub_co_u32": (2, lambda a, b: a - b),
    "v_subb_co_u32": (3, lambda a, b, c: a - b - c),
    "v_subrev_co_u32": (2, lambda a, b: b - a),
    "v_subbrev_co_u32": (3, lambda a, b, c: b - a - c),
}
CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lg": lambda a, b: a != b, "lt": lambda a, b: a < b,
       "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
       "f": lambda a, b: False, "t": lambda a, b: True, "tru": lambda a, b: True,
       "nlt": lambda a, b: not a < b, "nle": lambda a, b: not a <= b, "ngt": lambda a, b: not a > b,
       "nge": lambda a, b: not a >= b, "neq": lambda a, b: not a == b, "nlg": lambda a, b: a == b,
       "o": lambda a, b: a == a and b == b, "u": lambda a, b: a != a or b != b}
FLOAT_MODS = re.compile(r"_f(16|32|64)$")


# ---- one wave's registers and its instructions' semantics --------------------------------------
class Regs:
    """A wave's architectural state: 128 scalar slots (SGPRs, vcc 106-107, m0 124, exec 126-127),
    scc, 256 VGPRs."""
    __slots__ = ("s", "v", "scc", "mem", "unknown")

    def __init__(self, mem=None):
        self.s = [None] * 128
        self.v = [None] * 256
        self.scc = None
        self.mem = mem          # Memory: the kernel-argument segment and the dispatch packet
        self.unknown = 0        # branches taken on an unknown condition (fell through)

    def copy(self):
        r = Regs(self.mem)
        r.s, r.scc, r.v = list(self.s), self.scc, list(self.v)
        return r


def get64(s, i):
    lo, hi = s[i], s[i + 1]
    return None if lo is None or hi is None else lo | (hi << 32)


def set64(s, i, v):
    if v is None:
        s[i] = s[i + 1] = None
    else:
        s[i], s[i + 1] = v & M32, (v >> 32) & M32


def sread(r, o, wide=False):
    """A scalar operand's value (64 bits if wide)."""
    if o.kind == "s":
        if wide or o.n == 2:
            return get64(r.s, o.idx) if o.n == 2 else r.s[o.idx]
        return r.s[o.idx]
    if o.kind == "k":
        return o.val & (M64 if wide else M32)
    if o.kind == "scc":
        return r.scc
    return None


def swrite(r, o, v):
    if o.kind != "s":
        return
    if o.n == 1:
        r.s[o.idx] = None if v is None else v & M32
    else:
        for j in range(o.n):
            r.s[o.idx + j] = None if v is None else (v >> (32 * j)) & M32


def exec_mask(r):
    return get64(r.s, 126)


def uniform(col):
    return col[0] if col.count(col[0]) == WAVE else col


def vread(r, o, wide=False):
    """A vector operand: None, an int (the same in every lane) or a tuple of 64 lane values."""
    if o.kind == "v":
        if o.n == 1 or not wide:
            return r.v[o.idx]
        lo, hi = r.v[o.idx], r.v[o.idx + 1]
        return lanes(lambda a, b: a | (b << 32), (lo, hi))
    return sread(r, o, wide)


def lanes(fn, srcs):
    """fn applied lane by lane (None where any source is unknown)."""
    for s in srcs:
        if s is None:
            return None
    if all(type(s) is int for s in srcs):
        return fn(*srcs)
    cols = [s if type(s) is tuple else (s,) * WAVE for s in srcs]
    if any(None in c for c in cols):
        out = tuple(None if None in vals else fn(*vals) for vals in zip(*cols))
    else:
        out = tuple(map(fn, *cols))
    return uniform(out) if out[0] is not None else out


EXEC_BITS = {}


def exec_bits(ex):
    b = EXEC_BITS.get(ex)
    if b is None:
        b = EXEC_BITS[ex] = tuple(bool(ex >> i & 1) for i in range(WAVE))
    return b


def vwrite(r, o, val, wide=False):
    """Writes a vector result under exec (lanes off keep their values)."""
    ex = exec_mask(r)
    n = o.n if wide or o.n > 1 else 1
    parts = [val] if n == 1 else [lanes(lambda x, j=j: (x >> (32 * j)) & M32, (val,)) for j in range(n)]
    for j, part in enumerate(parts):
        old = r.v[o.idx + j]
        if ex == M64 or ex is None and part is None:
            r.v[o.idx + j] = part
        elif ex is None or old is None and part is None or ex == 0 or old == part:
            r.v[o.idx + j] = None if ex is None else (old if ex == 0 or old == part else None)
        else:
            oc = old if type(old) is tuple else (old,) * WAVE
            nc = part if type(part) is tuple else (part,) * WAVE
            out = tuple(a if b else c for a, c, b in zip(nc, oc, exec_bits(ex)))
            r.v[o.idx + j] = uniform(out) if out[0] is not None else out


def float_mods(o, v):
    if not (o.neg or o.abs) or v is None:
        return v
    return lanes(lambda x: ((x & 0x7fffffff) if o.abs else x) ^ (0x80000000 if o.neg else 0), (v,))


def lane_mask(bits, ex):
    """A 64-lane condition (None, bool, or tuple of bools) as a mask under exec ex."""
    if bits is None or ex is None:
        return None
    if type(bits) is not tuple:
        return ex if bits else 0
    if None in bits:
        return None if any(bits[i] is None for i in range(WAVE) if ex >> i & 1) else \
            sum(1 << i for i in range(WAVE) if ex >> i & 1 and bits[i])
    return sum(1 << i for i in range(WAVE) if ex >> i & 1 and bits[i])


def mask_lanes(m):
    return None if m is None else tuple(bool(m >> i & 1) for i in range(WAVE))



SOP2 = {  # name -> (64-bit?, fn(a, b) -> (result, scc); scc None: unchanged)
    "s_add_u32": (0, lambda a, b: ((a + b) & M32, (a + b) >> 32)),
    "s_sub_u32": (0, lambda a, b: ((a - b) & M32, int(b > a))),
    "s_add_i32": (0, lambda a, b: ((a + b) & M32, int(not -2**31 <= sext(a) + sext(b) < 2**31))),
    "s_sub_i32": (0, lambda a, b: ((a - b) & M32, int(not -2**31 <= sext(a) - sext(b) < 2**31))),
    "s_mul_i32": (0, lambda a, b: ((a * b) & M32, None)),
    "s_mul_hi_u32": (0, lambda a, b: ((a * b) >> 32, None)),
    "s_mul_hi_i32": (0, lambda a, b: (((sext(a) * sext(b)) >> 32) & M32, None)),
    "s_lshl_b32": (0, lambda a, b: ((a << (b & 31)) & M32, int((a << (b & 31)) & M32 != 0))),
    "s_lshr_b32": (0, lambda a, b: (a >> (b & 31), int(a >> (b & 31) != 0))),
    "s_ashr_i32": (0, lambda a, b: ((sext(a) >> (b & 31)) & M32, int(sext(a) >> (b & 31) != 0))),
    "s_lshl_b64": (1, lambda a, b: ((a << (b & 63)) & M64, int((a << (b & 63)) & M64 != 0))),
    "s_lshr_b64": (1, lambda a, b: (a >> (b & 63), int(a >> (b & 63) != 0))),
    "s_ashr_i64": (1, lambda a, b: ((sext(a, 64) >> (b & 63)) & M64, int(sext(a, 64) >> (b & 63) != 0))),
    "s_min_i32": (0, lambda a, b: (a, 1) if sext(a) < sext(b) else (b, 0)),
    "s_max_i32": (0, lambda a, b: (a, 1) if sext(a) > sext(b) else (b, 0)),
    "s_min_u32": (0, lambda a, b: (a, 1) if a < b else (b, 0)),
    "s_max_u32": (0, lambda a, b: (a, 1) if a > b else (b, 0)),
    "s_bfm_b32": (0, lambda a, b: ((((1 << (a & 31)) - 1) << (b & 31)) & M32, None)),
    "s_absdiff_i32": (0, lambda a, b: (abs(sext(a) - sext(b)) & M32, int(sext(a) != sext(b)))),
    "s_pack_ll_b32_b16": (0, lambda a, b: ((a & 0xffff) | ((b & 0xffff) << 16), None)),
    "s_pack_lh_b32_b16": (0, lambda a, b: ((a & 0xffff) | (b & 0xffff0000), None)),
    "s_pack_hh_b32_b16": (0, lambda a, b: ((a >> 16) | (b & 0xffff0000), None)),
}
for _w, _m in ((0, M32), (1, M64)):
    _sfx = "b64" if _w else "b32"
    for _n, _f in (("and", lambda a, b: a & b), ("or", lambda a, b: a | b), ("xor", lambda a, b: a ^ b),
                   ("andn2", lambda a, b, m=_m: a & ~b & m), ("orn2", lambda a, b, m=_m: (a | ~b) & m),
                   ("nand", lambda a, b, m=_m: ~(a & b) & m), ("nor", lambda a, b, m=_m: ~(a | b) & m),
                   ("xnor", lambda a, b, m=_m: ~(a ^ b) & m)):
        SOP2["s_%s_%s" % (_n, _sfx)] = (_w, lambda a, b, f=_f: (f(a, b), int(f(a, b) != 0)))


def bfe(a, b, signed, bits):
    off, width = b & (bits - 1), (b >> 16) & 0x7f
    v = (a >> off) & ((1 << width) - 1) if width else 0
    if signed and width:
        v = sext(v, width) & ((1 << bits) - 1)
    return v


SOP2["s_bfe_u32"] = (0, lambda a, b: (bfe(a, b, False, 32), int(bfe(a, b, False, 32) != 0)))
SOP2["s_bfe_i32"] = (0, lambda a, b: (bfe(a, b, True, 32), int(bfe(a, b, True, 32) != 0)))
SOP2["s_bfe_u64"] = (1, lambda a, b: (bfe(a, b & M32, False, 64), int(bfe(a, b & M32, False, 64) != 0)))
SOP2["s_bfe_i64"] = (1, lambda a, b: (bfe(a, b & M32, True, 64), int(bfe(a, b & M32, True, 64) != 0)))
for _k in range(1, 5):
    SOP2["s_lshl%d_add_u32" % _k] = (0, lambda a, b, k=_k: (((a << k) + b) & M32, ((a << k) + b) >> 32 != 0))

SOP1 = {  # name -> (64-bit?, fn(a) -> (result, scc))
    "s_not_b32": (0, lambda a: (~a & M32, int(~a & M32 != 0))),
    "s_not_b64": (1, lambda a: (~a & M64, int(~a & M64 != 0))),
    "s_brev_b32": (0, lambda a: (int("{:032b}".format(a)[::-1], 2), None)),
    "s_abs_i32": (0, lambda a: (abs(sext(a)) & M32, int(a != 0))),
    "s_sext_i32_i16": (0, lambda a: (sext(a, 16) & M32, None)),
    "s_sext_i32_i8": (0, lambda a: (sext(a, 8) & M32, None)),
    "s_bcnt1_i32_b32": (0, lambda a: (bin(a).count("1"), int(a != 0))),
    "s_bcnt1_i32_b64": (1, lambda a: (bin(a).count("1"), int(a != 0))),
    "s_ff1_i32_b32": (0, lambda a: ((a & -a).bit_length() - 1 if a else M32, None)),
    "s_ff1_i32_b64": (1, lambda a: ((a & -a).bit_length() - 1 if a else M32, None)),
    "s_flbit_i32_b32": (0, lambda a: (32 - a.bit_length() if a else M32, None)),
}
SCMP_TYPES = {"i32": lambda v: sext(v), "u32": lambda v: v, "u64": lambda v: v}
SAVEEXEC = {"s_and_saveexec_b64": lambda s, e: s & e, "s_or_saveexec_b64": lambda s, e: s | e,
            "s_xor_saveexec_b64": lambda s, e: s ^ e, "s_andn2_saveexec_b64": lambda s, e: s & ~e & M64,
            "s_orn2_saveexec_b64": lambda s, e: (s | ~e) & M64, "s_nand_saveexec_b64": lambda s, e: ~(s & e) & M64}
BRANCH_COND = {
    "s_cbranch_scc0": lambda r: None if r.scc is None else r.scc == 0,
    "s_cbranch_scc1": lambda r: None if r.scc is None else r.scc == 1,
    "s_cbranch_vccz": lambda r: None if get64(r.s, 106) is None else get64(r.s, 106) == 0,
    "s_cbranch_vccnz": lambda r: None if get64(r.s, 106) is None else get64(r.s, 106) != 0,
    "s_cbranch_execz": lambda r: None if exec_mask(r) is None else exec_mask(r) == 0,
    "s_cbranch_execnz": lambda r: None if exec_mask(r) is None else exec_mask(r) != 0,
}


def unknown_dsts(x):
    """The registers an instruction the simulator does not evaluate writes (all made unknown)."""
    if x.typ == "valu":
        d = [x.ops[0]] if x.ops else []
        if x.base.startswith(("v_cmp", "v_readlane", "v_readfirstlane")) or (len(x.ops) > 1 and x.ops[1].kind == "s"
                                                                          and x.base.startswith(("v_div_scale",
                                                                                                 "v_mad_u64",
                                                                                                 "v_mad_i64"))):
            d = [x.ops[0]]
        if x.base.startswith("v_cmpx"):
            d.append(Opnd("s", 126, 2))
        return d
    if x.typ in ("salu", "smem") and x.ops:
        return [x.ops[0]]
    if x.typ in ("vmem", "lds") and not x.is_store and x.ops and x.ops[0].kind == "v":
        return [x.ops[0]]
    return []


def clobber(dsts, sets_scc):
    def fn(r):
        for o in dsts:
            if o.kind == "v":  # lanes off keep their values
                for j in range(o.n):
                    vwrite(r, Opnd("v", o.idx + j), None)
            elif o.kind == "s":
                swrite(r, o, None)
        if sets_scc:
            r.scc = None
    return fn


def semantics(x):
    """A function (Regs) -> next instruction index or None (the next one), -1 at s_endpgm."""
    b, ops = x.base, x.ops
    if x.typ == "branch":
        if b == "s_branch":
            return lambda r, t=x.tgt: t
        cond = BRANCH_COND.get(b)
        if cond is None or x.tgt is None:
            return lambda r: None

        def branch(r, t=x.tgt, cond=cond):
            c = cond(r)
            if c is None:
                r.unknown += 1
                return None
            return t if c else None
        return branch
    if b == "s_endpgm":
        return lambda r: -1
    if x.typ == "internal":
        return lambda r: None
    if x.typ == "valu" and "dpp" not in x.mods and "sdwa" not in x.mods:
        f = valu_semantics(x)
        if f:
            return f
    if x.typ == "salu":
        f = salu_semantics(x)
        if f:
            return f
    if x.typ == "smem" and b.startswith(("s_load_dword", "s_buffer_load_dword")) and len(ops) >= 3:
        return smem_semantics(x)
    return clobber(unknown_dsts(x), x.typ == "salu")


def smem_semantics(x):
    d, base, off = x.ops[0], x.ops[1], x.ops[2]
    n = d.n

    def fn(r):
        a = get64(r.s, base.idx) if base.n == 2 else None
        o = sread(r, off)
        if a is None or o is None or r.mem is None:
            swrite(r, d, None) if n <= 2 else [r.s.__setitem__(d.idx + j, None) for j in range(n)]
            return None
        a = (a & 0xffffffffffff) + o
        for j in range(n):
            r.s[d.idx + j] = r.mem.read32(a + 4 * j)
        return None
    return fn


def salu_semantics(x):
    b, ops = x.base, x.ops
    if b in ("s_mov_b32", "s_mov_b64", "s_movk_i32", "s_cmov_b32", "s_cmov_b64", "s_cmovk_i32"):
        wide = b.endswith("b64")
        k = b.endswith("k_i32")

        def mov(r, d=ops[0], a=ops[1], cond=b.startswith("s_cmov")):
            v = sread(r, a, wide)
            if k and v is not None:
                v = sext(v, 16) & M32
            if cond:
                if r.scc is None:
                    swrite(r, d, None)
                    return None
                if not r.scc:
                    return None
            swrite(r, d, v)
            return None
        return mov
    if b in SOP2:
        wide, f = SOP2[b]

        def sop2(r, d=ops[0], a=ops[1], c=ops[2]):
            va, vb = sread(r, a, wide), sread(r, c, wide and not b.startswith(("s_lshl", "s_lshr", "s_ashr",
                                                                              "s_bfe")))
            if va is None or vb is None:
                swrite(r, d, None)
                r.scc = None
                return None
            v, sc = f(va, vb)
            swrite(r, d, v)
            if sc is not None:
                r.scc = int(sc)
            return None
        return sop2
    if b in ("s_addc_u32", "s_subb_u32"):
        def carry(r, d=ops[0], a=ops[1], c=ops[2], add=b == "s_addc_u32"):
            va, vb = sread(r, a), sread(r, c)
            if va is None or vb is None or r.scc is None:
                swrite(r, d, None)
                r.scc = None
                return None
            v = va + vb + r.scc if add else va - vb - r.scc
            swrite(r, d, v & M32)
            r.scc = int(v >> 32 != 0) if add else int(v < 0)
            return None
        return carry
    if b in ("s_addk_i32", "s_mulk_i32"):
        def addk(r, d=ops[0], k=ops[1], mul=b == "s_mulk_i32"):
            v = sread(r, d)
            if v is None:
                r.scc = None
                return None
            kk = sext(k.val, 16)
            res = sext(v) * kk if mul else sext(v) + kk
            swrite(r, d, res & M32)
            if not mul:
                r.scc = int(not -2**31 <= res < 2**31)
            return None
        return addk
    if b in SOP1:
        wide, f = SOP1[b]

        def sop1(r, d=ops[0], a=ops[1]):
            va = sread(r, a, wide)
            if va is None:
                swrite(r, d, None)
                return None
            v, sc = f(va)
            swrite(r, d, v)
            if sc is not None:
                r.scc = sc
            return None
        return sop1
    if b in SAVEEXEC:
        f = SAVEEXEC[b]

        def saveexec(r, d=ops[0], a=ops[1]):
            e, v = exec_mask(r), sread(r, a, True)
            swrite(r, d, e)
            ne = None if e is None or v is None else f(v, e)
            set64(r.s, 126, ne)
            r.scc = None if ne is None else int(ne != 0)
            return None
        return saveexec
    if b in ("s_cselect_b32", "s_cselect_b64"):
        wide = b.endswith("64")

        def cselect(r, d=ops[0], a=ops[1], c=ops[2]):
            va, vb = sread(r, a, wide), sread(r, c, wide)
            if r.scc is None:
                swrite(r, d, va if va == vb else None)
            else:
                swrite(r, d, va if r.scc else vb)
            return None
        return cselect
    m = re.match(r"^s_cmpk?_(eq|lg|gt|ge|lt|le)_([iu]32|u64)$", b)
    if m:
        cmp, conv, wide, k = CMP[m.group(1)], SCMP_TYPES[m.group(2)], m.group(2) == "u64", "cmpk" in b

        def scmp(r, a=ops[0], c=ops[1]):
            va, vb = sread(r, a, wide), sread(r, c, wide)
            if k and vb is not None:
                vb = sext(vb, 16) & M32 if m.group(2) == "i32" else vb & 0xffff
            r.scc = None if va is None or vb is None else int(cmp(conv(va), conv(vb)))
            return None
        return scmp
    if b in ("s_bitcmp0_b32", "s_bitcmp1_b32"):
        def bitcmp(r, a=ops[0], c=ops[1], one=b.endswith("1_b32")):
            va, vb = sread(r, a), sread(r, c)
            r.scc = None if va is None or vb is None else int(((va >> (vb & 31)) & 1) == one)
            return None
        return bitcmp
    if b == "s_getpc_b64":
        return lambda r, d=ops[0], pc=x.addr + 4: swrite(r, d, pc)
    if b == "s_getreg_b32" and "SH_MEM_BASES" in x.text:
        # the LDS aperture's base (a generic pointer to LDS is never null): any value but zero
        return lambda r, d=ops[0]: swrite(r, d, 0x1000)
    if b in ("s_setreg_b32", "s_setreg_imm32_b32", "s_ttracedata", "s_setprio", "s_sethalt"):
        return lambda r: None
    return None


def valu_semantics(x):
    b, ops = x.base, x.ops
    is_float = bool(FLOAT_MODS.search(b))

    def src(r, o, wide=False):
        v = vread(r, o, wide)
        return float_mods(o, v) if is_float else v

    if b in VOP and len(ops) >= VOP[b][0] + 1:
        n, f = VOP[b]

        def vop(r, d=ops[0], ss=ops[1:1 + n]):
            vwrite(r, d, lanes(f, [src(r, o) for o in ss]))
            return None
        return vop
    if b in ACCUMULATE:
        f = VOP[ACCUMULATE[b]][1]

        def mac(r, d=ops[0], a=ops[1], c=ops[2]):
            vwrite(r, d, lanes(f, (src(r, a), src(r, c), r.v[d.idx])))
            return None
        return mac
    if b in CARRY:
        n, f = CARRY[b]
        sub = "sub" in b

        def carry(r, d=ops[0], sd=ops[1], ss=ops[2:2 + n]):
            vals = [vread(r, o) for o in ss[:2]]
            if n == 3:
                vals.append(mask_bits(r, ss[2]))
            wide = lanes(f, vals)
            vwrite(r, d, lanes(lambda w: w & M32, (wide,)))
            ex = exec_mask(r)
            out = lanes(lambda w: (w < 0) if sub else (w >> 32) != 0, (wide,))
            swrite(r, sd, lane_mask(out, ex))
            return None
        return carry
    if b in ("v_mad_u64_u32", "v_mad_i64_i32"):
        signed = b == "v_mad_i64_i32"

        def mad64(r, d=ops[0], sd=ops[1], a=ops[2], c=ops[3], e=ops[4]):
            va, vb, vc = vread(r, a), vread(r, c), vread(r, e, True)
            conv = (lambda v: sext(v)) if signed else (lambda v: v)
            vwrite(r, d, lanes(lambda p, q, w: (conv(p) * conv(q) + (sext(w, 64) if signed else w)) & M64,
                               (va, vb, vc)), True)
            swrite(r, sd, None)
            return None
        return mad64
    if b in ("v_lshlrev_b64", "v_lshrrev_b64", "v_ashrrev_i64"):
        f = {"v_lshlrev_b64": lambda s, v: (v << (s & 63)) & M64, "v_lshrrev_b64": lambda s, v: v >> (s & 63),
             "v_ashrrev_i64": lambda s, v: (sext(v, 64) >> (s & 63)) & M64}[b]

        def shift64(r, d=ops[0], a=ops[1], c=ops[2]):
            vwrite(r, d, lanes(f, (vread(r, a), vread(r, c, True))), True)
            return None
        return shift64
    m = re.match(r"^v_cmpx?_(\w+?)_([iuf])(16|32|64)$", b)
    if m and m.group(1) in CMP:
        cmp, kind, bits = CMP[m.group(1)], m.group(2), int(m.group(3))
        conv = {"i": lambda v: sext(v, bits), "u": lambda v: v,
                "f": (lambda v: b2f(v)) if bits == 32 else None}[kind]
        if conv is None:
            return None
        wide = bits == 64
        explicit = len(ops) == 3  # e64: sdst, a, b; e32: vcc implicit (the assembler prints it)

        def vcmp(r, d=ops[0] if explicit else Opnd("s", 106, 2), a=ops[-2], c=ops[-1], x_=b.startswith("v_cmpx")):
            va, vb = src(r, a, wide), src(r, c, wide)
            ex = exec_mask(r)
            res = lane_mask(lanes(lambda p, q: cmp(conv(p), conv(q)), (va, vb)) if va is not None and vb is not None
                            else None, ex)
            if x_:
                set64(r.s, 126, res)
            if not (x_ and not explicit):
                swrite(r, d, res)
            return None
        return vcmp
    if b == "v_cndmask_b32":
        def cndmask(r, d=ops[0], a=ops[1], c=ops[2], sel=ops[3] if len(ops) > 3 else Opnd("s", 106, 2)):
            va, vb, bits = src(r, a), src(r, c), mask_bits(r, sel)
            if bits is None:
                vwrite(r, d, va if va == vb and type(va) is int else None)
            else:
                vwrite(r, d, lanes(lambda p, q, s_: q if s_ else p, (va, vb, bits)))
            return None
        return cndmask
    if b in ("v_readfirstlane_b32", "v_readlane_b32"):
        def readlane(r, d=ops[0], a=ops[1], sel=ops[2] if len(ops) > 2 else None):
            v = r.v[a.idx] if a.kind == "v" else sread(r, a)
            if sel is None:
                ex = exec_mask(r)
                lane = None if ex is None else ((ex & -ex).bit_length() - 1 if ex else 0)
            else:
                lane = sread(r, sel)
                lane = None if lane is None else lane & 63
            if v is None or lane is None and type(v) is not int:
                swrite(r, d, None)
            else:
                swrite(r, d, v if type(v) is int else v[lane])
            return None
        return readlane
    if b == "v_writelane_b32":
        def writelane(r, d=ops[0], a=ops[1], sel=ops[2]):
            v, lane, old = sread(r, a), sread(r, sel), r.v[d.idx]
            if lane is None:
                r.v[d.idx] = None
            else:  # one lane written: the others keep their values, known or not (a VGPR never written
                col = list(old if type(old) is tuple else (old,) * WAVE)  # is 64 unknown lanes)
                col[lane & 63] = v
                r.v[d.idx] = None if col.count(None) == WAVE else uniform(tuple(col))
            return None
        return writelane
    if b in ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"):
        hi = b == "v_mbcnt_hi_u32_b32"

        def mbcnt(r, d=ops[0], a=ops[1], c=ops[2]):
            m, add = vread(r, a), vread(r, c)
            if m is None or add is None or type(m) is not int:
                vwrite(r, d, None)
                return None
            counts = tuple(bin(m & ((1 << (max(0, i - 32) if hi else min(i, 32))) - 1)).count("1")
                           for i in range(WAVE))
            vwrite(r, d, lanes(lambda k, q: (k + q) & M32, (counts, add)))
            return None
        return mbcnt
    return None


def mask_bits(r, o):
    """A lane-mask operand (vcc or an SGPR pair) as per-lane booleans."""
    m = sread(r, o, True) if o.kind in ("s", "k") else None
    return mask_lanes(m)

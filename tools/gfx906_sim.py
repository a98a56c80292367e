#!/usr/bin/env python3
"""A simulator of gfx906 (MI50) compute units running a kernel's own machine code.

It reads a gfx906 code object (tools/gfx906_isa.py builds and disassembles
it), and runs one kernel symbol at one launch shape:

  functional  every wave executes its instructions in execution order: scalar
              and vector integer arithmetic is evaluated on the kernel's
              arguments, workgroup ids and lane ids, so branches and loop trip
              counts follow from the launch shape; values loaded from memory
              are unknown (None) and so are the results computed from them.
              A branch on an unknown condition is counted and taken as
              "fall through" (SimResult.unknown_branches says how many).
  timing      one CU: 4 SIMDs, each wave one issue turn every 4 clocks
              (clock % 4 == its SIMD), one instruction per wave per turn, at
              most one instruction of each type (VALU, SALU, LDS, vector
              memory, scalar memory, branch) per clock; a VALU occupies its
              SIMD 4 clocks (full rate), 8 (half rate, 64-bit float, 64-bit
              shifts), 16 (quarter rate: transcendentals, 32-bit integer
              multiplies, v_mad_u64_u32); s_waitcnt with exact vmcnt /
              lgkmcnt / expcnt semantics (stores count in vmcnt); s_barrier;
              the CU's LDS and its vector-memory path serve bytes at a rate
              (shared ceilings), with fixed latencies after service.
  device      occupancy (VGPRs, SGPRs, LDS, 10 waves per SIMD) gives the
              workgroups a CU holds; the grid runs in rounds of 60 CUs x that
              many workgroups, the tail round included; each round takes the
              longer of its simulated CUs and its share of the kernel's HBM
              bytes at the sustained HBM bandwidth.

What it leaves out (docs/performance.md, "MI50 simulator"): caches other than
an L2 that serves repeated reads (the HBM ceiling counts the compulsory bytes
only), instruction fetch and the instruction buffer, LDS bank conflicts,
memory-address coalescing beyond "a wave's lanes move active_lanes x width
bytes", clocks under load (it runs at the 1725 MHz boost clock) and the
scheduler's dispatch order beyond round robin.

  tools/gfx906_sim.py selftest                 hand-worked cases
  tools/gfx906_sim.py run CO SYMBOL ...        one kernel, launch given on the command line

Python 3 standard library only.
"""
import hashlib
import json
import math
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gfx906_isa as isa  # noqa: E402  (code object build, metadata, disassembly)

# ---- the machine: physical parameters ----------------------------------------------------------
# Calibrated against published gfx906 measurements (results/gfx906-calibration.tsv): HBM_BYTES_PER_S,
# LDS_BYTES_PER_CLK. Taken from the Vega ISA manual / the MI50 data sheet: the rest.
CLOCK = 1.725e9            # Hz, MI50 boost clock
CUS = 60
SIMDS = 4
WAVE = 64
MAX_WAVES_PER_SIMD = 10
LDS_PER_CU = 65536
VGPRS_PER_LANE = 256       # per SIMD lane; granule 4
SGPRS_PER_SIMD = 800       # granule 16
LDS_BYTES_PER_CLK = 100    # per CU, sustained ds_read_b128 rate (peak 128): calibrated
VMEM_BYTES_PER_CLK = 64    # per CU, the vector-memory (L1 / texture-address) path
HBM_BYTES_PER_S = 0.84e12  # sustained, device-wide: calibrated
LAT_VMEM = 500             # clocks from a vector load's service to its data (an L2/HBM mix)
LAT_STORE = 300            # clocks from a store's service to its vmcnt decrement (write acknowledged)
LAT_LDS = 64               # clocks from an LDS instruction's service to its data
LAT_SMEM = 120             # clocks for a scalar load (scalar cache)
LAT_EXPORT = 16            # clocks until a store's data has been read out of its VGPRs (expcnt)
BARRIER_LAT = 16           # clocks from the last wave's arrival to the release

M32 = 0xffffffff
M64 = (1 << 64) - 1
KERNARG_BASE = 0x10000000      # where the simulated kernel-argument segment lives
DISPATCH_BASE = 0x20000000     # the simulated HSA dispatch packet


# ---- instruction classes and costs -------------------------------------------------------------
QUARTER = re.compile(r"^v_(exp|log|rcp|rsq|sqrt|sin|cos)_|^v_rcp_iflag|^v_mul_(lo|hi)_[ui]32|^v_mad_[ui]64_[ui]32"
                     r"|^v_(div_scale|div_fmas|div_fixup)_f64|^v_(fma|mul|add)_f64|^v_(frexp|ldexp|trig)\w*_f64")
MAD64 = re.compile(r"^v_mad_[ui]64_[ui]32")
HALF = re.compile(r"^v_(lshlrev|lshrrev|ashrrev)_[bi]64|^v_cvt_f64|^v_cvt_f32_f64|^v_cmp\w*_[ui]64")
FP64 = re.compile(r"^v_(fma|mul|add|min|max|ldexp|frexp_mant|fract|trunc|ceil|floor|rndne|div_scale|div_fmas"
                  r"|div_fixup|rcp|rsq|sqrt)_f64")


def valu_clocks(mnem):
    """Clocks a wave64 VALU instruction occupies its SIMD16 (Vega ISA manual; MI50: half-rate fp64)."""
    if MAD64.match(mnem):
        return 16
    if FP64.match(mnem):
        return 16 if re.match(r"^v_(rcp|rsq|sqrt)_f64", mnem) else 8
    if QUARTER.match(mnem):
        return 16
    if HALF.match(mnem):
        return 8
    return 4


def inst_type(mnem):
    if mnem.startswith("v_"):
        return "valu"
    if mnem.startswith("ds_"):
        return "lds"
    if mnem.startswith(("global_", "buffer_", "flat_", "scratch_")):
        return "vmem"
    if mnem.startswith(("s_load", "s_buffer_load", "s_store", "s_dcache", "s_memtime", "s_memrealtime")):
        return "smem"
    if mnem.startswith(("s_branch", "s_cbranch", "s_setpc", "s_swappc")):
        return "branch"
    if mnem in ("s_waitcnt", "s_barrier", "s_endpgm", "s_nop", "s_setprio", "s_sleep", "s_waitcnt_vscnt",
                "s_icache_inv", "s_trap", "s_sethalt"):
        return "internal"
    return "salu"


VMEM_WIDTH = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16, "ubyte": 1, "sbyte": 1, "ushort": 2,
              "sshort": 2, "short": 2, "byte": 1, "ubyte_d16": 1, "sbyte_d16": 1, "short_d16": 2,
              "ubyte_d16_hi": 1, "sbyte_d16_hi": 1, "short_d16_hi": 2, "byte_d16_hi": 1}
LDS_WIDTH = {"b32": 4, "b64": 8, "b96": 12, "b128": 16, "u8": 1, "i8": 1, "u16": 2, "i16": 2, "b8": 1, "b16": 2,
             "2_b32": 8, "2st64_b32": 8, "2_b64": 16, "2st64_b64": 16}


def mem_width(mnem):
    """Bytes per lane a vector-memory or LDS instruction moves."""
    if mnem.startswith("ds_"):
        m = re.match(r"^ds_(?:read|write)(2st64_b\d+|2_b\d+|_[a-z]\d+)", mnem)
        if m:
            key = m.group(1).lstrip("_")
            return LDS_WIDTH.get(key if not key[0].isdigit() else key, 4)
        return 4  # permutes, swizzles, atomics: one dword
    m = re.match(r"^\w+?_(?:load|store)_(\w+)", mnem)
    if m:
        return VMEM_WIDTH.get(m.group(1), 4)
    return 4


# ---- operands ----------------------------------------------------------------------------------
SPECIAL = {"vcc": (106, 2), "vcc_lo": (106, 1), "vcc_hi": (107, 1), "exec": (126, 2), "exec_lo": (126, 1),
           "exec_hi": (127, 1), "m0": (124, 1), "flat_scratch": (102, 2), "flat_scratch_lo": (102, 1),
           "flat_scratch_hi": (103, 1), "xnack_mask": (104, 2)}
FLOAT_CONST = {"0.5": 0x3f000000, "-0.5": 0xbf000000, "1.0": 0x3f800000, "-1.0": 0xbf800000, "2.0": 0x40000000,
               "-2.0": 0xc0000000, "4.0": 0x40800000, "-4.0": 0xc0800000, "0.15915494": 0x3e22f983}
REG = re.compile(r"^([sv])(\d+)$|^([sv])\[(\d+):(\d+)\]$|^ttmp(\d+)$|^ttmp\[(\d+):(\d+)\]$")


class Opnd:
    """One operand: kind 's' (SGPR, incl. vcc/exec/m0), 'v' (VGPR), 'k' (constant), 'scc', 'off'; n regs."""
    __slots__ = ("kind", "idx", "n", "val", "neg", "abs")

    def __init__(self, kind, idx=0, n=1, val=0, neg=False, abs_=False):
        self.kind, self.idx, self.n, self.val, self.neg, self.abs = kind, idx, n, val, neg, abs_


def parse_operand(tok):
    neg = abs_ = False
    t = tok.strip()
    if t.startswith("neg(") and t.endswith(")"):
        neg, t = True, t[4:-1]
    if t.startswith("abs(") and t.endswith(")"):
        abs_, t = True, t[4:-1]
    if t.startswith("-") and not re.match(r"^-\d|^-0x|^-[0-9.]", t):
        neg, t = True, t[1:]
    if t.startswith("|") and t.endswith("|"):
        abs_, t = True, t[1:-1]
    if t.startswith("-|") and t.endswith("|"):
        neg, abs_, t = True, True, t[2:-1]
    if t in SPECIAL:
        i, n = SPECIAL[t]
        return Opnd("s", i, n, neg=neg, abs_=abs_)
    m = REG.match(t)
    if m:
        if m.group(1):
            return Opnd(m.group(1), int(m.group(2)), 1, neg=neg, abs_=abs_)
        if m.group(3):
            a, b = int(m.group(4)), int(m.group(5))
            return Opnd(m.group(3), a, b - a + 1, neg=neg, abs_=abs_)
        return Opnd("ttmp")
    if t == "scc":
        return Opnd("scc")
    if t in ("off", "null"):
        return Opnd("off")
    if t in FLOAT_CONST:
        return Opnd("k", val=FLOAT_CONST[t], neg=neg, abs_=abs_)
    try:
        v = int(t, 0)
        return Opnd("k", val=v, neg=neg, abs_=abs_)
    except ValueError:
        pass
    try:
        return Opnd("k", val=struct.unpack("<I", struct.pack("<f", float(t)))[0], neg=neg, abs_=abs_)
    except ValueError:
        return Opnd("unknown")


def split_operands(ops):
    """'v1, v[2:3], off offset:16 glc' -> (['v1', 'v[2:3]', 'off'], {'offset': '16', 'glc': ''})."""
    mods = {}
    if not ops:
        return [], mods
    parts = [p.strip() for p in ops.split(",")]
    # modifiers follow the last operand, space separated; DPP's quad_perm:[a,b,c,d] contains commas
    joined = []
    for p in parts:
        if joined and joined[-1].count("[") > joined[-1].count("]"):
            joined[-1] += "," + p
        else:
            joined.append(p)
    last = joined[-1].split()
    joined[-1] = last[0] if last else ""
    for m in last[1:]:
        k, _, v = m.partition(":")
        mods[k] = v
    if joined[-1] and ":" in joined[-1] and not joined[-1].startswith(("s[", "v[", "ttmp[")):
        k, _, v = joined.pop().partition(":")
        mods[k] = v
    return joined, mods


def waitcnt_fields(text):
    """s_waitcnt's thresholds (vmcnt, lgkmcnt, expcnt); a field not written does not wait."""
    if re.match(r"^\s*(0x[0-9a-f]+|\d+)\s*$", text):  # the raw encoding (gfx9)
        v = int(text, 0)
        return (v & 15) | ((v >> 14) & 3) << 4, (v >> 8) & 15, (v >> 4) & 7

    def field(name, none):
        m = re.search(name + r"\((\d+)\)", text)
        return int(m.group(1)) if m else none
    return field("vmcnt", 63), field("lgkmcnt", 15), field("expcnt", 7)


class Inst:
    __slots__ = ("addr", "mnem", "base", "ops", "mods", "tgt", "typ", "clocks", "width", "text", "fn", "loop",
                 "is_store", "index", "wait", "nop")

    def __init__(self, addr, mnem, ops_text, tgt):
        self.addr, self.mnem, self.text, self.tgt = addr, mnem, ops_text, tgt
        self.base = re.sub(r"_(e32|e64|sdwa|dpp)$", "", mnem)
        if mnem == "s_waitcnt":
            self.ops, self.mods = [], {}
        else:
            toks, self.mods = split_operands(ops_text)
            self.ops = [parse_operand(t) for t in toks]
        if "_dpp" in mnem or "row_" in ops_text or "quad_perm" in ops_text or "wave_s" in ops_text:
            self.mods["dpp"] = ""
        if mnem.endswith("_sdwa"):
            self.mods["sdwa"] = ""
        self.typ = inst_type(mnem)
        self.clocks = valu_clocks(self.base) if self.typ == "valu" else 4
        self.width = mem_width(mnem) if self.typ in ("vmem", "lds") else 0
        self.is_store = self.typ in ("vmem", "lds") and ("store" in mnem or "write" in mnem
                                                           or ("atomic" in mnem and "rtn" not in mnem))
        self.fn = None
        self.loop = None
        self.index = 0
        self.wait = waitcnt_fields(ops_text) if mnem == "s_waitcnt" else None
        self.nop = int(ops_text, 0) if mnem == "s_nop" and ops_text.strip() else 0


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


# ---- the code object ---------------------------------------------------------------------------
def kernel_descriptors(co):
    """symbol -> the fields of its kernel descriptor (SYMBOL.kd, 64 bytes) the wave's initial state
    depends on: user SGPRs enabled, workgroup ids, workitem ids (AMDGPU ABI, code object v3+)."""
    data = open(co, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for sec in secs:
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[sec[6]]
        for off in range(sec[4], sec[4] + sec[5], 24):
            name_off, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, off)
            end = data.index(b"\0", strtab[4] + name_off)
            name = data[strtab[4] + name_off:end].decode()
            if not name.endswith(".kd") or shndx == 0 or shndx >= len(secs):
                continue
            host = secs[shndx]
            kd = data[host[4] + value - host[3]:host[4] + value - host[3] + 64]
            rsrc2, = struct.unpack_from("<I", kd, 52)
            props, = struct.unpack_from("<H", kd, 56)
            out[name[:-3]] = dict(
                user_sgprs=(rsrc2 >> 1) & 31, wg_id=[(rsrc2 >> b) & 1 for b in (7, 8, 9)], wg_info=(rsrc2 >> 10) & 1,
                private_offset=rsrc2 & 1, workitem_ids=(rsrc2 >> 11) & 3,
                private_buffer=props & 1, dispatch_ptr=(props >> 1) & 1, queue_ptr=(props >> 2) & 1,
                kernarg_ptr=(props >> 3) & 1, dispatch_id=(props >> 4) & 1, flat_scratch=(props >> 5) & 1,
                private_size=(props >> 6) & 1)
    return out


class Code:
    """One kernel of a code object: its instructions, loops, resources and descriptor."""

    def __init__(self, name, insts, meta, desc):
        self.name, self.meta, self.desc = name, meta, desc
        self.insts = [Inst(a, m, o, t) for a, m, o, t in insts]
        at = {x.addr: i for i, x in enumerate(self.insts)}
        for i, x in enumerate(self.insts):
            x.index = i
            if x.tgt is not None:
                x.tgt = at[x.tgt]
        self.loops = loop_nest(self.insts)
        for x in self.insts:
            x.fn = semantics(x)


def loop_nest(insts):
    """Loops by back edge (a branch to a lower address): loop id = index of the header; each
    instruction is labelled with its innermost loop (the smallest back-edge range holding it)."""
    spans = sorted({(x.tgt, x.index) for x in insts if x.tgt is not None and x.tgt <= x.index},
                   key=lambda s: s[1] - s[0], reverse=True)
    loops = {}
    for head, tail in spans:
        loops.setdefault(head, tail)
        for i in range(head, tail + 1):
            insts[i].loop = head  # wider spans first: the innermost one writes last
    return loops


def load(co):
    """symbol -> Code for every kernel of a gfx906 code object."""
    meta = isa.metadata(co)
    desc = kernel_descriptors(co)
    code = isa.disassemble(co)
    return {n: Code(n, code[n], meta[n], desc[n]) for n in meta if n in code and n in desc}


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
            if lane is None or old is None:
                r.v[d.idx] = None
            else:
                col = list(old if type(old) is tuple else (old,) * WAVE)
                col[lane & 63] = v
                r.v[d.idx] = uniform(tuple(col)) if v is not None else tuple(col)
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


# ---- memory the kernel can read: its argument segment and its dispatch packet --------------------
class Memory:
    def __init__(self):
        self.blobs = []

    def add(self, base, data):
        self.blobs.append((base, bytes(data)))

    def read32(self, addr):
        for base, data in self.blobs:
            if base <= addr and addr + 4 <= base + len(data):
                return struct.unpack_from("<I", data, addr - base)[0]
        return None


class Launch:
    """One kernel launch: grid and block (x, y, z), dynamic LDS bytes, explicit argument bytes, and
    the kernel's compulsory HBM bytes (the HBM ceiling; None: every simulated byte)."""

    def __init__(self, grid, block, lds=0, args=b"", hbm_bytes=None, label=""):
        self.grid, self.block, self.lds, self.args = tuple(grid), tuple(block), lds, bytes(args)
        self.hbm_bytes, self.label = hbm_bytes, label

    def memory(self, code):
        """The kernel-argument segment (explicit arguments, then the hidden ones the metadata lists)
        and the dispatch packet, as the simulated kernel reads them."""
        size = max(code.meta.get("kernarg_size", 0), len(self.args))
        seg = bytearray(self.args) + bytearray(max(0, size - len(self.args)))
        hidden = {"hidden_block_count_x": self.grid[0], "hidden_block_count_y": self.grid[1],
                  "hidden_block_count_z": self.grid[2], "hidden_group_size_x": self.block[0],
                  "hidden_group_size_y": self.block[1], "hidden_group_size_z": self.block[2],
                  "hidden_grid_dims": 3}
        for a in code.meta.get("args", []):
            v = hidden.get(a.get("value_kind"), 0)
            if a.get("value_kind", "").startswith("hidden_") and a["offset"] + a["size"] <= size:
                seg[a["offset"]:a["offset"] + a["size"]] = (v & ((1 << (8 * a["size"])) - 1)).to_bytes(a["size"],
                                                                                                    "little")
        pkt = bytearray(64)
        struct.pack_into("<HHHHHHIIIIIIQQ", pkt, 0, 0, 3, self.block[0], self.block[1], self.block[2], 0,
                         self.grid[0] * self.block[0], self.grid[1] * self.block[1], self.grid[2] * self.block[2],
                         0, code.meta.get("lds_static", 0) + self.lds, 0, 0, KERNARG_BASE)
        mem = Memory()
        mem.add(KERNARG_BASE, seg)
        mem.add(DISPATCH_BASE, pkt)
        return mem


# ---- occupancy ---------------------------------------------------------------------------------
def workgroups_per_cu(code, launch):
    """Workgroups one CU holds at once: VGPRs and SGPRs per SIMD, 10 waves per SIMD, LDS per CU
    (a workgroup's waves spread over the 4 SIMDs)."""
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    waves = -(-threads // WAVE)
    vgpr = max(4, -(-code.meta["vgpr"] // 4) * 4)
    sgpr = max(16, -(-(code.meta["sgpr"]) // 16) * 16)
    per_simd = min(MAX_WAVES_PER_SIMD, VGPRS_PER_LANE // vgpr, SGPRS_PER_SIMD // sgpr)
    by_waves = per_simd * SIMDS // waves if waves >= SIMDS else per_simd * SIMDS // waves
    lds = code.meta.get("lds_static", 0) + launch.lds
    by_lds = LDS_PER_CU // lds if lds else by_waves
    return max(0, min(by_waves, by_lds, 40 // waves if waves else 0)), per_simd


# ---- timing: one CU --------------------------------------------------------------------------
INF = float("inf")
UNKNOWN_MAX = 1000  # branches on unknown values one CU may take (the product kernels take none)
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

    def __init__(self, code, launch, wg_ids, fast=True):
        self.code, self.launch = code, launch
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
                done = self.vmem_free + (LAT_STORE if x.is_store else LAT_VMEM)
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
    # its inner loops) whose last iterations took, per wave, the same path in periods within 1.5x
    # of each other, the CU is in a periodic state: the simulator shifts every clock of the CU
    # forward by n periods and each wave n iterations on (at its next arrival at the loop's header),
    # where n leaves two iterations before any wave's path changes. n comes from replaying the
    # loop's control slice (the instructions its branches, exec and conditions depend on): the
    # replayed registers are exact after the jump (loop counters, exec masks that shrink lane by
    # lane); every other register moves by n times its step, or becomes unknown if irregular.
    # Busy and stall counters grow by their rates over the observed iterations.
    KEEP = 4

    def counters(self):
        return (sum(self.valu_busy), self.lds_busy, self.vmem_busy, self.vmem_bytes, self.lds_bytes)

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
        if len(hs) > self.KEEP:
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
        shift = int(shift) // 4 * 4
        start = min(v.hist[h][0][0] for v in live)
        base = next((c for tt, c in self.history if tt >= start), None)
        if base is not None and t > start:
            now = self.counters()
            rate = [(a - b) / (t - start) for a, b in zip(now, base)]
            self.valu_busy[0] += rate[0] * shift
            self.lds_busy += rate[1] * shift
            self.vmem_busy += rate[2] * shift
            self.vmem_bytes += rate[3] * shift
            self.lds_bytes += rate[4] * shift
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


# ---- the device: rounds of workgroups over 60 CUs -------------------------------------------------
class SimResult:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def wg_coords(i, grid):
    return (i % grid[0], i // grid[0] % grid[1], i // (grid[0] * grid[1]))


def simulate(code, launch):
    """Simulated time of one launch: rounds of CUS x workgroups-per-CU workgroups (dispatched in
    order, round robin over the CUs); a round lasts as long as its busiest simulated CU (CU 0, which
    the round-robin dispatch gives the most workgroups) or its share of the kernel's HBM bytes at
    the sustained bandwidth, whichever is longer. Every full round is taken to cost what the first
    one does."""
    n = launch.grid[0] * launch.grid[1] * launch.grid[2]
    per_cu, waves_simd = workgroups_per_cu(code, launch)
    if per_cu == 0:
        raise ValueError("%s: does not fit a CU (LDS %d B)" % (code.name, code.meta.get("lds_static", 0) + launch.lds))
    slots = CUS * per_cu
    full, tail = divmod(n, slots)
    rounds = []
    for count, size in ((full, slots), (1 if tail else 0, tail)):
        if not count:
            continue
        first = (full * slots) if size != slots else 0
        ids = [wg_coords(first + i * CUS, launch.grid) for i in range(-(-size // CUS)) if i * CUS < size]
        cu = CU(code, launch, ids)
        clocks = cu.run()
        rounds.append((count, size, clocks, cu))
    total_vmem = sum(c * cu.vmem_bytes * min(CUS, size) / max(1, len(cu.groups)) * len(cu.groups) / max(1, len(cu.groups))
                     for c, size, _, cu in rounds)
    hbm_total = launch.hbm_bytes if launch.hbm_bytes is not None else total_vmem
    cycles = 0.0
    parts = {"issue": 0.0, "waits": 0.0, "barrier": 0.0, "LDS": 0.0, "HBM": 0.0}
    for count, size, clocks, cu in rounds:
        hbm = hbm_total * size / n / HBM_BYTES_PER_S * CLOCK
        cycles += count * max(clocks, hbm)
    us = cycles / CLOCK * 1e6
    return SimResult(us=us, rounds=rounds, per_cu=per_cu, waves_simd=waves_simd, wgs=n, slots=slots,
                     unknown=sum(cu.unknown for _, _, _, cu in rounds), hbm_us=hbm_total / HBM_BYTES_PER_S * 1e6)


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


def steady_state(hs, h):
    """(header, period, signature) when a wave's last KEEP arrivals at a loop header repeat: the
    same path (instructions issued, branch targets) and periods within 1.5x of each other."""
    if len(hs) < CU.KEEP:
        return None
    sigs = {(b[2] - a[2], b[3] - a[3]) for a, b in zip(hs, hs[1:])}
    if len(sigs) != 1:
        return None
    periods = [b[0] - a[0] for a, b in zip(hs, hs[1:])]
    if max(periods) > 1.5 * min(periods) or min(periods) <= 0:
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


# ---- hand-worked cases (make test) ------------------------------------------------------------
def synthetic(lines, name="case"):
    """A Code from assembler-like lines ('label:' or 'mnemonic operands', branch operands name a
    label), for the hand-worked cases: no arguments, v0 = the lane's thread id."""
    labels, body = {}, []
    for ln in lines:
        if ln.endswith(":"):
            labels[ln[:-1]] = 4 * len(body)
        else:
            body.append(ln)
    insts = []
    for i, ln in enumerate(body):
        mnem, _, ops = ln.partition(" ")
        tgt = labels[ops.strip()] if mnem.startswith(("s_branch", "s_cbranch")) else None
        insts.append((4 * i, mnem, ops.strip() if tgt is None else "", tgt))
    meta = {"vgpr": 8, "sgpr": 16, "lds_static": 0, "kernarg_size": 0, "args": []}
    desc = dict(user_sgprs=0, wg_id=[0, 0, 0], wg_info=0, private_offset=0, workitem_ids=0, private_buffer=0,
                dispatch_ptr=0, queue_ptr=0, kernarg_ptr=0, dispatch_id=0, flat_scratch=0, private_size=0)
    return Code(name, insts, meta, desc)


def run_synthetic(lines, threads=64, fast=True, limit=1 << 22):
    code = synthetic(lines)
    cu = CU(code, Launch((1, 1, 1), (threads, 1, 1)), [(0, 0, 0)], fast=fast)
    return cu.run(limit=limit), cu


def ready_at(c, simd=0):
    return align(c, simd)


def selftest():
    """Cases whose clocks are worked out by hand from the rules in the module docstring (one wave on
    SIMD 0 issues at clocks 0, 4, 8, ...; the run ends 4 clocks after s_endpgm issues). Returns the
    failures."""
    LOAD, VALU, END = "global_load_dwordx4 v[0:3], v[4:5], off", "v_fmac_f32_e32 v6, v7, v7", "s_endpgm"
    LDS = "ds_read_b128 v[0:3], v4"
    load_done = 16 + LAT_VMEM            # 1 KB at 64 B per clock, then the latency
    lds_done = WAVE * 16 / LDS_BYTES_PER_CLK + LAT_LDS
    cases = [
        # (what, program, clocks worked out by hand)
        ("a load used at once", [LOAD, "s_waitcnt vmcnt(0)", VALU, END], ready_at(load_done) + 8 + 4),
        ("a load behind 100 VALU instructions", [LOAD] + [VALU] * 100 + ["s_waitcnt vmcnt(0)", END],
         ready_at(load_done) + 4 + 4),
        ("a load behind more work than its latency", [LOAD] + [VALU] * 200 + ["s_waitcnt vmcnt(0)", END],
         4 * 203),
        ("two loads waited one by one", [LOAD, LOAD, "s_waitcnt vmcnt(1)", VALU, "s_waitcnt vmcnt(0)", END],
         ready_at(32 + LAT_VMEM) + 8),        # the second load's service starts when the first one's ends
        ("a wait for two loads 50 VALU instructions apart", [LOAD] + [VALU] * 50 + [LOAD, "s_waitcnt vmcnt(0)", END],
         ready_at(204 + load_done) + 8),
        ("a wait with nothing outstanding", ["s_waitcnt vmcnt(0)", VALU, END], 12),
        ("an LDS read behind 16 FMAs", [LDS] + [VALU] * 16 + ["s_waitcnt lgkmcnt(0)", END],
         max(ready_at(lds_done), 68) + 8),
        ("an LDS read used at once", [LDS, "s_waitcnt lgkmcnt(0)", END], ready_at(lds_done) + 8),
        # a rotated loop: the wait heads the loop body in address order, the load ends it; executed,
        # every iteration's load is waited for at the top of the next one (3 iterations)
        ("a rotated loop whose wait sits above its loads",
         ["s_mov_b32 s0, 3", "s_branch head", "top:", "s_waitcnt vmcnt(0)", VALU, "head:", LOAD,
          "s_add_i32 s0, s0, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", "s_waitcnt vmcnt(0)", END],
         # load 1 at 8; each later load 8 clocks after the previous wait ends; the exit wait, then s_endpgm
         ready_at(ready_at(ready_at(8 + load_done) + 8 + load_done) + 8 + load_done) + 8),
        ("a loop waiting on its own stores (vmcnt counts stores)",
         ["s_mov_b32 s0, 3", "top:", "global_store_dwordx4 v[4:5], v[0:3], off", "s_waitcnt vmcnt(0)",
          "s_add_i32 s0, s0, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", END],
         # store at 4, its wait until 4 + 16 + LAT_STORE; 16 clocks (wait, add, cmp, branch) to the
         # next store; after the third wait, add, cmp, branch and s_endpgm
         ready_at(ready_at(ready_at(4 + 16 + LAT_STORE) + 16 + 16 + LAT_STORE) + 16 + 16 + LAT_STORE) + 16 + 4),
        ("a quarter-rate chain (v_mul_lo_u32: 16 clocks each)", ["v_mul_lo_u32 v1, v1, v1"] * 10 + [END],
         16 * 10 + 4),
        ("a full-rate chain", ["v_add_u32_e32 v1, v1, v1"] * 10 + [END], 4 * 10 + 4),
    ]
    fails = []
    for what, prog, want in cases:
        got, _ = run_synthetic(prog)
        if got != want:
            fails.append("simulator selftest, %s: %s clocks, worked out by hand: %s" % (what, got, want))
    # a barrier between uneven waves: wave 0 (SIMD 0) runs 10 VALU, wave 1 (SIMD 1) 50; both wait at
    # the barrier for wave 1, whose s_barrier issues at 1 + 4 * (4 + 50) (4 scalar instructions
    # first); the release is BARRIER_LAT later at each wave's next turn; then s_endpgm, wave 0's
    # (SIMD 0) last. Wave 0 reaches the barrier after 3 scalar instructions, 10 VALU, s_branch.
    uneven = ["v_readfirstlane_b32 s0, v0", "s_cmp_lt_u32 s0, 64", "s_cbranch_scc0 long", "short:"] + \
        [VALU] * 10 + ["s_branch meet", "long:", "s_nop 0"] + [VALU] * 50 + ["meet:", "s_barrier", END]
    got, cu = run_synthetic(uneven, threads=128)
    arrive = 1 + 4 * (4 + 50)
    want = ready_at(arrive + BARRIER_LAT, 0) + 4
    if got != want:
        fails.append("simulator selftest, a barrier between uneven waves: %s clocks, by hand %s" % (got, want))
    fast_wait = cu.waves[0].stall.get((None, "barrier"), 0)
    if fast_wait != ready_at(arrive + BARRIER_LAT, 0) - 4 * (3 + 10 + 1):
        fails.append("simulator selftest, the short wave's barrier wait: %s clocks" % fast_wait)
    # fast-forward: a long loop simulated clock by clock and fast-forwarded agree within 1 %
    loop = ["s_mov_b32 s0, 2000", "top:", LOAD, "v_add_co_u32_e32 v4, vcc, 16, v4", VALU, VALU,
            "s_waitcnt vmcnt(0)", VALU, "s_add_i32 s0, s0, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", END]
    # and a loop whose lanes leave one by one (exec shrinks, the path stays the same until exec is
    # empty: lane i runs 100 + 8 i iterations): the fast-forward must land on the exit, not lose exec
    lanes_leave = ["v_lshl_add_u32 v1, v0, 3, 100", "s_mov_b64 s[2:3], 0", "top:", VALU,
                   "v_subrev_u32_e32 v1, 1, v1", "v_cmp_eq_u32_e32 vcc, 0, v1", "s_or_b64 s[2:3], vcc, s[2:3]",
                   "s_andn2_b64 exec, exec, s[2:3]", "s_cbranch_execz done", "s_branch top", "done:", END]
    for what, prog, threads in (("a loop with a fixed trip count", loop, 256),
                                ("a loop whose lanes leave one by one", lanes_leave, 64)):
        slow, _ = run_synthetic(prog, threads=threads, fast=False)
        try:
            quick, cu = run_synthetic(prog, threads=threads, fast=True, limit=2 * slow)
        except RuntimeError as e:
            fails.append("simulator selftest, fast-forward of %s: %s" % (what, e))
            continue
        if not cu.skipped or abs(quick - slow) > 0.01 * slow:
            fails.append("simulator selftest, fast-forward of %s: %s clocks (skipped %s), clock by clock %s" % (
                what, quick, cu.skipped, slow))
    return fails


# ---- calibration against published gfx906 measurements ----------------------------------------
CLPEAK = "https://github.com/krrishnarraj/clpeak/issues/109 (clpeak, Radeon Pro VII, gfx906)"
SKYNE = ("https://skyne98.github.io/wiki-gfx906/studies/2026-02-21/gfx906-latency-hiding-ops.html "
         "(skyne98/wiki-gfx906, MI50)")
CALIB_SRC = os.path.join(isa.ROOT, "tools/calib/gfx906_calib.cpp")


def kernargs(*vals):
    """HIP's kernel-argument layout of (kind, value) pairs: 'p' 8-byte pointer, 'i' int, 'f' float."""
    out = b""
    for kind, v in vals:
        fmt = {"p": "<Q", "i": "<i", "f": "<f"}[kind]
        out += b"\0" * (-len(out) % struct.calcsize(fmt)) + struct.pack(fmt, v)
    return out


def calibration(co):
    """(benchmark, simulated, published low, high, unit, source) rows from the calibration kernels."""
    ks = load(co)
    by = {isa.demangle([n])[n].split("(")[0]: c for n, c in ks.items()}
    wgs, threads = CUS * 8, 256
    n_threads = wgs * threads
    out_p, in_p = 1 << 40, 1 << 41

    def run(name, args, hbm=0):
        return simulate(by[name], Launch((wgs, 1, 1), (threads, 1, 1), 0, kernargs(*args), hbm_bytes=hbm)).us * 1e-6

    rounds = 4096
    fma = 2 * 64 * rounds * n_threads / run("calib_fma", [("p", out_p), ("f", 1.0001), ("f", 0.5), ("i", rounds)])
    n4 = n_threads * 256
    stream = 16 * n4 / run("calib_stream", [("p", in_p), ("p", out_p), ("i", n4)], hbm=16 * n4 + 4 * n_threads)
    lds = 16 * 4 * rounds * n_threads / run("calib_lds", [("p", out_p), ("i", rounds)])
    dpp = rounds * n_threads / run("calib_dpp", [("p", out_p), ("i", rounds)])
    bperm = rounds * n_threads / run("calib_bpermute", [("p", out_p), ("i", rounds)])
    return [("fp32 FMA peak, TFLOP/s", fma / 1e12, 12.6, 12.9, CLPEAK),
            ("streaming read float4 (global_load_dwordx4), GB/s", stream / 1e9, 797, 828, CLPEAK),
            ("streaming read global_load_dwordx4, GB/s", stream / 1e9, 867, 873, SKYNE),
            ("LDS ds_read_b128 streaming, TB/s", lds / 1e12, 9.5, 11.2, SKYNE),
            ("DPP row_shr exchange rate / ds_bpermute_b32's", dpp / bperm, 1778 / 970, 1784 / 962, SKYNE)]


def within(v, lo, hi, tol=0.10):
    return lo * (1 - tol) <= v <= hi * (1 + tol)


# ---- the product: what kdn_gated_delta_net launches, simulated -----------------------------------
# Qwen3-Next's Delta-Net layer: 16 key heads, 32 value heads, D_k = D_v = 128. A shape is (T, B, value
# heads, gate): 16 and 8 value heads (with 8 and 4 key heads) are what one MI50 runs when llama.cpp
# splits a layer's heads over 2 or 4 cards; gate "key" is the per-key gate (KDA), g [D, H_v, T, B].
HEADS = 32
SHAPES = [(1, 1), (1, 4), (1, 128), (64, 1), (512, 1), (1024, 1), (4096, 1), (4096, 4), (16384, 1),
          (512, 1, 16), (4096, 1, 16), (512, 1, 8), (4096, 1, 8), (64, 1, 32, "key"), (512, 1, 32, "key")]


def full_shape(s):
    """(T, B, value heads, gate) of a shape given as (T, B[, heads[, gate]])."""
    return tuple(s) + (HEADS, "scalar")[len(s) - 2:]


PATHS = (("recurrent", "recurrent"), ("two-launch", "chunked"), ("auto", "auto"))
PEAK_FLOPS = 13.4e12   # the floors: fp32 FMA peak (60 CUs x 64 lanes x 2 x 1.725 GHz)
PEAK_HBM = 0.86e12     # and sustained HBM bandwidth
PRODUCT_SRC = ("deltanet_recurrent", "deltanet_two_launch", "gather")
LAUNCHES_SRC = ["kernels/gated_delta_net.c"] + ["kernels/%s.cpp" % f for f in PRODUCT_SRC]


def launches_tool():
    """Builds tools/gfx906_launches (host C/C++, the CPU backend) under build/sim; returns its path."""
    out = os.path.join(isa.ROOT, "build/sim")
    exe = os.path.join(out, "launches")
    deps = LAUNCHES_SRC + ["tools/gfx906_launches.cpp", "tools/gfx906_launches.h", "kernels/backend/simt_cpu.cpp",
                           "kernels/backend/runtime_cpu.cpp"]
    if os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(os.path.join(isa.ROOT, d))
                                   for d in deps):
        return exe
    os.makedirs(out, exist_ok=True)
    objs = []
    cxx, cc = os.environ.get("CXX", "g++"), os.environ.get("CC", "cc")
    for src in LAUNCHES_SRC:
        o = os.path.join(out, os.path.basename(src) + ".o")
        if src.endswith(".c"):
            cmd = [cc, "-std=c11", "-O1", "-DKDN_BACKEND_CPU", "-I" + isa.ROOT, "-c", src, "-o", o]
        else:
            cmd = [cxx, "-std=c++17", "-O1", "-DKDN_BACKEND_CPU", "-I" + isa.ROOT, "-include",
                   "tools/gfx906_launches.h", "-c", src, "-o", o]
        subprocess.run(cmd, check=True, cwd=isa.ROOT)
        objs.append(o)
    subprocess.run([cxx, "-std=c++17", "-O1", "-DKDN_BACKEND_CPU", "-I" + isa.ROOT, "tools/gfx906_launches.cpp"] + objs +
                   ["kernels/backend/simt_cpu.cpp", "kernels/backend/runtime_cpu.cpp", "-o", exe], check=True,
                   cwd=isa.ROOT)
    return exe


def recorded_launches(path, T, B, heads=HEADS, gate="scalar"):
    """[(kernel name with template arguments, grid, block, LDS bytes, argument bytes)] of one call."""
    cmd = [launches_tool(), path, str(T), str(B), str(heads // 2), str(heads), str(isa.D_K), gate]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        name, grid, block, lds, hexa = line.split("\t")
        rows.append((name, tuple(int(v) for v in grid.split()), tuple(int(v) for v in block.split()), int(lds),
                     bytes.fromhex(hexa)))
    return rows


def floor_work(name, T, B, heads=HEADS, gate="scalar"):
    """(flops, compulsory HBM bytes) of a product kernel at the Qwen3-Next shape with this many value
    heads (and half as many key heads: every term scales with the heads) and gate."""
    short = name.split("<")[0]
    if short == "kernel_gather_strided":
        flops, nbytes = 0.0, 2.0 * T * B * isa.H_K * isa.D_K * 4
    elif short == "kernel_two_launch_intra":
        wg, fmas, nbytes, _ = isa.work_intra(T, B)
        flops = 2.0 * wg * fmas
    elif short == "kernel_two_launch_state":
        wg, fmas, nbytes = isa.work_state(T, B)
        flops = 2.0 * wg * fmas
    elif short == "kernel_deltanet_recurrent":
        wg, fmas, nbytes, _ = isa.work_recurrent(T, B)
        flops = 2.0 * wg * fmas
    else:
        raise KeyError(name)
    if gate == "key":  # g is a row per key dimension, not one number per head and token
        nbytes += T * B * isa.H_V * (isa.D_K - 1) * 4.0
    return flops * heads / isa.H_V, float(nbytes) * heads / isa.H_V


def floor_us(flops, nbytes):
    return max(flops / PEAK_FLOPS, nbytes / PEAK_HBM) * 1e6


def code_key(code):
    """What a kernel's simulated time depends on: its instructions, resources and the simulator."""
    h = hashlib.sha1()
    for x in code.insts:
        h.update(("%s %s %s\n" % (x.mnem, x.text, x.tgt)).encode())
    h.update(repr(sorted((k, v) for k, v in code.meta.items() if k != "args")).encode())
    h.update(SIM_VERSION.encode())
    return h.hexdigest()[:16]


# The simulator's rules, versioned: raise it with every change that can move a simulated time (the
# gate then simulates every kernel again instead of taking the table's times for unchanged code).
SIM_VERSION = "2"


class Objects:
    """The product code objects of one toolchain: kernels by their demangled name<template args>."""

    def __init__(self, co_files):
        self.by_name = {}
        for co in co_files:
            ks = load(co)
            pretty = isa.demangle(list(ks))
            for sym, code in ks.items():
                self.by_name[re.sub(r"^void ", "", pretty[sym]).split("(")[0]] = code

    def get(self, name):
        if name not in self.by_name:
            raise KeyError("kernel %s not in the code objects" % name)
        return self.by_name[name]


# Simulated launches, on disk: the simulation is deterministic, so a launch of code whose key (its
# instructions, resources and SIM_VERSION) is unchanged is not simulated again (make isa after a
# change to one kernel re-simulates that kernel only). SIM_CACHE names the file; "" turns it off.
with open(os.path.abspath(__file__), "rb") as _f:
    SOURCE_HASH = hashlib.sha1(_f.read()).hexdigest()[:12]
CACHE_FILE = os.environ.get("SIM_CACHE", os.path.join(isa.ROOT, "build/sim/cache.tsv"))


def cache_key(code, launch):
    """The code's key, the launch and this file's own text (an edit that forgot SIM_VERSION does not
    reuse old results)."""
    return "%s %s %s %s %d %s %s" % (SOURCE_HASH, code_key(code), ",".join(map(str, launch.grid)),
                                     ",".join(map(str, launch.block)), launch.lds,
                                     hashlib.sha1(launch.args).hexdigest()[:16], launch.hbm_bytes)


def load_cache():
    out = {}
    if CACHE_FILE and os.path.exists(CACHE_FILE):
        with open(CACHE_FILE) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("\t")
                v = json.loads(value)
                v["stalls"] = {(a, b): c for a, b, c in v["stalls"]}
                out[key] = v
    return out


def store_cache(key, v):
    if not CACHE_FILE:
        return
    os.makedirs(os.path.dirname(CACHE_FILE), exist_ok=True)
    rec = dict(v, stalls=[[a, b, c] for (a, b), c in sorted(v["stalls"].items())])
    with open(CACHE_FILE, "a") as f:  # one line per launch: concurrent runs append whole lines
        f.write("%s\t%s\n" % (key, json.dumps(rec, sort_keys=True)))


CACHE = None


def simulate_cached(code, launch):
    global CACHE
    if CACHE is None:
        CACHE = load_cache()
    key = cache_key(code, launch)
    if key not in CACHE:
        CACHE[key] = summarise(simulate(code, launch))
        store_cache(key, CACHE[key])
    return CACHE[key]


def summarise(res):
    """The numbers the tables keep of a SimResult: time, binding resource, the slowest wave's stalls
    by loop and cause in the round that costs most."""
    count, size, clocks, cu = max(res.rounds, key=lambda r: r[0] * r[2])
    hbm_clocks = res.hbm_us * 1e-6 * CLOCK * size / res.wgs
    slow = max(cu.waves, key=lambda w: w.end)
    stalls = {}
    for (loop, cause), v in slow.stall.items():
        key = ("-" if loop is None else "0x%x" % cu.code.insts[loop].addr, cause)
        stalls[key] = stalls.get(key, 0) + v
    shares = {"VALU": max(cu.valu_busy) / clocks, "LDS": cu.lds_busy / clocks, "vmem": cu.vmem_busy / clocks}
    for cause in ("wait", "barrier"):
        shares[{"wait": "waits", "barrier": "barrier"}[cause]] = sum(v for (l, c), v in stalls.items()
                                                                     if c == cause) / clocks
    binding = "HBM" if hbm_clocks >= clocks else max(shares, key=shares.get)
    if res.rounds[-1][1] < res.slots and len(res.rounds) > 1 and res.rounds[-1][2] > 0.5 * clocks \
            and res.rounds[-1][1] < 0.5 * res.slots and binding != "HBM" and count == 1:
        binding = "rounds"
    return dict(us=res.us, binding=binding, stalls=stalls, unknown=res.unknown, rounds=len(res.rounds),
                per_cu=res.per_cu)


def product_rows(objects, toolchain, shapes=SHAPES, paths=PATHS):
    """Rows (toolchain, path, kernel, T, B, heads, gate, simulated_us, floor_us, binding, stalls) per
    launch and per path total."""
    rows = []
    for shape in shapes:
        T, B, heads, gate = full_shape(shape)
        for label, path in paths:
            total, total_floor = 0.0, 0.0
            for name, grid, block, lds, args in recorded_launches(path, T, B, heads, gate):
                flops, nbytes = floor_work(name, T, B, heads, gate)
                r = simulate_cached(objects.get(name), Launch(grid, block, lds, args, hbm_bytes=nbytes))
                f = floor_us(flops, nbytes)
                rows.append(dict(toolchain=toolchain, path=label, kernel=name.replace(" ", ""), T=T, B=B, heads=heads,
                                 gate=gate, us=r["us"], floor=f, binding=r["binding"], stalls=r["stalls"],
                                 unknown=r["unknown"]))
                total += r["us"]
                total_floor += f
            rows.append(dict(toolchain=toolchain, path=label, kernel="total", T=T, B=B, heads=heads, gate=gate,
                             us=total, floor=total_floor, binding="-", stalls={}, unknown=0))
    return rows


SIM_COLS = ["toolchain", "path", "kernel", "T", "B", "H_v", "gate", "simulated_us", "floor_us", "binding"]


def print_rows(rows):
    print("MI50 (gfx906) simulation -- a simulation, not a measurement (docs/performance.md, 'MI50 simulator')")
    print("%-9s %-10s %-58s %6s %4s %3s %-6s %11s %9s  %s" % ("toolchain", "path", "kernel", "T", "B", "H_v", "gate",
                                                              "simulated us", "floor us", "binding"))
    for r in rows:
        print("%-9s %-10s %-58s %6d %4d %3d %-6s %11.1f %9.1f  %s%s" % (
            r["toolchain"], r["path"], r["kernel"][:58], r["T"], r["B"], r["heads"], r["gate"], r["us"], r["floor"],
            r["binding"],
                                                              "  (%d unknown branches)" % r["unknown"]
                                                              if r["unknown"] else ""))


# ---- the gate (make test): no product kernel's simulated time more than 5 % over the table --------
SIM_TABLE = os.path.join(isa.ROOT, "results/gfx906-sim.tsv")
LOOPS_TABLE = os.path.join(isa.ROOT, "results/gfx906-sim-loops.tsv")
CODE_TABLE = os.path.join(isa.ROOT, "results/gfx906-sim-code.tsv")
REGRESSION = 1.05
GATE_SHAPES = {(1, 1, HEADS, "scalar"), (64, 1, HEADS, "scalar")}
LOOPS_COLS = ["toolchain", "kernel", "T", "B", "H_v", "gate", "loop", "cause", "clocks"]


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def merge_tsv(path, head, rows, toolchain):
    """Rewrites a results table with this toolchain's rows replaced by rows (lists of strings)."""
    keep = [r for r in read_tsv(path) if r["toolchain"] != toolchain]
    with open(path, "w") as f:
        f.write("\t".join(head) + "\n")
        for r in keep:
            f.write("\t".join(r[h] for h in head) + "\n")
        for r in rows:
            f.write("\t".join(str(v) for v in r) + "\n")


def save_tables(rows, objects, toolchain):
    merge_tsv(SIM_TABLE, SIM_COLS, [[r["toolchain"], r["path"], r["kernel"], r["T"], r["B"], r["heads"], r["gate"],
                                     "%.1f" % r["us"], "%.1f" % r["floor"], r["binding"]] for r in rows], toolchain)
    loops, seen = [], set()
    for r in rows:
        key = (r["kernel"], r["T"], r["B"], r["heads"], r["gate"])
        if r["kernel"] != "total" and key not in seen:
            seen.add(key)
            loops += [[toolchain] + list(key) + [loop, cause, round(v)]
                      for (loop, cause), v in sorted(r["stalls"].items())]
    merge_tsv(LOOPS_TABLE, LOOPS_COLS, loops, toolchain)
    names = sorted({r["kernel"] for r in rows if r["kernel"] != "total"})
    merge_tsv(CODE_TABLE, ["toolchain", "kernel", "code"],
              [[toolchain, n, code_key(objects.get(n.replace(",", ", ")))] for n in names], toolchain)


def worst_loop(toolchain, kernel, shape, stalls):
    """The loop and cause whose stall clocks grew most against the committed loop table."""
    want = (toolchain, kernel) + tuple(str(v) for v in shape)
    old = {(r["loop"], r["cause"]): int(r["clocks"]) for r in read_tsv(LOOPS_TABLE)
           if tuple(r[c] for c in LOOPS_COLS[:6]) == want}
    grow = {k: v - old.get(k, 0) for k, v in stalls.items()}
    if not grow:
        return "no loop stalls recorded"
    (loop, cause), g = max(grow.items(), key=lambda kv: kv[1])
    return "loop at %s grew most: %s +%d clocks (of the slowest wave)" % (loop, {"wait": "waits", "issue": "issue",
                                                                                "barrier": "barrier"}.get(cause, cause),
                                                                         g)


def check(objects, toolchain):
    """Fails when a product kernel's simulated time grew more than 5 % against results/gfx906-sim.tsv.
    A kernel whose code (and the simulator) is what the table was made from has the table's times
    (the simulation is deterministic); one that changed is simulated again at the gate's shapes."""
    rows = [r for r in read_tsv(SIM_TABLE) if r["toolchain"] == toolchain and r["kernel"] != "total"]
    if not rows:
        return None
    keys = {r["kernel"]: r["code"] for r in read_tsv(CODE_TABLE) if r["toolchain"] == toolchain}
    fails, checked, done = [], 0, set()
    for r in rows:
        name = r["kernel"].replace(",", ", ")
        shape = (int(r["T"]), int(r["B"]), int(r["H_v"]), r["gate"])
        T, B = shape[:2]
        try:
            code = objects.get(name)
        except KeyError:
            fails.append("%s: not in the code objects (the table has it)" % name)
            continue
        if keys.get(r["kernel"]) == code_key(code) or shape not in GATE_SHAPES or (name, shape) in done:
            continue
        done.add((name, shape))
        path = {"recurrent": "recurrent", "two-launch": "chunked", "auto": "auto"}[r["path"]]
        for lname, grid, block, lds, args in recorded_launches(path, T, B):
            if lname != name:
                continue
            flops, nbytes = floor_work(name, T, B)
            got = simulate_cached(code, Launch(grid, block, lds, args, hbm_bytes=nbytes))
            checked += 1
            old = float(r["simulated_us"])
            if got["us"] > REGRESSION * old:
                fails.append("%s T=%d B=%d: simulated %.1f us, %.0f %% over the committed %.1f us; %s" % (
                    name, T, B, got["us"], 100 * (got["us"] / old - 1), old,
                    worst_loop(toolchain, r["kernel"], shape, got["stalls"])))
    return fails, checked


def toolchain_name():
    """'rocm' + the HIP version hipcc reports (major.minor), e.g. rocm5.2."""
    out = subprocess.run([isa.tool("HIPCC", "hipcc"), "--version"], capture_output=True, text=True).stdout
    m = re.search(r"HIP version: (\d+\.\d+)", out)
    return "rocm" + m.group(1) if m else "rocm"


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "selftest":
        fails = selftest()
        for f in fails:
            print(f, file=sys.stderr)
        print("gfx906 simulator selftest: %s" % ("%d failures" % len(fails) if fails else "all cases as worked out by hand"))
        return 1 if fails else 0
    if cmd == "calibrate":
        out = os.path.join(isa.ROOT, "build/sim")
        os.makedirs(out, exist_ok=True)
        co = isa.build(CALIB_SRC, out)
        rows = calibration(co)
        path = argv[2] if len(argv) > 2 else os.path.join(isa.ROOT, "results/gfx906-calibration.tsv")
        with open(path, "w") as f:
            f.write("benchmark\tsimulated\tpublished_low\tpublished_high\tsource\n")
            for name, v, lo, hi, src in rows:
                f.write("%s\t%.3g\t%.4g\t%.4g\t%s\n" % (name, v, lo, hi, src))
        bad = [r for r in rows if not within(r[1], r[2], r[3])]
        for name, v, lo, hi, _ in rows:
            print("%-52s simulated %8.3g   published %.4g-%.4g %s" % (name, v, lo, hi,
                                                                    "" if within(v, lo, hi) else "  OUTSIDE 10 %"))
        print("wrote %s" % os.path.relpath(path, isa.ROOT))
        return 1 if bad else 0
    if cmd in ("table", "check"):
        # tools/gfx906_sim.py table|check [TOOLCHAIN CO_DIR]: default the local hipcc's, build/isa
        toolchain = argv[2] if len(argv) > 3 else toolchain_name()
        co_dir = argv[3] if len(argv) > 3 else os.path.join(isa.ROOT, "build/isa")
        objects = Objects([os.path.join(co_dir, f + ".co") for f in PRODUCT_SRC])
        if cmd == "check":
            res = check(objects, toolchain)
            if res is None:
                print("gfx906 simulator gate: no %s rows in %s, skipped" % (toolchain, os.path.relpath(SIM_TABLE,
                                                                                                isa.ROOT)))
                return 0
            fails, checked = res
            for f in fails:
                print("gfx906 simulator gate: " + f, file=sys.stderr)
            if not fails:
                print("gfx906 simulator gate (%s): no product kernel's simulated time more than %d %% over %s "
                      "(%d rows simulated again, the rest unchanged code)" % (
                          toolchain, round(100 * (REGRESSION - 1)), os.path.relpath(SIM_TABLE, isa.ROOT), checked))
            return 1 if fails else 0
        shapes = SHAPES
        if os.environ.get("SIM_SHAPES"):  # T:B[:H_v[:key]], e.g. "4096:1 1:1 512:1:16 64:1:32:key"
            shapes = [tuple(int(v) if v.isdigit() else v for v in w.split(":"))
                      for w in os.environ["SIM_SHAPES"].split()]
        rows = product_rows(objects, toolchain, shapes=shapes)
        print_rows(rows)
        save_tables(rows, objects, toolchain)
        print("wrote %s (%s rows), %s, %s" % (os.path.relpath(SIM_TABLE, isa.ROOT), toolchain,
                                            os.path.relpath(LOOPS_TABLE, isa.ROOT), os.path.relpath(CODE_TABLE,
                                                                                                   isa.ROOT)))
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

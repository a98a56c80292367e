"""gfx906 instructions decoded from their disassembly: classes and costs, operands."""
import re
import struct


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
    if joined[-1] and ":" in joined[-1] and not joined[-1].lstrip("-|").startswith(("s[", "v[", "ttmp[")):
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

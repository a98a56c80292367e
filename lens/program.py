"""A kernel as the simulator runs it: its instructions (with their semantics), loops, resources
and descriptor."""
import re
import struct

from lens.codeobj import demangle, disassemble, metadata
from lens.decode import Inst
from lens.semantics import semantics


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
    meta = metadata(co)
    desc = kernel_descriptors(co)
    code = disassemble(co)
    return {n: Code(n, code[n], meta[n], desc[n]) for n in meta if n in code and n in desc}


class Objects:
    """Code objects of one toolchain (the product's, or another project's kernels): kernels by their
    demangled name<template args>."""

    def __init__(self, co_files):
        self.by_name = {}
        for co in co_files:
            ks = load(co)
            pretty = demangle(list(ks))
            for sym, code in ks.items():
                self.by_name[re.sub(r"^void ", "", pretty[sym])] = code

    def get(self, name):
        if name not in self.by_name:
            raise KeyError("kernel %s not in the code objects" % name)
        return self.by_name[name]

"""Faults planted in built gfx906 code objects (ISA_FAULT=NAME with make isa-run): defects that only the
machine code carries, to prove the functional run catches them.

  waitcnt   every s_waitcnt of the recurrent kernel's objects that waits for vmcnt(0) becomes s_nop 0
            (the loads' results are read before they arrive)
  lds       every ds_read_b32 with an offset in the chunked intra kernel's object reads one dword further
"""
import re
import struct

from lens.codeobj import disassemble

S_NOP_0 = 0xBF800000


def text_offset(data, addr):
    """File offset of a virtual address in a section of an ELF64 file."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    for i in range(shnum):
        _, typ, _, sh_addr, sh_off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        if typ == 1 and sh_addr <= addr < sh_addr + size:
            return sh_off + addr - sh_addr
    raise KeyError("address 0x%x in no section" % addr)


def patched(co, select, change):
    """Applies change(first dword) -> new dword to every instruction select(mnem, ops) picks; returns
    how many it changed."""
    data = bytearray(open(co, "rb").read())
    n = 0
    for insts in disassemble(co).values():
        for addr, mnem, ops, _ in insts:
            if select(mnem, ops):
                at = text_offset(data, addr)
                word, = struct.unpack_from("<I", data, at)
                struct.pack_into("<I", data, at, change(word))
                n += 1
    open(co, "wb").write(bytes(data))
    return n


def ds_offset_plus_4(word):
    return (word & ~0xffff) | (((word & 0xffff) + 4) & 0xffff)


FAULTS = {
    "waitcnt": ("deltanet_recurrent", lambda m, o: m == "s_waitcnt" and "vmcnt(0)" in o, lambda w: S_NOP_0),
    "lds": ("chunked_intra", lambda m, o: m == "ds_read_b32" and re.search(r"offset:\d+", o) is not None,
            ds_offset_plus_4),
}


def plant(name, objects_by_src):
    """Plants fault NAME in the object of its kernel file (objects_by_src: file -> code object path)."""
    src, select, change = FAULTS[name]
    n = patched(objects_by_src[src], select, change)
    print("isa-run: fault '%s' planted in %d instructions of %s" % (name, n, objects_by_src[src]))

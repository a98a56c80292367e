"""A launch: its argument segment and dispatch packet as the kernel reads them; occupancy."""
import struct

from lens.machine import (DISPATCH_BASE, KERNARG_BASE, LDS_PER_CU, MAX_WAVES_PER_SIMD, SGPRS_PER_SIMD, SIMDS,
                          VGPRS_PER_LANE, WAVE)


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


def pack_args(code, vals):
    """A kernel-argument segment: (struct format, value) per explicit argument, placed at the offsets
    the code object's metadata gives; refuses arguments whose sizes are not the metadata's."""
    args = [a for a in code.meta["args"] if not a["value_kind"].startswith("hidden_")]
    if [a["size"] for a in args] != [struct.calcsize(f) for f, _ in vals]:
        raise ValueError("%s's arguments are %s bytes, not the %s this launch knows" % (
            code.name, [a["size"] for a in args], [struct.calcsize(f) for f, _ in vals]))
    seg = bytearray(code.meta["kernarg_size"])
    for a, (fmt, v) in zip(args, vals):
        struct.pack_into(fmt, seg, a["offset"], *(v if isinstance(v, tuple) else (v,)))
    return bytes(seg)


def fastdiv_magic(d):
    """The (multiplier, shift, divisor) triple of division by d with a 32-bit multiply-high and a
    shift (Granlund-Montgomery, as ggml's init_fastdiv_values): shift = ceil(log2 d), multiplier =
    2^32 (2^shift - d) / d + 1."""
    shift = (d - 1).bit_length()
    return ((1 << 32) * ((1 << shift) - d) // d + 1) & 0xffffffff, shift, d


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

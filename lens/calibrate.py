"""Calibration against published gfx906 measurements."""
import os
import struct

from lens.codeobj import ROOT, demangle
from lens.device import simulate
from lens.launch import Launch
from lens.machine import CUS
from lens.program import load


# ---- calibration against published gfx906 measurements ----------------------------------------
CLPEAK = "https://github.com/krrishnarraj/clpeak/issues/109 (clpeak, Radeon Pro VII, gfx906)"
SKYNE = ("https://skyne98.github.io/wiki-gfx906/studies/2026-02-21/gfx906-latency-hiding-ops.html "
         "(skyne98/wiki-gfx906, MI50)")
CALIB_SRC = os.path.join(ROOT, "lens/calib/gfx906_calib.cpp")


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
    by = {demangle([n])[n].split("(")[0]: c for n, c in ks.items()}
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

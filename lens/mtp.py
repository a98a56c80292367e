"""MTP speculative decoding's verify calls through kdn_gated_delta_net, simulated on gfx906.

usage: python3 -m lens mtp [TOOLCHAIN CO_DIR]      (make isa-mtp [TOOLCHAIN=rocm6|rocm7])

A verify call runs T = 2..4 draft tokens and keeps K = T state snapshots (llama.cpp rolls the state back
to the last accepted token), at 32 and 48 value heads (Qwen3-Next, Qwen3.5-27B; 16 and 24 key heads as
the lens gives every shape) and 1 to 4 sequences. Such a call moves (1 + K) states and reads a few
vectors; its bound is those bytes at the MI50's sustained HBM rate plus one dispatch (a launch behind
another costs at least the dispatch floor, lens/machine.py). Each row: the library's automatic path
simulated (its launches recorded from the library's own dispatch, lens/launches.cpp), the band of its
kernels' style, the bytes' time and the ratio of the simulated time to bytes plus dispatch.

Writes results/gfx906-mtp.tsv (this toolchain's rows). Every figure is a simulation, not a measurement.
"""
import os
import sys

from lens.codeobj import ROOT, toolchain_and_objects_dir
from lens.gate import merge_tsv
from lens.machine import DISPATCH_FLOOR_US
from lens.product import PEAK_FLOPS, PEAK_HBM, product_rows
from lens.vs_llama import product_objects
from lens.work import layer_floor_us

TABLE = os.path.join(ROOT, "results/gfx906-mtp.tsv")
COLS = ["toolchain", "T", "K", "B", "H_v", "kernel", "simulated_us", "low_us", "high_us", "bytes_us",
        "x_bytes_and_dispatch"]
# (T = K, B, value heads)
SHAPES = [(t, b, h) for h in (32, 48) for b in (1, 4) for t in (2, 3, 4)]


def mtp_row(objects, toolchain, T, B, heads):
    """The table's row of one verify call: its automatic path's launches and their sums."""
    rows = product_rows(objects, toolchain, shapes=[(T, B, heads, "scalar", T)], paths=(("auto", "auto"),))
    total = next(r for r in rows if r["kernel"] == "total")
    kernels = "+".join(r["kernel"].split("<")[0] for r in rows if r["kernel"] != "total")
    # T <= 4 tokens: the bytes' time is the floor (the arithmetic's is under a tenth of it)
    bytes_us = layer_floor_us(T, B, heads, "scalar", PEAK_FLOPS, PEAK_HBM, K=T)
    return [toolchain, T, T, B, heads, kernels] + ["%.2f" % v for v in (total["us"], total["low"], total["high"],
                                                                        bytes_us)] + \
        ["%.3f" % (total["us"] / (bytes_us + DISPATCH_FLOOR_US))]


def main(argv):
    if len(argv) not in (2, 4):
        sys.exit(__doc__)
    toolchain, co_dir = toolchain_and_objects_dir(argv[2:])
    objects = product_objects(co_dir)
    print("MI50 (gfx906) simulation, %s objects -- a simulation, not a measurement" % toolchain)
    print("\t".join(COLS))
    rows = []
    for T, B, heads in SHAPES:
        rows.append(mtp_row(objects, toolchain, T, B, heads))
        print("\t".join(map(str, rows[-1])), flush=True)
    merge_tsv(TABLE, COLS, rows, toolchain)
    print("wrote %s (%s rows)" % (os.path.relpath(TABLE, ROOT), toolchain))
    return 0

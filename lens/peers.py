"""libkdn beside the best public gfx906 kernels.

  python3 -m lens bands                              results/gfx906-bands.tsv (lens/bands.py)
  python3 -m lens peers FORK_DIR [TOOLCHAIN CO_DIR]  (make peers PEERS_FORK=DIR) -> results/gfx906-peers.tsv

The peers table simulates libkdn's call (its automatic path) and the fork's kernels (lens/fork.py: the
LDS-slab prefill kernel for T > 1, the column-per-wave decode kernel for T = 1, as the fork's launcher picks)
at the same shapes with the same lens; ratio = fork / libkdn (> 1: libkdn faster), at the centre and at both
ends of the two bands (lens/bands.py). Every figure is a simulation, not a measurement."""
import os
import sys

from lens import fork
from lens.bands import BANDS, CALIBRATION, figure_band, style_of, write_bands
from lens.codeobj import ROOT
from lens.device import simulate
from lens.codeobj import toolchain_and_objects_dir
from lens.gate import merge_tsv
from lens.product import product_rows
from lens.vs_llama import product_objects

PEERS = os.path.join(ROOT, "results/gfx906-peers.tsv")


# the prompt goals' shapes (T, B, H_v): prompts at 32, 48, 16, 12 and 8 value heads, B = 4, decode
SHAPES = [(1, 1, 32), (1, 4, 32), (512, 1, 32), (4096, 1, 32), (16384, 1, 32), (512, 1, 48), (2048, 1, 48),
          (512, 1, 16), (2048, 1, 16), (512, 1, 12), (2048, 1, 12), (512, 1, 8), (2048, 1, 8), (512, 4, 32),
          (4096, 4, 32)]
PEER_COLS = ["toolchain", "T", "B", "H_v", "ours_kernel", "ours_us", "ours_low", "ours_high", "fork_kernel",
             "fork_us", "fork_low", "fork_high", "ratio", "ratio_low", "ratio_high"]


def peer_row(objects, forks, toolchain, T, B, H):
    rows = product_rows(objects, toolchain, shapes=[(T, B, H)], paths=(("auto", "auto"),))
    total = next(r for r in rows if r["kernel"] == "total")
    if T > 1:
        code, name = fork.lds_code(forks, 16), "gated_delta_net_lds_wave64<16>"
        launch = fork.lds_launch(code, 16, H, T, B, H // 2)
    else:
        cpw = 4 if B >= 2 else 2
        code, name = fork.cpw_code(forks, cpw), "gated_delta_net_cpw<%d>" % cpw
        launch = fork.cpw_launch(code, cpw, H, T, B, H // 2)
    theirs = simulate(code, launch).us
    t_lo, t_hi = figure_band(theirs, style_of(name))
    o_lo, o_hi = total["low"], total["high"]
    ours = total["us"]
    main_kernel = max((r for r in rows if r["kernel"] != "total"), key=lambda r: r["us"])["kernel"].split("<")[0]
    return [toolchain, T, B, H, main_kernel, "%.1f" % ours, "%.1f" % o_lo, "%.1f" % o_hi, name, "%.1f" % theirs,
            "%.1f" % t_lo, "%.1f" % t_hi, "%.2f" % (theirs / ours), "%.2f" % (t_lo / o_hi), "%.2f" % (t_hi / o_lo)]


def main(argv):
    if argv[1] == "bands":
        write_bands()
        print("wrote %s from %s" % (os.path.relpath(BANDS, ROOT), os.path.relpath(CALIBRATION, ROOT)))
        return 0
    if len(argv) not in (3, 5):
        sys.exit(__doc__)
    toolchain, co_dir = toolchain_and_objects_dir(argv[3:])
    objects = product_objects(co_dir)
    forks = fork.fork_objects(argv[2], toolchain)
    shapes = SHAPES
    if os.environ.get("SIM_SHAPES"):  # T:B:H_v, e.g. "1:1:32 512:1:8"
        shapes = [tuple(int(v) for v in w.split(":")) for w in os.environ["SIM_SHAPES"].split()]
    print("MI50 (gfx906) simulation, %s objects -- a simulation, not a measurement" % toolchain)
    out = []
    for T, B, H in shapes:
        out.append([str(v) for v in peer_row(objects, forks, toolchain, T, B, H)])
        print("\t".join(out[-1]), flush=True)
    merge_tsv(PEERS, PEER_COLS, out, toolchain)
    print("wrote %s (%s rows)" % (os.path.relpath(PEERS, ROOT), toolchain))
    return 0

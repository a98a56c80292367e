"""llama.cpp's own kernel for GGML_OP_GATED_DELTA_NET and libkdn's call, simulated on gfx906 the same way.

usage: python3 -m lens vs-llama GGML_DIR [TOOLCHAIN CO_DIR]      (make isa-vs-llama GGML=DIR [TOOLCHAIN=rocm6|rocm7])

GGML_DIR is a ggml checkout or a llama.cpp one (its ggml/ is used). Its src/ggml-cuda/gated_delta_net.cu is
compiled for gfx906 as ggml's HIP build compiles it (GGML_USE_HIP, -O3, the tree's own headers; device code
only, into build/): the code object llama.cpp's HIP backend runs on an MI50. Nothing of the checkout is kept.
Both sides go through the simulator with the same rules: ggml's kernel launched as its launcher launches
it (a workgroup of 4 wave64 rows per 4 state columns of one head, every token in one launch), libkdn as
kdn_gated_delta_net launches it on its automatic path (lens/launches.cpp records the launches).
SIM_SHAPES="T:B:gate ..." takes other shapes.
TOOLCHAIN CO_DIR: the label and the directory of the product's code objects (default: the local hipcc's and
build/isa; `make isa-vs-llama TOOLCHAIN=rocm6` gives rocm6.4 and build/isa-rocm6, TOOLCHAIN=rocm7 rocm7.2 and
build/isa-rocm7).

Writes results/gfx906-vs-llama.tsv (this toolchain's rows): shape, ours_us, llama_us, ratio = llama_us /
ours_us (> 1: libkdn faster), each with its band (low, high: bands.figure_band, ratio_band). Every figure is a
simulation, not a measurement.
"""
import os
import sys

from lens.codeobj import ROOT, build, build_ggml, toolchain_and_objects_dir
from lens.bands import figure_band, style_of
from lens.gate import merge_tsv
from lens.ggml import find_kernel, gdn_kernel, gdn_launch
from lens.product import PRODUCT_SRC, product_rows, simulate_cached
from lens.program import Objects


# (T tokens per sequence, B sequences, gate) at Qwen3-Next's layer: decode, prompts, then the per-key (KDA)
# gate g [S, H_V, T, B] of Kimi-Linear's layer, which libkdn runs on its recurrent kernel.
SHAPES = [(1, 1, "scalar"), (1, 4, "scalar"), (64, 1, "scalar"), (512, 1, "scalar"), (4096, 1, "scalar"),
          (64, 1, "key"), (512, 1, "key")]
H_V, H_K, S = 32, 16, 128
TABLE = os.path.join(ROOT, "results/gfx906-vs-llama.tsv")
# ggml's kernel for the call llama.cpp makes: S_v = 128, the gate's kind (KDA or not), final state only (K = 1).


def llama_times(code, T, B, gate):
    """(us, low, high) of ggml's launch; its HBM floor is the state's round trip and each
    token's vectors."""
    r = simulate_cached(code, gdn_launch(code, S, H_V, T, B, gate == "key", H_k=H_K))
    return (r["us"],) + figure_band(r["us"], style_of(code.name))


def ours_times(objects, toolchain, T, B, gate):
    """(us, low, high) of kdn_gated_delta_net's automatic path: the sums over its launches and their bands."""
    rows = product_rows(objects, toolchain, shapes=[(T, B, H_V, gate)], paths=(("auto", "auto"),))
    total = next(r for r in rows if r["kernel"] == "total")
    return total["us"], total["low"], total["high"]


def ratio_band(ours, theirs):
    """llama.cpp's time over libkdn's, and at the two ends of both bands (each side's real time anywhere
    in its style's out-of-sample band)."""
    return theirs[0] / ours[0], theirs[1] / ours[2], theirs[2] / ours[1]


def product_objects(co_dir):
    """The product's code objects in co_dir, (re)built there when missing or older than kernels/."""
    os.makedirs(co_dir, exist_ok=True)
    kernels = os.path.join(ROOT, "kernels")
    newest = max(os.path.getmtime(os.path.join(d, f)) for d, _, fs in os.walk(kernels) for f in fs)
    files = []
    for f in PRODUCT_SRC:
        co = os.path.join(co_dir, f + ".co")
        if not os.path.exists(co) or os.path.getmtime(co) < newest:
            build(os.path.join(kernels, f + ".cpp"), co_dir)
        files.append(co)
    return Objects(files)


def main(argv):
    if len(argv) not in (2, 4):
        sys.exit(__doc__)
    toolchain, co_dir = toolchain_and_objects_dir(argv[2:])
    objects = product_objects(co_dir)
    llama = Objects([build_ggml(argv[1], "gated_delta_net", co_dir)])
    codes = {}
    for gate in sorted({g for _, _, g in SHAPES}):
        codes[gate] = find_kernel(llama.by_name, gdn_kernel(S, gate == "key"))
        if codes[gate] is None:
            sys.exit("lens vs-llama: no %s in %s" % (" or ".join(gdn_kernel(S, gate == "key")), argv[1]))
    print("MI50 (gfx906) simulation, %s objects -- a simulation, not a measurement" % toolchain)
    print("%-14s %20s %20s %18s" % ("shape", "ours us (band)", "llama us (band)", "ratio (band)"))
    rows = []
    shapes = SHAPES
    if os.environ.get("SIM_SHAPES"):  # T:B:gate, e.g. "1:1:scalar 64:1:key"
        shapes = [(int(t), int(b), g) for t, b, g in (w.split(":") for w in os.environ["SIM_SHAPES"].split())]
    for T, B, gate in shapes:
        ours, theirs = ours_times(objects, toolchain, T, B, gate), llama_times(codes[gate], T, B, gate)
        shape = "T=%d B=%d" % (T, B) + (" KDA" if gate == "key" else "")
        vals = [*ours, *theirs, *ratio_band(ours, theirs)]
        rows.append([toolchain, shape] + ["%.1f" % v for v in vals[:6]] + ["%.2f" % v for v in vals[6:]])
        print("%-14s %8.1f (%.1f-%.1f) %8.1f (%.1f-%.1f) %6.2f (%.2f-%.2f)" % ((shape,) + tuple(vals)), flush=True)
    merge_tsv(TABLE, ["toolchain", "shape", "ours_us", "ours_low", "ours_high", "llama_us", "llama_low", "llama_high",
                      "ratio", "ratio_low", "ratio_high"], rows, toolchain)
    print("wrote %s (%s rows)" % (os.path.relpath(TABLE, ROOT), toolchain))
    return 0


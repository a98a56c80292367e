"""llama.cpp's own kernel for GGML_OP_GATED_DELTA_NET and libkdn's call, simulated on gfx906 the same way.

usage: python3 -m lens vs-llama GGML_DIR [TOOLCHAIN CO_DIR]      (make isa-vs-llama GGML=DIR [TOOLCHAIN=rocm6])

GGML_DIR is a ggml checkout or a llama.cpp one (its ggml/ is used). Its src/ggml-cuda/gated_delta_net.cu is
compiled for gfx906 as ggml's HIP build compiles it (GGML_USE_HIP, -O3, the tree's own headers; device code
only, into build/): the code object llama.cpp's HIP backend runs on an MI50. Nothing of the checkout is kept.
Both sides go through the simulator with the same rules: ggml's kernel launched as its launcher launches
it (a workgroup of 4 wave64 rows per 4 state columns of one head, every token in one launch), libkdn as
kdn_gated_delta_net launches it on its automatic path (lens/launches.cpp records the launches).
TOOLCHAIN CO_DIR: the label and the directory of the product's code objects (default: the local hipcc's and
build/isa; `make isa-vs-llama TOOLCHAIN=rocm6` gives rocm6.4 and build/isa-rocm6, what MI50 users build).

Writes results/gfx906-vs-llama.tsv (this toolchain's rows): shape, ours_us, llama_us, ratio = llama_us /
ours_us (> 1: libkdn faster). Every figure is a simulation, not a measurement.
"""
import os
import struct
import subprocess
import sys

from lens.codeobj import ROOT, TARGET, build, demangle, tool
from lens.gate import merge_tsv, toolchain_name
from lens.launch import Launch
from lens.product import Objects, PRODUCT_SRC, product_rows, simulate_cached
from lens.program import load


# (T tokens per sequence, B sequences, gate) at Qwen3-Next's layer: decode, prompts, then the per-key (KDA)
# gate g [S, H_V, T, B] of Kimi-Linear's layer, which libkdn runs on its recurrent kernel.
SHAPES = [(1, 1, "scalar"), (1, 4, "scalar"), (64, 1, "scalar"), (512, 1, "scalar"), (4096, 1, "scalar"),
          (64, 1, "key"), (512, 1, "key")]
H_V, H_K, S = 32, 16, 128
TABLE = os.path.join(ROOT, "results/gfx906-vs-llama.tsv")
# ggml's kernel for the call llama.cpp makes: S_v = 128, the gate's kind (KDA or not), final state only (K = 1).
LLAMA_KERNEL = "gated_delta_net_cuda<128, %s, false>"
LLAMA_WARPS = 4  # rows of 64 lanes per workgroup, one state column each (ggml's launcher)


def ggml_src(ggml_dir):
    """(the kernel's .cu, ggml's src and include directories) of a ggml or llama.cpp checkout."""
    root = os.path.join(ggml_dir, "ggml") if os.path.isdir(os.path.join(ggml_dir, "ggml", "src")) else ggml_dir
    cu = os.path.join(root, "src", "ggml-cuda", "gated_delta_net.cu")
    if not os.path.exists(cu):
        sys.exit("lens vs-llama: no src/ggml-cuda/gated_delta_net.cu under %s" % ggml_dir)
    return cu, os.path.join(root, "src"), os.path.join(root, "include")


def build_llama(ggml_dir, outdir):
    """ggml's kernel file as a gfx906 code object, with the defines and flags of ggml's HIP build."""
    cu, src, inc = ggml_src(os.path.abspath(ggml_dir))
    co = os.path.join(outdir, "ggml_gated_delta_net.co")
    cmd = [tool("HIPCC", "hipcc"), "-x", "hip", "--offload-arch=" + TARGET, "-O3", "-DNDEBUG",
           "-std=gnu++17", "-DGGML_USE_HIP", "-D__HIP_PLATFORM_AMD__=1", "-I" + src, "-I" + inc,
           "--cuda-device-only", "--no-gpu-bundle-output", "-c", cu, "-o", co]
    if subprocess.run(cmd).returncode:
        sys.exit("lens vs-llama: %s does not build for %s with %s" % (cu, TARGET, cmd[0]))
    return co


def fastdiv_magic(d):
    """The (multiplier, shift, divisor) triple of division by d with a 32-bit multiply-high and a
    shift (Granlund-Montgomery): shift = ceil(log2 d), multiplier = 2^32 (2^shift - d) / d + 1."""
    shift = (d - 1).bit_length()
    return ((1 << 32) * ((1 << shift) - d) // d + 1) & 0xffffffff, shift, d


def llama_kernel(gate):
    return LLAMA_KERNEL % ("true" if gate == "key" else "false")


def llama_args(code, T, B):
    """The kernel-argument segment of ggml's launch for contiguous q, k [S, H_K, T, B], v [S, H_V, T, B],
    g and beta [1, H_V, T, B] (strides in floats, as ggml passes them), placed at the offsets the code
    object's metadata gives: 8 pointers, 12 int64 (H, T, n_seqs, q/k, v, g/beta strides of dims 1-3),
    two fast-division triples (key head h % H_K, sequence / 1), the scale, the snapshot stride, K."""
    args = [a for a in code.meta["args"] if not a["value_kind"].startswith("hidden_")]
    seg = bytearray(code.meta["kernarg_size"])
    ptrs = [(i + 1) << 40 for i in range(8)]
    ints = [H_V, T, B, S, S * H_K, S * H_K * T, S, S * H_V, S * H_V * T, 1, H_V, H_V * T]
    vals = ([("<Q", p) for p in ptrs] + [("<q", v) for v in ints] + [("<III", fastdiv_magic(H_K)),
            ("<III", fastdiv_magic(1)), ("<f", S ** -0.5), ("<q", S * S * H_V * B), ("<i", 1)])
    if [a["size"] for a in args] != [struct.calcsize(f) for f, _ in vals]:
        sys.exit("lens vs-llama: %s's arguments are not the ones this tool knows (%s)" % (
            code.name, [a["size"] for a in args]))
    for a, (fmt, v) in zip(args, vals):
        struct.pack_into(fmt, seg, a["offset"], *(v if isinstance(v, tuple) else (v,)))
    return bytes(seg)


def llama_us(code, T, B, gate):
    """ggml's launch simulated; its HBM floor is the state's round trip and each token's vectors."""
    g_floats = S * H_V if gate == "key" else H_V
    nbytes = 4 * (2 * S * S * H_V * B + T * B * (2 * S * H_K + 2 * S * H_V + H_V + g_floats))
    launch = Launch((H_V, B, S // LLAMA_WARPS), (64, LLAMA_WARPS, 1), 0, llama_args(code, T, B), hbm_bytes=nbytes)
    return simulate_cached(code, launch)["us"]


def ours_us(objects, toolchain, T, B, gate):
    """kdn_gated_delta_net's automatic path: the sum of its launches."""
    rows = product_rows(objects, toolchain, shapes=[(T, B, H_V, gate)], paths=(("auto", "auto"),))
    return next(r["us"] for r in rows if r["kernel"] == "total")


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
    toolchain = argv[2] if len(argv) == 4 else toolchain_name()
    co_dir = argv[3] if len(argv) == 4 else os.path.join(ROOT, "build/isa")
    objects = product_objects(co_dir)
    llama = load(build_llama(argv[1], co_dir))
    names = demangle(list(llama))
    codes = {}
    for gate in sorted({g for _, _, g in SHAPES}):
        codes[gate] = next((c for n, c in llama.items() if names[n].startswith("void " + llama_kernel(gate))), None)
        if codes[gate] is None:
            sys.exit("lens vs-llama: no %s in %s" % (llama_kernel(gate), argv[1]))
    print("MI50 (gfx906) simulation, %s objects -- a simulation, not a measurement" % toolchain)
    print("%-14s %10s %10s %7s" % ("shape", "ours us", "llama us", "ratio"))
    rows = []
    for T, B, gate in SHAPES:
        ours, theirs = ours_us(objects, toolchain, T, B, gate), llama_us(codes[gate], T, B, gate)
        shape = "T=%d B=%d" % (T, B) + (" KDA" if gate == "key" else "")
        rows.append([toolchain, shape, "%.1f" % ours, "%.1f" % theirs, "%.2f" % (theirs / ours)])
        print("%-14s %10.1f %10.1f %7.2f" % (shape, ours, theirs, theirs / ours), flush=True)
    merge_tsv(TABLE, ["toolchain", "shape", "ours_us", "llama_us", "ratio"], rows, toolchain)
    print("wrote %s (%s rows)" % (os.path.relpath(TABLE, ROOT), toolchain))
    return 0


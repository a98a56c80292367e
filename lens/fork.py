"""The gfx906 fork's GATED_DELTA_NET kernels (llamacpp-gfx906-furnace, public source), found in a checkout
the caller names and built for gfx906 at run time: the LDS-resident wave64 state-slab prefill kernel
(gated_delta_net_lds_wave64<COLS>: a workgroup of one wave per COLS state columns of one head, the slab in
LDS for every token) and the column-per-wave decode kernel (gated_delta_net_cpw<CPW>: 4 waves, each CPW
columns held in registers). Nothing of the checkout is kept: the kernels' part of its
ggml/src/ggml-cuda/gated_delta_net.cu (everything before the host launcher) is compiled under build/ with
its own tree's headers, with the instantiations the tables launch.

The launches follow the fork's launcher: the LDS kernel for T > 1 (S_v = 128, scalar gate), grid (H, B,
128 / COLS) of 64 threads; the CPW kernel for T = 1, grid (H, B, 128 / (4 CPW)) of (64, 4)."""
import os
import re
import subprocess
import sys

from lens.codeobj import ROOT, TARGET, tool
from lens.ggml import PTRS
from lens.launch import Launch, fastdiv_magic, pack_args
from lens.program import Objects

GDN_FILE = "src/ggml-cuda/gated_delta_net.cu"
S = 128
# the template instantiations the tables launch: the fork's own (16 columns, CPW 2 and 4) and the 8-column
# slab its source comment times against them
LDS_COLS = (16, 8)
CPW = (2, 4)
LAUNCHER = re.compile(r"^template\s*<[^>]*>\s*\n\s*static void launch_gated_delta_net", re.M)


def ggml_root(checkout):
    """The checkout's ggml directory (a llama.cpp tree's ggml/, or the tree itself)."""
    root = os.path.abspath(checkout)
    return os.path.join(root, "ggml") if os.path.isdir(os.path.join(root, "ggml", "src")) else root


def kernel_text(checkout):
    """The kernels' part of the fork's gated_delta_net.cu, or exit saying what is missing."""
    path = os.path.join(ggml_root(checkout), GDN_FILE)
    if not os.path.exists(path):
        sys.exit("lens fork: no %s under %s (a llama.cpp-gfx906 fork checkout)" % (GDN_FILE, checkout))
    text = open(path).read()
    for name in ("gated_delta_net_lds_wave64", "gated_delta_net_cpw"):
        if name not in text:
            sys.exit("lens fork: %s has no %s (not the fork's kernels)" % (path, name))
    cut = LAUNCHER.search(text)
    body = text[:cut.start()] if cut else text
    return "\n".join(line for line in body.splitlines() if not line.startswith("#include"))


def build_fork(checkout, outdir):
    """OUTDIR/fork_gdn.co: the fork's kernels, compiled as ggml's HIP build compiles its .cu files."""
    root = ggml_root(checkout)
    os.makedirs(outdir, exist_ok=True)
    refs = ["(const void *) gated_delta_net_lds_wave64<%d, false>" % c for c in LDS_COLS] + \
           ["(const void *) gated_delta_net_cpw<%d, false>" % c for c in CPW]
    src = os.path.join(outdir, "fork_gdn.cu")
    with open(src, "w") as f:
        f.write('#include "ggml-cuda/common.cuh"\n%s\n\nconst void * kdn_lens_fork_kernels[] = {%s};\n' % (
            kernel_text(checkout), ", ".join(refs)))
    co = os.path.join(outdir, "fork_gdn.co")
    cmd = [tool("HIPCC", "hipcc"), "-x", "hip", "--offload-arch=" + TARGET, "-O3", "-DNDEBUG", "-std=gnu++17",
           "-DGGML_USE_HIP", "-D__HIP_PLATFORM_AMD__=1", "-I" + os.path.join(root, "src"),
           "-I" + os.path.join(root, "include"), "--cuda-device-only", "--no-gpu-bundle-output", "-c", src, "-o", co]
    if subprocess.run(cmd).returncode:
        sys.exit("lens fork: the fork's kernels do not build for %s with %s" % (TARGET, cmd[0]))
    return co


def fork_objects(checkout, toolchain):
    return Objects([build_fork(checkout, os.path.join(ROOT, "build/peers", "fork-" + toolchain))])


def gdn_args(code, H, T, B, H_k, with_seqs):
    """The fork's argument list: 8 pointers, H, T (and B: the CPW kernel), the q/k, v and gate strides in
    floats, h % H_k and seq / 1 as fast divisions, the scale, the snapshot stride, K = 1, no state rows."""
    strides = [S, S * H_k, S * H_k * T, S, S * H, S * H * T, 1, H, H * T]
    ints = [H, T] + ([B] if with_seqs else []) + strides
    vals = [("<Q", p) for p in PTRS] + [("<q", v) for v in ints] + \
        [("<III", fastdiv_magic(H_k)), ("<III", fastdiv_magic(1)), ("<f", S ** -0.5),
         ("<q", S * S * H * B), ("<i", 1), ("<Q", 0), ("<q", 0)]
    return pack_args(code, vals)


def gdn_bytes(H, T, B, H_k):
    """The compulsory HBM bytes: the state in and out, q and k per key head, v and the output per value
    head, the gate and beta."""
    return 4 * (2 * S * S * H * B + T * B * (2 * S * H_k + 2 * S * H + 2 * H))


def lds_launch(code, cols, H, T, B, H_k):
    return Launch((H, B, S // cols), (64, 1, 1), 0, gdn_args(code, H, T, B, H_k, False),
                  hbm_bytes=gdn_bytes(H, T, B, H_k))


def cpw_launch(code, cpw, H, T, B, H_k):
    return Launch((H, B, S // (4 * cpw)), (64, 4, 1), 0, gdn_args(code, H, T, B, H_k, True),
                  hbm_bytes=gdn_bytes(H, T, B, H_k))


def lds_code(objects, cols):
    return objects.get("gated_delta_net_lds_wave64<%d, false>" % cols)


def cpw_code(objects, cpw):
    return objects.get("gated_delta_net_cpw<%d, false>" % cpw)

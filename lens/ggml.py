"""ggml's HIP kernels launched as ggml's launchers launch them (grid, block, the argument segment and the
compulsory HBM bytes), from a test-backend-ops case string such as
GATED_DELTA_NET(type=f32,head_count=32,head_size=128,n_seq_tokens=1,n_seqs=1,v_repeat=1,permuted=0,kda=0).
Contiguous tensors only; placeholders stand for the device pointers (their values never matter here)."""
import re

from lens.launch import Launch, fastdiv_magic, pack_args


PTRS = [(i + 1) << 40 for i in range(8)]


def parse_case(case):
    """(op, {name: int, list of ints or str}) of a test-backend-ops case string."""
    m = re.match(r"^(\w+)\((.*)\)$", case)
    if not m:
        raise ValueError("not a test-backend-ops case: %s" % case)
    vals = {}
    for k, v in re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", m.group(2)):
        if v.startswith("["):
            vals[k] = [int(x) for x in v[1:-1].split(",")]
        else:
            vals[k] = int(v) if re.match(r"^-?\d+$", v) else v
    return m.group(1), vals


# ---- GATED_DELTA_NET: one workgroup of 4 wave64 rows per 4 state columns of one head ---------------
GDN_WARPS = 4


def gdn_kernel(S, kda):
    """The instantiations ggml's launcher may pick (head size S, the per-key (KDA) gate or not), one
    per signature: ggml f31f100f's takes two template arguments, d99724f's a third (snapshots: false)."""
    gate = "true" if kda else "false"
    return ("gated_delta_net_cuda<%d, %s>" % (S, gate), "gated_delta_net_cuda<%d, %s, false>" % (S, gate))


def gdn_launch(code, S, H, T, B, kda, H_k=None):
    """q, k [S, H_k, T, B], v [S, H, T, B], g [1 or S, H, T, B], beta [1, H, T, B], state [S*S*H, B]:
    the grid (H, B, S / 4) of (64, 4) and the arguments of whichever signature the code object has
    (f31f100f's: 7 pointers, 12 int64 strides and counts, two fast divisions, the scale; d99724f's
    adds an eighth pointer, the snapshot stride and K = 1)."""
    H_k = H_k or H
    ints = [H, T, B, S, S * H_k, S * H_k * T, S, S * H, S * H * T, 1, H, H * T]
    tail = [("<III", fastdiv_magic(H_k)), ("<III", fastdiv_magic(1)), ("<f", S ** -0.5)]  # h % H_k, seq / 1
    n_ptrs = sum(1 for a in code.meta["args"] if a["value_kind"] == "global_buffer")
    vals = [("<Q", p) for p in PTRS[:n_ptrs]] + [("<q", v) for v in ints] + tail
    if n_ptrs == 8:
        vals += [("<q", S * S * H * B), ("<i", 1)]
    g_floats = S * H if kda else H
    nbytes = 4 * (2 * S * S * H * B + T * B * (2 * S * H_k + 2 * S * H + H + g_floats))
    return Launch((H, B, S // GDN_WARPS), (64, GDN_WARPS, 1), 0, pack_args(code, vals), hbm_bytes=nbytes)


def gdn_case(case):
    """(kernel names, launch maker) of a GATED_DELTA_NET case (v_repeat 1, not permuted)."""
    _, v = parse_case(case)
    if v.get("permuted") or v.get("v_repeat", 1) != 1:
        raise ValueError("only contiguous, v_repeat = 1 cases: %s" % case)
    S, H, T, B, kda = v["head_size"], v["head_count"], v["n_seq_tokens"], v["n_seqs"], bool(v.get("kda"))
    return gdn_kernel(S, kda), lambda code: gdn_launch(code, S, H, T, B, kda)


# ---- SOLVE_TRI: one workgroup of (32, k) threads per matrix, A in LDS; past 64 x 32 hipBLAS ---------
TRI_FAST_K = (32, 16, 14, 12, 10, 8, 6, 4, 2, 1)  # the k of the launcher's n = 64 instantiations
TRI_MAX_N, TRI_MAX_K = 64, 32


def tri_case(case):
    """(kernel names, launch maker) of a SOLVE_TRI case, or (None, why) where ggml hands it to hipBLAS."""
    _, v = parse_case(case)
    n, _, ne2, ne3 = v["ne_lhs"]
    k = v["ne_rhs"][0]
    if n > TRI_MAX_N or k > TRI_MAX_K:
        return None, "n = %d, k = %d: past %d x %d ggml calls hipBLAS's strsmBatched (rocBLAS), a library " \
                     "kernel this lens does not build" % (n, k, TRI_MAX_N, TRI_MAX_K)
    fast = n == 64 and k in TRI_FAST_K
    name = ("solve_tri_f32_fast<%d, %d>" % ((64, k) if fast else (0, 0)),)

    def launch(code):
        strides = [n * n, n * n * ne2, n * k, n * k * ne2, n * k, n * k * ne2]
        vals = [("<Q", p) for p in PTRS[:3]] + [("<III", fastdiv_magic(ne2))] + [("<Q", s) for s in strides] + \
            [("<i", 0 if fast else n), ("<i", 0 if fast else k)]
        return Launch((ne2 * ne3, 1, 1), (32, k, 1), 0, pack_args(code, vals),
                      hbm_bytes=4 * (n * n + 2 * n * k) * ne2 * ne3)
    return name, launch


# ---- ADD: k_bin_bcast, blocks of up to 128 threads over half of dim 0 -----------------------------------
def add_case(case):
    """(kernel names, launch maker) of an ADD case of two contiguous f32 tensors of one shape."""
    _, v = parse_case(case)
    ne = v["ne"]
    if v.get("nr", [1, 1, 1, 1]) != [1, 1, 1, 1] or ne[1] * ne[2] * ne[3] != 1:
        raise ValueError("only same-shape adds of one row: %s" % case)
    ne0, rows = ne[0], 1

    def launch(code):
        hne0 = max(ne0 // 2, 1)
        bx = min(hne0, 128)
        by = min(rows, 128 // bx)
        one = fastdiv_magic(1)
        n_ptrs = sum(1 for a in code.meta["args"] if a["value_kind"] == "global_buffer")
        vals = [("<Q", p) for p in PTRS[:3]] + [("<I", ne0), ("<I", rows), ("<I", 1), ("<III", one),
                                                  ("<III", fastdiv_magic(ne0)), ("<III", fastdiv_magic(rows)),
                                                  ("<III", one), ("<III", one)] + \
            [("<I", s) for s in (ne0, ne0 * rows, ne0 * rows, 1, ne0, ne0 * rows, ne0 * rows, 1, ne0,
                                 ne0 * rows, ne0 * rows)] + [("<Q", PTRS[1])] * (n_ptrs - 3)
        return Launch((-(-hne0 // bx), -(-rows // by), 1), (bx, by, 1), 0, pack_args(code, vals),
                      hbm_bytes=3 * 4 * ne0 * rows)
    # f31f100f's kernel reads src1 from its argument; d99724f's from a pack of one (n_fuse = 1)
    add = "k_bin_bcast<&(op_add(float, float)), float, float, float%s>"
    return (add % "", add % ", float const*"), launch


CASES = {"GATED_DELTA_NET": ("gated_delta_net", gdn_case), "SOLVE_TRI": ("solve_tri", tri_case),
         "ADD": ("binbcast", add_case)}


def case_kernel(case):
    """(ggml source file, kernel names or None, launch maker or the reason it is not simulated)."""
    op = parse_case(case)[0]
    if op not in CASES:
        raise ValueError("no launcher for %s" % op)
    src, fn = CASES[op]
    return (src,) + fn(case)


def find_kernel(codes, names):
    """The code of the first of names (demangled, without 'void ' and the parameter list) in codes, a
    {demangled name: Code}, or None."""
    return next((codes[n] for n in names if n in codes), None)

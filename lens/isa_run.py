"""make isa-run: the product's gfx906 code objects run by the functional mode (lens/functional.py) on
generated inputs, launched exactly as kdn_gated_delta_net launches them (lens/launches.cpp records the
launches, their kernel arguments and the buffers' addresses from the library's own dispatch), and
their outputs compared with a double-precision recurrence under the ladder's layer tolerance
(TOL_CHUNK, phases/phases.h; docs/tolerances.md) 

  python3 -m lens isa-run [quick|full [LOG]]     (make isa-run [TOOLCHAIN=rocm6] [ISA_RUN=full])
One line per kernel launch and shape: the ladder's verdict words (PASS, FAIL), the normwise error
against the fp64 reference and the largest difference from the CPU executor."""
import math
import os
import random
import struct
import subprocess
import time

from concurrent.futures import ThreadPoolExecutor

from lens.codeobj import ROOT, build
from lens.functional import Memory, run
from lens.isa_faults import plant
from lens.func_ops import Fault
from lens.launch import Launch
from lens.product import PRODUCT_SRC, launches_tool
from lens.program import Objects

ATOL, RTOL, NREL = 2e-5, 1e-4, 1e-5     # TOL_CHUNK (phases/phases.h): the ladder's layer rows
POISON = 0x7fc0dead                      # a NaN: dst and workspace bytes no kernel wrote

# (path, T, B, H_k, H_v, D, gate, K, head map, chunk): small shapes that still take every code path
# the dispatch picks at them, odd D (17, 100) as the ladder tests them
QUICK = [("recurrent", 1, 1, 1, 2, 16, "scalar", 1, "tiled", 0),
         ("chunked", 40, 1, 1, 1, 16, "scalar", 1, "tiled", 32)]
FULL = QUICK + [
    ("recurrent", 3, 2, 1, 2, 17, "scalar", 1, "block", 0),
    ("recurrent", 5, 1, 2, 2, 32, "key", 1, "tiled", 0),
    ("recurrent", 4, 1, 1, 2, 16, "scalar", 3, "tiled", 0),
    ("recurrent", 2, 1, 1, 1, 100, "scalar", 1, "tiled", 0),
    ("chunked", 70, 1, 1, 2, 17, "scalar", 1, "block", 64),
    ("chunked", 96, 2, 1, 1, 16, "scalar", 1, "tiled", 32),
    ("chunked", 64, 1, 1, 1, 128, "scalar", 1, "tiled", 64),
]


def shape_text(s):
    path, T, B, hk, hv, D, gate, K, hmap, chunk = s
    return "%s T=%d B=%d H_k=%d H_v=%d D=%d %s K=%d %s%s" % (path, T, B, hk, hv, D, gate, K, hmap,
                                                              " chunk=%d" % chunk if chunk else "")


def record(s):
    """The buffers' addresses, the workspace bytes and the launches of one call."""
    path, T, B, hk, hv, D, gate, K, hmap, chunk = s
    cmd = [launches_tool(), path] + [str(v) for v in (T, B, hk, hv, D, gate, K, hmap, chunk)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    launches, addrs, ws = [], None, 0
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "#buffers":
            addrs, ws = [int(v) for v in f[1].split()], int(f[2])
            continue
        launches.append((f[0], tuple(int(v) for v in f[1].split()), tuple(int(v) for v in f[2].split()),
                         int(f[3]), bytes.fromhex(f[4])))
    return addrs, ws, launches


def inputs(s, seed=20261206):
    """q, k, v, g, beta, state as float lists (ggml layouts), k and q rows of unit norm, g a log-decay
    in (-1, -0.01), beta in (0, 1), a unit-scale initial state."""
    path, T, B, hk, hv, D, gate, K, hmap, chunk = s
    rnd = random.Random(seed)

    def rows(n_rows):
        out = []
        for _ in range(n_rows):
            r = [rnd.gauss(0, 1) for _ in range(D)]
            n = math.sqrt(sum(x * x for x in r)) or 1.0
            out.extend(x / n for x in r)
        return out
    f32 = lambda xs: [struct.unpack("<f", struct.pack("<f", x))[0] for x in xs]  # noqa: E731
    q, k = f32(rows(T * B * hk)), f32(rows(T * B * hk))
    v = f32([rnd.gauss(0, 1) for _ in range(D * hv * T * B)])
    g = f32([-rnd.uniform(0.01, 1.0) for _ in range((D if gate == "key" else 1) * hv * T * B)])
    beta = f32([rnd.uniform(0.05, 0.95) for _ in range(hv * T * B)])
    state = f32([rnd.gauss(0, 0.5) for _ in range(D * D * hv * B)])
    return dict(q=q, k=k, v=v, g=g, beta=beta, state=state)


def reference(s, x):
    """dst of the call in double precision: outputs [D, H_v, T, B], then K snapshots [D, D, H_v, B]."""
    path, T, B, hk, hv, D, gate, K, hmap, chunk = s
    out = [0.0] * (D * hv * T * B)
    snaps = [[0.0] * (D * D * hv * B) for _ in range(K)]
    scale = 1.0 / math.sqrt(D)
    for b in range(B):
        for h in range(hv):
            kh = h % hk if hmap == "tiled" else h // (hv // hk)
            base = (b * hv + h) * D * D
            S = [[x["state"][base + i + j * D] for j in range(D)] for i in range(D)]
            for t in range(T):
                kq = ((b * T + t) * hk + kh) * D
                kv, qv = x["k"][kq:kq + D], x["q"][kq:kq + D]
                vv = x["v"][((b * T + t) * hv + h) * D:][:D]
                gi = (b * T + t) * hv + h
                decay = [math.exp(x["g"][gi * D + i]) for i in range(D)] if gate == "key" \
                    else [math.exp(x["g"][gi])] * D
                bt = x["beta"][gi]
                for i in range(D):
                    S[i] = [decay[i] * e for e in S[i]]
                for j in range(D):
                    d = bt * (vv[j] - sum(S[i][j] * kv[i] for i in range(D)))
                    for i in range(D):
                        S[i][j] += kv[i] * d
                    out[((b * T + t) * hv + h) * D + j] = scale * sum(S[i][j] * qv[i] for i in range(D))
                slot = T - 1 - t
                if slot < K:
                    for i in range(D):
                        for j in range(D):
                            snaps[slot][base + i + j * D] = S[i][j]
    return out + [e for sn in snaps for e in sn], sum(1 for t in range(T) if T - 1 - t < K)


def pack(xs):
    return bytearray(struct.pack("<%df" % len(xs), *xs))


def run_call(objects, s, x, schedule="forward"):
    """dst as the gfx906 objects compute it (float bit patterns), and the launches' names."""
    path, T, B, hk, hv, D, gate, K, hmap, chunk = s
    addrs, ws, launches = record(s)
    mem = Memory()
    for name, at in zip(("q", "k", "v", "g", "beta", "state"), addrs):
        mem.add(at, pack(x[name]))
    n_dst = D * hv * T * B + K * D * D * hv * B
    mem.add(addrs[6], bytearray(struct.pack("<I", POISON) * n_dst))
    if ws:
        mem.add(addrs[7], bytearray(struct.pack("<I", POISON) * (ws // 4)))
    names = []
    for name, grid, block, lds, args in launches:
        run(objects.get(name), Launch(grid, block, lds, args), mem, schedule)
        names.append(name)
    buf, off = mem.bufs[mem.bases.index(addrs[6])], 0
    return list(struct.unpack_from("<%df" % n_dst, buf, off)), names


def compare(got, ref, n):
    """(max |got - ref|, nrel, within TOL_CHUNK) over the first n values."""
    got, ref = got[:n], ref[:n]
    scale = max(1.0, math.sqrt(sum(r * r for r in ref) / max(1, n)))
    diff = max((abs(a - b) if a == a else math.inf) for a, b in zip(got, ref))
    num = math.sqrt(sum((a - b) ** 2 if a == a else math.inf for a, b in zip(got, ref)))
    den = math.sqrt(sum(b * b for b in ref))
    nrel = num / den if den else (0.0 if num == 0 else math.inf)
    ok = all(a == a and abs(a - b) <= ATOL * scale + RTOL * abs(b) for a, b in zip(got, ref)) and nrel <= NREL
    return diff, nrel, ok


def check(objects, s, cpu=None):
    """One shape: (verdict, text)."""
    path, T, B, hk, hv, D, gate, K, hmap, chunk = s
    x = inputs(s)
    ref, slots = reference(s, x)
    n = D * hv * T * B + slots * D * D * hv * B
    t0 = time.time()
    try:
        got, names = run_call(objects, s, x)
        other, _ = run_call(objects, s, x, "reverse")
    except Fault as e:
        return "FAIL", "%s: stopped: %s" % (shape_text(s), e)
    diff, nrel, ok = compare(got, ref, n)
    same = got[:n] == other[:n]
    text = "%s: %s  max_diff %.3e  nrel %.3e (tol %.0e)  schedules %s  %.1f s" % (
        shape_text(s), " + ".join(nm.split("<")[0] for nm in names), diff, nrel, NREL,
        "agree" if same else "DIFFER", time.time() - t0)
    if cpu is not None:
        want = cpu(s, x)
        cdiff = max(abs(a - b) if a == a else math.inf for a, b in zip(got[:n], want[:n]))
        text += "  cpu executor max_diff %.3e" % cdiff
        ok = ok and cdiff <= ATOL
    return ("PASS" if ok and same else "FAIL"), text


def build_objects():
    """The product's kernel files built now (the tree as it is) into ISA_BUILD/run (build/isa/run)."""
    out = os.path.join(ROOT, os.environ.get("ISA_BUILD", "build/isa"), "run")
    os.makedirs(out, exist_ok=True)
    srcs = [os.path.join(ROOT, "kernels", f + ".cpp") for f in PRODUCT_SRC]
    with ThreadPoolExecutor(2) as pool:
        cos = list(pool.map(lambda src: build(src, out), srcs))
    if os.environ.get("ISA_FAULT"):  # a planted fault (lens/isa_faults.py)
        plant(os.environ["ISA_FAULT"], dict(zip(PRODUCT_SRC, cos)))
    return Objects(cos), out


def main(argv):
    """isa-run [quick|full [LOG]]"""
    shapes = FULL if argv and argv[0] == "full" else QUICK
    log = open(argv[1], "w") if len(argv) > 1 else None
    objects, co_dir = build_objects()
    fails = 0
    for s in shapes:
        verdict, text = check(objects, s)
        line = "%s\t%s" % (verdict, text)
        print(line, flush=True)
        if log:
            log.write(line + "\n")
        fails += verdict != "PASS"
    print("isa-run (gfx906 objects in %s, the lens's functional mode): %d passed, %d failed" % (
        os.path.relpath(co_dir, ROOT), len(shapes) - fails, fails))
    return 1 if fails else 0

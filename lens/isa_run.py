"""make isa-run: the product's gfx906 code objects run by the functional mode (lens/functional.py) on
generated inputs, launched exactly as kdn_gated_delta_net launches them (lens/launches.cpp records the
launches, their kernel arguments and the buffers' and views' addresses from the library's own dispatch),
and their outputs compared with a double-precision recurrence under the ladder's layer tolerance
(TOL_CHUNK, phases/phases.h; docs/tolerances.md) and with the CPU executor's libkdn on the same inputs
(lens/func_cpu.py: bit for bit where nothing rounds differently, else within TOL_CHUNK with the reason)

  python3 -m lens isa-run [quick|full [LOG]]     (make isa-run [TOOLCHAIN=rocm6] [ISA_RUN=full])
One line per shape: the ladder's verdict words (PASS, FAIL), the kernels, the normwise error against the
fp64 reference, whether two wave schedules agree, the comparison with the CPU executor and a hash of dst's
bytes (equal hashes in two toolchains' logs: the same dst bit for bit); the full set
ends with a coverage line: every kernel in the objects (each template instance) launched by some row."""
import hashlib
import math
import os
import random
import struct
import subprocess
import time

from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

from lens.codeobj import ROOT, build
from lens.functional import Memory, run
from lens.func_cpu import run_cpu
from lens.isa_faults import plant
from lens.func_ops import Fault
from lens.launch import Launch
from lens.product import PRODUCT_SRC, launches_tool
from lens.program import Objects

ATOL, RTOL, NREL = 2e-5, 1e-4, 1e-5     # TOL_CHUNK (phases/phases.h): the ladder's layer rows
POISON = 0x7fc0dead                      # a NaN: dst and workspace bytes no kernel wrote

Shape = namedtuple("Shape", "path T B hk hv D gate K hmap chunk views")


def row(path, T, B, hk, hv, D, gate="scalar", K=1, hmap="tiled", chunk=0, views="dense"):
    return Shape(path, T, B, hk, hv, D, gate, K, hmap, chunk, views)


# make test's rows: the recurrent decode, the chunked path at chunk 32 and the same through the gather
QUICK = [row("recurrent", 1, 1, 1, 2, 16), row("chunked", 40, 1, 1, 1, 16, chunk=32),
         row("chunked", 40, 1, 1, 2, 16, chunk=32, views="fused")]
# The recurrent kernel's instances: R (state rows per lane) and kFull from D (16 and 33: R 4 partial,
# 64: 4 full, 100 and 70: 8 partial, 128: 8 full, 200: 16 partial, 256: 16 full), kVec from D % 4 and the
# views' alignment (odd D, or "odd" views where D is a multiple of 4), then one row per variant the
# dispatch picks: decode (T = 1), a prompt of one column per group, one of two columns per group (more
# one-column workgroups than one round of the MI50's 240 slots: H_v * B > 240 / ceil(D / 16)), K = 2
# snapshots, the KDA gate. The ladder's D (128, 100, 70, 64, 33, 16) and the recurrent kernel's 200, 256.
RECURRENT_D = [(16, "dense"), (33, "dense"), (64, "dense"), (64, "odd"), (100, "dense"), (70, "dense"),
               (128, "dense"), (128, "odd"), (200, "dense"), (200, "odd"), (256, "dense"), (256, "odd")]


def recurrent_rows(D, views):
    heads = 240 // -(-D // 16) + 1  # two-column prompts: one-column workgroups past one round
    return [row("recurrent", 1, 2, 2, 4, D, hmap="block", views=views),
            row("recurrent", 3, 1, 2, 4, D, views=views),
            row("recurrent", 2, 1, 1, heads, D, views=views),
            row("recurrent", 3, 2, 1, 2, D, K=2, hmap="block", views=views),
            row("recurrent", 3, 1, 2, 2, D, gate="key", views=views)]


# The chunked kernels at chunk 32 and 64, kVec (D % 4, aligned views) and not, both head maps, B = 2, the
# gather (strided q and k staged into the workspace: fused and odd views), K = 2 snapshots (the last
# tokens recurrent) and D = 128; one chunk and a part (a ragged last chunk) at most, few heads: a chunked
# workgroup takes seconds in the functional mode. Few heads take the state pass's 8-column slab at
# chunk 64; its 16-column one runs past a round of 180 8-column workgroups: 91 heads at D = 16 and, for
# scalar loads, 14 (3 minutes a row).
FULL = QUICK + [row("chunked", 33, 1, 2, 4, 33, hmap="block", chunk=32),
                row("chunked", 65, 1, 1, 1, 70, chunk=64),
                row("chunked", 33, 2, 1, 1, 64, chunk=32, views="odd"),
                row("chunked", 40, 1, 1, 2, 16, K=2, chunk=32),
                row("chunked", 64, 1, 1, 1, 128, chunk=64),
                row("chunked", 40, 1, 1, 91, 16, chunk=64),
                row("chunked", 40, 1, 1, 91, 14, chunk=64)] + [
    r for D, views in RECURRENT_D for r in recurrent_rows(D, views)]


def shape_text(s):
    return "%s T=%d B=%d H_k=%d H_v=%d D=%d %s K=%d %s%s%s" % (
        s.path, s.T, s.B, s.hk, s.hv, s.D, s.gate, s.K, s.hmap, " chunk=%d" % s.chunk if s.chunk else "",
        "" if s.views == "dense" else " " + s.views + " views")


def record(s):
    """The call's memory (buffers: name -> (address, bytes); views: name -> (address, (nb1, nb2, nb3)))
    and its launches, from the library's own dispatch (lens/launches.cpp)."""
    cmd = [launches_tool()] + [str(v) for v in s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    launches, buffers, views = [], {}, {}
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "#buffer":
            buffers[f[1]] = (int(f[2]), int(f[3]))
        elif f[0] == "#view":
            views[f[1]] = (int(f[2]), tuple(int(v) for v in f[3].split()))
        else:
            launches.append((f[0], tuple(int(v) for v in f[1].split()), tuple(int(v) for v in f[2].split()),
                             int(f[3]), bytes.fromhex(f[4])))
    return buffers, views, launches


def extents(s):
    """ne[4] of each input tensor (ggml order)."""
    T, B, D = s.T, s.B, s.D
    return dict(q=(D, s.hk, T, B), k=(D, s.hk, T, B), v=(D, s.hv, T, B), g=(D if s.gate == "key" else 1, s.hv, T, B),
                beta=(1, s.hv, T, B), state=(D, D, s.hv, B))


def inputs(s, seed=20261206):
    """q, k, v, g, beta, state as float lists (ggml layouts), k and q rows of unit norm, g a log-decay
    in (-1, -0.01), beta in (0, 1), a unit-scale initial state."""
    T, B, hk, hv, D, gate = s.T, s.B, s.hk, s.hv, s.D, s.gate
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
    T, B, hk, hv, D, gate, K, hmap = s.T, s.B, s.hk, s.hv, s.D, s.gate, s.K, s.hmap
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


def memory(s, x):
    """The call's buffers (name -> (address, initial bytes): the inputs written through their views,
    every other byte POISON), its views and its launches."""
    sizes, views, launches = record(s)
    init = {n: (at, bytearray(struct.pack("<I", POISON) * (size // 4) + bytes(size % 4)))
            for n, (at, size) in sizes.items()}
    for name, ne in extents(s).items():
        addr, (nb1, nb2, nb3) = views[name]
        base, buf = next(v for v in init.values() if v[0] <= addr < v[0] + len(v[1]))
        it = iter(x[name])
        for i3 in range(ne[3]):
            for i2 in range(ne[2]):
                for i1 in range(ne[1]):
                    rowv = [next(it) for _ in range(ne[0])]
                    struct.pack_into("<%df" % ne[0], buf, addr - base + i1 * nb1 + i2 * nb2 + i3 * nb3, *rowv)
    return init, views, launches


def run_call(objects, init, launches, schedule="forward"):
    """dst as the gfx906 objects compute it from the buffers init (memory()): a float list."""
    mem = Memory()
    for at, data in init.values():
        if data:
            mem.add(at, bytearray(data))
    for name, grid, block, lds, args in launches:
        run(objects.get(name), Launch(grid, block, lds, args), mem, schedule)
    at, data = init["dst"]
    buf = mem.bufs[mem.bases.index(at)]
    return list(struct.unpack_from("<%df" % (len(data) // 4), buf, 0))


def normwise(got, ref):
    """(max |got - ref|, nrel, within TOL_CHUNK): ref the reference the ladder's rows compare with."""
    scale = max(1.0, math.sqrt(sum(r * r for r in ref) / max(1, len(ref))))
    diff = max((abs(a - b) if a == a else math.inf) for a, b in zip(got, ref))
    num = math.sqrt(sum((a - b) ** 2 if a == a else math.inf for a, b in zip(got, ref)))
    den = math.sqrt(sum(b * b for b in ref))
    nrel = num / den if den else (0.0 if num == 0 else math.inf)
    ok = all(a == a and abs(a - b) <= ATOL * scale + RTOL * abs(b) for a, b in zip(got, ref)) and nrel <= NREL
    return diff, nrel, ok


def bits(xs):
    return struct.pack("<%df" % len(xs), *xs)


# Why the objects' dst is not the CPU executor's bit for bit: the same kernel source, the same launches and
# the same order of operations, but hipcc contracts a * b + c into one fma (-ffp-contract=fast, HIP's
# default) where g++ for x86-64 rounds twice (with -ffp-contract=off objects the recurrent kernel's rows are
# bitwise: ISA_CONTRACT=off), and the chunked kernels' expf is ROCm's (v_exp_f32 based) on gfx906 and
# glibc's on the CPU (the recurrent kernel's decay is IEEE arithmetic on both: kernels/decay.h).
EXPF_KERNELS = ("kernel_chunked_intra", "kernel_chunked_state")


CONTRACT = os.environ.get("ISA_CONTRACT", "fast") != "off"


def uses_expf(names):
    return any(nm.split("<")[0] in EXPF_KERNELS for nm in names)


def why_not_bitwise(names):
    return ", ".join(["fma contraction"] * CONTRACT + ["device expf"] * uses_expf(names))


def against_cpu(got, want, n, names):
    """(agrees, text): the objects' dst against the CPU executor's, bit for bit where nothing in between
    rounds differently (ISA_CONTRACT=off, no expf), else the written values within TOL_CHUNK and the
    bytes no kernel wrote equal."""
    if bits(got) == bits(want):
        return True, "bitwise"
    differ = "%d of %d differ" % (sum(bits([a]) != bits([b]) for a, b in zip(got, want)), n)
    if not CONTRACT and not uses_expf(names):
        return False, "NOT bitwise, %s (-ffp-contract=off objects, no expf)" % differ
    cdiff, cnrel, ok = normwise(got[:n], want[:n])
    return ok and bits(got[n:]) == bits(want[n:]), "max_diff %.3e nrel %.3e, %s (%s)" % (
        cdiff, cnrel, differ, why_not_bitwise(names))


def check(objects, s):
    """One shape: (verdict, text, kernels launched)."""
    x = inputs(s)
    ref, slots = reference(s, x)
    n = s.D * s.hv * s.T * s.B + slots * s.D * s.D * s.hv * s.B
    t0 = time.time()
    init, views, launches = memory(s, x)
    names = [nm for nm, *_ in launches]
    try:
        got = run_call(objects, init, launches)
        other = run_call(objects, init, launches, "reverse")
    except Fault as e:
        return "FAIL", "%s: stopped: %s" % (shape_text(s), e), names
    diff, nrel, ok = normwise(got[:n], ref[:n])
    same = bits(got) == bits(other)
    text = "%s: %s  max_diff %.3e  nrel %.3e (tol %.0e)  schedules %s  cpu executor: " % (
        shape_text(s), " + ".join(sorted(set(nm.split("<")[0] for nm in names))), diff, nrel, NREL,
        "agree" if same else "DIFFER")
    cpu_ok, cpu_text = against_cpu(got, run_cpu(s, init, views, extents(s)), n, names)
    text += cpu_text
    text += "  dst %s  %.1f s" % (hashlib.sha1(bits(got)).hexdigest()[:12], time.time() - t0)  # across toolchains
    return ("PASS" if ok and same and cpu_ok else "FAIL"), text, names


def build_objects():
    """The product's kernel files built now (the tree as it is) into ISA_BUILD/run (build/isa/run; with
    ISA_CONTRACT=off -ffp-contract=off into ISA_BUILD/run-contract-off)."""
    out = os.path.join(ROOT, os.environ.get("ISA_BUILD", "build/isa"), "run" if CONTRACT else "run-contract-off")
    os.makedirs(out, exist_ok=True)
    srcs = [os.path.join(ROOT, "kernels", f + ".cpp") for f in PRODUCT_SRC]
    flags = () if CONTRACT else ("-ffp-contract=off",)
    with ThreadPoolExecutor(2) as pool:
        cos = list(pool.map(lambda src: build(src, out, flags), srcs))
    if os.environ.get("ISA_FAULT"):  # a planted fault (lens/isa_faults.py)
        plant(os.environ["ISA_FAULT"], dict(zip(PRODUCT_SRC, cos)))
    return Objects(cos), out


def coverage(objects, launched):
    """(verdict, text): every kernel of the product's objects launched by some row."""
    missing = sorted(set(objects.by_name) - launched)
    if not missing:
        return "PASS", "coverage: every one of the %d kernels in the objects launched" % len(objects.by_name)
    return "FAIL", "coverage: %d of the %d kernels in the objects launched by no row: %s" % (
        len(missing), len(objects.by_name), ", ".join(missing))


def main(argv):
    """isa-run [quick|full [LOG]]"""
    full = bool(argv) and argv[0] == "full"
    log = open(argv[1], "w") if len(argv) > 1 else None
    objects, co_dir = build_objects()
    lines, launched = [], set()

    def report(verdict, text):
        line = "%s\t%s" % (verdict, text)
        print(line, flush=True)
        if log:
            log.write(line + "\n")
        lines.append(verdict)
    for s in FULL if full else QUICK:
        verdict, text, names = check(objects, s)
        launched.update(names)
        report(verdict, text)
    if full:
        report(*coverage(objects, launched))
    fails = sum(v != "PASS" for v in lines)
    print("isa-run (gfx906 objects in %s, the lens's functional mode): %d passed, %d failed" % (
        os.path.relpath(co_dir, ROOT), len(lines) - fails, fails))
    return 1 if fails else 0

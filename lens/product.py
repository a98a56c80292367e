"""The product: what kdn_gated_delta_net launches, simulated, and its floors."""
import hashlib
import json
import os
import subprocess

from lens.codeobj import CPU_RUNTIME, ROOT
from lens.device import simulate
from lens.launch import Launch
from lens.bands import figure_band, style_of
from lens.work import H_K, H_V, D_K, layer_floor_us, work_intra, work_recurrent, work_state


# ---- the product: what kdn_gated_delta_net launches, simulated -----------------------------------
# Qwen3-Next's Delta-Net layer: 16 key heads, 32 value heads, D_k = D_v = 128. A shape is (T, B, value
# heads, gate): 16 and 8 value heads (with 8 and 4 key heads) are what one MI50 runs when llama.cpp
# splits a layer's heads over 2 or 4 cards; gate "key" is the per-key gate (KDA), g [D, H_v, T, B].
HEADS = 32
# 48 and 12 value heads are Qwen3.5-27B's layer on one card and on four (16 and 4 key heads there; the
# lens gives every shape H_v / 2 key heads: the kernels' grids are per value head, and key heads change only
# how often the same q and k rows are read).
SHAPES = [(1, 1), (1, 4), (1, 128), (64, 1), (512, 1), (512, 4), (1024, 1), (2048, 1), (4096, 1), (4096, 4),
          (16384, 1), (512, 1, 48), (2048, 1, 48), (512, 1, 16), (2048, 1, 16), (4096, 1, 16), (512, 1, 12),
          (2048, 1, 12), (512, 1, 8), (2048, 1, 8), (4096, 1, 8), (64, 1, 32, "key"), (512, 1, 32, "key")]


def full_shape(s):
    """(T, B, value heads, gate, K) of a shape given as (T, B[, heads[, gate[, K]]]); K: the state
    snapshots the call keeps (1: the final state; an MTP verify call keeps one per token)."""
    return tuple(s) + (HEADS, "scalar", 1)[len(s) - 2:]


PATHS = (("recurrent", "recurrent"), ("chunked", "chunked"), ("auto", "auto"))
PEAK_FLOPS = 13.4e12   # the floors: fp32 FMA peak (60 CUs x 64 lanes x 2 x 1.725 GHz)
PEAK_HBM = 0.86e12     # and sustained HBM bandwidth
PRODUCT_SRC = ("deltanet_recurrent", "chunked_intra", "chunked_state", "gather")
LAUNCHES_SRC = ["kernels/gated_delta_net.c", "kernels/dispatch.c", "kernels/tuning.c"] + ["kernels/%s.cpp" % f for f in PRODUCT_SRC]


def launches_tool():
    """Builds lens/launches.cpp (host C/C++, the CPU backend) under build/sim; returns its path."""
    out = os.path.join(ROOT, "build/sim")
    exe = os.path.join(out, "launches")
    deps = LAUNCHES_SRC + ["lens/launches.cpp", "lens/launches.h"] + list(CPU_RUNTIME)
    if os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(os.path.join(ROOT, d))
                                   for d in deps):
        return exe
    os.makedirs(out, exist_ok=True)
    objs = []
    cxx, cc = os.environ.get("CXX", "g++"), os.environ.get("CC", "cc")
    for src in LAUNCHES_SRC:
        o = os.path.join(out, os.path.basename(src) + ".o")
        if src.endswith(".c"):
            cmd = [cc, "-std=c11", "-O1", "-DKDN_BACKEND_CPU", "-I" + ROOT, "-c", src, "-o", o]
        else:
            cmd = [cxx, "-std=c++17", "-O1", "-DKDN_BACKEND_CPU", "-I" + ROOT, "-include",
                   "lens/launches.h", "-c", src, "-o", o]
        subprocess.run(cmd, check=True, cwd=ROOT)
        objs.append(o)
    subprocess.run([cxx, "-std=c++17", "-O1", "-DKDN_BACKEND_CPU", "-I" + ROOT, "lens/launches.cpp"] + objs +
                   list(CPU_RUNTIME) + ["-o", exe], check=True, cwd=ROOT)
    return exe


def recorded_launches(path, T, B, heads=HEADS, gate="scalar", K=1):
    """[(kernel name with template arguments, grid, block, LDS bytes, argument bytes)] of one call."""
    cmd = [launches_tool(), path, str(T), str(B), str(heads // 2), str(heads), str(D_K), gate, str(K)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        name, grid, block, lds, hexa = line.split("\t")
        rows.append((name, tuple(int(v) for v in grid.split()), tuple(int(v) for v in block.split()), int(lds),
                     bytes.fromhex(hexa)))
    return rows


def floor_work(name, T, B, heads=HEADS, gate="scalar", K=1):
    """(flops, compulsory HBM bytes) of a product kernel at the Qwen3-Next shape with this many value
    heads (and half as many key heads: every term scales with the heads), gate and snapshots."""
    short = name.split("<")[0]
    if short == "kernel_gather_strided":
        flops, nbytes = 0.0, 2.0 * T * B * H_K * D_K * 4
    elif short == "kernel_chunked_intra":
        wg, fmas, nbytes, _ = work_intra(T, B)
        flops = 2.0 * wg * fmas
    elif short == "kernel_chunked_state":
        wg, fmas, nbytes = work_state(T, B)
        flops = 2.0 * wg * fmas
    elif short == "kernel_deltanet_recurrent":
        wg, fmas, nbytes, _ = work_recurrent(T, B, K=K)
        flops = 2.0 * wg * fmas
    else:
        raise KeyError(name)
    if gate == "key":  # g is a row per key dimension, not one number per head and token
        nbytes += T * B * H_V * (D_K - 1) * 4.0
    return flops * heads / H_V, float(nbytes) * heads / H_V


def floor_us(flops, nbytes):
    return max(flops / PEAK_FLOPS, nbytes / PEAK_HBM) * 1e6


# Metadata no simulated time reads: the arguments (the launch brings their bytes) and the symbol's name
# (a rename moves no instruction, so it keeps the kernel's key).
NOT_IN_CODE_KEY = ("args", "name")


def code_key(code):
    """What a kernel's simulated time depends on: its instructions, resources and the simulator."""
    h = hashlib.sha1()
    for x in code.insts:
        h.update(("%s %s %s\n" % (x.mnem, x.text, x.tgt)).encode())
    h.update(repr(sorted((k, v) for k, v in code.meta.items() if k not in NOT_IN_CODE_KEY)).encode())
    h.update(SIM_VERSION.encode())
    return h.hexdigest()[:16]


# The simulator's rules, versioned: raise it with every change that can move a simulated time (the
# gate then simulates every kernel again instead of taking the table's times for unchanged code).
SIM_VERSION = "5"


# Simulated launches, on disk: the simulation is deterministic, so a launch of code whose key (its
# instructions, resources and SIM_VERSION) is unchanged is not simulated again (make isa after a
# change to one kernel re-simulates that kernel only). SIM_CACHE names the file; "" turns it off.
# The modules a simulated launch's numbers depend on (the simulator and this file's summary of it).
SIM_MODULES = ("machine", "decode", "semantics", "program", "launch", "fastforward", "cu", "device", "product")
SOURCE_HASH = hashlib.sha1(b"".join(open(os.path.join(ROOT, "lens", m + ".py"), "rb").read()
                                    for m in SIM_MODULES)).hexdigest()[:12]
CACHE_FILE = os.environ.get("SIM_CACHE", os.path.join(ROOT, "build/sim/cache.tsv"))


def cache_key(code, launch):
    """The code's key, the launch and the simulator's own text (SIM_MODULES: an edit that forgot
    SIM_VERSION does not reuse old results)."""
    return "%s %s %s %s %d %s %s" % (SOURCE_HASH, code_key(code), ",".join(map(str, launch.grid)),
                                     ",".join(map(str, launch.block)), launch.lds,
                                     hashlib.sha1(launch.args).hexdigest()[:16], launch.hbm_bytes)


def load_cache():
    out = {}
    if CACHE_FILE and os.path.exists(CACHE_FILE):
        with open(CACHE_FILE) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("\t")
                v = json.loads(value)
                v["stalls"] = {(a, b): c for a, b, c in v["stalls"]}
                out[key] = v
    return out


def store_cache(key, v):
    if not CACHE_FILE:
        return
    os.makedirs(os.path.dirname(CACHE_FILE), exist_ok=True)
    rec = dict(v, stalls=[[a, b, c] for (a, b), c in sorted(v["stalls"].items())])
    with open(CACHE_FILE, "a") as f:  # one line per launch: concurrent runs append whole lines
        f.write("%s\t%s\n" % (key, json.dumps(rec, sort_keys=True)))


CACHE = None


def simulate_cached(code, launch):
    global CACHE
    if CACHE is None:
        CACHE = load_cache()
    key = cache_key(code, launch)
    if key not in CACHE:
        CACHE[key] = summarise(simulate(code, launch))
        store_cache(key, CACHE[key])
    return CACHE[key]


def summarise(res):
    """The numbers the tables keep of a SimResult: time, binding resource, the slowest wave's stalls
    by loop and cause in the round that costs most."""
    count, size, clocks, cu = max(res.rounds, key=lambda r: r[0] * r[2])
    hbm_clocks = res.hbm_us * 1e-6 * res.clock * size / res.wgs
    slow = max(cu.waves, key=lambda w: w.end)
    stalls = {}
    for (loop, cause), v in slow.stall.items():
        key = ("-" if loop is None else "0x%x" % cu.code.insts[loop].addr, cause)
        stalls[key] = stalls.get(key, 0) + v
    shares = {"VALU": max(cu.valu_busy) / clocks, "LDS": cu.lds_busy / clocks, "vmem": cu.vmem_busy / clocks}
    for cause in ("wait", "barrier"):
        shares[{"wait": "waits", "barrier": "barrier"}[cause]] = sum(v for (l, c), v in stalls.items()
                                                                     if c == cause) / clocks
    binding = "HBM" if hbm_clocks >= clocks else max(shares, key=shares.get)
    if res.rounds[-1][1] < res.slots and len(res.rounds) > 1 and res.rounds[-1][2] > 0.5 * clocks \
            and res.rounds[-1][1] < 0.5 * res.slots and binding != "HBM" and count == 1:
        binding = "rounds"
    return dict(us=res.us, binding=binding, stalls=stalls, unknown=res.unknown,
                rounds=len(res.rounds), per_cu=res.per_cu)


def product_rows(objects, toolchain, shapes=SHAPES, paths=PATHS):
    """Rows (toolchain, path, kernel, T, B, heads, gate, simulated_us, its band, floor_us, binding,
    stalls) per launch and per path total."""
    rows = []
    for shape in shapes:
        T, B, heads, gate, K = full_shape(shape)
        for label, path in paths:
            total, total_floor, total_lo, total_hi = 0.0, 0.0, 0.0, 0.0
            for name, grid, block, lds, args in recorded_launches(path, T, B, heads, gate, K):
                flops, nbytes = floor_work(name, T, B, heads, gate, K)
                r = simulate_cached(objects.get(name), Launch(grid, block, lds, args, hbm_bytes=nbytes))
                f = floor_us(flops, nbytes)
                lo, hi = figure_band(r["us"], style_of(name))
                rows.append(dict(toolchain=toolchain, path=label, kernel=name.replace(" ", ""), T=T, B=B, heads=heads,
                                 gate=gate, K=K, us=r["us"], low=lo, high=hi, floor=f,
                                 binding=r["binding"],
                                 stalls=r["stalls"], unknown=r["unknown"]))
                total += r["us"]
                total_floor += f
                total_lo += lo
                total_hi += hi
            rows.append(dict(toolchain=toolchain, path=label, kernel="total", T=T, B=B, heads=heads, gate=gate, K=K,
                             us=total, low=total_lo, high=total_hi, floor=total_floor,
                             layer_floor=layer_floor_us(T, B, heads, gate, PEAK_FLOPS, PEAK_HBM, K=K),
                             binding="-", stalls={}, unknown=0))
    return rows


# simulated_us at the MI50's clock under llama.cpp load (lens/machine.py CLOCK_UNDER_LOAD), low_us-high_us the band
# (the kernel style's out-of-sample error, lens/bands.py), layer_floor_us the call's (total rows; work.py)
SIM_COLS = ["toolchain", "path", "kernel", "T", "B", "H_v", "gate", "simulated_us", "low_us", "high_us",
            "floor_us", "layer_floor_us", "binding"]


def print_rows(rows):
    print("MI50 (gfx906) simulation -- a simulation, not a measurement (docs/performance.md, 'MI50 simulator')")
    print("%-9s %-10s %-58s %6s %4s %3s %-6s %11s %9s  %s" % ("toolchain", "path", "kernel", "T", "B", "H_v", "gate",
                                                              "simulated us", "floor us", "binding"))
    for r in rows:
        print("%-9s %-10s %-58s %6d %4d %3d %-6s %11.1f %9.1f  %s%s" % (
            r["toolchain"], r["path"], r["kernel"][:58], r["T"], r["B"], r["heads"], r["gate"], r["us"], r["floor"],
            r["binding"],
                                                              "  (%d unknown branches)" % r["unknown"]
                                                              if r["unknown"] else ""))

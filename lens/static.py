"""The gfx906 ISA lens: resources and static loop counts of every kernel, and the static gates.

Builds every kernels/*.cpp and phases/kernels/*.cpp for gfx906 (device code only, one code object per
file), reads the code object's metadata (llvm-readelf --notes) and its
disassembly (llvm-objdump -d --mcpu=gfx906) and reports, per kernel:

  resources  VGPRs, SGPRs, scratch, LDS (static + the dynamic LDS its launcher
             passes, from sizeof of the LDS struct, LDS_PROBE below)
             and the waves per SIMD they allow;
  loops      every loop of the machine code (a backward branch; the body is
             the address range from its target to the branch): instructions,
             VALU and FMA counts, LDS reads by width, global loads by width
             and how many are *serialised* (an s_waitcnt that drains every
             outstanding load -- vmcnt(0) -- or a load issued earlier in the
             same iteration stands between the previous memory instruction
             and the load), cross-lane operations by kind, s_barrier count.

The simulated MI50 times are the simulator's (lens/__init__.py) (docs/performance.md, "MI50 simulator"); the
work functions (lens/work.py) give the product kernels' floors there.

  python3 -m lens isa-report   tables + build/isa/isa.tsv
  python3 -m lens isa-check    the static gates of make test (see check())

Python 3 standard library only; the tools are hipcc and LLVM's llvm-objdump /
llvm-readelf (Debian: hipcc pulls in llvm-15). Tool names can be overridden
with HIPCC, OBJDUMP, READELF; ISA_BUILD names the build directory (default
build/isa; `make isa TOOLCHAIN=rocm6` (rocm7) sets all four to the ROCm 6.4 (7.2) chroot's).
"""
import os
import re
import subprocess
import sys

from lens.codeobj import CPU_RUNTIME, KERNEL_DIRS, ROOT, TARGET, build, demangle, disassemble, metadata
from lens.work import work_intra, work_recurrent, work_recurrent_2cols, work_state


FMA = re.compile(r"^v_(fma|fmac|mac|mad|pk_fma|dot2)_")
GLOBAL_LOAD = re.compile(r"^(global|buffer|flat)_load_(dword(x[234])?|ubyte|sbyte|ushort|sshort|short_d16\w*)")
VMEM = re.compile(r"^(global|buffer|flat)_(load|store|atomic)")
LDS_READ_BYTES = {"ds_read_b32": 4, "ds_read_b64": 8, "ds_read_b96": 12, "ds_read_b128": 16, "ds_read2_b32": 8,
                  "ds_read2st64_b32": 8, "ds_read2_b64": 16, "ds_read2st64_b64": 16, "ds_read_u8": 1,
                  "ds_read_u16": 2, "ds_read_i8": 1, "ds_read_i16": 2}
GLOBAL_BYTES = {"dword": 4, "dwordx2": 8, "dwordx3": 12, "dwordx4": 16}
DPP = re.compile(r"\b(quad_perm|row_shl|row_shr|row_ror|row_mirror|row_half_mirror|row_bcast|wave_sh[lr]|wave_ro[lr])")


def vmcnt(ops):
    m = re.search(r"vmcnt\((\d+)\)", ops)
    return int(m.group(1)) if m else None


def loop_stats(body):
    """Counts of one loop body (a list of instructions in address order).
    A global load is serialised when right before it (only scalar
    instructions in between) an s_waitcnt waits for vmcnt(0) or for a memory
    operation issued earlier in the same iteration: the load is issued only
    after every earlier load has returned, so their latencies add up.
    (How long the waits take is the simulator's question: lens/cu.py.)
    """
    st = {"insts": len(body), "valu": 0, "fma": 0, "salu": 0, "lds_read_B": 0, "barrier": 0,
          "dpp": 0, "swizzle": 0, "bpermute": 0, "readlane": 0, "serial16": 0, "serial": 0}
    for w in (4, 8, 12, 16):
        st["gload%d" % w] = 0
    for w in (4, 8, 16):
        st["lds%d" % w] = 0
    pending, drained = 0, False

    for _, mnem, ops, _ in body:
        if mnem.startswith("v_"):
            st["valu"] += 1
            if FMA.match(mnem):
                st["fma"] += 1
            if mnem.startswith("v_readlane") or mnem.startswith("v_readfirstlane") or mnem.startswith("v_writelane"):
                st["readlane"] += 1
            if DPP.search(ops):
                st["dpp"] += 1
        elif mnem.startswith("s_"):
            st["salu"] += 1
        if mnem == "s_barrier":
            st["barrier"] += 1
        elif mnem == "ds_swizzle_b32":
            st["swizzle"] += 1
        elif mnem in ("ds_bpermute_b32", "ds_permute_b32"):
            st["bpermute"] += 1
        elif mnem in LDS_READ_BYTES:
            b = LDS_READ_BYTES[mnem]
            st["lds_read_B"] += b
            k = "lds%d" % (16 if b > 8 else 8 if b > 4 else 4)
            st[k] += 1
        if mnem == "s_waitcnt":
            n = vmcnt(ops)
            if n is not None and (n == 0 or n < pending):
                drained = True
        if not (mnem.startswith("ds_") or mnem.startswith("s_load") or mnem.startswith("s_buffer_load")) \
                and not mnem.startswith("s_") and not VMEM.match(mnem):
            drained = False  # the wait served this consumer, not the next load
        m = GLOBAL_LOAD.match(mnem)
        if m:
            width = GLOBAL_BYTES.get(m.group(2), 4)
            st["gload%d" % width] += 1
            if drained:
                st["serial"] += 1
                if width == 16:
                    st["serial16"] += 1
        if VMEM.match(mnem):
            pending += 1
            drained = False
    return st


def find_loops(insts):
    """Natural loops of the control-flow graph: a branch to a block that
    dominates it is a back edge; the loop is its header and every block that
    reaches the branch without passing the header (back edges to one header
    make one loop). A block skipped over by a backward s_cbranch_execz is
    not a loop unless the branch's target dominates it. Innermost loops
    (containing no other loop) are flagged: they are where the time goes."""
    if not insts:
        return []
    index = {x[0]: i for i, x in enumerate(insts)}
    leaders = {0}
    for i, (addr, mnem, _, tgt) in enumerate(insts):
        if tgt is not None:
            leaders.add(index[tgt])
            leaders.add(i + 1)
        elif mnem == "s_endpgm":
            leaders.add(i + 1)
    starts = sorted(l for l in leaders if l < len(insts))
    block_of = {}
    blocks = []
    for n, s0 in enumerate(starts):
        e = (starts[n + 1] if n + 1 < len(starts) else len(insts)) - 1
        blocks.append((s0, e))
        for i in range(s0, e + 1):
            block_of[i] = n
    succ = [[] for _ in blocks]
    for n, (s0, e) in enumerate(blocks):
        _, mnem, _, tgt = insts[e]
        if tgt is not None:
            succ[n].append(block_of[index[tgt]])
        if mnem != "s_endpgm" and not mnem.startswith("s_branch") and e + 1 < len(insts):
            succ[n].append(block_of[e + 1])
    pred = [[] for _ in blocks]
    for n, ss in enumerate(succ):
        for m in ss:
            pred[m].append(n)
    # dominators, iteratively (blocks in address order; entry = block 0)
    every = set(range(len(blocks)))
    dom = [every for _ in blocks]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for n in range(1, len(blocks)):
            ps = [dom[p] for p in pred[n]]
            d = set.intersection(*ps) | {n} if ps else {n}
            if d != dom[n]:
                dom[n], changed = d, True
    bodies = {}
    for n in range(len(blocks)):
        for h in succ[n]:
            if h in dom[n]:  # back edge n -> h
                body, work = bodies.setdefault(h, {h}), [n]
                while work:
                    x = work.pop()
                    if x not in body:
                        body.add(x)
                        work.extend(pred[x])
    out = []
    heads = sorted(bodies)
    for k, h in enumerate(heads):
        body = bodies[h]
        inner = not any(bodies[o] < body for o in heads if o != h)
        depth = sum(1 for o in heads if o != h and body < bodies[o])
        code = [insts[i] for b in sorted(body) for i in range(blocks[b][0], blocks[b][1] + 1)]
        st = loop_stats(code)
        st.update(index=k, start=insts[blocks[h][0]][0], end=max(insts[blocks[b][1]][0] for b in body),
                  inner=inner, depth=depth)
        out.append(st)
    return out


# ---- resources -----------------------------------------------------------------
def waves_per_simd(vgpr, sgpr, lds, wg_threads):
    """gfx906: 256 VGPRs per lane (granule 4) and 800 SGPRs (granule 16) per
    SIMD, at most 10 waves per SIMD, 64 KB of LDS per CU shared by the
    workgroups on it, a workgroup's waves spread over the 4 SIMDs."""
    by_v = 256 // max(4, -(-vgpr // 4) * 4)
    by_s = 800 // max(16, -(-sgpr // 16) * 16)
    waves_per_wg_per_simd = max(1, -(-wg_threads // 64) // 4)
    by_lds = (65536 // lds) * waves_per_wg_per_simd if lds else 10
    return min(10, by_v, by_s, by_lds)


LDS_PROBE = {  # kernel -> the struct its launcher passes as dynamic LDS, and how many of the kernel's leading
    "kernel_chunked_intra": ("IntraLds", 1),  # integer template arguments it takes (C; C and the slab width)
    "kernel_chunked_state": ("StateLds", 2),
}


def dynamic_lds(src, names, outdir):
    """sizeof of the LDS structs of the dynamic-LDS kernels of one file: a
    host program that includes the kernel file (CPU backend) prints them."""
    want = []
    for n in names:
        m = re.match(r"_Z(\d+)", n)
        if not m:
            continue
        kname = n[len(m.group(0)):len(m.group(0)) + int(m.group(1))]
        ints = re.match(r"I((?:Li\d+E)+)", n[len(m.group(0)) + int(m.group(1)):])
        if kname in LDS_PROBE and ints:
            struct, nargs = LDS_PROBE[kname]
            args = re.findall(r"Li(\d+)E", ints.group(1))[:nargs]
            want.append((n, "%s<%s>" % (struct, ", ".join(args))))
    if not want:
        return {}
    prog = os.path.join(outdir, "lds_probe_%s.cpp" % os.path.basename(src)[:-4])
    with open(prog, "w") as f:
        f.write('#include "%s"\n#include <cstdio>\nint main() {\n' % os.path.abspath(src))
        for n, expr in want:
            f.write('    printf("%s %%zu\\n", sizeof(%s));\n' % (n, expr))
        f.write("}\n")
    exe = prog[:-4]
    cxx = os.environ.get("CXX", "g++")
    subprocess.run([cxx, "-std=c++17", "-DKDN_BACKEND_CPU", "-I" + ROOT, prog] +
                   [os.path.join(ROOT, f) for f in CPU_RUNTIME] + ["-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    return {a: int(b) for a, b in (l.split() for l in out.splitlines())}


WG_THREADS = {"kernel_chunked_intra": 256, "kernel_chunked_state": 256, "kernel_deltanet_recurrent": 256}


def analyse(outdir):
    os.makedirs(outdir, exist_ok=True)
    srcs = sorted(os.path.join(ROOT, d, f) for d in KERNEL_DIRS for f in os.listdir(os.path.join(ROOT, d))
                  if f.endswith(".cpp"))
    kernels = []
    for src in srcs:
        co = build(src, outdir)
        meta = metadata(co)
        code = disassemble(co)
        dyn = dynamic_lds(src, list(meta), outdir)
        pretty = demangle(list(meta))
        for name, md in meta.items():
            short = re.sub(r"<.*", "", pretty[name])
            lds = md.get("lds_static", 0) + dyn.get(name, 0)
            threads = WG_THREADS.get(short, 256)
            k = dict(file=os.path.relpath(src, ROOT), name=name, pretty=pretty[name], short=short,
                     vgpr=md["vgpr"], sgpr=md["sgpr"], scratch=md.get("scratch", 0), lds=lds,
                     waves=waves_per_simd(md["vgpr"], md["sgpr"], lds, threads), threads=threads,
                     loops=find_loops(code.get(name, [])), total=loop_stats(code.get(name, [])))
            kernels.append(k)
    return kernels


LOOP_COLS = ["insts", "valu", "fma", "salu", "lds4", "lds8", "lds16", "lds_read_B", "gload4", "gload8",
             "gload16", "serial", "serial16", "dpp", "swizzle", "bpermute", "readlane",
             "barrier"]


def write_isa_tsv(kernels, path):
    with open(path, "w") as f:
        f.write("\t".join(["kernel", "vgpr", "sgpr", "scratch", "lds", "waves_simd", "loop", "inner", "depth",
                           "range"] + LOOP_COLS) + "\n")
        for k in kernels:
            rows = [("all", "", "", "", k["total"])] + [
                (str(l["index"]), "1" if l["inner"] else "0", str(l["depth"]),
                 "%x-%x" % (l["start"], l["end"]), l) for l in k["loops"]]
            for loop, inner, depth, rng, st in rows:
                f.write("\t".join([k["pretty"].replace(" ", ""), str(k["vgpr"]), str(k["sgpr"]), str(k["scratch"]),
                                   str(k["lds"]), str(k["waves"]), loop, inner, depth, rng] +
                                  [str(st[c]) for c in LOOP_COLS]) + "\n")


def print_isa(kernels):
    print("gfx906 ISA lens (hipcc -O3 --offload-arch=%s; loops = backward branches, * = innermost)" % TARGET)
    print("%-52s %5s %5s %7s %7s %5s" % ("kernel", "VGPR", "SGPR", "scratch", "LDS B", "w/SIMD"))
    for k in kernels:
        print("%-52s %5d %5d %7d %7d %5d" % (k["pretty"][:52], k["vgpr"], k["sgpr"], k["scratch"], k["lds"],
                                             k["waves"]))
    hdr = ("loop", "insts", "VALU", "FMA", "ds_rd 4/8/16 B", "gld 4/8/16 B", "serial(16B)", "dpp/swz/bperm/rdl",
           "bar")
    for k in kernels:
        if not k["loops"]:
            continue
        print("\n%s" % k["pretty"])
        print("  %-14s %6s %6s %6s %15s %14s %12s %18s %4s" % hdr)
        for l in k["loops"]:
            print("  %-14s %6d %6d %6d %15s %14s %12s %18s %4d" % (
                "%d%s %x" % (l["index"], "*" if l["inner"] else " ", l["start"]), l["insts"], l["valu"], l["fma"],
                "%d/%d/%d" % (l["lds4"], l["lds8"], l["lds16"]),
                "%d/%d/%d" % (l["gload4"], l["gload8"], l["gload16"]),
                "%d(%d)" % (l["serial"], l["serial16"]),
                "%d/%d/%d/%d" % (l["dpp"], l["swizzle"], l["bpermute"], l["readlane"]), l["barrier"]))



# kernel (short name, template arguments), waves/SIMD it is designed for, work function, the calls it
# stands for. The state pass has two at C = 64: the 16-column slab, and the 8-column one for grids whose
# twice as many workgroups still fit its 180 slots (up to 11 heads at B = 1). The recurrent kernel has
# three: prompts run its instantiation with the next token's loads ahead (scalar gate, no snapshots in
# the loop; D_k = 128: R = 8, full rows, 16-byte row runs) with two state columns per group where one
# column per group would take more than one round (the MI50 at B = 1 and 4: 128 workgroups at B = 1
# fill one round of 180 slots at 3 waves per SIMD), with one column otherwise (its 4 waves per SIMD are
# the figure the CPU build reports for the launcher's choice, KDN_ROUND_WORKGROUPS); decode (T = 1) the
# one without the token ahead, one column per group (a single token, no loop: 5 waves per SIMD or more,
# so that the B = 1 grid of 256 workgroups fits one round).
PRODUCT = [("kernel_chunked_intra", "64, true", 2, work_intra, ("prefill",)),
           ("kernel_chunked_state", "64, 16, true", 3, work_state, ("prefill",)),
           ("kernel_chunked_state", "64, 8, true", 3, work_state, ("prefill",)),
           ("kernel_deltanet_recurrent", "8, true, false, false, true, true, 2", 3, work_recurrent_2cols,
            ("prefill",)),
           ("kernel_deltanet_recurrent", "8, true, false, false, true, true, 1", 4, work_recurrent, ()),
           ("kernel_deltanet_recurrent", "8, true, false, false, true, false, 1", 5, work_recurrent, ("decode",))]
def product_kernels(kernels):
    """(kernel, designed waves, work function, calls) of each product instantiation."""
    found = []
    for short, args, waves, work, calls in PRODUCT:
        k = next((k for k in kernels if k["short"].endswith(short) and ("<" + args + ">") in k["pretty"]), None)
        if k is None:
            sys.exit("lens: product kernel %s<%s> not found in the code objects" % (short, args))
        found.append((k, waves, work, calls))
    return found


# ---- gates (make test, where hipcc exists) ---------------------------------------
def check(kernels):
    """The static gates: every kernel without scratch and within 64 KB of LDS; each product kernel at
    its designed waves per SIMD, with no serialised 16-byte global load in any loop (the simulated
    time gate is lens/gate.py's check). Returns the failures."""
    fails = []
    for k in kernels:
        if k["scratch"]:
            fails.append("%s: %d B of scratch per lane (gfx906 product kernels use none)" % (k["pretty"], k["scratch"]))
        if k["lds"] > 65536:
            fails.append("%s: %d B of LDS (> 64 KB)" % (k["pretty"], k["lds"]))
    for k, waves, _, _ in product_kernels(kernels):
        if k["waves"] < waves:
            fails.append("%s: %d waves per SIMD (%d VGPRs, %d B LDS), designed for %d" % (
                k["pretty"], k["waves"], k["vgpr"], k["lds"], waves))
        for l in k["loops"]:
            if l["serial16"]:
                fails.append("%s: loop %d at 0x%x issues %d of its %d 16-byte loads right after a wait that drains "
                             "the earlier loads" % (k["pretty"], l["index"], l["start"], l["serial16"], l["gload16"]))
    return fails


def main(argv):
    cmd = argv[1] if len(argv) > 1 else "report"
    if cmd not in ("report", "check"):
        sys.exit("usage: python3 -m lens isa-report|isa-check")
    out = os.path.join(ROOT, os.environ.get("ISA_BUILD", "build/isa"))
    ks = analyse(out)
    write_isa_tsv(ks, os.path.join(out, "isa.tsv"))
    if cmd == "report":
        print_isa(ks)
        print("\nTSV: %s/isa.tsv (every kernel and loop)" % os.path.relpath(out, ROOT))
        return 0
    fails = check(ks)
    for f in fails:
        print("gfx906 gate: " + f, file=sys.stderr)
    if fails:
        return 1
    print("gfx906 ISA gates: %d kernels without scratch and within 64 KB of LDS; product kernels at their "
          "waves per SIMD, no serialised 16-byte loads in their loops" % len(ks))
    return 0


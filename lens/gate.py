"""The product tables in results/ and the gate (make test): no product kernel's simulated time more
than 5 % over the table."""
import os

from lens.codeobj import ROOT, read_tsv
from lens.launch import Launch
from lens.product import HEADS, SIM_COLS, code_key, floor_work, recorded_launches, simulate_cached


# ---- the gate (make test): no product kernel's simulated time more than 5 % over the table --------
SIM_TABLE = os.path.join(ROOT, "results/gfx906-sim.tsv")
LOOPS_TABLE = os.path.join(ROOT, "results/gfx906-sim-loops.tsv")
CODE_TABLE = os.path.join(ROOT, "results/gfx906-sim-code.tsv")
REGRESSION = 1.05
GATE_SHAPES = {(1, 1, HEADS, "scalar"), (64, 1, HEADS, "scalar")}
LOOPS_COLS = ["toolchain", "kernel", "T", "B", "H_v", "gate", "loop", "cause", "clocks"]


def merge_tsv(path, head, rows, toolchain):
    """Rewrites a results table with this toolchain's rows replaced by rows (lists of strings)."""
    keep = [r for r in read_tsv(path) if r["toolchain"] != toolchain]
    with open(path, "w") as f:
        f.write("\t".join(head) + "\n")
        for r in keep:
            f.write("\t".join(r[h] for h in head) + "\n")
        for r in rows:
            f.write("\t".join(str(v) for v in r) + "\n")


def save_tables(rows, objects, toolchain):
    merge_tsv(SIM_TABLE, SIM_COLS, [[r["toolchain"], r["path"], r["kernel"], r["T"], r["B"], r["heads"], r["gate"],
                                     "%.1f" % r["us"], "%.1f" % r["low"], "%.1f" % r["high"],
                                     "%.1f" % r["floor"],
                                     "%.1f" % r["layer_floor"] if "layer_floor" in r else "-", r["binding"]] for r in rows], toolchain)
    loops, seen = [], set()
    for r in rows:
        key = (r["kernel"], r["T"], r["B"], r["heads"], r["gate"])
        if r["kernel"] != "total" and key not in seen:
            seen.add(key)
            loops += [[toolchain] + list(key) + [loop, cause, round(v)]
                      for (loop, cause), v in sorted(r["stalls"].items())]
    merge_tsv(LOOPS_TABLE, LOOPS_COLS, loops, toolchain)
    names = sorted({r["kernel"] for r in rows if r["kernel"] != "total"})
    merge_tsv(CODE_TABLE, ["toolchain", "kernel", "code"],
              [[toolchain, n, code_key(objects.get(n.replace(",", ", ")))] for n in names], toolchain)


def worst_loop(toolchain, kernel, shape, stalls):
    """The loop and cause whose stall clocks grew most against the committed loop table."""
    want = (toolchain, kernel) + tuple(str(v) for v in shape)
    old = {(r["loop"], r["cause"]): int(r["clocks"]) for r in read_tsv(LOOPS_TABLE)
           if tuple(r[c] for c in LOOPS_COLS[:6]) == want}
    grow = {k: v - old.get(k, 0) for k, v in stalls.items()}
    if not grow:
        return "no loop stalls recorded"
    (loop, cause), g = max(grow.items(), key=lambda kv: kv[1])
    return "loop at %s grew most: %s +%d clocks (of the slowest wave)" % (loop, {"wait": "waits", "issue": "issue",
                                                                                "barrier": "barrier"}.get(cause, cause),
                                                                         g)


def check(objects, toolchain):
    """Fails when a product kernel's simulated time grew more than 5 % against results/gfx906-sim.tsv.
    A kernel whose code (and the simulator) is what the table was made from has the table's times
    (the simulation is deterministic); one that changed is simulated again at the gate's shapes."""
    rows = [r for r in read_tsv(SIM_TABLE) if r["toolchain"] == toolchain and r["kernel"] != "total"]
    if not rows:
        return None
    keys = {r["kernel"]: r["code"] for r in read_tsv(CODE_TABLE) if r["toolchain"] == toolchain}
    fails, checked, done = [], 0, set()
    for r in rows:
        name = r["kernel"].replace(",", ", ")
        shape = (int(r["T"]), int(r["B"]), int(r["H_v"]), r["gate"])
        T, B = shape[:2]
        try:
            code = objects.get(name)
        except KeyError:
            fails.append("%s: not in the code objects (the table has it)" % name)
            continue
        if keys.get(r["kernel"]) == code_key(code) or shape not in GATE_SHAPES or (name, shape) in done:
            continue
        done.add((name, shape))
        # "two-launch": the chunked path's label in rows simulated before it was renamed
        path = {"recurrent": "recurrent", "chunked": "chunked", "two-launch": "chunked", "auto": "auto"}[r["path"]]
        for lname, grid, block, lds, args in recorded_launches(path, T, B):
            if lname != name:
                continue
            flops, nbytes = floor_work(name, T, B)
            got = simulate_cached(code, Launch(grid, block, lds, args, hbm_bytes=nbytes))
            checked += 1
            old = float(r["simulated_us"])
            if got["us"] > REGRESSION * old:
                fails.append("%s T=%d B=%d: simulated %.1f us, %.0f %% over the committed %.1f us; %s" % (
                    name, T, B, got["us"], 100 * (got["us"] / old - 1), old,
                    worst_loop(toolchain, r["kernel"], shape, got["stalls"])))
    return fails, checked


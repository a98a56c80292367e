"""The MI50 figures docs/performance.md shows, from results/gfx906-sim.tsv (every one a simulation):
per goal shape the library's call (its automatic path) against its floor and the slowest launch's
binding resource, then the recurrent and chunked paths side by side at B = 1 (the crossover).

  python3 -m lens figures [TOOLCHAIN]     (default rocm6.4: the objects CI builds; rocm7.2, rocm5.2)
"""

from lens.codeobj import read_tsv
from lens.gate import SIM_TABLE
from lens.product import HEADS


# The prompt goals: B = 1 and B = 4 within 2.0x the floor, the head counts one MI50 runs when a model is
# split over cards (48, 16, 12 and 8 value heads) within 2.5x; decode within 1.3x (B = 1) and 1.1x (B = 128)
# of the state's round trip (the floor counts bytes only: stricter than bytes plus the dispatch floor).
GOALS = [  # (T, B, H_v, gate, the goal as a multiple of the floor, or None: reported only)
    (1, 1, 32, "scalar", 1.3), (1, 128, 32, "scalar", 1.1), (64, 1, 32, "scalar", None),
    (512, 1, 32, "scalar", 2.0), (2048, 1, 32, "scalar", None), (4096, 1, 32, "scalar", 2.0),
    (16384, 1, 32, "scalar", 2.0), (512, 4, 32, "scalar", 2.0), (4096, 4, 32, "scalar", 2.0),
    (64, 1, 32, "key", None), (512, 1, 32, "key", None),
    (512, 1, 48, "scalar", 2.5), (2048, 1, 48, "scalar", 2.5), (512, 1, 16, "scalar", 2.5),
    (2048, 1, 16, "scalar", 2.5), (4096, 1, 16, "scalar", None), (512, 1, 12, "scalar", 2.5),
    (2048, 1, 12, "scalar", 2.5), (512, 1, 8, "scalar", 2.5), (2048, 1, 8, "scalar", 2.5),
    (4096, 1, 8, "scalar", None)]


def figures(toolchain):
    """Markdown: per goal shape the library's call (auto) against its floor, the slowest launch's
    binding resource; then recurrent against chunked at B = 1 (the crossover)."""
    rows = [r for r in read_tsv(SIM_TABLE) if r["toolchain"] == toolchain]
    at = {(r["path"], r["kernel"], int(r["T"]), int(r["B"]), int(r["H_v"]), r["gate"]): r for r in rows}
    out = ["| call (T, B, H_v, gate) | path | simulated µs | band µs | floor µs | x floor | goal | "
           "slowest launch: binding |", "|---|---|---:|---:|---:|---:|---:|---|"]
    for T, B, heads, gate, goal in GOALS:
        total = at.get(("auto", "total", T, B, heads, gate))
        if total is None:
            continue
        launches = [r for r in rows if (r["path"], int(r["T"]), int(r["B"]), int(r["H_v"]), r["gate"]) ==
                    ("auto", T, B, heads, gate) and r["kernel"] != "total"]
        slow = max(launches, key=lambda r: float(r["simulated_us"]))
        path = "recurrent" if all("recurrent" in r["kernel"] for r in launches) else "chunked"
        us, fl = float(total["simulated_us"]), float(total["floor_us"])
        lo, hi = float(total["low_us"]), float(total["high_us"])
        met = "-" if not goal else "met" if hi <= goal * fl else "missed" if lo > goal * fl else "open"
        out.append("| %d, %d, %d, %s | %s | %.1f | %.0f-%.0f | %.1f | %.2f | %s | %s: %s |" % (
            T, B, heads, gate, path, us, lo, hi, fl, us / fl, "<= %.1f: %s" % (goal, met) if goal else "-",
            slow["kernel"].split("<")[0], slow["binding"]))
    # faster: where it holds at the unfavourable ends of both bands (the one path's high below the other's
    # low); else open
    out += ["", "| T (B = 1) | recurrent µs (band) | chunked µs (band) | faster |", "|---:|---:|---:|---|"]
    for T in sorted({int(r["T"]) for r in rows if r["B"] == "1" and r["H_v"] == "32" and r["gate"] == "scalar"}):
        rec = at.get(("recurrent", "total", T, 1, HEADS, "scalar"))
        two = at.get(("chunked", "total", T, 1, HEADS, "scalar"))
        if rec and two:
            (a, a_lo, a_hi), (b, b_lo, b_hi) = [[float(r[c]) for c in ("simulated_us", "low_us", "high_us")]
                                                for r in (rec, two)]
            side = "recurrent" if a_hi < b_lo else "chunked" if b_hi < a_lo else "open"
            out.append("| %d | %.1f (%.0f-%.0f) | %.1f (%.0f-%.0f) | %s |" % (T, a, a_lo, a_hi, b, b_lo, b_hi, side))
    return "\n".join(out)


#!/usr/bin/env python3
"""The normwise metric against its bounds, from result logs (docs/tolerances.md).

    python3 tools/report/tolerance_table.py LOG [LOG...]

Reads test_deltanet's v2 or v3 result logs (the TSV of --log, never console text;
comment lines above the log's first line are skipped) and prints, per log, a markdown table: per phase, variant and normwise
bound (`nrel_tol`), the number of rows, the largest nrel and its test, the largest
nmse, the least headroom (bound / nrel) and the largest max_diff next to the
element bound's atol. TIME rows (--bench) and SKIP rows are left out; a row
that failed is counted and named. Python standard library only.
"""
import sys

# v3 added the bench rows' bytes and flops; the columns read here are in both.
VERSIONS = ("# test_deltanet log v2", "# test_deltanet log v3")
NEEDED = {"phase", "name", "variant", "max_diff", "nrel", "nmse", "atol", "nrel_tol", "status"}


def read_log(path):
    header, rows, columns = {}, [], None
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    # a note a person put above the log's own first line ("# ..." lines) is skipped
    start = next((i for i, line in enumerate(lines) if line in VERSIONS), None)
    if start is None or not all(line.startswith("#") for line in lines[:start]):
        sys.exit(f"{path}: not a test_deltanet v2 or v3 log")
    for line in lines[start + 1:]:
        if line.startswith("#"):
            parts = line[2:].split("\t", 1)
            if len(parts) == 2:
                header[parts[0]] = parts[1]
            continue
        fields = line.split("\t")
        if columns is None:
            columns = fields
            if not NEEDED <= set(columns):
                sys.exit(f"{path}: the column line lacks {sorted(NEEDED - set(columns))}")
            continue
        if len(fields) != len(columns):
            sys.exit(f"{path}: a row of {len(fields)} columns, want {len(columns)}: {line[:80]}")
        rows.append(dict(zip(columns, fields)))
    return header, rows


def number(x):
    return None if x in ("n/a", "") else float(x)


def fmt(x):
    return "n/a" if x is None else f"{x:.2g}" if x != 0 else "0"


def table(path):
    header, rows = read_log(path)
    groups = {}
    for r in rows:
        if r["status"] in ("TIME", "SKIP"):
            continue
        groups.setdefault((int(r["phase"]), r["variant"], r["nrel_tol"]), []).append(r)
    out = [f"`{path}`: {header.get('backend', '?')} build on {header.get('device', '?')}, "
           f"commit {header.get('commit', '?')}, seed {header.get('seed', '?')}, {header.get('date', '?')}", "",
           "| phase | variant | rows | nrel bound | largest nrel (test) | largest nmse | least headroom (bound/nrel) "
           "| largest max_diff (test) | atol | failed |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for (phase, variant, bound), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], number(kv[0][2]) or 0.0)):
        judged = [r for r in rs if number(r["nrel"]) is not None]
        worst = max(judged, key=lambda r: number(r["nrel"]), default=None)
        nmse = max((number(r["nmse"]) for r in judged), default=None)
        b = number(bound)
        headroom = None
        if b and worst is not None:
            headroom = min(b / number(r["nrel"]) if number(r["nrel"]) > 0 else float("inf") for r in judged)
        diffs = [r for r in rs if number(r["max_diff"]) is not None]
        big = max(diffs, key=lambda r: number(r["max_diff"]), default=None)
        atols = sorted({r["atol"] for r in rs}, key=float)
        atol = atols[0] if len(atols) == 1 else f"{fmt(float(atols[0]))} .. {fmt(float(atols[-1]))}"
        failed = [r["name"] for r in rs if r["status"] == "FAIL"]
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            phase, variant, len(rs), fmt(b) if b else "none",
            f"{fmt(number(worst['nrel']))} (`{worst['name']}`)" if worst else "n/a", fmt(nmse),
            "n/a" if headroom is None else "inf" if headroom == float("inf") else f"{headroom:.0f}x",
            f"{fmt(number(big['max_diff']))} (`{big['name']}`)" if big else "n/a",
            atol if len(atols) != 1 else fmt(float(atol)), ", ".join(failed) or "0"))
    return "\n".join(out)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) > 1 else 2
    print("\n\n".join(table(p) for p in sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

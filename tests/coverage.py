#!/usr/bin/env python3
"""Line coverage from gcc's gcov (make coverage; Python standard library only).

Runs `gcov --json-format --stdout` on every .gcno under each --build (from the
repository root, so the source paths are the repository's), merges the lines
of every object file (a header or a template is covered where any object ran
it), and prints per-file and total line coverage of the source files under
the given prefixes, then every line that did not run.

--gate PREFIX: a line under PREFIX that did not run fails the run (exit 1)
unless --exempt FILE names it. An exemption is a line
    path<TAB>the source line, stripped<TAB>why it cannot run under make test
matched by text, not number (numbers move with every edit), or
    path<TAB>function:NAME<TAB>reason
for every line of the functions whose (mangled) name contains NAME; an exemption
that matches no unexecuted line is stale and fails too, so the list stays
true. Lines that ran only in part (gcov's unexecuted blocks: the `return` of
a one-line `if` never taken) are listed after, not gated.
--tsv FILE writes path, lines, executed, percent per file.
"""
import argparse
import json
import os
import subprocess
import sys


def gcov_files(build):
    for root, _dirs, names in os.walk(build):
        for name in sorted(names):
            if name.endswith(".gcno"):
                yield os.path.join(root, name)


def run_gcov(gcno):
    out = subprocess.run(
        ["gcov", "--json-format", "--stdout", "--object-directory", os.path.dirname(gcno), gcno],
        check=True, capture_output=True, text=True).stdout
    # one JSON document per data file
    for line in out.splitlines():
        line = line.strip()
        if line:
            yield json.loads(line)


def merge(builds):
    """{path: {line_number: count}} over every object of the build, and the
    lines that ran only in part: every copy of the line that ran (per object
    and template instance) left one of its blocks unexecuted (gcov's
    unexecuted_block: the `return` of a one-line `if` never taken, say)."""
    counts, whole, funcs = {}, {}, {}
    for gcno in (g for build in builds for g in gcov_files(build)):
        for doc in run_gcov(gcno):
            for f in doc["files"]:
                path = os.path.normpath(f["file"])
                lines = counts.setdefault(path, {})
                full = whole.setdefault(path, {})
                names = funcs.setdefault(path, {})
                for ln in f["lines"]:
                    n = ln["line_number"]
                    names.setdefault(n, set()).add(ln.get("function_name", ""))
                    lines[n] = lines.get(n, 0) + ln["count"]
                    if ln["count"] > 0:
                        full[n] = full.get(n, False) or not ln["unexecuted_block"]
    partly = {p: sorted(n for n, ok in full.items() if not ok) for p, full in whole.items()}
    return counts, partly, funcs


def read_exemptions(path):
    ex = []
    if not path:
        return ex
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or not parts[2].strip():
                sys.exit(f"{path}:{number}: want path<TAB>source line<TAB>reason")
            ex.append({"path": parts[0], "text": parts[1].strip(), "why": parts[2].strip(), "used": False,
                       "where": f"{path}:{number}"})
    return ex


def source_lines(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", required=True, help="a build directory (repeatable: merged)")
    ap.add_argument("--exempt")
    ap.add_argument("--gate", action="append", default=[])
    ap.add_argument("--tsv")
    ap.add_argument("prefixes", nargs="+")
    a = ap.parse_args()

    counts, partly, funcs = merge(a.build)
    files = sorted(p for p in counts if any(p.startswith(x) for x in a.prefixes) and os.path.exists(p))
    if not files:
        sys.exit(f"coverage: no gcov data for {' '.join(a.prefixes)} under {' '.join(a.build)}")
    exemptions = read_exemptions(a.exempt)

    rows, missed = [], []
    for path in files:
        lines = counts[path]
        ran = sum(1 for c in lines.values() if c > 0)
        rows.append((path, len(lines), ran))
        text = source_lines(path)
        for n in sorted(k for k, c in lines.items() if c == 0):
            src = text[n - 1].strip() if n <= len(text) else ""
            why = None
            for e in exemptions:
                fn = e["text"][len("function:"):] if e["text"].startswith("function:") else None
                in_fn = fn is not None and any(fn in name for name in funcs[path].get(n, ()))
                if e["path"] == path and (e["text"] == src or in_fn):
                    e["used"] = True
                    why = e["why"]
                    break
            missed.append((path, n, src, why))

    width = max(len(p) for p, _, _ in rows)
    print(f"{'file':<{width}}  lines  run  cover")
    for prefix in a.prefixes:
        sub = [r for r in rows if r[0].startswith(prefix)]
        for path, total, ran in sub:
            print(f"{path:<{width}}  {total:5d} {ran:4d} {100.0 * ran / total:5.1f}%")
        t, r = sum(x[1] for x in sub), sum(x[2] for x in sub)
        print(f"{'total ' + prefix:<{width}}  {t:5d} {r:4d} {100.0 * r / t if t else 0.0:5.1f}%")
    if a.tsv:
        with open(a.tsv, "w", encoding="utf-8") as fh:
            fh.write("file\tlines\texecuted\tpercent\n")
            for path, total, ran in rows:
                fh.write(f"{path}\t{total}\t{ran}\t{100.0 * ran / total:.1f}\n")

    failures = 0
    if missed:
        print("lines not executed:")
    for path, n, src, why in missed:
        gated = any(path.startswith(g) for g in a.gate)
        if why:
            tag = f"exempt: {why}"
        elif gated:
            tag = "NOT EXECUTED"
            failures += 1
        else:
            tag = "not executed (not gated)"
        print(f"  {path}:{n}: {src}    [{tag}]")
    part = [(p, n) for p in files for n in partly.get(p, [])]
    if part:
        print("lines run only in part (a block of the line never ran; listed, not gated):")
    for path, n in part:
        print(f"  {path}:{n}: {source_lines(path)[n - 1].strip()}")
    for e in exemptions:
        if not e["used"]:
            print(f"coverage: {e['where']}: stale exemption (no unexecuted line '{e['text']}' in {e['path']})")
            failures += 1
    gates = ", ".join(a.gate) or "none"
    if failures:
        print(f"coverage: FAIL: {failures} line(s) of {gates} not executed and not exempt, or stale exemptions")
        return 1
    print(f"coverage: every line of {gates} executed or exempt with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""results/README.md from results/index.tsv, and the check that the index
matches the files (make test, make check).

  python3 tools/report/results_index.py           write results/README.md
  python3 tools/report/results_index.py --check   exit 1 when a file of results/ has
                                           no row, a row names no file, a row
                                           lacks a field, or README.md is not
                                           what the index generates

results/index.tsv (file, what, command, commit; tab-separated, a header
line) is the one place a result file is described: the command that made
it and the commit whose tree ran. "The files" are those git tracks or would
track (timestamped logs written with --log results/ are ignored by git and
so not indexed).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "results")
INDEX = os.path.join(RESULTS, "index.tsv")
README = os.path.join(RESULTS, "README.md")
OWN = {"index.tsv", "README.md"}
FIELDS = ["file", "what", "command", "commit"]

PREAMBLE = """# Result logs

The evidence behind the figures the docs quote. Generated from
`results/index.tsv` by `python3 tools/report/results_index.py` (edit the index, not
this file; `make test` checks that the index names every file here and no
other, and that this file is up to date). `commit` is the tree that ran;
the device machine receives the working tree with a stale `.git`, so the
H100 logs' `# commit` headers were set by hand to it.

The H100 is a development proxy for the MI50: right for correctness and for
relative speed, not a measure of gfx906 speed; `gfx906-*` files are a
simulator's output, not measurements. Timestamped logs written with `--log
results/` are ignored by git.

| file | what | command | commit |
|---|---|---|---|
"""


def read_index():
    with open(INDEX) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    if not lines or lines[0].split("\t") != FIELDS:
        sys.exit("results index: %s must start with the header %s" % (INDEX, "\\t".join(FIELDS)))
    rows, problems = [], []
    for n, line in enumerate(lines[1:], 2):
        cols = line.split("\t")
        if len(cols) != len(FIELDS) or not all(c.strip() for c in cols):
            problems.append("index.tsv line %d: want %d non-empty tab-separated fields" % (n, len(FIELDS)))
            continue
        if not re.fullmatch(r"[0-9a-f]{7,40}", cols[3]):
            problems.append("index.tsv line %d: commit '%s' is not a commit hash" % (n, cols[3]))
        rows.append(dict(zip(FIELDS, cols)))
    return rows, problems


def present_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "results"],
                         check=True, capture_output=True, text=True).stdout
    names = {os.path.relpath(os.path.join(ROOT, p), RESULTS) for p in out.split("\n") if p}
    return {n for n in names if n not in OWN and os.path.exists(os.path.join(RESULTS, n))}


def cell(text):
    return text.replace("|", "\\|")


def readme(rows):
    body = "".join("| `%s` | %s | `%s` | %s |\n" % (r["file"], cell(r["what"]), cell(r["command"]), r["commit"])
                   for r in rows)
    return PREAMBLE + body


def main():
    rows, problems = read_index()
    if sys.argv[1:] == ["--check"]:
        named = [r["file"] for r in rows]
        files = present_files()
        problems += ["results index: %s is named twice" % n for n in sorted({n for n in named if named.count(n) > 1})]
        problems += ["results index: %s is in results/ but not in index.tsv" % n for n in sorted(files - set(named))]
        problems += ["results index: index.tsv names %s, which results/ does not hold" % n
                     for n in sorted(set(named) - files)]
        current = open(README).read() if os.path.exists(README) else ""
        if current != readme(rows):
            problems.append("results index: results/README.md is not what index.tsv generates "
                            "(python3 tools/report/results_index.py rewrites it)")
        for p in problems:
            print(p)
        if problems:
            return 1
        print("results index: %d files, each indexed once; README.md up to date" % len(files))
        return 0
    if sys.argv[1:]:
        sys.exit(__doc__)
    if problems:
        sys.exit("\n".join(problems))
    with open(README, "w") as f:
        f.write(readme(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""results/README.md from results/index.tsv, and the check that the index
matches the files (make test, make check).

  python3 tools/report/results_index.py           write results/README.md
  python3 tools/report/results_index.py --check   exit 1 when a file of results/ has
                                           no row, a row names no file, a row
                                           lacks a field, or README.md is not
                                           what the index generates

results/index.tsv (file, what, command, commit, device, kernels;
tab-separated, a header line) is the one place a result file is described:
what it holds, the command that made it, the commit whose tree ran, the
device, and whether the kernels are still those of that commit (README's
preamble says what each column means; tests/results_check.py checks them
against the history and the docs). "The files" are those git tracks or
would track (timestamped logs written with --log results/ are ignored by
git and so not indexed); outside a git checkout, those of results/ that
.gitignore does not name.
"""
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "results")
INDEX = os.path.join(RESULTS, "index.tsv")
README = os.path.join(RESULTS, "README.md")
OWN = {"index.tsv", "README.md"}
FIELDS = ["file", "what", "command", "commit", "device", "kernels"]

PREAMBLE = """# Result logs

The evidence behind the figures the docs quote. Generated from
`results/index.tsv` by `python3 tools/report/results_index.py` (edit the
index, not this file). The index is the one record of where each file came
from:

- `commit`: the tree that ran; where that tree is not in this history (a
  device copy of a branch that was rebased before it landed), the commit
  that recorded the file, and `kernels` names the tree.
- `device`: what ran it: the CPU build, the H100 or H200, the gfx906 lens
  (a simulator of the MI50, not a measurement) on the ROCm objects named,
  or someone else's published measurements.
- `kernels`: `current` where `kernels/` (for `gfx906-*` files also `lens/`)
  is as at `commit`; otherwise why the figure is still quoted though it has
  changed since.

A file's own header lines (its `# commit` line, notes above the log) are its
data, kept as written; where they disagree with the index (the device's copy
of the tree carries a stale `.git`; some rows were regenerated later), the
index is right. `make check` and `make test` check it:
`tools/report/results_index.py --check` (every file indexed once, this file
up to date) and `tests/results_check.py` (every commit in the history, every
`current` true, every file quoted outside results/, every results/ path the
docs name present).

The H100 and H200 are development proxies for the MI50: right for
correctness and for relative speed, not a measure of gfx906 speed.
Timestamped logs written with `--log results/` are ignored by git.

| file | what | command | commit | device | kernels |
|---|---|---|---|---|---|
"""


def read_index(index=INDEX):
    with open(index) as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    if not lines or lines[0].split("\t") != FIELDS:
        sys.exit("results index: %s must start with the header %s" % (index, "\\t".join(FIELDS)))
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


def git_checkout(root=ROOT):
    """Whether root is the top of a git checkout (not a tree unpacked inside another one)."""
    top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(root)


def ignored(root, rel):
    """Whether rel (a path relative to root) matches an anchored pattern of root's .gitignore
    ("/results/20*.tsv", "/build/"): the files listing outside a git checkout."""
    try:
        with open(os.path.join(root, ".gitignore")) as f:
            pats = [l.strip()[1:] for l in f if l.startswith("/")]
    except FileNotFoundError:
        return False
    return any(rel == p[:-1] or rel.startswith(p) if p.endswith("/") else fnmatch.fnmatchcase(rel, p) for p in pats)


def present_files(root=ROOT):
    results = os.path.join(root, "results")
    if git_checkout(root):
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "results"],
                             check=True, capture_output=True, text=True).stdout
        names = {os.path.relpath(os.path.join(root, p), results) for p in out.split("\n") if p}
    else:
        names = {n for n in os.listdir(results) if not ignored(root, "results/" + n)}
    return {n for n in names if n not in OWN and os.path.isfile(os.path.join(results, n))}


def cell(text):
    return text.replace("|", "\\|")


def readme(rows):
    body = "".join("| `%s` | %s | `%s` | %s | %s | %s |\n" % (r["file"], cell(r["what"]), cell(r["command"]), r["commit"],
                                                          cell(r["device"]), cell(r["kernels"]))
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

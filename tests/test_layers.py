#!/usr/bin/env python3
"""The include graph's layers (make test, make check; docs/architecture.md).

  python3 tests/test_layers.py              check the tree
  python3 tests/test_layers.py --self-test  the checker on planted trees

Reads the `#include "..."` lines of every tracked C, C++ and CUDA file and
fails (exit 1) on an include from a lower layer to a higher one, on an
include between two different layers of the same rank (kernels/ and
reference/ know nothing of each other), and on a loop of files. Layers, top
down (docs/architecture.md draws them):

  programs   programs/, tests/, tools/, integration/        (each a program)
  phases     phases/                                        (the test tables)
  harness    harness/          ladder   phases/kernels/     (runner; the ladder's kernels)
  library    kernels/          reference  reference/        (the product; the fp64 truth)
  backend    kernels/backend/                               (builds, runtime, executor)

The lens (lens/, Python) is layered by its stages: lens/__init__.py lists
them top down, each module importing only the stages above it; a module of
lens/ that is no stage (bar __init__ and __main__, the entry point), or an
import of a stage listed below or of the module itself, fails too.

An include inside one layer is fine as long as it makes no loop. ALLOWED
lists the arrows that break the rule today, each with why; an entry the tree
no longer has fails too, so the list can only shrink.
"""
import ast
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (path prefix, layer, rank); the longest prefix of a file's path decides.
LAYERS = [
    ("programs/", "programs", 6),
    ("tests/", "programs", 6),
    ("tools/", "programs", 6),
    ("integration/", "programs", 6),
    ("phases/", "phases", 5),
    ("harness/", "harness", 4),
    ("phases/kernels/", "ladder", 4),
    ("kernels/", "library", 2),
    ("reference/", "reference", 2),
    ("kernels/backend/", "backend", 1),
]
# Extra include directories of a build (-I): tools/gpu/decode_ref.sh builds with -I kernels.
INCLUDE_DIRS = {"tools/gpu/decode_ref.cu": ["kernels"]}
# (from, to): arrows against the layers that the tree still has, and why.
ALLOWED = {}
SOURCE = re.compile(r"\.(c|h|cpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    best = None
    for prefix, name, rank in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, name, rank)
    return (best[1], best[2]) if best else (None, None)


def tracked_sources(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True, text=True).stdout
    return sorted(p for p in out.split("\n") if SOURCE.search(p) and os.path.exists(os.path.join(root, p)))


def graph(root, files):
    """file -> the project files its quoted includes name (unresolved ones, such
    as another project's headers, are not part of the graph)."""
    edges = {}
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        dirs = [os.path.dirname(f)] + INCLUDE_DIRS.get(f, [])
        targets = []
        for name in INCLUDE.findall(text):
            for d in dirs:
                p = os.path.normpath(os.path.join(d, name))
                if os.path.exists(os.path.join(root, p)):
                    targets.append(p)
                    break
        edges[f] = targets
    return edges


def upward(edges, allowed):
    """(from, to, why) of every include that breaks the layer order."""
    bad = []
    for f, targets in sorted(edges.items()):
        lf, rf = layer_of(f)
        for t in targets:
            lt, rt = layer_of(t)
            if lf is None or lt is None:
                bad.append((f, t, "a file outside every layer"))
            elif lf != lt and rt >= rf and (f, t) not in allowed:
                bad.append((f, t, "%s (%s) includes %s (%s): %s" %
                            (f, lf, t, lt, "upward" if rt > rf else "sideways, same rank")))
    return bad


def loops(edges):
    """One include loop per strongly connected set of files (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, []):
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def lens_stages(init_doc):
    """The stage names of lens/__init__.py's docstring, top down (the indented
    list after the line that starts 'Stages')."""
    block = init_doc.split("\nStages", 1)[1].split("\n\n", 2)[1]
    return [m.group(1) for m in re.finditer(r"^  (\w+)\s", block, re.M)]


def lens_imports(text):
    """The lens modules a Python text imports (from lens.x import ..., from lens import x, import lens.x)."""
    names = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module == "lens":
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lens."):
            names.append(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names += [a.name.split(".")[1] for a in node.names if a.name.startswith("lens.")]
    return names


def lens_problems(modules, stages):
    """'layers: ...' for each lens module that is no stage and each import of a stage not above the importer;
    modules: {name: text}."""
    rank = {s: i for i, s in enumerate(stages)}
    bad = ["layers: lens/%s.py is no stage of lens/__init__.py's list" % m
           for m in sorted(modules) if m not in rank and m not in ("__init__", "__main__")]
    for m, text in sorted(modules.items()):
        for imp in lens_imports(text):
            if m in rank and imp in rank and rank[imp] >= rank[m]:
                bad.append("layers: lens/%s.py imports lens.%s, a stage %s it" %
                           (m, imp, "below" if rank[imp] > rank[m] else "that is"))
    return bad


def lens_check(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "lens/*.py"], check=True, capture_output=True,
                         text=True).stdout.split()
    modules = {}
    for f in out:
        with open(os.path.join(root, f)) as fh:
            modules[os.path.basename(f)[:-3]] = fh.read()
    problems = lens_problems(modules, lens_stages(ast.get_docstring(ast.parse(modules["__init__"]))))
    return problems, sum(len(lens_imports(t)) for t in modules.values())


def check(root, files, allowed):
    edges = graph(root, files)
    problems = ["layers: " + why for _, _, why in upward(edges, allowed)]
    problems += ["layers: include loop: " + " -> ".join(c) for c in loops(edges)]
    present = {(f, t) for f, ts in edges.items() for t in ts}
    problems += ["layers: allowed arrow %s -> %s no longer in the tree: delete it from ALLOWED" % a
                 for a in sorted(allowed) if a not in present]
    return problems, sum(len(t) for t in edges.values())


def self_test():
    """The checker on small trees: a clean one passes; an upward include, a
    sideways one, a loop and a stale allowance each fail."""
    cases = [
        ("clean", {"phases/a.c": ["../harness/h.h"], "harness/h.h": ["../kernels/k.h"], "kernels/k.h": []}, 0),
        ("upward", {"harness/h.c": ["../phases/p.h"], "phases/p.h": []}, 1),
        ("sideways", {"kernels/k.c": ["../reference/r.h"], "reference/r.h": []}, 1),
        ("loop", {"phases/a.h": ["b.h"], "phases/b.h": ["a.h"]}, 1),
        ("stale allowance", {"phases/a.c": []}, 1),
    ]
    failures = 0
    for name, tree, want in cases:
        with tempfile.TemporaryDirectory() as d:
            for f, incs in tree.items():
                os.makedirs(os.path.join(d, os.path.dirname(f)), exist_ok=True)
                with open(os.path.join(d, f), "w") as fh:
                    fh.write("".join('#include "%s"\n' % i for i in incs))
            allowed = {("phases/a.c", "harness/gone.h"): "stale"} if name == "stale allowance" else {}
            problems, _ = check(d, sorted(tree), allowed)
            if (len(problems) > 0) != (want > 0):
                print("layers self-test: %s: expected %s, got %s" % (name, "failure" if want else "pass", problems))
                failures += 1
    stages = lens_stages("x\n\nStages, top down:\n\n  machine  a\n  decode   b\n  cu       c\n\nmore\n")
    lens_cases = [
        ("lens stages read", stages, ["machine", "decode", "cu"]),
        ("lens clean", lens_problems({"decode": "from lens.machine import X", "cu": "from lens import decode, machine",
                                      "__main__": "from lens.cu import main"}, stages), []),
        ("lens upward", lens_problems({"decode": "from lens.cu import Y", "cu": ""}, stages),
         ["layers: lens/decode.py imports lens.cu, a stage below it"]),
        ("lens not a stage", lens_problems({"extra": "import lens.machine", "machine": ""}, stages),
         ["layers: lens/extra.py is no stage of lens/__init__.py's list"]),
    ]
    for name, got, want in lens_cases:
        if got != want:
            print("layers self-test: %s: expected %s, got %s" % (name, want, got))
            failures += 1
    cases += lens_cases
    print("layers self-test: %d of %d cases right" % (len(cases) - failures, len(cases)))
    return failures == 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return 0 if self_test() else 1
    files = tracked_sources(ROOT)
    problems, n = check(ROOT, files, ALLOWED)
    lens, n_lens = lens_check(ROOT)
    problems += lens
    for p in problems:
        print(p)
    if problems:
        return 1
    print("layers: %d includes of %d files point down, no loop (%d allowed exception%s); "
          "the lens's %d imports each of a stage above" %
          (n, len(files), len(ALLOWED), "" if len(ALLOWED) == 1 else "s", n_lens))
    return 0


if __name__ == "__main__":
    sys.exit(main())

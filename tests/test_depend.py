#!/usr/bin/env python3
"""Header dependencies of the Makefile (make test).

  python3 tests/test_depend.py BACKEND...     e.g. cpu hip

For each backend (its executables built first, up to date), and for each project header
(harness/ kernels/ phases/ phases/kernels/ reference/ tests/), the header is made newer than
every object and `make -n` is asked what it would rebuild: that must be
exactly the objects whose source includes the header, directly or through
another header, by this script's own reading of the `#include "..."` lines
(not the compiler's .d files it checks). Too few is a stale binary after an
edit (no -MMD, or the .d files not included); too many is the old blanket
rule (every object on every header). The header's time is put back after
each question, so the build stays up to date. Exit 1 on a mismatch.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("programs", "harness", "kernels", "kernels/backend", "phases", "phases/kernels", "reference", "tests")
# Each backend's executables, so every object of make test's builds is asked about.
TARGETS = {
    "cpu": ["test_deltanet", "test_harness", "test_failing", "test_report_escape", "test_threads", "test_tuning",
            "kdn_tune"],
    "hip": ["test_deltanet"],
    "cuda": ["test_deltanet"],
}
# harness/report.o depends on the provenance stamp (a FORCE rule): `make -n`
# always lists it. Every other object must be up to date before a header moves.
ALWAYS_REBUILT = {"harness/report.o"}
DIRECTIVE = re.compile(r'^\s*#\s*(include|if|ifdef|ifndef|elif|else|endif)\b(.*)$')


def condition(expr, backend):
    """An #if/#elif made of defined(KDN_BACKEND_*), !, && and || for this
    backend (kernels/backend/*.h choose their includes so); any other
    condition (include guards, ...) counts as true."""
    expr = re.sub(r"defined\s*\(\s*KDN_BACKEND_(\w+)\s*\)",
                  lambda m: " True " if m.group(1).lower() == backend else " False ", expr)
    expr = expr.replace("!", " not ").replace("&&", " and ").replace("||", " or ")
    if re.sub(r"\b(True|False|not|and|or)\b|[()\s]", "", expr):
        return True
    return eval(expr)


def includes(path, backend, seen):
    """The project headers path reads in this backend's build, transitively
    (paths relative to ROOT)."""
    live = []  # per open #if: [this branch live, a branch taken]
    with open(os.path.join(ROOT, path)) as f:
        lines = f.read().split("\n")
    for line in lines:
        m = DIRECTIVE.match(line)
        if not m:
            continue
        word, rest = m.groups()
        if word in ("if", "ifdef", "ifndef"):
            c = condition(rest, backend) if word == "if" else True
            live.append([c, c])
        elif word == "elif":
            c = not live[-1][1] and condition(rest, backend)
            live[-1] = [c, live[-1][1] or c]
        elif word == "else":
            live[-1] = [not live[-1][1], True]
        elif word == "endif":
            live.pop()
        elif all(l[0] for l in live):
            name = re.match(r'\s*"([^"]+)"', rest)
            header = name and os.path.normpath(os.path.join(os.path.dirname(path), name.group(1)))
            if header and header not in seen and os.path.exists(os.path.join(ROOT, header)):
                seen.add(header)
                includes(header, backend, seen)
    return seen


def would_rebuild(backend):
    """The objects (relative to the build directory) `make -n` would compile."""
    build = "build/" + backend
    out = subprocess.run(["make", "-n", "--no-print-directory", "BACKEND=" + backend]
                         + [build + "/" + t for t in TARGETS[backend]],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("depend: make -n BACKEND=%s failed:\n%s" % (backend, out.stderr))
    objs = re.findall(r"-o\s+" + re.escape(build) + r"/(\S+\.o)\b", out.stdout)
    return set(objs)


def sources(backend):
    """object -> source for every object of the build directory."""
    build = os.path.join(ROOT, "build", backend)
    found = {}
    for d, _, files in os.walk(build):
        for f in files:
            if not f.endswith(".o"):
                continue
            obj = os.path.relpath(os.path.join(d, f), build)
            for ext in (".c", ".cpp"):
                src = obj[:-2] + ext
                if os.path.exists(os.path.join(ROOT, src)):
                    found[obj] = src
    return found


def headers():
    return sorted(os.path.join(d, f) for d in SOURCE_DIRS
                  for f in os.listdir(os.path.join(ROOT, d)) if f.endswith(".h"))


def build(backend):
    """The targets brought up to date first (make test builds some later)."""
    out = subprocess.run(["make", "--no-print-directory", "BACKEND=" + backend]
                         + ["build/%s/%s" % (backend, t) for t in TARGETS[backend]],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("depend: make BACKEND=%s failed:\n%s%s" % (backend, out.stdout, out.stderr))


def check(backend):
    build(backend)
    baseline = would_rebuild(backend)
    if baseline - ALWAYS_REBUILT:
        print("depend: %s: make -n rebuilds %s with no header touched (stale build, or an object without "
              "its .d)" % (backend, " ".join(sorted(baseline - ALWAYS_REBUILT))))
        return 1
    reads = {obj: includes(src, backend, set()) for obj, src in sources(backend).items()}
    fails = 0
    for h in headers():
        expected = {obj for obj, hs in reads.items() if h in hs}
        path = os.path.join(ROOT, h)
        st = os.stat(path)
        os.utime(path)  # now: newer than every object
        try:
            got = would_rebuild(backend) - baseline
        finally:
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        expected -= baseline
        if got != expected:
            fails += 1
            print("depend: %s: touching %s rebuilds %d objects, should rebuild %d" % (backend, h, len(got), len(expected)))
            for o in sorted(expected - got):
                print("    not rebuilt (stale): %s" % o)
            for o in sorted(got - expected):
                print("    rebuilt, does not include it: %s" % o)
    if not fails:
        print("depend: %s: each of %d headers rebuilds exactly the objects that include it (%d objects)"
              % (backend, len(headers()), len(reads)))
    return fails


def main():
    backends = sys.argv[1:]
    if not backends or any(b not in TARGETS for b in backends):
        sys.exit("usage: test_depend.py BACKEND... (of %s)" % ", ".join(TARGETS))
    sys.exit(1 if sum(check(b) for b in backends) else 0)


if __name__ == "__main__":
    main()

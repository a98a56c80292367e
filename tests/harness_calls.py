#!/usr/bin/env python3
"""The harness's files call each other in layers, never in a loop
(docs/architecture.md, "The harness").

  python3 tests/harness_calls.py [ROOT]

A file calls another when it names, followed by '(', a function the other
defines with external linkage. Comments, strings and character literals are
blanked first. Fails (exit 1) naming the files of any loop.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{", re.M)


def code_of(path):
    with open(path, errors="replace") as f:
        s = f.read()
    s = re.sub(r"'(\\.|[^'\\])'", "0", s)
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    s = re.sub(r"//[^\n]*", " ", s)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', s)


def main():
    d = os.path.join(ROOT, "harness")
    code = {f: code_of(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".c")}
    owner = {m.group(1): f for f, s in code.items() for m in DEFINITION.finditer(s)}
    calls = {f: {g for name, g in owner.items() if g != f and re.search(r"\b%s\s*\(" % name, s)} for f, s in code.items()}
    loops = []
    for start in code:  # a path from start back to start
        stack, seen = [(start, [start])], set()
        while stack:
            f, path = stack.pop()
            for g in sorted(calls[f]):
                if g == start:
                    loops.append(path)
                elif g not in seen:
                    seen.add(g)
                    stack.append((g, path + [g]))
            if loops and loops[-1][0] == start:
                break
    if loops:
        shortest = min(loops, key=len)
        print("harness_calls: FAIL %d files are in call loops, e.g. %s" % (
            len({l[0] for l in loops}), " -> ".join(shortest + [shortest[0]])))
        return 1
    print("harness_calls: %d files in layers, no call loop" % len(code))
    return 0


if __name__ == "__main__":
    sys.exit(main())

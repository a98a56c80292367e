#!/usr/bin/env python3
"""Sizes of the code (make check, make test; docs/architecture.md):
  python3 tests/test_sizes.py              check the tree
  python3 tests/test_sizes.py --self-test  the checker on planted sources
No C/C++ or Python file of kernels/, harness/, phases/, lens/ or tests/ over
MAX_FILE lines of code (lines that hold more than a comment or blanks), and no
function there over MAX_FUNCTION lines (C: its definition's first line to its
closing brace; Python: a def's first line to its body's last).
ALLOWED lists what is over today, each with why; an entry the tree no longer
needs fails too, so the list can only shrink.
"""
import ast
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("kernels/", "harness/", "phases/", "lens/", "tests/")
SOURCE = re.compile(r"\.(c|h|cpp|py)$")
MAX_FILE, MAX_FUNCTION = 600, 80
# "path" (a file's lines of code) or "path:function" -> why it is over today.
ALLOWED = {
    "kernels/deltanet_recurrent.cpp:kernel_deltanet_recurrent": "the kernel's token loop, its hot loop, in one body",
    "kernels/chunked_state.cpp:chunked_state": "the kernel's chunk loop, its hot loop, in one body",
    "lens/semantics.py:salu_semantics": "the SALU opcodes' meanings: one branch per opcode family in one dispatch",
    "lens/semantics.py:valu_semantics": "the VALU opcodes' meanings: one branch per opcode family in one dispatch",
    "lens/selftest.py:selftest": "the hand-worked clock cases: one table literal, then its loop",
}
# A definition: a line at column 0 that is no statement and opens a body (the
# brace on it or on a following line); the function is the first name before
# "(" that is no attribute.
DEFINITION = re.compile(r"^(?![#}\s/]|(?:static_assert|typedef|struct|union|enum|extern \"C\" \{)\b)[^;=]*?\w+\s*\(")
ATTRIBUTES = {"__launch_bounds__", "KDN_GFX906_WAVES_PER_SIMD", "__attribute__"}


def strip_comments(text):
    """The text with comments blanked (line count kept) and strings emptied."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def code_lines(text):
    return sum(1 for line in strip_comments(text).split("\n") if line.strip())


def py_code_lines(text):
    return sum(1 for line in text.split("\n") if line.strip() and not line.strip().startswith("#"))


def py_functions(text):
    """(name, lines) of each def, nested ones and methods too (Class.name)."""
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + child.name, child.end_lineno - child.lineno + 1))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)
    visit(ast.parse(text), "")
    return out


def functions(text):
    """(name, lines) of each function defined at column 0."""
    lines = strip_comments(text).split("\n")
    out, i = [], 0
    while i < len(lines):
        m = DEFINITION.match(lines[i])
        if not m:
            i += 1
            continue
        j = i  # the line of the body's opening brace: the definition's own or a following one
        while j < len(lines) and "{" not in lines[j] and ";" not in lines[j]:
            j += 1
        if j == len(lines) or ";" in lines[j].split("{")[0]:
            i += 1
            continue
        depth, k = 0, j
        while k < len(lines):
            depth += lines[k].count("{") - lines[k].count("}")
            if depth <= 0 and "}" in lines[k]:
                break
            k += 1
        names = [n for n in re.findall(r"(\w+)\s*\(", " ".join(lines[i:j + 1])) if n not in ATTRIBUTES]
        out.append((names[0] if names else "?", k - i + 1))
        i = k + 1
    return out


def findings(files):
    """{key: what} of everything over a limit; files: {path: text}."""
    over = {}
    for path, text in files.items():
        python = path.endswith(".py")
        n = py_code_lines(text) if python else code_lines(text)
        if n > MAX_FILE:
            over[path] = "%d lines of code (at most %d)" % (n, MAX_FILE)
        for name, n in py_functions(text) if python else functions(text):
            if n > MAX_FUNCTION:
                over["%s:%s" % (path, name)] = "%d lines (at most %d)" % (n, MAX_FUNCTION)
    return over


def check(files, allowed):
    over = findings(files)
    fails = ["%s: %s" % (k, v) for k, v in sorted(over.items()) if k not in allowed]
    fails += ["%s: listed in ALLOWED, no longer over its limit: take it off the list" % k
              for k in sorted(allowed) if k not in over]
    return over, fails


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True, text=True).stdout
    files = {}
    for p in out.split("\n"):
        if p.startswith(DIRS) and SOURCE.search(p) and os.path.exists(os.path.join(root, p)):
            with open(os.path.join(root, p), errors="replace") as f:
                files[p] = f.read()
    return files


def self_test():
    body = lambda n: "int f(int x) {\n" + "    x++;\n" * (n - 2) + "}\n"
    cases = [  # (files, allowed, expected failures)
        ({"a.c": body(80)}, {}, 0),
        ({"a.c": body(81)}, {}, 1),
        ({"a.c": body(81)}, {"a.c:f": "why"}, 0),
        ({"a.c": body(10)}, {"a.c:f": "why"}, 1),  # a stale entry
        ({"a.c": "/* x */\n" * 700 + "int y;\n" * 600}, {}, 0),  # comments do not count
        ({"a.c": "int y;\n" * 601}, {}, 1),
        ({"a.c": "static void\ng(void)\n{\n" + "    ;\n" * 90 + "}\n"}, {}, 1),  # brace on its own line
        ({"a.c": "int h(void);\n" + "int z;\n" * 90}, {}, 0),  # a declaration is no body
        ({"a.py": "def f():\n" + "    x = 1\n" * 79}, {}, 0),
        ({"a.py": "def f():\n" + "    x = 1\n" * 80}, {}, 1),
        ({"a.py": "class C:\n    def m(self):\n" + "        x = 1\n" * 80}, {"a.py:C.m": "why"}, 0),
        ({"a.py": "# x\n" * 700 + "x = 1\n" * 600}, {}, 0),  # comments do not count
        ({"a.py": "x = 1\n" * 601}, {}, 1),
    ]
    wrong = 0
    for i, (files, allowed, want) in enumerate(cases):
        _, fails = check(files, allowed)
        if len(fails) != want:
            print("sizes self-test: case %d gives %d failures, want %d: %s" % (i, len(fails), want, fails))
            wrong += 1
    print("sizes self-test: %d of %d cases right" % (len(cases) - wrong, len(cases)))
    return 1 if wrong else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    files = tracked(ROOT)
    over, fails = check(files, ALLOWED)
    for f in fails:
        print("sizes: " + f, file=sys.stderr)
    if fails:
        return 1
    print("sizes: %d files of %s within %d lines of code and their functions within %d lines "
          "(%d allowed exceptions)" % (len(files), ", ".join(DIRS), MAX_FILE, MAX_FUNCTION, len(over)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

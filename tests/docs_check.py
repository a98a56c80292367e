#!/usr/bin/env python3
"""The docs against the tree (make check):
  - every markdown link of README.md, docs/ and integration/ to a file of the
    tree names a file that exists and, with #anchor, a heading of that file
    (the anchor GitHub makes of it);
  - every test `test_deltanet --list` lists is named in README.md's ladder
    table, in its phase's row (its name or a glob there).
  tests/docs_check.py BINARY    (--self-test: both checks on made-up text)"""
import fnmatch
import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    title = re.sub(r"`|\*\*|\*", "", title).lower()
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def anchors(text):
    """The anchors of a markdown text's headings (outside code fences), repeats numbered as GitHub does."""
    seen, fenced = {}, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            a = anchor(m.group(2))
            n = seen.get(a, 0)
            seen[a] = n + 1
            if n:
                seen[f"{a}-{n}"] = 1
    return set(seen)


def dead_links(path, text, read):
    """'path: link: why' for each link of text to a missing file or heading; read(path) -> text or None."""
    bad = []
    for target in LINK.findall(re.sub(r"`[^`\n]*`", "", text)):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        file, _, section = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        body = read(dest)
        if body is None:
            bad.append(f"{path}: {target}: no file {dest}")
        elif section and dest.endswith(".md") and section not in anchors(body):
            bad.append(f"{path}: {target}: {dest} has no heading with the anchor #{section}")
    return bad


def ladder_rows(readme):
    """{phase: [names and globs]} from README.md's ladder table (the section '## The ladder')."""
    section = readme.split("\n## The ladder\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and re.match(r"\d+ ", cells[0]):
            rows[int(cells[0].split()[0])] = re.findall(r"`([^`]+)`", cells[1])
    return rows


def missing_tests(listed, rows):
    """'phase N: name' for each (phase, name) no name or glob of its phase's row covers."""
    return [f"phase {p}: {name}" for p, name in listed
            if not any(fnmatch.fnmatchcase(name, g) for g in rows.get(p, []))]


def listed_tests(binary):
    """(phase, name) of every test, from `BINARY --list` (a header line, then one test a line)."""
    out = subprocess.run([binary, "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    return [(int(f[0]), f[1]) for f in (line.split() for line in out[1:]) if f]


def read_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError):
        return "" if os.path.isdir(path) else None


def doc_files():
    files = ["README.md"]
    for top in ("docs", "integration"):
        for d, _, names in os.walk(top):
            files += sorted(os.path.join(d, n) for n in names if n.endswith(".md"))
    return files


def self_test():
    docs = {"a.md": "# Title\n## The `x` part (B = 1)\n```\n# not a heading\n```\n## Title\n",
            "b.md": "[ok](a.md#the-x-part-b--1) [ok](a.md#title-1) [ok](a.md) [web](https://x/#y)\n"
                    "`[in code](a.md#gone)`\n"}
    read = docs.get
    cases = [
        (dead_links("b.md", docs["b.md"], read), []),
        (dead_links("c.md", "[s](a.md#not-a-heading)", read), ["c.md: a.md#not-a-heading: a.md has no heading with the anchor #not-a-heading"]),
        (dead_links("c.md", "[f](gone.md#x)", read), ["c.md: gone.md#x: no file gone.md"]),
        (dead_links("a.md", "[self](#title)", read), []),
        (missing_tests([(1, "sig"), (8, "grid_x"), (8, "new_one")],
                       ladder_rows("x\n## The ladder\n\n| phase | tests |\n|---|---|\n| 1 e | `sig` |\n| 8 d | `grid_*` |\n")),
         ["phase 8: new_one"]),
    ]
    wrong = [i for i, (got, want) in enumerate(cases) if got != want]
    for i in wrong:
        print(f"docs self-test: case {i}: got {cases[i][0]}, expected {cases[i][1]}")
    print(f"docs self-test: {len(cases) - len(wrong)} of {len(cases)} cases right")
    return 1 if wrong else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    files = doc_files()
    bad = [b for f in files for b in dead_links(f, read_file(f), read_file)]
    listed = listed_tests(argv[1])
    bad += [f"README.md's ladder table: no {m}" for m in missing_tests(listed, ladder_rows(read_file("README.md")))]
    for b in bad:
        print(f"docs: {b}")
    if bad:
        print(f"docs: {len(bad)} dead links or tests missing from README.md's ladder table")
        return 1
    print(f"docs: the links of {len(files)} files lead somewhere; README.md's ladder table names all {len(listed)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

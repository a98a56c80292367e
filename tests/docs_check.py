#!/usr/bin/env python3
"""The docs against the tree (make check):
  - every markdown link of README.md, docs/ and integration/ to a file of the
    tree names a file that exists and, with #anchor, a heading of that file
    (the anchor GitHub makes of it);
  - every repository path those files name in backticks (a word whose first
    part is a top-level entry of the tree: `kernels/x.c`, `docs/`, braces and
    globs expanded) is a tracked file or directory;
    (NOT_IN_TREE: the files a run writes that docs name before any exists; an
    entry no doc names, or one the tree holds, fails);
  - README.md links every docs/*.md, and names none outside a link;
  - a page of MAX_LINES is within its bound (docs/performance.md keeps what
    runs now; tables of the past go to results/);
  - every test `test_deltanet --list` lists is named in README.md's ladder
    table, in its phase's row (its name or a glob there).
  tests/docs_check.py BINARY    (--self-test: both checks on made-up text)"""
import fnmatch
import itertools
import os
import re
import subprocess
import sys

# Repository paths the docs name that the tree does not hold, and why.
NOT_IN_TREE = {
    "results/20261123T013259.123456Z-4711-cpu-cpu-simt-executor.tsv": "docs/ci.md: an example of the name --log DIR gives",
    "results/baseline-mi50.tsv": "docs/ci.md: the MI50 baseline, committed by the first MI50 run",
    "results/bench-baseline-mi50.tsv": "docs/ci.md: the MI50 bench baseline, committed once one is taken",
}
# Pages with a length bound (lines): what the page is for fits in them.
MAX_LINES = {"docs/performance.md": 300}
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


def prose(text):
    """text without its fenced and indented code blocks (no link can live there)."""
    text = re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)
    return "\n".join(line for line in text.split("\n") if not line.startswith(("    ", "\t")))


def expand_braces(word):
    """`a/{b,c}.h` -> ['a/b.h', 'a/c.h'] (every brace group of a word)."""
    parts = re.split(r"\{([^{}]*)\}", word)
    options = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*options)]


def named_paths(text, tops):
    """Repository paths a markdown text names in backticks: each word of a code
    span whose first part, before a '/', is in tops; a trailing ':LINE' dropped,
    words with a placeholder (<x>, $X, %) skipped."""
    names = []
    for span in re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)):
        for word in span.split():
            word = re.sub(r"(:\d.*|[,;.)]+)$", "", word.strip("('\""))
            if "/" in word and word.split("/")[0] in tops and not re.search(r"[<>$%]", word):
                names += expand_braces(word)
    return names


def missing_paths(path, text, tracked, not_in_tree=()):
    """'path: name: why' for each repository path text names that the tracked files do not hold
    (outside not_in_tree)."""
    tops = {f.split("/")[0] for f in tracked}
    dirs = {os.path.dirname(f) for f in tracked}
    dirs |= {"/".join(d.split("/")[:i]) for d in dirs for i in range(1, d.count("/") + 1)}
    bad = []
    for name in named_paths(text, tops):
        bare = name.rstrip("/")
        if bare in not_in_tree or bare in tracked or bare in dirs or (re.search(r"[*?\[]", bare) and fnmatch.filter(tracked, bare)):
            continue
        bad.append(f"{path}: `{name}`: no such file or directory in the tree")
    return bad


def stale_not_in_tree(texts, tracked, not_in_tree):
    """'NOT_IN_TREE: name: why' for each entry the tree holds or no text names."""
    tops = {f.split("/")[0] for f in tracked} | {n.split("/")[0] for n in not_in_tree}
    named = {n for t in texts for n in named_paths(t, tops)}
    return [f"NOT_IN_TREE: {n}: " + ("the tree holds it: take it off the list" if n in tracked
                                     else "no doc names it: take it off the list")
            for n in sorted(not_in_tree) if n in tracked or n not in named]


def unlinked_docs(readme, docs):
    """'README.md: ...' for each of docs (docs/NAME.md) README.md names outside a link, or does not link."""
    text = prose(readme)
    linked = {os.path.normpath(t.partition("#")[0]) for t in LINK.findall(text)}
    outside = set(re.findall(r"docs/[\w.-]+\.md", re.sub(r"\[[^\]]*\]\([^)\s]*\)", "", text)))
    bad = [f"README.md: {d}: named outside a link" for d in sorted(outside)]
    bad += [f"README.md: {d}: not linked" for d in sorted(docs) if d not in linked]
    return bad


def too_long(texts, bounds):
    """'path: N lines (at most M)' for each of texts ({path: text}) past its bound."""
    return [f"{p}: {len(texts[p].splitlines())} lines (at most {m})" for p, m in sorted(bounds.items())
            if len(texts[p].splitlines()) > m]


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


def tracked_files():
    out = subprocess.run(["git", "ls-files"], check=True, capture_output=True, text=True).stdout
    return [f for f in out.split("\n") if f and os.path.exists(f)]


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
        (missing_paths("d.md", "`kernels/a.{h,c}` `kernels/` `make x` `build/cpu/y` `DIR/<t>.npy` "
                       "`kernels/*.cpp` (`kernels/a.h:12`)\n```\n`kernels/in_fence.c`\n```\n",
                       ["kernels/a.h", "kernels/a.c", "kernels/b.cpp"]), []),
        (missing_paths("d.md", "`kernels/gone.c` `sh tools/x.sh --f` `kernels/a.{h,x}` `kernels/*.cu`",
                       ["kernels/a.h", "tools/y.sh"]),
         ["d.md: `kernels/gone.c`: no such file or directory in the tree",
          "d.md: `tools/x.sh`: no such file or directory in the tree",
          "d.md: `kernels/a.x`: no such file or directory in the tree",
          "d.md: `kernels/*.cu`: no such file or directory in the tree"]),
        (missing_paths("d.md", "`results/new.tsv`", ["results/a.tsv"], {"results/new.tsv"}), []),
        (stale_not_in_tree(["`results/new.tsv`"], ["results/a.tsv", "results/old.tsv"],
                           {"results/new.tsv": "", "results/old.tsv": "", "results/unnamed.tsv": ""}),
         ["NOT_IN_TREE: results/old.tsv: the tree holds it: take it off the list",
          "NOT_IN_TREE: results/unnamed.tsv: no doc names it: take it off the list"]),
        (too_long({"p.md": "x\n" * 3, "q.md": "x\n" * 2}, {"p.md": 2, "q.md": 2}), ["p.md: 3 lines (at most 2)"]),
        (unlinked_docs("[api](docs/api.md#calls) [b](docs/b.md)\n    docs/c.md in a code block\n",
                       ["docs/api.md", "docs/b.md"]), []),
        (unlinked_docs("`docs/api.md` and [b](docs/b.md)\n", ["docs/api.md", "docs/b.md", "docs/c.md"]),
         ["README.md: docs/api.md: named outside a link", "README.md: docs/api.md: not linked",
          "README.md: docs/c.md: not linked"]),
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
    tracked = tracked_files()
    bad += [b for f in files for b in missing_paths(f, read_file(f), tracked, NOT_IN_TREE)]
    bad += too_long({p: read_file(p) for p in MAX_LINES}, MAX_LINES)
    bad += stale_not_in_tree([read_file(f) for f in files], tracked, NOT_IN_TREE)
    bad += unlinked_docs(read_file("README.md"), [f for f in tracked if re.fullmatch(r"docs/[^/]+\.md", f)])
    listed = listed_tests(argv[1])
    bad += [f"README.md's ladder table: no {m}" for m in missing_tests(listed, ladder_rows(read_file("README.md")))]
    for b in bad:
        print(f"docs: {b}")
    if bad:
        print(f"docs: {len(bad)} dead links, missing paths, unlinked docs, pages too long or tests missing from "
              "README.md's ladder table")
        return 1
    print(f"docs: the links and named paths of {len(files)} files lead somewhere, README.md links every docs/*.md, "
          f"{', '.join(MAX_LINES)} within {', '.join(map(str, MAX_LINES.values()))} lines; README.md's ladder table names all {len(listed)} tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

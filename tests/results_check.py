#!/usr/bin/env python3
"""results/ against its index, the history and the docs (make check, make test):
  python3 tests/results_check.py              check the tree
  python3 tests/results_check.py --self-test  each fault planted in a temporary tree
One line per problem, status 1, when
  (a) a file of results/ has no row in results/index.tsv, or a row names no file;
  (b) a row's commit is not in the history of HEAD;
  (c) a row's kernels column says `current` but kernels/ (for a gfx906-* file also
      lens/) differs from that commit (in the working tree: an edit not yet
      committed counts), gives a reason though nothing differs, or is neither
      `current` nor a reason (four words or more);
  (d) a markdown file of README.md, docs/ or integration/ names a results/ path that
      is not there (each {a,b} alternative must be a file, a glob must match one;
      paths .gitignore names and the files .github/workflows/ use, which the MI50
      runner makes, are not checked);
  (e) a file of results/ is quoted by no file of the tree outside results/: by its
      name, or by a results/ glob or {a,b} form that matches it.
Outside a git checkout, or in a shallow clone, (b) and (c) are skipped with a line
saying so. results/README.md and index.tsv belong to tools/report/results_index.py
(its --check: README.md is what the index generates)."""
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "report"))
import results_index  # noqa: E402  (the index's reader and the listing of results/)

REASON_WORDS = 4
PATH = re.compile(r"(?<![\w-])results/((?:[\w.*-]|\{[\w.,*-]*\})+)")


def git(root, *args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True)


def expand(pattern):
    """The alternatives of a {a,b} form, nested or several: "x-{a,b}.{t,u}" -> four names."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [e for alt in m.group(1).split(",") for e in expand(pattern[:m.start()] + alt + pattern[m.end():])]


def results_paths(text):
    """(line, as written, [alternatives]) of each results/ path of a text; a sentence's full stop is not part of it."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            written = m.group(1).rstrip(".")
            if written:
                out.append((n, written, expand(written)))
    return out


SELF = os.path.relpath(os.path.abspath(__file__), ROOT)  # its self-test's made-up names quote nothing


def tree_texts(root):
    """{path: text} of the tree's text files outside results/ but this one (git's listing, or a walk outside git)."""
    if results_index.git_checkout(root):
        out = git(root, "ls-files", "--cached", "--others", "--exclude-standard").stdout.split("\n")
    else:
        out = []
        for d, dirs, names in os.walk(root):
            rel = os.path.relpath(d, root)
            dirs[:] = [x for x in dirs
                       if x != ".git" and not results_index.ignored(root, os.path.normpath(os.path.join(rel, x)) + "/")]
            out += [os.path.normpath(os.path.join(rel, n)) for n in names]
    texts = {}
    for p in out:
        if not p or p.startswith("results/") or p == SELF or results_index.ignored(root, p):
            continue
        if not os.path.isfile(os.path.join(root, p)):
            continue
        try:
            with open(os.path.join(root, p), encoding="utf-8") as f:
                texts[p] = f.read()
        except UnicodeDecodeError:
            pass
    return texts


def quotes(names, texts):
    """{name: files outside results/ that quote it}: its name as a word, or a results/ glob or {a,b} form."""
    found = {n: set() for n in names}
    for path, text in texts.items():
        forms = {alt for _, written, alts in results_paths(text) if re.search(r"[*{]", written) for alt in alts}
        for n in names:
            by_name = re.search(r"(?<![\w.-])%s(?![\w-])" % re.escape(n), text)
            if by_name or any(fnmatch.fnmatchcase(n, f) for f in forms):
                found[n].add(path)
    return found


def check_index(rows, files):
    named = {r["file"] for r in rows}
    return [("a", n, "%s: in results/ but no row of index.tsv names it" % n) for n in sorted(files - named)] + \
           [("a", n, "%s: index.tsv names it, results/ does not hold it" % n) for n in sorted(named - files)]


def history_skipped(root):
    """Why (b) and (c) cannot run here, or None."""
    if not results_index.git_checkout(root):
        return "not a git checkout"
    if git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        return "a shallow clone (its history is cut)"
    return None


def check_history(root, rows):
    """(b) each row's commit in HEAD's history; (c) its kernels column against git diff."""
    problems = []
    for r in rows:
        name, commit, kernels = r["file"], r["commit"], r["kernels"].strip()
        full = git(root, "rev-parse", "--verify", "--quiet", commit + "^{commit}").stdout.strip()
        if not full:
            problems.append(("b", name, "%s: commit %s is not in this history (no such commit)" % (name, commit)))
            continue
        if git(root, "merge-base", "--is-ancestor", full, "HEAD").returncode != 0:
            problems.append(("b", name, "%s: commit %s is not in this history (not an ancestor of HEAD)"
                             % (name, commit)))
            continue
        dirs = ["kernels/"] + (["lens/"] if name.startswith("gfx906-") else [])
        changed = [d for d in dirs if git(root, "diff", "--quiet", full, "--", d).returncode != 0]
        if kernels == "current" and changed:
            problems.append(("c", name, "%s: kernels says current, but %s changed since %s (git diff %s -- %s): "
                                        "say why its figures still stand, or measure again"
                             % (name, " and ".join(changed), commit, commit, " ".join(changed))))
        elif kernels != "current" and len(kernels.split()) < REASON_WORDS:
            problems.append(("c", name, "%s: kernels column '%s' is neither current nor a reason (%d words or more)"
                             % (name, kernels, REASON_WORDS)))
        elif kernels != "current" and not changed:
            problems.append(("c", name, "%s: kernels gives a reason, but %s is as at %s: write current"
                             % (name, " and ".join(dirs), commit)))
    return problems


def doc_files(root):
    files = ["README.md"] if os.path.isfile(os.path.join(root, "README.md")) else []
    for top in ("docs", "integration"):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += sorted(os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith(".md"))
    return files


def workflow_names(texts):
    """The results/ files .github/workflows/ read or write (made on the MI50 runner, not here)."""
    return {alt for p, t in texts.items() if p.startswith(".github/workflows/")
            for _, _, alts in results_paths(t) for alt in alts}


def check_docs(root, texts, files):
    """(d): every results/ path of the markdown docs there (a glob: matching a file)."""
    held = files | results_index.OWN
    skip = workflow_names(texts)
    problems, seen = [], 0
    for doc in doc_files(root):
        for line, written, alts in results_paths(texts.get(doc, "")):
            seen += 1
            for alt in alts:
                if alt in skip or results_index.ignored(root, "results/" + alt):
                    continue
                if "*" in alt and not any(fnmatch.fnmatchcase(f, alt) for f in held):
                    why = "no file of results/ matches %s" % alt
                elif "*" not in alt and alt not in held:
                    why = "results/%s is not there" % alt
                else:
                    continue
                where = "%s:%d" % (doc, line)
                problems.append(("d", where, "%s: %s" % (where, why) if alt == written else
                                 "%s: results/%s: %s" % (where, written, why)))
    return problems, seen


def check(root):
    """(notes, problems, summary): problems are (kind, subject, text)."""
    rows, bad = results_index.read_index(os.path.join(root, "results", "index.tsv"))
    problems = [("a", "index.tsv", p) for p in bad]
    files = results_index.present_files(root)
    problems += check_index(rows, files)
    notes = []
    why = history_skipped(root)
    if why:
        notes.append("results check: skipped: the commits against the history and the kernels columns: %s" % why)
    else:
        problems += check_history(root, rows)
    texts = tree_texts(root)
    doc_problems, paths = check_docs(root, texts, files)
    problems += doc_problems
    for name, by in sorted(quotes(sorted(files), texts).items()):
        if not by:
            problems.append(("e", name, "%s: quoted by nothing outside results/ (name it where its figures are used, "
                                        "or delete it and its row)" % name))
    summary = ("results check: %d files, each indexed, quoted outside results/%s; the docs' %d results/ paths there"
               % (len(files), "" if why else ", of a commit in this history, its kernels column true", paths))
    return notes, problems, summary


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    notes, problems, summary = check(ROOT)
    for n in notes:
        print(n)
    for _, _, text in problems:
        print("results check: " + text)
    if problems:
        print("results check: %d problem%s" % (len(problems), "" if len(problems) == 1 else "s"))
        return 1
    print(summary)
    return 0


# ---- the self-test: a temporary tree with a history, each fault planted in a copy of it ----------

def sh(root, *args):
    subprocess.run(["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True, text=True)
    return git(root, "rev-parse", "--short=12", "HEAD").stdout.strip()


def write(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        if text is None:
            os.remove(full)
            continue
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def index(rows):
    head = "\t".join(results_index.FIELDS)
    return head + "\n" + "".join("%s\tw\tc\t%s\tcpu\t%s\n" % r for r in rows)


def base_tree(tmp):
    """A tree of three commits (kernels/ changes in the second, lens/ in the third) whose check is clean."""
    root = os.path.join(tmp, "base")
    os.makedirs(root)
    git(root, "init", "-q")
    write(root, {"kernels/k.c": "1\n", "lens/l.py": "1\n", ".gitignore": "/results/20*.tsv\n/build/\n"})
    sh(root, "add", "-A")
    c1 = sh(root, "commit", "-q", "-m", "one")
    write(root, {"kernels/k.c": "2\n"})
    c2 = sh(root, "commit", "-q", "-am", "two")
    write(root, {"lens/l.py": "2\n"})
    c3 = sh(root, "commit", "-q", "-am", "three")
    old = "the only run of that comparison"
    rows = [("a.tsv", c3, "current"), ("gfx906-s.tsv", c3, "current"), ("old.tsv", c1, old),
            ("b-x.txt", c1, old), ("b-y.txt", c1, old), ("g-1.tsv", c2, "current")]
    write(root, {"results/index.tsv": index(rows), "results/README.md": "r\n", "results/20990101-x.tsv": "ignored\n",
                 "build/x.txt": "lonely.tsv\n",
                 **{"results/" + r[0]: "data\n" for r in rows},
                 "docs/d.md": "See results/a.tsv, gfx906-s.tsv and results/old.tsv.\nAlso results/b-{x,y}.txt; "
                              "results/README.md, --log results/, results/20991231-y.tsv, results/mi50.tsv.\n",
                 "tools/t.py": "# results/g-*.tsv\n", ".github/workflows/w.yml": "run: cp x results/mi50.tsv\n"})
    sh(root, "add", "-A")
    sh(root, "commit", "-q", "-m", "results")
    return root, c1, c2, c3, rows


def planted(base, tmp, name, files=None, rows=None, git_dir=True):
    """A copy of the base tree with files written (None: removed) and the index replaced by rows."""
    root = os.path.join(tmp, name)
    shutil.copytree(base, root, ignore=None if git_dir else shutil.ignore_patterns(".git"))
    write(root, dict(files or {}, **({"results/index.tsv": index(rows)} if rows else {})))
    return root


def self_test():
    for k in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[k]
    tmp = tempfile.mkdtemp(prefix="results-check-")
    os.environ["GIT_CEILING_DIRECTORIES"] = tmp
    try:
        base, c1, c2, c3, rows = base_tree(tmp)
        ext = [r for r in rows if r[0] != "a.tsv"]
        stray = subprocess.run(["git", "-C", base, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree",
                                "-m", "off", "HEAD^{tree}"], check=True, capture_output=True, text=True).stdout[:12]
        shallow = os.path.join(tmp, "shallow")
        subprocess.run(["git", "clone", "-q", "--depth", "1", "file://" + base, shallow],
                       check=True, capture_output=True)
        cases = [
            ("clean", base, [], None),
            ("(a) a file without a row, a row without a file",
             planted(base, tmp, "a", {"results/stray.tsv": "x\n", "results/g-1.tsv": None}),
             [("a", "g-1.tsv"), ("a", "stray.tsv"), ("e", "stray.tsv")], None),
            ("(b) no such commit; a commit off the history",
             planted(base, tmp, "b",
                     rows=[("a.tsv", "0000000", "current"), ("gfx906-s.tsv", stray, "current")] + ext[1:]),
             [("b", "a.tsv"), ("b", "gfx906-s.tsv")], None),
            ("(c) current though kernels/ changed; lens/ for gfx906-* only; no reason; a reason for nothing",
             planted(base, tmp, "c", rows=[("a.tsv", c1, "current"), ("gfx906-s.tsv", c2, "current"),
                                           ("old.tsv", c1, "old"), ("b-x.txt", c3, "the only run of it"),
                                           ("b-y.txt", c1, "the only run of it"), ("g-1.tsv", c2, "current")]),
             [("c", "a.tsv"), ("c", "b-x.txt"), ("c", "gfx906-s.tsv"), ("c", "old.tsv")], None),
            ("(c) an edit of kernels/ not yet committed",
             planted(base, tmp, "c2", {"kernels/k.c": "3\n"}),
             [("c", "a.tsv"), ("c", "gfx906-s.tsv"), ("c", "g-1.tsv")], None),
            ("(d) a path that is not there, a glob matching nothing, an alternative missing",
             planted(base, tmp, "d", {"docs/e.md": "results/gone.tsv, results/none-*.tsv and results/b-{x,z}.txt.\n"}),
             [("d", "docs/e.md:1")] * 3, None),
            ("(e) a file quoted by nothing (a longer name, a build/ file and its own row do not quote it)",
             planted(base, tmp, "e", {"results/lonely.tsv": "x\n", "docs/f.md": "notlonely.tsv\n"},
                     rows=rows + [("lonely.tsv", c3, "current")]), [("e", "lonely.tsv")], None),
            ("outside a git checkout: (a), (d), (e) still run",
             planted(base, tmp, "nogit", {"results/stray.tsv": "x\n"}, git_dir=False),
             [("a", "stray.tsv"), ("e", "stray.tsv")], "not a git checkout"),
            ("a shallow clone", shallow, [], "a shallow clone"),
        ]
        wrong = 0
        for what, root, want, skipped in cases:
            notes, problems, _ = check(root)
            got = sorted((k, s) for k, s, _ in problems)
            ok = got == sorted(want) and (skipped is None) == (not notes) and all(skipped in n for n in notes)
            if not ok:
                wrong += 1
                print("results self-test: %s: got %s %s, expected %s (skipped: %s)" % (
                    what, got, notes, sorted(want), skipped))
                for _, _, text in problems:
                    print("  " + text)
        print("results self-test: %d of %d cases right" % (len(cases) - wrong, len(cases)))
        return 1 if wrong else 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

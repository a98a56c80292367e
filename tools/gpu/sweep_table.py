#!/usr/bin/env python3
"""The side-by-side sweep as one table: llama.cpp's kernel against the
library's automatic choice (and its recurrent and chunked forms) at every
prompt length and batch that tools/gpu/decode_ref.sh timed.

  tools/gpu/sweep_table.py DECODE_REF_TSV [--ab AB_TSV] [--build NAME] > results/h100-sweep.tsv

DECODE_REF_TSV: tools/gpu/decode_ref.sh's output (columns build, T, B, call,
method, median_us, ...; calls copy, ggml, kdn = recurrent, chunked, auto;
methods sync and queued; each binary run twice). Per (build, T, B, method) the
median over the runs of each call's median_us; ggml_over_auto = llama.cpp's
time / the automatic choice's (> 1: the library is faster), met = whether it
is 1.25x ahead (results/h100-past-tables.md's goal). --ab: tools/gpu/ab.sh's ab.tsv of the same device call
(test_deltanet --bench rows of compare_T64_B1 under --set "T=.. n_seqs=..");
its tree build's bench:auto / recurrent / chunked medians join as harness_*
columns (the harness's sync method), with ggml's sync time over harness_auto.
--build: only that decode_ref build (default: every build). Reads TSV logs
only, never console text.
"""
import statistics
import sys

GOAL = 1.25
# Names that older decode_ref.sh and ab.sh output gives the chunked form (renamed as the ladder's
# variant was: docs/ci.md, "Renamed tests and variants")
FORMER = {"two_launch": "chunked"}


def read_tsv(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def medians(rows, key, value="median_us"):
    """key(row) -> median of float(row[value]) over the rows with that key."""
    acc = {}
    for r in rows:
        acc.setdefault(key(r), []).append(float(r[value]))
    return {k: statistics.median(v) for k, v in acc.items()}


def harness_times(path):
    """(T, B) -> {label: median us} from ab.tsv's tree rows (set 'T=.. n_seqs=..')."""
    out = {}
    rows = [r for r in read_tsv(path) if r["build"] == "tree"]
    for (s, label), us in medians(rows, lambda r: (r["set"], FORMER.get(r["label"], r["label"]))).items():
        kv = dict(w.split("=", 1) for w in s.split() if "=" in w)
        if "T" in kv and "n_seqs" in kv:
            out.setdefault((int(kv["T"]), int(kv["n_seqs"])), {})[label] = us
    return out


def main(argv):
    args, ab, build = [], None, None
    it = iter(argv[1:])
    for a in it:
        if a == "--ab":
            ab = next(it, None)
        elif a == "--build":
            build = next(it, None)
        else:
            args.append(a)
    if len(args) != 1 or (ab is None and "--ab" in argv) or (build is None and "--build" in argv):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    rows = [r for r in read_tsv(args[0]) if build is None or r["build"] == build]
    if not rows:
        sys.stderr.write("sweep_table: no rows%s in %s\n" % (" of build " + build if build else "", args[0]))
        return 2
    med = medians(rows, lambda r: (r["build"], int(r["T"]), int(r["B"]), r["method"],
                                    FORMER.get(r["call"], r["call"])))
    harness = harness_times(ab) if ab else {}
    cols = ["build", "T", "B", "method", "copy_us", "ggml_us", "recurrent_us", "chunked_us", "auto_us",
            "ggml_over_auto", "met_1.25x"]
    if ab:
        cols += ["harness_recurrent_us", "harness_chunked_us", "harness_auto_us", "ggml_sync_over_harness_auto"]
    print("\t".join(cols))
    keys = sorted({k[:4] for k in med}, key=lambda k: (k[0], k[3], k[2], k[1]))
    for b, T, B, method in keys:
        get = lambda call: med.get((b, T, B, method, call))
        g, a = get("ggml"), get("auto")
        ratio = g / a if g and a else None
        line = [b, str(T), str(B), method] + ["%.2f" % x if x is not None else "" for x in (
            get("copy"), g, get("kdn"), get("chunked"), a)]
        line += ["%.3f" % ratio if ratio else "", ("yes" if ratio >= GOAL else "no") if ratio else ""]
        if ab:
            h = harness.get((T, B), {})
            gs = med.get((b, T, B, "sync", "ggml"))
            line += ["%.1f" % h[x] if x in h else "" for x in ("recurrent", "chunked", "auto")]
            line += ["%.3f" % (gs / h["auto"]) if gs and h.get("auto") else ""]
        print("\t".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

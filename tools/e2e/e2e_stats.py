#!/usr/bin/env python3
"""Tables of tools/e2e/e2e_bench.sh's raw files (python3 standard library only).

    e2e_stats.py bench BENCH.jsonl [--check HALF_WIDTH]
        llama-bench's jsonl rows, each tagged by e2e_bench.sh with "e2e_round" and "e2e_impl" (kdn | ggml).
        One row per test (n_prompt, n_gen, n_ubatch): tokens/s of each implementation (mean over rounds) and
        kdn/ggml, the geometric mean over rounds of the per-round ratio (the two runs of a round are back to back,
        in alternating order), with its 95 % t-interval. --check: exit 3 unless every interval lies within
        ratio x (1 +- HALF_WIDTH) (e2e_bench.sh adds rounds until it does).
    e2e_stats.py op OP.txt BENCH.jsonl
        Nsight Compute CSV blocks (gpu__time_duration of the op's kernels) after '### impl prompt gen ubatch'
        lines: per configuration, the op's time per call (all its kernels; calls = ggml's launches, one kernel
        per call), ggml/kdn, and the op's share of the whole run at the speed llama-bench measured.
    e2e_stats.py tbo PERF.txt
        test-backend-ops perf output after '### impl' lines (the fallback where no profiler runs): us per op for
        each model-shaped case and ggml/kdn.
Rows go to stdout as TSV with a header line.
"""
import argparse
import csv
import json
import math
import re
import statistics
import sys
from collections import defaultdict

# two-sided 95 % quantiles of Student's t, degrees of freedom 1..30
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
IMPLS = ("kdn", "ggml")
GGML_KERNEL = "gated_delta_net_cuda"  # in a libkdn run, a launch of it is a call libkdn refused


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96


def test_name(n_prompt, n_gen, n_ubatch):
    kind = f"pp{n_prompt}" if n_prompt else f"tg{n_gen}"
    return f"{kind}/ub{n_ubatch}"


def read_bench(path):
    """{(n_prompt, n_gen, n_ubatch): {round: {impl: tokens/s}}}"""
    runs = defaultdict(lambda: defaultdict(dict))
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            key = (r["n_prompt"], r["n_gen"], r["n_ubatch"])
            runs[key][r["e2e_round"]][r["e2e_impl"]] = r["avg_ts"]
    return runs


def ratio_interval(ratios):
    """geometric mean of ratios and its 95 % t-interval (on the logs); None bounds with one ratio"""
    logs = [math.log(x) for x in ratios]
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(m), None, None
    h = t975(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def bench_rows(runs):
    rows = []
    for key in sorted(runs, key=lambda k: (k[0] == 0, k[0], k[1], k[2])):
        rounds = [r for r in runs[key].values() if all(i in r for i in IMPLS)]
        if not rounds:
            continue
        ratio, lo, hi = ratio_interval([r["kdn"] / r["ggml"] for r in rounds])
        rows.append({"test": test_name(*key), "kdn_tps": statistics.fmean(r["kdn"] for r in rounds),
                     "ggml_tps": statistics.fmean(r["ggml"] for r in rounds), "ratio": ratio, "lo": lo, "hi": hi,
                     "rounds": len(rounds)})
    return rows


def half_width(row):
    if row["lo"] is None:
        return math.inf
    return max(row["hi"] / row["ratio"] - 1, 1 - row["lo"] / row["ratio"])


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def cmd_bench(a):
    rows = bench_rows(read_bench(a.bench))
    print("test\tkdn_tok_s\tggml_tok_s\tkdn_over_ggml\tci95_lo\tci95_hi\tci95_half_width_pct\trounds")
    for r in rows:
        hw = half_width(r)
        print(f"{r['test']}\t{r['kdn_tps']:.1f}\t{r['ggml_tps']:.1f}\t{r['ratio']:.4f}\t{fmt(r['lo'], '.4f')}\t"
              f"{fmt(r['hi'], '.4f')}\t{'-' if math.isinf(hw) else format(100 * hw, '.2f')}\t{r['rounds']}")
    if a.check is not None and (not rows or any(half_width(r) > a.check for r in rows)):
        return 3
    return 0


NCU_SCALE = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}


def read_ncu_blocks(path):
    """{(impl, n_prompt, n_gen, n_ubatch): [(kernel name, ns)]} from '### ' headers and ncu --csv lines"""
    blocks, key, col = defaultdict(list), None, None
    with open(path) as f:
        for line in f:
            if line.startswith("### "):
                impl, p, g, u = line.split()[1:5]
                key = (impl, int(p), int(g), int(u))
                blocks[key]
                continue
            if not line.startswith('"') or key is None:
                continue
            fields = next(csv.reader([line]))
            if "Kernel Name" in fields and "Metric Value" in fields:  # ncu's header line: the columns by name
                col = {name: i for i, name in enumerate(fields)}
            elif col and fields[col["Metric Name"]] == "gpu__time_duration.sum":
                ns = float(fields[col["Metric Value"]].replace(",", "")) * NCU_SCALE[fields[col["Metric Unit"]]]
                blocks[key].append((fields[col["Kernel Name"]], ns))
    return blocks


def cmd_op(a):
    blocks = read_ncu_blocks(a.ncu)
    runs = read_bench(a.bench)
    print("config\tcalls\tkdn_us_per_call\tggml_us_per_call\tggml_over_kdn\tkdn_kernels_per_call\t"
          "kdn_share_pct\tggml_share_pct\tggml_kernel_in_kdn_run")
    configs = sorted({k[1:] for k in blocks}, key=lambda c: (c[0] == 0, c))
    for p, g, u in configs:
        kdn, ggml = blocks.get(("kdn", p, g, u), []), blocks.get(("ggml", p, g, u), [])
        calls = sum(GGML_KERNEL in name for name, _ in ggml)  # one launch per call, the same graph in both runs
        if not calls or not kdn:
            print(f"{test_name(p, g, u)}\t{calls}\t-\t-\t-\t-\t-\t-\t-")
            continue
        us = {impl: sum(ns for _, ns in ks) / calls / 1e3 for impl, ks in (("kdn", kdn), ("ggml", ggml))}
        share = {}
        for impl in IMPLS:
            rounds = [r[impl] for r in runs.get((p, g, u), {}).values() if all(i in r for i in IMPLS)]
            tokens = p or g
            # op time per token x tokens per second = the op's fraction of the run
            share[impl] = (100 * us[impl] * calls / 1e6 / tokens * statistics.fmean(rounds)) if rounds else None
        print(f"{test_name(p, g, u)}\t{calls}\t{us['kdn']:.2f}\t{us['ggml']:.2f}\t{us['ggml'] / us['kdn']:.3f}\t"
              f"{len(kdn) / calls:.2f}\t{fmt(share['kdn'], '.1f')}\t{fmt(share['ggml'], '.1f')}\t"
              f"{sum(GGML_KERNEL in name for name, _ in kdn)}")
    return 0


TBO_LINE = re.compile(r"^\s*(GATED_DELTA_NET\(.*\)):.*?([0-9.]+) us/run")


def cmd_tbo(a):
    times, impl = defaultdict(dict), None
    with open(a.perf) as f:
        for line in f:
            if line.startswith("### "):
                impl = line.split()[1]
            elif (m := TBO_LINE.match(line)) and impl:
                times[m.group(1)][impl] = float(m.group(2))
    print("case\tkdn_us\tggml_us\tggml_over_kdn")
    for case, t in times.items():
        if "head_count=32,head_size=128" in case and all(i in t for i in IMPLS):
            print(f"{case}\t{t['kdn']:.2f}\t{t['ggml']:.2f}\t{t['ggml'] / t['kdn']:.3f}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("bench")
    b.add_argument("--check", type=float)
    o = sub.add_parser("op")
    o.add_argument("ncu")
    o.add_argument("bench")
    t = sub.add_parser("tbo")
    t.add_argument("perf")
    a = p.parse_args()
    return {"bench": cmd_bench, "op": cmd_op, "tbo": cmd_tbo}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())

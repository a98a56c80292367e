#!/usr/bin/env python3
"""llama-server with parallel slots against itself on fresh servers: do concurrent requests, and requests on slots
that served another prompt before, answer as each prompt does alone on a freshly started server?

    server_check.py --server CMD --model GGUF --label NAME --responses OUT.json [--tsv OUT.tsv] [--logs DIR]
                    [--yardstick GGML.json] [--lengths 17,300,900,2000] [--n-predict 8] [--n-probs 8]
                    [--slots 4] [--vocab-ids 30000] [--timeout 300]
    server_check.py --from SAVED.json --label NAME --responses OUT.json [--yardstick GGML.json] [--tsv OUT.tsv]
                                        judges saved answers again (the same settings), no server

CMD is the server command (llama-server, or a stand-in; split like a shell line); the script appends -m GGUF
-ngl 99 -np SLOTS (1 for the fresh servers) -c CTX --port P --host 127.0.0.1 -fa off --seed 1 --cache-ram 0 -lv 4
and waits for /health (-lv 4: llama-server logs ggml's INFO lines, the patch's "runs in libkdn" among them, at its
trace level, which its default of 3 drops).
Prompts are token ids (the synthetic models' words mean nothing), one per length, drawn from a fixed generator with
no shared prefix. Phases, on /completion with greedy sampling (temperature 0), n_predict and n_probs:
  concurrent  all prompts at once on one server, prompt k forced onto slot k (id_slot)
  reused      the same prompts again at once on that server, rotated: prompt k onto slot k+1, which last held
              prompt k+1 (--cache-ram 0: no prompt cache restores a state; with no common prefix the slot's state
              must start from nothing)
  fresh       each prompt alone on a freshly started server of one slot (-np 1: the reference), then on it the
              control: prompt k+1 followed by prompt k, what a slot that kept the previous request's context would
              answer. A prompt whose control passes is blind (a carried context would not show there: a long
              prompt's gated state forgets the one before), and its reused row proves nothing; a run where every
              control passes cannot see a carried context anywhere, and fails.
Each answer is compared with the fresh one position by position, up to and including the first position where the
greedy tokens differ (after it the contexts differ): the KL divergence over the union of both top-n lists (a token
missing from a list gets that list's smallest log-prob, an upper bound of its own, then both are renormalised)
and |delta| of the fresh top-1 token's log-prob. A greedy divergence is allowed only where the fresh top-2 gap is
below GAP_PER_DLP x the log-prob bound. A non-finite log-prob (llama-server writes NaN and inf as null) fails.

The bounds are ggml's own: its concurrent-vs-fresh distances (the run with --yardstick, or this run when it has
none: GGML_KDN_DISABLE=1 first) are what batching the slots together moves ggml's logits by -- other ubatch splits
and matrix-product shapes, and four slots against one, which change rounding and nothing else. A bound is FACTOR x
that noise + FLOOR: FACTOR leaves room for a second set of positions drawn from the same noise (ggml's own
ubatch-size yardsticks move the largest per-position KL by 1.4x between two sizes, results/h100-e2e-kl.tsv), FLOOR
keeps the bound from being zero where ggml's batching happens to be bit-exact (its rerun yardstick is), and both
stay far below a context carried over (the control). The yardstick's own concurrent rows pass by construction and
say so; its reused rows and every row of a run checked against it are real checks. A run with --yardstick also
compares its fresh answers with the yardstick's (libkdn against ggml, each alone).
Exit status: 0 every row passed and some control was seen, 1 a failure (the TSV and the printed rows say which),
2 bad usage or a server that would not start or answer.
"""
import argparse
import json
import math
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

FACTOR = 4.0             # x ggml's own concurrent-vs-fresh noise (why: the docstring)
FLOOR_KL = 1e-3          # nats: a tenth of the 99th-percentile KL of ggml's ubatch 512 vs 2048 (h100-e2e-kl.tsv)
FLOOR_DLP = 0.02         # nats of the fresh top-1 token's log-prob: a 2 % change of its probability
GAP_PER_DLP = 2.0        # a greedy flip needs the top-2 gap closed: both log-probs moving by the bound, opposite ways
FIRST_ID = 259           # the synthetic vocabulary's first word (after <unk> <s> </s> and the 256 byte tokens)


class ServerError(Exception):
    """A server that did not start or answer: no verdict (exit 2)."""


def prompts_of(lengths, vocab_ids):
    """Token ids per length from a fixed linear congruential generator, one stream per prompt; no two share a first
    token (no shared prefix) and no token repeats its predecessor."""
    out = []
    for k, n in enumerate(lengths):
        x, ids = 1000003 * (k + 1), []
        while len(ids) < n:
            x = (6364136223846793005 * x + 1442695040888963407) % 2 ** 64
            t = FIRST_ID + (x >> 33) % vocab_ids
            if ids and t == ids[-1] or not ids and any(p[0] == t for p in out):
                continue
            ids.append(t)
        out.append(ids)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server process on a free port, its output in LOG; start() waits for /health."""

    def __init__(self, cmd, model, slots, ctx, log, timeout):
        self.port = free_port()
        self.log_path, self.timeout = log, timeout
        self.args = shlex.split(cmd) + ["-m", model, "-ngl", "99", "-np", str(slots), "-c", str(ctx),
                                        "--port", str(self.port), "--host", "127.0.0.1", "-fa", "off",
                                        "--seed", "1", "--cache-ram", "0", "-lv", "4"]
        self.proc = None

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"server exited with {self.proc.returncode} before it was ready:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url("/health"), timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise ServerError(f"no /health within {self.timeout} s:\n{self.tail()}")

    def tail(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-15:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def complete(self, prompt, slot, a):
        body = {"prompt": prompt, "n_predict": a.n_predict, "n_probs": a.n_probs, "temperature": 0.0,
                "seed": 1, "ignore_eos": True, "id_slot": slot}
        req = urllib.request.Request(self.url("/completion"), json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return reduce_answer(json.loads(r.read()))
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise ServerError(f"/completion on slot {slot}: {e}\n{self.tail()}") from e


def finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def reduce_answer(resp):
    """The slot that answered and, per generated position, the greedy token and the top-n (id, log-prob) list as
    the server sent them (a log-prob that is not a finite number is kept as None)."""
    positions = []
    for p in resp.get("completion_probabilities", []):
        top = [[t.get("id"), t.get("logprob") if finite(t.get("logprob")) else None] for t in p.get("top_logprobs", [])]
        positions.append({"id": p.get("id"), "top": top})
    return {"id_slot": resp.get("id_slot"), "positions": positions}


def concurrently(server, jobs, a):
    """jobs: [(prompt, slot)]; every request released at once (a barrier), answers in the order of jobs."""
    barrier, out, errors = threading.Barrier(len(jobs)), [None] * len(jobs), []

    def send(i, prompt, slot):
        barrier.wait()
        try:
            out[i] = server.complete(prompt, slot, a)
        except ServerError as e:
            errors.append(e)

    threads = [threading.Thread(target=send, args=(i, p, s)) for i, (p, s) in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def collect(a, prompts):
    """Every phase's answers: {phase: [answer per prompt]} (see the docstring)."""
    n = len(prompts)
    longest = sorted(len(p) for p in prompts)[-2:]
    ctx_slot = -(-(sum(longest) + a.n_predict + 16) // 256) * 256   # the control's two prompts fit one slot
    log = lambda name: os.path.join(a.logs, f"{a.label}-{name}.log")
    runs = {}
    with Server(a.server, a.model, a.slots, a.slots * ctx_slot, log("parallel"), a.timeout) as s:
        runs["concurrent"] = concurrently(s, [(p, k) for k, p in enumerate(prompts)], a)
        runs["reused"] = concurrently(s, [(p, (k + 1) % n) for k, p in enumerate(prompts)], a)
    runs["fresh"], runs["control"] = [], []
    for k, p in enumerate(prompts):
        with Server(a.server, a.model, 1, ctx_slot, log(f"fresh{k}"), a.timeout) as s:
            runs["fresh"].append(s.complete(p, 0, a))
            runs["control"].append(s.complete(prompts[(k + 1) % n] + p, 0, a))
    return runs


def softmax_union(lp_a, lp_b):
    """Two renormalised distributions over the union of two {id: log-prob} lists; an id missing from a list gets
    that list's smallest log-prob."""
    ids = sorted(set(lp_a) | set(lp_b))
    out = []
    for lp in (lp_a, lp_b):
        low = min(lp.values())
        v = [lp.get(i, low) for i in ids]
        m = max(v)
        z = sum(math.exp(x - m) for x in v)
        out.append([math.exp(x - m) / z for x in v])
    return out


def distance(ref, test):
    """ref, test: answers. Per position up to the first greedy divergence: KL(ref || test) over the union of the
    top-n lists and |delta| of ref's top-1 log-prob; the divergence's position and ref's top-2 gap there."""
    d = {"positions": 0, "kl_max": 0.0, "kl_mean": 0.0, "dlp_max": 0.0, "diverged_at": None, "gap": None,
         "nonfinite": 0, "short": 0}
    rp, tp = ref["positions"], test["positions"]
    for t, (r, s) in enumerate(zip(rp, tp)):
        if not r["top"] or not s["top"] or any(x[1] is None for x in r["top"] + s["top"]):
            d["nonfinite"] += 1
            break
        la, lb = dict(map(tuple, r["top"])), dict(map(tuple, s["top"]))
        p, q = softmax_union(la, lb)
        kl = sum(x * math.log(x / y) for x, y in zip(p, q) if x > 0)
        top1 = r["top"][0][0]
        d["kl_max"] = max(d["kl_max"], kl)
        d["kl_mean"] += kl
        d["dlp_max"] = max(d["dlp_max"], abs(la[top1] - lb.get(top1, min(lb.values()))))
        d["positions"] += 1
        if r["id"] != s["id"]:
            d["diverged_at"] = t
            d["gap"] = r["top"][0][1] - r["top"][1][1] if len(r["top"]) > 1 else math.inf
            break
    if d["diverged_at"] is None and not d["nonfinite"] and (len(tp) < len(rp) or not rp):
        d["short"] = 1
    d["kl_mean"] /= max(d["positions"], 1)
    return d


def bounds_of(yard):
    """(kl, dlp, gap) bounds from a yardstick run's concurrent-vs-fresh distances; None where it is unusable."""
    noise = [distance(f, c) for f, c in zip(yard["runs"]["fresh"], yard["runs"]["concurrent"])]
    if not noise or any(d["nonfinite"] or d["short"] for d in noise):
        return None
    kl = FACTOR * max(d["kl_max"] for d in noise) + FLOOR_KL
    dlp = FACTOR * max(d["dlp_max"] for d in noise) + FLOOR_DLP
    return {"kl": kl, "dlp": dlp, "gap": GAP_PER_DLP * dlp}


def judge(d, b):
    """(margin, why): margin = the worst ratio of a distance to its bound (> 1 fails); why names what failed."""
    if d["nonfinite"]:
        return math.inf, "non-finite log-prob"
    if d["short"]:
        return math.inf, "fewer generated positions than the fresh answer"
    ratios = {"kl": d["kl_max"] / b["kl"], "top-1 log-prob": d["dlp_max"] / b["dlp"]}
    if d["diverged_at"] is not None:
        ratios["greedy flip over a top-2 gap"] = d["gap"] / b["gap"]
    why = max(ratios, key=ratios.get)
    return ratios[why], why


def rows_of(run, yard, b, prompts):
    """One dict per prompt x compared phase, with its verdict."""
    n, rows = len(prompts), []
    runs = run["runs"]
    held = {a["id_slot"]: k for k, a in enumerate(runs["concurrent"])}
    compared = [("concurrent", runs["concurrent"]), ("reused", runs["reused"]), ("control", runs["control"])]
    if yard is not run:
        compared.append(("fresh-vs-yardstick", None))
    for phase, answers in compared:
        for k in range(n):
            ref, test = runs["fresh"][k], answers[k] if answers else None
            if phase == "fresh-vs-yardstick":
                ref, test = yard["runs"]["fresh"][k], runs["fresh"][k]
            d = distance(ref, test)
            margin, why = judge(d, b)
            row = dict(d, impl=run["label"], prompt=k, tokens=len(prompts[k]), phase=phase,
                       slot=test["id_slot"], prev="", margin=margin, why=why)
            row["verdict"] = "pass" if margin <= 1 else "FAIL"
            if phase == "reused":
                row["prev"] = held.get(test["id_slot"], "")
                if test["id_slot"] != (k + 1) % n or row["prev"] in ("", k):
                    row["verdict"], row["why"] = "FAIL", "the request did not land on a slot of another prompt"
            elif phase == "concurrent" and yard is run and row["verdict"] == "pass":
                row["verdict"] = "yardstick"
            elif phase == "control":
                row["verdict"] = "seen" if margin > 1 and math.isfinite(margin) else "blind"
            rows.append(row)
    blind = {r["prompt"] for r in rows if r["phase"] == "control" and r["verdict"] == "blind"}
    for r in rows:
        if r["phase"] == "reused" and r["prompt"] in blind:
            r["why"] += "; the control is blind here: proves nothing"
    return rows


COLUMNS = ("impl", "prompt", "tokens", "phase", "slot", "prev", "positions", "diverged_at", "gap", "kl_mean",
           "kl_max", "dlp_max", "bound_kl", "bound_dlp", "bound_gap", "margin", "verdict", "why")


def write_tsv(path, rows, b):
    """Appends the rows (the header first into an empty file)."""
    fmt = lambda v: "" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as f:
        if new:
            f.write("\t".join(COLUMNS) + "\n")
        for r in rows:
            r = dict(r, bound_kl=b["kl"], bound_dlp=b["dlp"], bound_gap=b["gap"])
            f.write("\t".join(fmt(r[c]) for c in COLUMNS) + "\n")


def load(path):
    with open(path) as f:
        return json.load(f)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", help="the server command (llama-server's path, or a stand-in)")
    p.add_argument("--model")
    p.add_argument("--label", required=True, help="the implementation: ggml, kdn")
    p.add_argument("--responses", required=True, help="every answer is written here (JSON)")
    p.add_argument("--from", dest="from_", metavar="JSON", help="judge these saved answers; start no server")
    p.add_argument("--yardstick", metavar="JSON", help="the ggml run whose noise sets the bounds (default: this run)")
    p.add_argument("--tsv", help="rows appended here")
    p.add_argument("--logs", default=".", help="folder of the server logs (LABEL-parallel.log, LABEL-freshK.log)")
    p.add_argument("--lengths", default="17,300,900,2000", help="prompt lengths in tokens, at least 2")
    p.add_argument("--n-predict", type=int, default=8)
    p.add_argument("--n-probs", type=int, default=8)
    p.add_argument("--slots", type=int, default=4, help="-np of the servers (at least the number of prompts)")
    p.add_argument("--vocab-ids", type=int, default=30000, help="prompt tokens come from [259, 259 + this)")
    p.add_argument("--timeout", type=float, default=300, help="seconds for a server to start or answer")
    a = p.parse_args(argv)
    a.lengths = [int(x) for x in a.lengths.split(",")]
    if len(a.lengths) < 2 or a.slots < len(a.lengths) or a.n_probs < 2 or a.n_predict < 1 or min(a.lengths) < 1:
        p.error("needs 2+ prompts of 1+ tokens, --slots >= prompts, --n-probs >= 2, --n-predict >= 1")
    if not a.from_ and not (a.server and a.model):
        p.error("--server and --model, or --from")
    return a


def main(argv):
    a = parse_args(argv)
    prompts = prompts_of(a.lengths, a.vocab_ids)
    settings = {"lengths": a.lengths, "n_predict": a.n_predict, "n_probs": a.n_probs, "slots": a.slots,
                "vocab_ids": a.vocab_ids}
    try:
        run = load(a.from_) if a.from_ else {"label": a.label, "settings": settings, "runs": collect(a, prompts)}
    except ServerError as e:
        print(f"server_check: {a.label}: {e}", file=sys.stderr)
        return 2
    run["label"] = a.label
    with open(a.responses, "w") as f:
        json.dump(run, f)
    yard = load(a.yardstick) if a.yardstick else run
    if run["settings"] != settings or yard["settings"] != settings:
        print(f"server_check: the answers were made with other settings: {run['settings']}, {yard['settings']}",
              file=sys.stderr)
        return 2
    b = bounds_of(yard)
    if b is None:
        print(f"server_check: {a.label}: the yardstick ({yard['label']}) has a non-finite or short answer: no bound",
              file=sys.stderr)
        return 1
    rows = rows_of(run, yard, b, prompts)
    if a.tsv:
        write_tsv(a.tsv, rows, b)
    print(f"server_check: {a.label}: bounds from {yard['label']}'s concurrent-vs-fresh noise: KL {b['kl']:.3g}, "
          f"top-1 log-prob {b['dlp']:.3g}, top-2 gap at a greedy flip {b['gap']:.3g}")
    bad = [r for r in rows if r["verdict"] not in ("pass", "yardstick", "seen", "blind")]
    for r in rows:
        print(f"  {r['phase']:<18} prompt {r['prompt']} ({r['tokens']} tokens) slot {r['slot']}: {r['verdict']}, "
              f"{r['positions']} positions, KL max {r['kl_max']:.3g}, margin {r['margin']:.3g} ({r['why']})")
    seen = sum(r["verdict"] == "seen" for r in rows)
    print(f"server_check: {a.label}: {len(rows) - len(bad)} of {len(rows)} rows pass"
          f" (the control seen in {seen} of {len(prompts)})" + (f"; FAILED: {len(bad)}" if bad else "") +
          ("" if seen else "; FAILED: blind, no control seen: the check cannot see a carried context"))
    return 1 if bad or not seen else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

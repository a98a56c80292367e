#!/usr/bin/env python3
"""A stand-in for llama-server for tests/test_server_check.sh: /health (503 while "loading", then 200) and
/completion with greedy tokens and top-n log-probs, on -np slots, as llama-server's JSON has them.

    fake_llama_server.py [--mode honest|leak|nan] [--silent] [llama-server's arguments: --port, --host, -np are read]

The logits of a position are a function of the context alone (the prompt and the tokens generated so far: a
generator seeded by its CRC), peaked like the synthetic model's. On a server of more than one slot every logit also
moves by NOISE x a draw seeded by the context and the implementation (GGML_KDN_DISABLE): batching's rounding,
different per kernel; on a server of one slot only libkdn's logits move (its kernels round unlike ggml's). Modes:
  honest  nothing else
  leak    a request on a slot whose previous request had another prompt adds LEAK x a draw seeded by that prompt:
          the previous request's state carried into the slot
  nan     on a server of more than one slot, a prompt of NAN_FROM tokens or more gets a NaN log-prob at its
          fourth position, which llama-server's JSON writes as null
It logs "GATED_DELTA_NET runs in libkdn (fake)" when GGML_KDN_DISABLE is 0, as the patch does (--silent: never).
"""
import argparse
import json
import math
import os
import random
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FIRST_ID, WORDS = 259, 64      # the tokens it answers with
NOISE, LEAK = 0.02, 0.5        # logit units
READY_AFTER = 0.3              # seconds of 503 on /health
NAN_FROM = 1000                # prompt tokens


def draw(seed_text, n, scale):
    rng = random.Random(zlib.crc32(seed_text.encode()))
    return [scale * rng.gauss(0.0, 1.0) for _ in range(n)]


class Fake:
    def __init__(self, mode, slots, impl):
        self.mode, self.slots, self.impl = mode, slots, impl
        self.held = {}                                  # slot -> its last prompt
        self.lock = threading.Lock()
        self.started = time.time()

    def logits(self, context, slot, leak_from):
        key = ",".join(map(str, context))
        x = draw("model " + key, WORDS, 3.0)
        if self.slots > 1 or self.impl == "kdn":
            x = [a + b for a, b in zip(x, draw(f"{self.slots > 1} {self.impl} {key}", WORDS, NOISE))]
        if leak_from is not None:
            x = [a + b for a, b in zip(x, draw("leak " + ",".join(map(str, leak_from)) + key, WORDS, LEAK))]
        m = max(x)
        z = m + math.log(sum(math.exp(v - m) for v in x))
        return [v - z for v in x]

    def complete(self, body):
        prompt, n_predict, n_probs = body["prompt"], body["n_predict"], body["n_probs"]
        with self.lock:
            slot = body.get("id_slot", -1)
            slot = slot % self.slots if slot >= 0 else 0
            prev = self.held.get(slot)
            self.held[slot] = prompt
        leak_from = prev if self.mode == "leak" and prev is not None and prev != prompt else None
        context, positions = list(prompt), []
        for t in range(n_predict):
            lp = self.logits(context, slot, leak_from)
            order = sorted(range(WORDS), key=lambda i: -lp[i])
            top = [{"id": FIRST_ID + i, "token": f" w{FIRST_ID + i}", "logprob": lp[i]} for i in order[:n_probs]]
            if self.mode == "nan" and self.slots > 1 and len(prompt) >= NAN_FROM and t == 3:
                top[1]["logprob"] = None
            positions.append({"id": top[0]["id"], "token": top[0]["token"], "logprob": top[0]["logprob"],
                              "top_logprobs": top})
            context.append(top[0]["id"])
        return {"content": "".join(p["token"] for p in positions), "id_slot": slot, "stop": True,
                "completion_probabilities": positions}


def handler_for(fake):
    class Handler(BaseHTTPRequestHandler):
        def reply(self, status, obj):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path != "/health":
                return self.reply(404, {"error": "not found"})
            if time.time() - fake.started < READY_AFTER:
                return self.reply(503, {"error": {"message": "Loading model"}})
            self.reply(200, {"status": "ok"})

        def do_POST(self):
            if self.path != "/completion":
                return self.reply(404, {"error": "not found"})
            self.reply(200, fake.complete(json.loads(self.rfile.read(int(self.headers["Content-Length"])))))

        def log_message(self, fmt, *args):
            print("fake_llama_server: " + fmt % args, flush=True)

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("honest", "leak", "nan"), default="honest")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--silent", action="store_true")
    p.add_argument("-np", type=int, default=1)
    a, _ = p.parse_known_args()
    impl = "ggml" if os.environ.get("GGML_KDN_DISABLE") == "1" else "kdn"
    if impl == "kdn" and not a.silent:
        print("fake_llama_server: GATED_DELTA_NET runs in libkdn (fake)", flush=True)
    fake = Fake(a.mode, a.np, impl)
    ThreadingHTTPServer((a.host, a.port), handler_for(fake)).serve_forever()


if __name__ == "__main__":
    main()

#!/bin/sh
# The end-to-end tools without a GPU or llama.cpp (tools/e2e/e2e_bench.sh needs both to measure):
#   e2e_kl.c        KL, top-1 agreement and logit RMS on hand-made dumps whose answers are worked out below,
#                   non-finite logits and shape mismatches refused
#   e2e_stats.py    the ratio's geometric mean and t-interval, --check, the op table from an ncu CSV whose
#                   columns are in another order and unit, a refused call counted
#   e2e_bench.sh    the whole pipeline on stand-in programs: rounds stop at --rounds-min once the intervals
#                   are tight, and a run where libkdn did not run the op (or ran it under GGML_KDN_DISABLE=1,
#                   or refused a call) stops the script with status 1
# Usage: tests/test_e2e_tools.sh (from the repository root)
set -eu
t=$(mktemp -d "${TMPDIR:-/tmp}/kdn-e2e-test.XXXXXX")
trap 'rm -rf "$t"' EXIT
failures=0
fail() { echo "e2e tools: FAIL: $*"; failures=$((failures + 1)); }
# near A B [TOL]: |A - B| <= TOL (default 1e-6), A and B as printed
near() { python3 -c "import sys; a, b, e = map(float, sys.argv[1:]); sys.exit(abs(a - b) > e)" "$1" "$2" "${3:-1e-6}"; }
field() { printf '%s\n' "$1" | cut -f"$2"; }

# --- e2e_kl -----------------------------------------------------------------------------------------------------
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror tools/e2e/e2e_kl.c -lm -o "$t/e2e_kl"
# dump FILE N_VOCAB LOGIT...: positions = number of logits / N_VOCAB
dump() {
    python3 -c "import struct, sys; v = int(sys.argv[2]); x = [float(a) for a in sys.argv[3:]]
open(sys.argv[1], 'wb').write(struct.pack('<ii%df' % len(x), len(x) // v, v, *x))" "$@"
}
dump "$t/base" 2 0 0 1 -1
dump "$t/same" 2 0 0 1 -1
dump "$t/shift" 2 5 5 8 6        # every row + a constant (5, then 7): the same distributions
dump "$t/tilt" 2 1.0986122886681098 0 1 -1   # ln 3: row 1 becomes (3/4, 1/4)
dump "$t/nan" 2 0 nan 1 -1
dump "$t/wide" 4 0 0 1 -1
line=$("$t/e2e_kl" "$t/base" "$t/same")
[ "$(field "$line" 1)" = 2 ] && near "$(field "$line" 2)" 0 0 && near "$(field "$line" 5)" 1 0 &&
    near "$(field "$line" 6)" 0 0 || fail "e2e_kl identical dumps: $line"
line=$("$t/e2e_kl" "$t/base" "$t/shift")
# KL 0 up to rounding; the logits differ by 5 and 7: rms = sqrt((25 + 25 + 49 + 49) / 4) = sqrt(37)
near "$(field "$line" 2)" 0 1e-12 && near "$(field "$line" 5)" 1 0 && near "$(field "$line" 6)" 6.0827625 1e-6 ||
    fail "e2e_kl shifted rows: $line"
line=$("$t/e2e_kl" "$t/base" "$t/tilt")
# row 1: KL((1/2, 1/2) || (3/4, 1/4)) = ln(4/3) / 2 = 0.1438410; row 2 unchanged: mean 0.0719205, max 0.1438410;
# top-1 agrees in both rows (a tie counts its first token)
near "$(field "$line" 2)" 0.0719205 1e-6 && near "$(field "$line" 4)" 0.1438410 1e-6 &&
    near "$(field "$line" 5)" 1 0 || fail "e2e_kl tilted row: $line"
if line=$("$t/e2e_kl" "$t/base" "$t/nan" 2> /dev/null) || [ "$(field "$line" 7)" != 1 ]; then
    fail "e2e_kl passed a NaN logit: $line"
fi
"$t/e2e_kl" "$t/base" "$t/wide" > /dev/null 2>&1 && fail "e2e_kl compared dumps of different shapes"

# --- e2e_stats.py bench -----------------------------------------------------------------------------------------
# four rounds, kdn/ggml = 1.05 e^(+-0.01) alternately, one half round (skipped): log-ratio mean ln 1.05, sample
# sd 0.01 * sqrt(4/3), half-width t(3) * sd / 2 = 3.182 * 0.0115470 / 2 = 0.0183713
python3 - "$t/bench.jsonl" << 'EOF'
import json, math, sys
with open(sys.argv[1], "w") as f:
    for r in range(4):
        kdn = 1000 * 1.05 * math.exp(0.01 if r % 2 else -0.01)
        for impl, ts in (("kdn", kdn), ("ggml", 1000.0)):
            f.write(json.dumps({"e2e_round": r, "e2e_impl": impl, "n_prompt": 4, "n_gen": 0, "n_ubatch": 512,
                                "avg_ts": ts}) + "\n")
    f.write(json.dumps({"e2e_round": 4, "e2e_impl": "kdn", "n_prompt": 4, "n_gen": 0, "n_ubatch": 512,
                        "avg_ts": 1.0}) + "\n")
EOF
row=$(python3 tools/e2e/e2e_stats.py bench "$t/bench.jsonl" | sed -n 2p)
[ "$(field "$row" 1)" = pp4/ub512 ] && near "$(field "$row" 4)" 1.05 1e-4 &&
    near "$(field "$row" 5)" "$(python3 -c 'import math; print(1.05 * math.exp(-0.0183713))')" 1e-4 &&
    near "$(field "$row" 6)" "$(python3 -c 'import math; print(1.05 * math.exp(0.0183713))')" 1e-4 &&
    [ "$(field "$row" 8)" = 4 ] || fail "e2e_stats bench: $row"
python3 tools/e2e/e2e_stats.py bench "$t/bench.jsonl" --check 0.02 > /dev/null || fail "e2e_stats --check 0.02 refused 1.8 %"
python3 tools/e2e/e2e_stats.py bench "$t/bench.jsonl" --check 0.015 > /dev/null &&
    fail "e2e_stats --check 0.015 passed 1.8 %"

# --- e2e_stats.py op --------------------------------------------------------------------------------------------
# ggml: 4 calls of 3 us; kdn: 2 kernels of 1 us per call, and one call refused (ggml's kernel, 3 us) -- units
# usecond, columns reordered. Bench: 1000 tok/s for 4 tokens: share = us x calls / 4 tokens x 1000 /s
python3 - "$t/op.txt" "$t/bench.jsonl" << 'EOF'
import sys
head = '"Metric Value","Kernel Name","ID","Metric Unit","Metric Name"\n'
row = lambda us, name: f'"{us}","{name}","0","usecond","gpu__time_duration.sum"\n'
with open(sys.argv[1], "w") as f:
    f.write("### kdn 4 0 512\n==PROF== noise\n" + head)
    f.write("".join(row(1, "kernel_chunked_intra") + row(1, "kernel_chunked_state") for _ in range(3)))
    f.write(row(3, "gated_delta_net_cuda"))
    f.write("### ggml 4 0 512\n" + head + "".join(row(3, "gated_delta_net_cuda") for _ in range(4)))
EOF
row=$(python3 tools/e2e/e2e_stats.py op "$t/op.txt" "$t/bench.jsonl" | sed -n 2p)
# kdn: (6 x 1 + 3) us / 4 calls = 2.25 us, ggml 3 us: 1.333, 7 kernels / 4 calls; shares (time per token x
# tokens per second of the complete rounds): kdn 2.25e-6 x 4 / 4 x 1050 x 100 = 0.24 %, ggml 3e-6 x 1000 x 100 = 0.3 %
[ "$(field "$row" 2)" = 4 ] && near "$(field "$row" 3)" 2.25 0 && near "$(field "$row" 4)" 3.0 0 &&
    near "$(field "$row" 5)" 1.333 0 && near "$(field "$row" 6)" 1.75 0 && near "$(field "$row" 7)" 0.2 0 &&
    near "$(field "$row" 8)" 0.3 0 && [ "$(field "$row" 9)" = 1 ] || fail "e2e_stats op: $row"

# --- e2e_bench.sh on stand-ins ----------------------------------------------------------------------------------
# llama-bench prints kdn 4 % faster without noise (with STUB_NOISE=FILE, a run counter: x e^(+-0.2) by round, an
# interval that never closes); e2e_logits writes a dump and, as the patch does, logs
# "runs in libkdn" when GGML_KDN_DISABLE=0 -- unless STUB_LOG says otherwise; ncu prints one ggml or kdn kernel
mkdir -p "$t/bin" "$t/work" "$t/src/gguf-py"
cat > "$t/bin/llama-bench" << 'EOF'
#!/usr/bin/env python3
import json, os, sys
a = sys.argv
opt = lambda f: [int(x) for x in a[a.index(f) + 1].split(",")]
kdn = os.environ["GGML_KDN_DISABLE"] == "0"
noise = 1.0
if os.environ.get("STUB_NOISE"):
    with open(os.environ["STUB_NOISE"], "a+") as f:
        f.seek(0)
        runs = len(f.read())
        f.write(".")
    noise = 1.22 if runs // 2 % 2 else 0.82
for u in opt("-ub"):
    for p, g in [(p, 0) for p in opt("-p") if p] + [(0, g) for g in opt("-n") if g]:
        print(json.dumps({"n_prompt": p, "n_gen": g, "n_ubatch": u, "avg_ts": 1000 * (1.04 * noise if kdn else 1)}))
EOF
cat > "$t/bin/e2e_logits" << 'EOF'
#!/bin/sh
case "${GGML_KDN_DISABLE}:${STUB_LOG:-ok}" in
    0:ok|*:ran) echo "x: GATED_DELTA_NET runs in libkdn (stub)" >&2 ;;
    0:refused)  echo "x: GATED_DELTA_NET runs in libkdn (stub)" >&2; echo "x: libkdn refused y (z)" >&2 ;;
esac
printf 'dump' > "$4"
EOF
cat > "$t/bin/ncu" << 'EOF'
#!/bin/sh
k=kernel_chunked_intra; [ "$GGML_KDN_DISABLE" = 1 ] && k=gated_delta_net_cuda
echo '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
echo "\"1\",\"$k\",\"gpu__time_duration.sum\",\"ns\",\"1000\""
EOF
printf '#!/bin/sh\nprintf "1\\t0\\t0\\t0\\t1\\t0\\t0\\n"\n' > "$t/bin/e2e_kl"
chmod +x "$t/bin/"*
touch "$t/work/qwen35moe.gguf" "$t/work/qwen35moe-gates101.gguf"
e2e() { PATH="$t/bin:$PATH" bash tools/e2e/e2e_bench.sh --smoke --steps bench,op,kl --rounds-min 2 --rounds-max 6 \
            --work "$t/work" --build-dir "$t" "$@" "$t/src" "$t/out" > "$t/e2e.out" 2>&1; }
if e2e; then
    [ "$(sed -n 2p "$t/out/bench.tsv" | cut -f8)" = 2 ] || fail "e2e_bench.sh: no stop at --rounds-min 2 with exact ratios"
    [ "$(grep -c '^libkdn\|^yardstick' "$t/out/kl.tsv")" = 8 ] || fail "e2e_bench.sh: kl.tsv lacks rows"
else
    fail "e2e_bench.sh on stand-ins: $(tail -3 "$t/e2e.out")"
fi
# noisy ratios: rounds go on to --rounds-max, or stop at --rounds-min once --bench-seconds have passed
for limit in 6: 2:"--bench-seconds 0"; do
    rm -f "$t/runs"
    # shellcheck disable=SC2086  # the option and its value, or nothing
    if STUB_NOISE=$t/runs e2e --steps bench ${limit#*:}; then
        [ "$(sed -n 2p "$t/out/bench.tsv" | cut -f8)" = "${limit%%:*}" ] ||
            fail "e2e_bench.sh with noise and '${limit#*:}': $(sed -n 2p "$t/out/bench.tsv" | cut -f8) rounds"
    else
        fail "e2e_bench.sh with noise: $(tail -3 "$t/e2e.out")"
    fi
done
for case in silent:"libkdn did not run" ran:"GGML_KDN_DISABLE=1 but libkdn ran" refused:"refused a call"; do
    if STUB_LOG=${case%%:*} e2e; then
        fail "e2e_bench.sh passed a run where ${case#*:}"
    elif ! grep -q "${case#*:}" "$t/e2e.out"; then
        fail "e2e_bench.sh (${case%%:*}) stopped without saying '${case#*:}': $(grep FAILED "$t/e2e.out")"
    fi
done

[ "$failures" = 0 ] || exit 1
echo "e2e tools: e2e_kl on hand-made dumps, e2e_stats' intervals and op table, e2e_bench.sh's rounds, its" \
     "time limit and its libkdn-ran guards passed"

#!/bin/sh
# tools/e2e/server_check.py and server_check.sh without a GPU or llama.cpp: against tests/fake_llama_server.py, a
# stand-in llama-server whose logits are a function of the context, moved a little by batching (and by the
# implementation), and in its faulty modes by what the slot held before or by a NaN:
#   honest ggml          passes; its concurrent rows are the yardstick
#   honest libkdn        passes against ggml's bounds, its fresh answers too (they differ from ggml's)
#   leaking libkdn       a reused slot that carries the previous prompt fails, each reused row by a wide margin
#                        (>= WIDE x its bound), and only those rows
#   NaN                  fails, the row saying non-finite
#   a blind check        saved answers whose every control equals the fresh answer: each control says blind and
#                        the run fails; one blind control (a long prompt forgets the one before) passes, its
#                        prompt's reused row saying it proves nothing
#   no server / no args  exit 2
#   server_check.sh      both runs on the stand-in pass; a server log without libkdn's line stops it (exit 1)
# Usage: tests/test_server_check.sh (from the repository root)
set -u
t=$(mktemp -d "${TMPDIR:-/tmp}/kdn-server-check.XXXXXX")
trap 'rm -rf "$t"' EXIT
failures=0
WIDE=10
fail() { echo "server check: FAIL: $*"; failures=$((failures + 1)); }
# sc IMPL MODE NAME [ARGS]: server_check.py on the stand-in in MODE as implementation IMPL; rows in NAME.tsv
sc() {
    impl=$1 mode=$2 name=$3
    shift 3
    GGML_KDN_DISABLE=$([ "$impl" = ggml ] && echo 1 || echo 0) python3 tools/e2e/server_check.py \
        --server "python3 tests/fake_llama_server.py --mode $mode" --model none --label "$impl" \
        --responses "$t/$name.json" --tsv "$t/$name.tsv" --logs "$t" "$@" > "$t/$name.out" 2>&1
}
# column NAME.tsv COLUMN PHASE: that column of PHASE's rows, one per line
column() {
    awk -F'\t' -v c="$2" -v p="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                                    $4 == p { print $k }' "$t/$1.tsv"
}

sc ggml honest ggml || fail "honest ggml: $(tail -3 "$t/ggml.out")"
[ "$(column ggml verdict concurrent | sort -u)" = yardstick ] && [ "$(column ggml verdict reused | sort -u)" = pass ] &&
    [ "$(column ggml verdict control | sort -u)" = seen ] || fail "honest ggml's verdicts: $(cat "$t/ggml.tsv")"

sc kdn honest kdn --yardstick "$t/ggml.json" || fail "honest libkdn: $(tail -3 "$t/kdn.out")"
[ "$(column kdn verdict fresh-vs-yardstick | sort -u)" = pass ] &&
    column kdn kl_max fresh-vs-yardstick | awk '$1 > 0 { n++ } END { exit n != 4 }' ||
    fail "honest libkdn against ggml's fresh answers: $(cat "$t/kdn.tsv")"

if sc kdn leak leak --yardstick "$t/ggml.json"; then
    fail "a slot that carried the previous prompt passed: $(tail -3 "$t/leak.out")"
else
    [ "$(column leak verdict reused | sort -u)" = FAIL ] && [ "$(column leak verdict concurrent | sort -u)" = pass ] ||
        fail "the leak failed other rows than the reused ones: $(cat "$t/leak.tsv")"
    column leak margin reused | awk -v w="$WIDE" '$1 >= w { n++ } END { exit n != 4 }' ||
        fail "a reused row failed by less than $WIDE x its bound: $(column leak margin reused | tr '\n' ' ')"
fi

if sc kdn nan nan --yardstick "$t/ggml.json"; then
    fail "a NaN log-prob passed"
else
    grep -q 'non-finite' "$t/nan.tsv" || fail "the NaN failure does not say non-finite: $(tail -3 "$t/nan.out")"
fi

# blind_from SRC DST FIRST: SRC's answers with the controls of prompts FIRST.. replaced by the fresh answers
blind_from() {
    python3 -c "import json, sys
run = json.load(open(sys.argv[1]))
first = int(sys.argv[3])
run['runs']['control'][first:] = run['runs']['fresh'][first:]
json.dump(run, open(sys.argv[2], 'w'))" "$@"
}
blind_from "$t/kdn.json" "$t/blind-in.json" 0
if sc kdn honest blind --from "$t/blind-in.json" --yardstick "$t/ggml.json"; then
    fail "a check that cannot see a carried context passed"
else
    [ "$(column blind verdict control | sort -u)" = blind ] && grep -q 'no control seen' "$t/blind.out" ||
        fail "the blind controls: $(cat "$t/blind.tsv")"
fi
blind_from "$t/kdn.json" "$t/blind1-in.json" 3
if sc kdn honest blind1 --from "$t/blind1-in.json" --yardstick "$t/ggml.json"; then
    [ "$(column blind1 verdict control | tr '\n' ' ')" = "seen seen seen blind " ] &&
        [ "$(column blind1 why reused | grep -c 'proves nothing')" = 1 ] ||
        fail "one blind control: $(cat "$t/blind1.tsv")"
else
    fail "one blind control of four failed the run: $(tail -3 "$t/blind1.out")"
fi

GGML_KDN_DISABLE=1 python3 tools/e2e/server_check.py --server false --model none --label ggml \
    --responses "$t/x.json" --logs "$t" --timeout 5 > "$t/x.out" 2>&1
[ $? = 2 ] || fail "a server that exits at once: not exit 2: $(tail -3 "$t/x.out")"
python3 tools/e2e/server_check.py > /dev/null 2>&1
[ $? = 2 ] || fail "server_check.py without arguments: not exit 2"
bash tools/e2e/server_check.sh > "$t/x.out" 2>&1
[ $? = 2 ] && grep -q 'server_check.sh \[options\]' "$t/x.out" ||
    fail "server_check.sh without arguments: $(cat "$t/x.out")"

# server_check.sh --steps check on a stand-in build folder: llama-server runs the fake with STUB_ARGS
mkdir -p "$t/src" "$t/build/bin" "$t/work"
touch "$t/work/qwen35moe-spm.gguf"
printf '#!/bin/sh\nexec python3 %s/tests/fake_llama_server.py $STUB_ARGS "$@"\n' "$PWD" > "$t/build/bin/llama-server"
chmod +x "$t/build/bin/llama-server"
shell() { bash tools/e2e/server_check.sh --steps check --work "$t/work" --build-dir "$t/build" "$t/src" "$t/out" \
              > "$t/sh.out" 2>&1; }
if STUB_ARGS="" shell; then
    [ "$(wc -l < "$t/out/server_check.tsv")" = 29 ] ||
        fail "server_check.sh: not 12 + 16 rows: $(cat "$t/out/server_check.tsv")"
else
    fail "server_check.sh on the honest stand-in: $(tail -5 "$t/sh.out")"
fi
for case in "--silent:libkdn did not run the op" "--mode leak:a check failed"; do
    if STUB_ARGS=${case%%:*} shell; then
        fail "server_check.sh passed with the stand-in's ${case%%:*}"
    elif ! grep -q "${case#*:}" "$t/sh.out"; then
        fail "server_check.sh (${case%%:*}) stopped without saying '${case#*:}': $(grep FAILED "$t/sh.out")"
    fi
done

[ "$failures" = 0 ] || exit 1
echo "server check: honest runs pass, a leaking slot fails by >= ${WIDE}x, a NaN and an all-blind control fail," \
     "server_check.sh's runs and its libkdn-ran guard passed"

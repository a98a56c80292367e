#!/bin/sh
# The command line's contract: exit statuses, messages, determinism.
#   tests/cli.sh BINARY FAILING_BINARY [GPU_BINARY]
# FAILING_BINARY (build/cpu/test_failing, tests/tests.mk) is BINARY's objects
# and main with phase 1 replaced by tests/failing_phase.c, one test of which
# fails: it proves exit status 1 with no way to fail on purpose in BINARY.
set -u
bin=$1
failing_bin=$2
gpu_bin=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() { echo "cli: FAIL $*"; exit 1; }

# expect STATUS PATTERN ARGS...: the exit status, and PATTERN in stdout+stderr
expect() {
    want=$1 pattern=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want"
    cat "$tmp/out" "$tmp/err" | grep -q -- "$pattern" || fail "'$*' did not print '$pattern'"
    # a usage error says why on stderr and prints nothing on stdout
    if [ "$want" = 2 ] && [ -z "${ran:-}" ]; then
        grep -q -- "$pattern" "$tmp/err" && [ ! -s "$tmp/out" ] || fail "'$*': usage error not on stderr alone"
    fi
    checks=$((checks + 1))
}
# expect_ran STATUS PATTERN ARGS...: as expect, for a run whose tests ran
# (their lines on stdout) and whose status 2 says it tested nothing
expect_ran() {
    ran=1
    expect "$@"
    ran=
}

# usage errors go to stderr with status 2
expect 2 "unknown option '--bogus'" --bogus
expect 2 "invalid phase '0'" --phase 0
expect 2 "invalid phase '9'" --phase 9
expect 2 "invalid phase 'x'" --phase x
expect 2 "invalid phase '5-2'" --phase 5-2
expect 2 "did you mean: solve_tri" --test solve_trix
expect 2 "needs a value" --seed
expect 2 "invalid seed" --seed -3
# the range is named past it; an unknown flag in a cluster is named, not the binary
expect 2 "invalid seed '2147483648': a whole number 0 to 2147483647" --seed 2147483648
expect 2 "unknown option '-x'" -xv
expect 2 "unexpected argument" stray

# help and list
expect 0 "usage: test_deltanet" --help
expect 0 "D_k (<= 256), D_v, chunk (32 or 64)" --help
expect 0 "solve_tri_parallel" --list
for p in 1 2 3 4 5 6 7 8; do
    grep -q "^$p " "$tmp/out" || fail "--list shows no test of phase $p"
done
checks=$((checks + 1))

# selection: a glob, a phase list, a range
expect 0 "3 passed, 0 failed" --test 'solve_tri_*'
expect 0 "phase 4" --phase 1,4
grep -q "phase 2 " "$tmp/out" && fail "--phase 1,4 ran phase 2"
expect 0 "phase 3" --phase 2-3
checks=$((checks + 1))

# --set: another model's shape (H_v/H_k = 3 at D = 128, short T) runs; impossible ones are usage errors
expect 0 "Hv=\\(12\\|48\\) " --set H_v=48 --set T=40 --test chunked_T64
expect 0 "2 passed, 0 failed" --set T=3 --test prefill_then_decode --test chunked_T1
# a test's former name (phases/ladder.c's renames) runs it under today's, saying so
expect 0 "note: --test two_launch_T1 names 1 test by a former name, now chunked_T1" --set T=3 --test two_launch_T1
# a test that cannot take the shape is skipped, saying why (it used to abort the run at T=50, fail at T=64)
expect 0 "^\[SKIP\] phase 7  chunked_state_chunk .*--set does not apply: .*T = 50" --set T=50 --test chunked_state_chunk \
    --test chunked_T1
grep -q "^1 passed, 0 failed, 1 skipped" "$tmp/out" || fail "a skip beside a pass: $(tail -n 1 "$tmp/out")"
# a run that skipped every test it selected tested nothing: status 2 with the
# reason, as a selection of no test (it ended "0 passed, 0 failed, 1 skipped", 0)
nothing="nothing was tested: every selected test was skipped"
expect_ran 2 "$nothing" --set T=64 --test chunked_state_chunk
grep -q "^0 passed, 0 failed, 1 skipped" "$tmp/out" || fail "the skipped run's summary: $(tail -n 1 "$tmp/out")"
grep -q "$nothing" "$tmp/err" || fail "the reason nothing was tested is not on stderr: $(cat "$tmp/err")"
# the bad-call contract keeps its own shape (one head made its beta breaker a valid call: [FAIL])
expect 0 "gdn_bad_calls .*(--set does not apply)" --set H_k=1 --set H_v=1 --test gdn_bad_calls --test gdn_chunked_K2
expect 2 "not a multiple of H_k" --set H_v=20 --phase 8
expect 2 "H_v = 12, not a multiple of H_k = 16 (the row's H_k: set both)" --set H_v=12 --test chunked_T64
# heads --set gives run as given on the CPU build too (it quarters only a row's own heads)
expect 0 " T=40 B=1 Hk=4 Hv=12 " --set H_k=4 --set H_v=12 --set T=40 --test chunked_T64
# --bench on a test without timed work says so (it printed no table and no reason)
expect 0 "bench: none: transpose registers no timed work" --bench --test transpose
expect 2 "D_k out of range: D_k is 1 to 256" --set D_k=257
# D_k past the chunked kernels' 128: the recurrent rows and the library run it; a chunked row skips it,
# saying so (it used to pass, having run the recurrent kernel the dispatch hands such a call to)
DK200="--set D_k=200 --set T=8 --set H_k=1 --set H_v=1 --set n_seqs=1"
expect 0 "1 passed, 0 failed" $DK200 --test recurrent_prompt
expect_ran 2 "^\[SKIP\] phase 8  chunked_T64 .*chunked refuses: D_k past" $DK200 --test chunked_T64
grep -q "$nothing" "$tmp/err" || fail "--set D_k=200 --test chunked_T64 did not say nothing was tested"
expect 0 "^\[SKIP\] phase 8  chunked_unaligned_q .*chunked refuses: D_k past" $DK200 --test chunked_unaligned_q \
    --test recurrent_prompt
expect 0 "^\[PASS\] phase 8  auto_long_B1 .*Dk=200" $DK200 --test auto_long_B1
# the tables of fixed shapes keep theirs (--set T=8 made native_context_T262144 fail: "AUTO does not take the chunked path")
expect 0 "native_context_T262144 .*(--set does not apply)" --set T=8 --test native_context_T262144 --test chunked_T1
expect 0 "ggml_nmse_T100_c32 .*(--set does not apply)" --set D_k=64 --test ggml_nmse_T100_c32 --test chunked_T1
expect 2 "T out of range: T is 1 to 1048576" --set T=0
expect 2 "chunk out of range: chunk is 32 or 64" --set chunk=48
expect 2 "n_seqs takes a whole number, 'x' is not one (n_seqs is 1 to 65535)" --set n_seqs=x
expect 2 "head_map out of range: head_map is tiled or block" --set head_map=2
# a name that is not a head map is called that, not a number that is not one
expect 2 "--set 'head_map=diag': head_map is tiled or block (or 0, 1), 'diag' is neither" --set head_map=diag
grep -q "whole number" "$tmp/err" && fail "--set head_map=diag speaks of a whole number: $(cat "$tmp/err")"
expect 2 "unknown key" --set foo=1

# limits: memory is refused where it is taken, past --max-mem or the machine
# (physical memory, ulimit -v, the device's), with the numbers in readable
# units (status 3); the other tests still run
refused="^\[REFUSED\] phase 8  chunked_T64 .*refused: host+device memory (one on this build) needs [0-9.]* [KMG]iB ([0-9.]* [KMG]iB of [^)]*), over"
expect 3 "$refused --max-mem 16.0 GiB" --set T=524288 --set n_seqs=64 --test chunked_T64 --max-seconds 100000000
expect 3 "$refused physical memory [0-9.]* [GT]iB" --set T=1048576 --set n_seqs=4096 --test chunked_T64 --max-mem 100000G \
    --max-seconds 1e12
expect 3 "$refused --max-mem 976.6 KiB" --max-mem 1000000 --test chunked_T64 --test sigmoid
grep -q "^\[PASS\] phase 1  sigmoid" "$tmp/out" || fail "the test after a refused one did not run"
grep -q "^1 passed, 1 failed$" "$tmp/out" || fail "a refused test is not counted as a failure: $(tail -n 1 "$tmp/out")"
expect 3 "refused: .*needs [0-9.]* KiB ([0-9.]* KiB of a host array), over --max-mem 800 bytes" --max-mem 800 --test chunked_T64
# valid large shapes run to their end: no prediction of their memory to be
# off (each ended [ERROR], exit 2: the estimate was off by more than 1.25x)
expect 0 "3 passed, 0 failed" --set D_v=2048 --set D_k=16 --set T=8 --set H_k=2 --set H_v=2 --test chunked_T64 --test chunked_T1 \
    --test recurrent_decode
# time: a row is refused when the least arithmetic its shape does is
# estimated over --max-seconds; every row whose shape --set changes has the
# estimate (a scalar-load row at T = 2^20 had none and ran until killed)
expect 3 "^\[REFUSED\] .*refused: estimated at least [0-9.]* s (.* reference, .* kernel flops), over --max-seconds 1 s$" \
    --set T=1048576 --max-seconds 1 --test chunked_scalar_odd_dims
expect 3 "refused: estimated at least [0-9.]* s (.*), over --max-seconds 1 us$" --max-seconds 1e-6 --test chunked_ragged
expect 0 "1 passed, 0 failed" --max-mem 16M --max-seconds 100 --test chunked_T64
# the CPU executor's watchdog stops a thread that makes no progress, never a
# long run that does: a launch longer than a lowered KDN_CPU_TIMEOUT passes
# (it was cut as a hang, [FAIL]); tests/test_harness.c plants the hang
KDN_CPU_TIMEOUT=0.01 expect 0 "1 passed, 0 failed" --set T=64 --set H_k=1 --set H_v=1 --set n_seqs=1 --test recurrent_prompt
expect 2 "invalid --max-mem '12X'" --max-mem 12X
# an output that cannot be written names the path given, not the temporary file beside it
expect 2 "--log: cannot write '$tmp/none/x.tsv': No such file or directory" --log "$tmp/none/x.tsv" --test sigmoid
grep -q "\.tmp" "$tmp/err" && fail "an unwritable --log names the temporary file: $(cat "$tmp/err")"
# --compare says when the logs are of different runs: another seed, build or
# shape (a log of sigmoid, and a copy edited as another run would have written it)
expect 0 "1 passed, 0 failed" --test sigmoid --log "$tmp/run.tsv"
tab=$(printf '\t')
sed -e "s/^# seed$tab.*/# seed${tab}5/" -e "s/^# target$tab.*/# target${tab}gfx906/" -e "s/${tab}n=1024$tab/${tab}n=2048$tab/" \
    "$tmp/run.tsv" > "$tmp/other.tsv"
expect 0 "note: the logs differ in their seed ([0-9]* / 5): results of different runs" --compare "$tmp/run.tsv" "$tmp/other.tsv"
grep -q "note: the logs differ in their target (host-wave64 / gfx906)" "$tmp/out" || fail "--compare: another target unsaid"
grep -q "note: 1 row ran another shape (first sigmoid (unfused): n=1024 / n=2048)" "$tmp/out" || fail "--compare: another shape unsaid"
expect 0 "0 regressions" --compare "$tmp/run.tsv" "$tmp/run.tsv"
grep -q "^note" "$tmp/out" && fail "--compare of a log with itself notes a difference"
expect 2 "invalid --max-seconds '0'" --max-seconds 0
expect 2 "--max-mem has no effect with --compare" --compare a b --max-mem 1G
# --verbose shows the memory each test held at most
expect 0 "memory: host [0-9.]* [KM]iB, device [0-9.]* [KM]iB at most" --verbose --test chunked_T64

# a --dump path that leaves no room for a file name is an I/O error naming the
# file (exit 2), never names cut short into one (18 of 20 files, exit 0, before):
# at 4067 characters neg's names fit (with DIR/NAME.<pid>.tmp, any pid),
# cumsum_wave_scan's cannot
seg=$(printf 'd%.0s' $(seq 1 250))
deep=$tmp
for i in $(seq 1 16); do deep=$deep/$seg; done
deep=$deep/$(printf 'e%.0s' $(seq 1 $((4067 - ${#deep} - 1))))
mkdir -p "$deep" || fail "cannot make a directory of ${#deep} characters"
"$bin" --test neg --test cumsum_wave_scan --dump "$deep" >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] || fail "--dump into a ${#deep}-character path: exit status $rc, expected 2"
grep -q "^\[ERROR\] phase 1  cumsum_wave_scan" "$tmp/out" || fail "the file name past the limit is not an [ERROR]"
grep -q "^\[PASS\] phase 1  neg" "$tmp/out" || fail "the test whose names fit did not pass"
[ "$(ls "$deep" | wc -l)" = 3 ] || fail "--dump wrote $(ls "$deep" | wc -l) files, expected neg's 3"
rm -rf "${tmp:?}/$seg"
checks=$((checks + 1))

# usage that would do nothing or something else than asked is an error
expect 2 "invalid phase ''" --phase ''
expect 2 "invalid phase ','" --phase ,
expect 2 "invalid phase '1,,2'" --phase 1,,2
long_phases=$(printf '1,%.0s' $(seq 1 80))
expect 2 "invalid phase '${long_phases}9'" --phase "${long_phases}9" # past 127 characters, still read whole
expect 0 "phase 1" --phase "${long_phases}2"
expect 2 "select no test together: 'sigmoid' is in phase 1" --test sigmoid --phase 8
expect 2 "ambiguous option '--s': it could be --seed, --set" --s 3
expect 2 "unknown option '--sx'" --sx 3
# a mistyped option or --set key is named with the nearest there is
expect 2 "unknown option '--sed'; did you mean --seed?" --sed 3
expect 2 "--set 'T_=3': unknown key; did you mean T?" --set T_=3
expect 2 "--reps has no effect without --bench" --reps 3 --phase 1
expect 2 "--set has no effect with --load" --set T=5 --load /tmp
expect 2 "--set has no effect: no selected test has a Delta-Net shape" --set T=5 --test sigmoid
expect 2 "--max-diff-growth has no effect without --compare" --max-diff-growth 3
expect 2 "--log has no effect with --compare" --compare a b --log x
expect 2 "--phase has no effect with --env" --env --phase 1
expect 2 "--seed has no effect with --list" --list --seed 3

# a failing test: its [FAIL] line, the count, status 1; the others still run
"$failing_bin" --phase 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || fail "a failing test: exit status $rc, expected 1"
grep -q "^\[FAIL\] phase 1 *neg_wrong_reference" "$tmp/out" || fail "no [FAIL] line for neg_wrong_reference"
grep -q "^\[PASS\] phase 1 *neg_right" "$tmp/out" || fail "no [PASS] line for neg_right"
[ "$(tail -n 1 "$tmp/out")" = "1 passed, 1 failed" ] || fail "summary of the failing run: $(tail -n 1 "$tmp/out")"
"$failing_bin" --test neg_right >/dev/null 2>&1 || fail "the failing binary's passing test alone did not exit 0"
checks=$((checks + 2))

# same seed, same bytes; another seed, other inputs, still passing
"$bin" --phase 1-3 --seed 7 >"$tmp/a" 2>&1 || fail "--seed 7 run failed"
"$bin" --phase 1-3 --seed 7 >"$tmp/b" 2>&1 || fail "--seed 7 rerun failed"
cmp -s "$tmp/a" "$tmp/b" || fail "two runs with --seed 7 differ"
"$bin" --phase 1-3 --seed 8 >"$tmp/c" 2>&1 || fail "--seed 8 run failed"
cmp -s "$tmp/a" "$tmp/c" && fail "--seed 8 gave the same output as --seed 7"
checks=$((checks + 3))

# provenance: the commit (and -dirty) baked in at build time, the same in
# --env and in the log wherever the binary runs (here: outside any git tree)
if git rev-parse --git-dir >/dev/null 2>&1; then
    want=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- || echo -dirty)
    abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
    (cd / && "$abs" --env) >"$tmp/env" 2>&1 || fail "--env failed"
    grep -q "commit $want," "$tmp/env" || fail "--env run outside the tree does not say 'commit $want': $(cat "$tmp/env")"
    (cd / && "$abs" --test sigmoid --log "$tmp/prov.tsv") >/dev/null 2>&1 || fail "the provenance run failed"
    grep -q "^# commit	$want$" "$tmp/prov.tsv" || fail "the log of a run outside the tree does not give commit $want"
    checks=$((checks + 2))
fi

# a GPU build (build/BACKEND/test_deltanet): without its GPU, status 77 and
# the backend named on stderr; with it, phase 1 passes
if [ -n "$gpu_bin" ] && [ -x "$gpu_bin" ]; then
    backend=$(basename "$(dirname "$gpu_bin")")
    "$gpu_bin" --phase 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    case $rc in
    0) ;;
    77) grep -q "no device for the $backend backend" "$tmp/err" ||
            fail "status 77 without 'no device for the $backend backend' on stderr" ;;
    *) fail "$gpu_bin --phase 1 exited $rc (expected 0 with a GPU, 77 without)" ;;
    esac
    checks=$((checks + 1))
fi

echo "cli: $checks checks passed"

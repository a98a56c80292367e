#!/bin/sh
# The command line's contract: exit statuses, messages, determinism.
#   tests/cli.sh BINARY [GPU_BINARY_WITHOUT_DEVICE]
# Exit status 1 of a failing test is proven by build/cpu/test_harness, which
# runs the runner on a test made to fail (no such backdoor in the binary).
set -u
bin=$1
gpu_bin=${2:-}
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
    checks=$((checks + 1))
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
expect 2 "unexpected argument" stray
[ -s "$tmp/err" ] && [ ! -s "$tmp/out" ] || fail "usage errors must go to stderr only"

# help and list
expect 0 "usage: test_deltanet" --help
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
expect 0 "Hv=\\(12\\|48\\) " --set H_v=48 --set T=40 --test fused_T64
expect 0 "2 passed, 0 failed" --set T=3 --test prefill_then_decode --test fused_T1
expect 2 "not a multiple of H_k" --set H_v=20 --phase 8
expect 2 "value out of range" --set D_k=256
expect 2 "value out of range" --set T=0
expect 2 "value out of range" --set chunk=48
expect 2 "unknown key" --set foo=1

# same seed, same bytes; another seed, other inputs, still passing
"$bin" --phase 1-3 --seed 7 >"$tmp/a" 2>&1 || fail "--seed 7 run failed"
"$bin" --phase 1-3 --seed 7 >"$tmp/b" 2>&1 || fail "--seed 7 rerun failed"
cmp -s "$tmp/a" "$tmp/b" || fail "two runs with --seed 7 differ"
"$bin" --phase 1-3 --seed 8 >"$tmp/c" 2>&1 || fail "--seed 8 run failed"
cmp -s "$tmp/a" "$tmp/c" && fail "--seed 8 gave the same output as --seed 7"
checks=$((checks + 3))

# a GPU build: without its GPU, status 77 and the backend named; with it, phase 1 passes
if [ -n "$gpu_bin" ] && [ -x "$gpu_bin" ]; then
    "$gpu_bin" --phase 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    case $rc in
    0) ;;
    77) grep -q "no device for the" "$tmp/err" || fail "status 77 without the 'no device' message" ;;
    *) fail "$gpu_bin --phase 1 exited $rc (expected 0 with a GPU, 77 without)" ;;
    esac
    checks=$((checks + 1))
fi

echo "cli: $checks checks passed"

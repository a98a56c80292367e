#!/usr/bin/env bash
# The tuning end to end on a GPU (CUDA or HIP build, `make BACKEND=...`):
#   1. kdn_tune measures this device and writes a tuning (its times: tune.tsv);
#   2. kdn_tune --check loads it: per batch, the path the library takes with it
#      at T = max_t and max_t + 1 (check.tsv) must be recurrent, then chunked;
#   3. tools/gpu/crossover.sh measures the same shapes again, independently
#      (test_deltanet's compare rows, their own timing; crossover.tsv), and each
#      batch's tuned max_t must agree with it: at every T <= max_t the
#      recurrent path no more than TUNE_TOL % (default 10) slower than the
#      chunked one, at every T > max_t the chunked one no more than TUNE_TOL %
#      slower than the recurrent one (agree.tsv: every T, its verdict);
#   4. the file cut short, edited to another device and to another version are
#      refused with their status (refused.txt).
# usage: tools/gpu/tune_check.sh [BUILD_DIR, default build/cuda] [OUT_DIR, default $OUT or a temporary one]
# Exit status 0 when all four hold, 1 otherwise, 77 without a device.
set -uo pipefail
build=${1:-build/cuda}
out=${2:-${OUT:-$(mktemp -d)}}
mkdir -p "$out"
tokens=${TUNE_T:-1,16,32,64,96,128,160,192,256,384,512,1024}
tol=${TUNE_TOL:-10}
fail=0
no() { echo "tune_check: $*"; fail=1; }

"$build/kdn_tune" --tokens "$tokens" --batches 1,4 "$out/tuning.tsv" > "$out/tune.tsv"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "tune_check: kdn_tune failed ($rc)"; exit 1; }
cat "$out/tuning.tsv"
"$build/kdn_tune" --check "$out/tuning.tsv" > "$out/check.tsv" || no "--check refused the file kdn_tune wrote"
awk -F'\t' '$1 ~ /^[0-9]+$/ && NF == 4 && (($2 > 0 && $3 != "recurrent") || $4 != "chunked") { bad = 1; print "tune_check: the library with the tuning at B = " $1 ": " $0 }
    END { exit bad }' "$out/check.tsv" || fail=1

chunk=$(awk -F'\t' '$1 == "chunk" { print $2 }' "$out/tuning.tsv")
[ "$chunk" = 0 ] && chunk=
CROSSOVER_T=${tokens//,/ } CROSSOVER_B="1 4" CROSSOVER_CHUNK=$chunk \
    tools/gpu/crossover.sh "$build/test_deltanet" > "$out/crossover.tsv" || { echo "tune_check: crossover.sh failed"; exit 1; }
awk -F'\t' -v tol="$tol" -v OFS='\t' '
    NR == FNR { if ($1 == "crossover") max_t[$2] = $3; next }
    FNR == 1 { print "T", "B", "recurrent_us", "chunked_us", "tuned_path", "verdict"; next }
    {
        T = $1; B = $2; rec = $3 + 0; chk = $4 + 0
        if (!(B in max_t)) { print T, B, rec, chk, "-", "no tuned row"; bad = 1; next }
        tuned = T <= max_t[B] ? "recurrent" : "chunked"
        ok = tuned == "recurrent" ? rec <= chk * (1 + tol / 100) : chk <= rec * (1 + tol / 100)
        print T, B, rec, chk, tuned, ok ? "agrees" : "DISAGREES"
        if (!ok) bad = 1
    }
    END { exit bad }' "$out/tuning.tsv" "$out/crossover.tsv" > "$out/agree.tsv" || no "the tuned thresholds disagree with crossover.sh by more than $tol %"
cat "$out/agree.tsv"

: > "$out/refused.txt"
refused() { # a corrupt copy, the status words expected
    if "$build/kdn_tune" --check "$1" > /dev/null 2>> "$out/refused.txt"; then no "accepted $1"; fi
    tail -n 1 "$out/refused.txt" | grep -q "$2" || no "$1: no '$2' status"
}
head -c -1 "$out/tuning.tsv" > "$out/cut.tsv"
refused "$out/cut.tsv" "tuning malformed"
sed 's/^device\t.*/device\tAMD Instinct MI50/' "$out/tuning.tsv" > "$out/foreign.tsv"
refused "$out/foreign.tsv" "tuning device"
sed '1s/\t1$/\t99/' "$out/tuning.tsv" > "$out/version.tsv"
refused "$out/version.tsv" "tuning version"
cat "$out/refused.txt"
[ $fail -eq 0 ] && echo "tune_check: tuned, loaded, agrees with the measured crossover within $tol %, corrupt files refused"
exit $fail

#!/bin/sh
# kdn_tune on a small shape (CPU build: the times are emulation, the file is
# real): it writes a tuning the library loads, whose rows --check reads back
# as the paths the library then takes; a file cut short, one edited to
# another device and one of another version are refused with their status;
# bad usage exits 2.
# usage: tests/test_tune.sh build/cpu/kdn_tune
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
no() { echo "test_tune: $*"; fail=1; }
shape="--heads 1,2 --dim 16"

"$bin" $shape --tokens 1,8,64 --batches 1,2 --reps 1 "$dir/t.tsv" > "$dir/times.tsv" 2> "$dir/err" || no "tuning failed: $(cat "$dir/err")"
# one measurement row per batch and T, plus the two chunk sizes at the largest T
[ "$(awk -F'\t' 'NR > 1 && NF == 6' "$dir/times.tsv" | wc -l)" -eq 8 ] || no "expected 8 measurement rows: $(cat "$dir/times.tsv")"
"$bin" --check $shape "$dir/t.tsv" > "$dir/check.tsv" || no "--check refused the file it wrote"
# every row: recurrent at max_t (or no such T: max_t 0), chunked past it, max_t one of the T measured
awk -F'\t' -v f="$dir/t.tsv" '
    NR == FNR { if ($1 == "crossover") want[$2] = $3; next }
    $1 ~ /^[0-9]+$/ { n++; if (!($1 in want) || want[$1] != $2 || ($2 != 0 && $3 != "recurrent") || $4 != "chunked" || $2 !~ /^(0|1|8|64)$/) bad = 1 }
    END { exit bad || n != 2 }' "$dir/t.tsv" "$dir/check.tsv" || no "--check disagrees with the file: $(cat "$dir/check.tsv")"

# calls that keep K = 2 snapshots (MTP's): measured the same way
"$bin" $shape --snapshots 2 --tokens 1,8,64 --batches 1 --reps 1 "$dir/k2.tsv" > "$dir/k2times.tsv" 2> "$dir/err" ||
    no "tuning with --snapshots 2 failed: $(cat "$dir/err")"
[ "$(awk -F'\t' 'NR > 1 && NF == 6' "$dir/k2times.tsv" | wc -l)" -eq 5 ] || no "expected 5 K = 2 rows: $(cat "$dir/k2times.tsv")"

refused() { # file, the word its status message must have
    if "$bin" --check $shape "$1" > /dev/null 2> "$dir/err"; then no "accepted $1"; fi
    grep -q "$2" "$dir/err" || no "$1: expected a '$2' status, got: $(cat "$dir/err")"
}
head -c -1 "$dir/t.tsv" > "$dir/cut.tsv"          # the last newline lost
refused "$dir/cut.tsv" "tuning malformed"
sed 's/^device\t.*/device\tAMD Instinct MI50/' "$dir/t.tsv" > "$dir/other.tsv"
refused "$dir/other.tsv" "tuning device"
sed '1s/\t1$/\t2/' "$dir/t.tsv" > "$dir/v2.tsv"
refused "$dir/v2.tsv" "tuning version"
refused "$dir/missing.tsv" "tuning file"

for args in "" "--tokens 8,1 f" "--batches 1,2,3,4,5,6,7,8,9 f" "--chunk 16 f" "--heads 2,3 f" "--snapshots 0 f" "--snapshots 65 f" "--bogus f"; do
    "$bin" $args > /dev/null 2>&1
    [ $? -eq 2 ] || no "'$args' did not exit 2"
done
[ $fail -eq 0 ] && echo "test_tune: kdn_tune wrote a tuning the library took; cut, foreign, other-version files refused"
exit $fail

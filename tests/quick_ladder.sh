#!/bin/sh
# The ladder's quick rows (make check): phases 1-7 and the phase-8 rows
# QUICK_TESTS names (tests/coverage.mk: the rows that run every line of
# kernels/), each run's log compared with the rows of the same tests in
# results/baseline-cpu.tsv, as make test compares the whole ladder.
#   tests/quick_ladder.sh BINARY OUTDIR PATTERN...
set -u
[ $# -ge 2 ] || { echo "usage: tests/quick_ladder.sh BINARY OUTDIR PATTERN..." >&2; exit 2; }
bin=$1 out=$2
shift 2
mkdir -p "$out"
status=0
# Each name of the baseline and the test the binary runs under it today (a
# renamed test's rows keep their former name there: docs/ci.md, "Renamed
# tests and variants").
now_names=$out/baseline-names.tsv
for n in $(awk -F'\t' '!/^#/ && $2 != "name" { print $2 }' results/baseline-cpu.tsv | sort -u); do
    "$bin" --list --test "$n" 2>/dev/null | awk -v n="$n" 'NR == 2 { print n "\t" $2 }'
done >"$now_names"
# run NAME ARGS...: one part of the quick rows, its log, the comparison
run() {
    name=$1
    shift
    "$bin" "$@" --log "$out/$name.tsv" >"$out/$name.out" 2>&1 || { tail -n 20 "$out/$name.out"; status=1; }
    # the baseline's rows of the tests this log has: its header, those rows,
    # and the closing "# end N" recounted
    awk -F'\t' 'FILENAME == ARGV[1] { now[$1] = $2; next }
        FILENAME == ARGV[2] { if ($0 !~ /^#/) seen[$2] = 1; next }
        /^# end/ { end = $0; next }
        /^#/ || $2 == "name" { print; next }
        seen[now[$2]] { print; n++ }
        END { if (end != "") print "# end\t" n }' \
        "$now_names" "$out/$name.tsv" results/baseline-cpu.tsv >"$out/$name.baseline.tsv"
    "$bin" --compare "$out/$name.baseline.tsv" "$out/$name.tsv" >"$out/$name.compare" 2>&1 ||
        { cat "$out/$name.compare"; status=1; }
    echo "quick ladder: $name: $(tail -n 1 "$out/$name.out"); against the baseline: $(tail -n 1 "$out/$name.compare")"
}
run phases1-7 --phase 1-7
set -f # the patterns are for --test
args=
for t in "$@"; do args="$args --test $t"; done
# shellcheck disable=SC2086 # one word per option
run phase8 --phase 8 $args
exit $status

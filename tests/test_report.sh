#!/bin/sh
# Result logs, --compare and --junit (docs/ci.md), on a cheap subset.
#   tests/test_report.sh BINARY
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() { echo "report: FAIL $*"; exit 1; }
# compare OLD NEW STATUS WHY: --compare must exit with STATUS
compare() {
    "$bin" --compare "$1" "$2" >"$tmp/cmp.out" 2>&1
    got=$?
    [ "$got" = "$3" ] || { cat "$tmp/cmp.out"; fail "$4: --compare exited $got, expected $3"; }
    checks=$((checks + 1))
}

"$bin" --phase 1-2 --log "$tmp/a.tsv" --junit "$tmp/a.xml" >/dev/null 2>&1 || fail "logged run failed"
"$bin" --phase 1-2 --log "$tmp/b.tsv" >/dev/null 2>&1 || fail "second logged run failed"
grep -v '^# date' "$tmp/a.tsv" >"$tmp/a.nodate"
grep -v '^# date' "$tmp/b.tsv" >"$tmp/b.nodate"
cmp -s "$tmp/a.nodate" "$tmp/b.nodate" || fail "two runs with the same seed gave different logs"
checks=$((checks + 1))

compare "$tmp/a.tsv" "$tmp/b.tsv" 0 "identical logs"
# planted regressions, each alone
awk -F'\t' 'BEGIN{OFS="\t"} $2=="exp" {$8="FAIL"} {print}' "$tmp/a.tsv" >"$tmp/failed.tsv"
compare "$tmp/a.tsv" "$tmp/failed.tsv" 1 "a test made to fail"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="sigmoid" {$5=sprintf("%.6e", $5 * 10)} {print}' "$tmp/a.tsv" >"$tmp/grown.tsv"
compare "$tmp/a.tsv" "$tmp/grown.tsv" 1 "a max_diff multiplied by 10"
grep -v "	eye	" "$tmp/a.tsv" >"$tmp/missing.tsv"
compare "$tmp/a.tsv" "$tmp/missing.tsv" 1 "a test missing"
compare "$tmp/missing.tsv" "$tmp/a.tsv" 0 "a new test is not a regression"
grep -q "^new *eye" "$tmp/cmp.out" || fail "the new test is not reported"
# unreadable logs: exit 2 with a message, never a crash
head -c 300 "$tmp/a.tsv" >"$tmp/truncated.tsv"
compare "$tmp/a.tsv" "$tmp/truncated.tsv" 2 "a truncated log"
sed 's/	PASS	/	PASS	extra	/' "$tmp/a.tsv" >"$tmp/columns.tsv"
compare "$tmp/a.tsv" "$tmp/columns.tsv" 2 "a row with too many columns"
printf 'not a log\n' >"$tmp/garbage.tsv"
compare "$tmp/garbage.tsv" "$tmp/a.tsv" 2 "not a log"
compare "$tmp/a.tsv" "$tmp/nonexistent.tsv" 2 "a missing file"

# JUnit: valid against the schema of what it emits, failures included
command -v xmllint >/dev/null 2>&1 || fail "xmllint not found (Debian: libxml2-utils)"
xmllint --noout --schema tests/junit.xsd "$tmp/a.xml" 2>"$tmp/xml.err" || { cat "$tmp/xml.err"; fail "JUnit report invalid"; }
grep -q '<testsuite name="phase 2" tests="7" failures="0"' "$tmp/a.xml" || fail "phase 2 suite missing or miscounted"
checks=$((checks + 2))

echo "report: $checks checks passed"

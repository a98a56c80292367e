#!/bin/sh
# Result logs, --compare and --junit (docs/ci.md), on a cheap subset (phases 1-2).
#   tests/test_report.sh BINARY FAILING_BINARY ESCAPE_BINARY FAULT_SHIM
# FAILING_BINARY is build/cpu/test_failing: phase 1 replaced by one passing
# and one failing test, for a real failing run's log and JUnit report.
# ESCAPE_BINARY (tests/report_escape.c) writes a report and a log of results
# whose text must be escaped. FAULT_SHIM (tests/fault_write.c) is an
# LD_PRELOAD library that makes writes to chosen paths fail as on a full disk.
set -u
bin=$1
failing=$2
escape=$3
shim=$(cd "$(dirname "$4")" && pwd)/$(basename "$4") # LD_PRELOAD needs it absolute
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() { echo "report: FAIL $*"; exit 1; }
ok() { checks=$((checks + 1)); }
# compare OLD NEW STATUS WHY [OPTIONS...]: --compare must exit with STATUS
compare() {
    old=$1 new=$2 want=$3 why=$4
    shift 4
    "$bin" --compare "$old" "$new" "$@" >"$tmp/cmp.out" 2>"$tmp/cmp.err"
    got=$?
    [ "$got" = "$want" ] || { cat "$tmp/cmp.out" "$tmp/cmp.err"; fail "$why: --compare exited $got, expected $want"; }
    ok
}
# expect FILE PATTERN WHY: FILE has a line matching PATTERN
expect() {
    grep -q "$2" "$1" || { cat "$1"; fail "$3"; }
    ok
}
# unreadable NAME WHY: --compare of a good log with $tmp/NAME exits 2 with
# a message on stderr naming the file
unreadable() {
    compare "$tmp/a.tsv" "$tmp/$1" 2 "$2"
    expect "$tmp/cmp.err" "^test_deltanet: --compare: .*$1" "$2: no message naming the file"
}

# ---- logs: same seed, same bytes apart from the date line ----------------
"$bin" --phase 1-2 --log "$tmp/a.tsv" --junit "$tmp/a.xml" >/dev/null 2>&1 || fail "logged run failed"
"$bin" --phase 1-2 --log "$tmp/b.tsv" >/dev/null 2>&1 || fail "second logged run failed"
grep -v '^# date' "$tmp/a.tsv" >"$tmp/a.nodate"
grep -v '^# date' "$tmp/b.tsv" >"$tmp/b.nodate"
cmp -s "$tmp/a.nodate" "$tmp/b.nodate" || fail "two runs with the same seed gave different logs"
ok
for key in backend target 'host compiler' commit device seed date; do
    expect "$tmp/a.tsv" "^# $key	." "the log's header has no '$key' line"
done
# --log DIR: a timestamped, device-named file in it
mkdir "$tmp/dir"
"$bin" --phase 1 --log "$tmp/dir" >/dev/null 2>&1 || fail "run with --log DIR failed"
ls "$tmp/dir" >"$tmp/dir.ls"
expect "$tmp/dir.ls" '^[0-9]\{8\}T[0-9]\{6\}\.[0-9]\{6\}Z-[0-9]*-cpu-cpu-simt-executor\.tsv$' \
    "--log DIR wrote no <time>-<pid>-<backend>-<device>.tsv"

# ---- --compare: regressions exit 1, identical or grown-by-new exit 0 ------
compare "$tmp/a.tsv" "$tmp/b.tsv" 0 "identical logs"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="exp" {$12="FAIL"} {print}' "$tmp/a.tsv" >"$tmp/failed.tsv"
compare "$tmp/a.tsv" "$tmp/failed.tsv" 1 "a test made to fail"
expect "$tmp/cmp.out" "^REGRESSION  exp (unfused): now fails" "the failing test is not named"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="sigmoid" {$5=sprintf("%.6e", $5 * 10)} {print}' "$tmp/a.tsv" >"$tmp/grown.tsv"
compare "$tmp/a.tsv" "$tmp/grown.tsv" 1 "a max_diff multiplied by 10"
expect "$tmp/cmp.out" "^REGRESSION  sigmoid (unfused): max_diff" "the grown max_diff is not named"
compare "$tmp/a.tsv" "$tmp/grown.tsv" 0 "growth x10 under --max-diff-growth 20" --max-diff-growth 20
# the normwise error is judged the same way; inf (a zero reference) is read
awk -F'\t' 'BEGIN{OFS="\t"} $2=="sigmoid" {$7=sprintf("%.6e", $7 * 10)} {print}' "$tmp/a.tsv" >"$tmp/nrel.tsv"
compare "$tmp/a.tsv" "$tmp/nrel.tsv" 1 "an nrel multiplied by 10"
expect "$tmp/cmp.out" "^REGRESSION  sigmoid (unfused): nrel" "the grown nrel is not named"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="sigmoid" {$7="inf"; $8="inf"} {print}' "$tmp/a.tsv" >"$tmp/nrelinf.tsv"
compare "$tmp/a.tsv" "$tmp/nrelinf.tsv" 1 "an nrel grown to inf"
# the test absent from the run (the '# end' line counts one row less)
awk -F'\t' 'BEGIN{OFS="\t"} $2=="eye" {next} $1=="# end" {$2--} {print}' "$tmp/a.tsv" >"$tmp/missing.tsv"
compare "$tmp/a.tsv" "$tmp/missing.tsv" 1 "a test missing"
compare "$tmp/missing.tsv" "$tmp/a.tsv" 0 "a new test is not a regression"
expect "$tmp/cmp.out" "^new *eye" "the new test is not reported"
# a real failing run: its own log against itself still gates
"$failing" --phase 1 --log "$tmp/f.tsv" --junit "$tmp/f.xml" >/dev/null 2>&1
[ $? = 1 ] || fail "the failing build did not exit 1"
compare "$tmp/f.tsv" "$tmp/f.tsv" 1 "a test failing in both logs"
expect "$tmp/cmp.out" "still fails" "a test failing in both logs is not reported"

# ---- timings: compared only when both have them and the device is the same
timed() { # timed IN OUT MEDIAN [DEVICE]: each test row followed by a bench row timed MEDIAN us (1 MB, 2 MFLOP)
    awk -F'\t' -v m="$3" -v d="${4:-}" 'BEGIN{OFS="\t"}
        d != "" && $1 == "# device" {$2 = d}
        $1 == "# end" {$2 *= 2}
        {print}
        $1 ~ /^[0-9]+$/ {$3 = "bench:" $3; $5 = $6 = $7 = $8 = $11 = "n/a"; $9 = 0; $10 = 0; $12 = "TIME"; $13 = m; $14 = m;
                              $15 = "1.000000e+06"; $16 = "2.000000e+06"; print}' "$1" >"$2"
}
timed "$tmp/a.tsv" "$tmp/t100.tsv" 100
timed "$tmp/a.tsv" "$tmp/t115.tsv" 115
timed "$tmp/a.tsv" "$tmp/t115other.tsv" 115 "another device"
compare "$tmp/t100.tsv" "$tmp/t115.tsv" 1 "15% slower, default threshold 10%"
expect "$tmp/cmp.out" "^REGRESSION  .*median 100.0 us -> 115.0 us" "the slower test is not named"
compare "$tmp/t100.tsv" "$tmp/t115.tsv" 0 "15% slower under --time-threshold 20" --time-threshold 20
compare "$tmp/t115.tsv" "$tmp/t100.tsv" 0 "faster"
compare "$tmp/t100.tsv" "$tmp/t115other.tsv" 0 "slower on another device"
expect "$tmp/cmp.out" "devices differ" "different devices are not noted"
compare "$tmp/a.tsv" "$tmp/t115.tsv" 0 "times in one log only"

# ---- unreadable logs: exit 2 with a message, never a crash ---------------
head -c 300 "$tmp/a.tsv" >"$tmp/truncated.tsv"
unreadable truncated.tsv "a log truncated in its header"
head -c "$(($(wc -c <"$tmp/a.tsv") - 20))" "$tmp/a.tsv" >"$tmp/cut.tsv"
unreadable cut.tsv "a log cut in its last row"
grep -v '^# end' "$tmp/a.tsv" >"$tmp/noend.tsv"
unreadable noend.tsv "a log cut between rows (no '# end' line)"
grep -v "	eye	" "$tmp/a.tsv" >"$tmp/lessrows.tsv"
unreadable lessrows.tsv "a row deleted without its '# end' count"
grep -v '^phase	' "$tmp/a.tsv" >"$tmp/nocolumns.tsv"
unreadable nocolumns.tsv "a log without its column line"
sed 's/	PASS	/	PASS	extra	/' "$tmp/a.tsv" >"$tmp/columns.tsv"
unreadable columns.tsv "a row with too many columns"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="mul" {NF=7} {print}' "$tmp/a.tsv" >"$tmp/short.tsv"
unreadable short.tsv "a row with too few columns"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="mul" {$5="1.5e-7x"} {print}' "$tmp/a.tsv" >"$tmp/number.tsv"
unreadable number.tsv "a bad number"
awk -F'\t' 'BEGIN{OFS="\t"} $2=="mul" {$12="MAYBE"} {print}' "$tmp/a.tsv" >"$tmp/status.tsv"
unreadable status.tsv "a bad status"
printf 'not a log\n' >"$tmp/garbage.tsv"
unreadable garbage.tsv "not a log"
: >"$tmp/empty.tsv"
unreadable empty.tsv "an empty file"
unreadable nonexistent.tsv "a missing file"
# why a file is not a log: Windows line ends, binary data (each was "not a
# test_deltanet log", "truncated" or "expected the column line")
sed 's/$/\r/' "$tmp/a.tsv" >"$tmp/crlf.tsv"
unreadable crlf.tsv "a log with CR LF line ends"
expect "$tmp/cmp.err" "crlf.tsv: CR LF line ends (byte [0-9]*): a log's lines end in LF alone" "CR LF: no reason given"
{ head -n 3 "$tmp/a.tsv"; printf 'PK\003\004\024'; } >"$tmp/binary.tsv"
unreadable binary.tsv "a log with binary data"
expect "$tmp/cmp.err" "binary.tsv: binary data (byte [0-9]* is 0x03): not a text log" "binary data: no reason given"
# a --bench log against itself: a test timing one variant on both head maps
# has two rows for it, keyed label and label#2 (was "a second row", exit 2)
"$bin" --bench --reps 1 --test chunked_T1 --set D_k=8 --set D_v=8 --set H_k=1 --set H_v=2 --log "$tmp/bench.tsv" >"$tmp/bench.out" 2>&1 ||
    { cat "$tmp/bench.out"; fail "a --bench run failed"; }
expect "$tmp/bench.tsv" "	bench:chunked#2	" "a variant timed twice: no second key"
compare "$tmp/bench.tsv" "$tmp/bench.tsv" 0 "a --bench log against itself"

# ---- --compare cannot be fooled: every way a log could pass a failing run
# edit IN OUT AWK: OUT is IN rewritten by the awk program (tab-separated)
edit() { awk -F'\t' 'BEGIN{OFS="\t"} '"$3" "$1" >"$2"; }
edit "$tmp/a.tsv" "$tmp/dup.tsv" '$2=="exp" {print; $12="FAIL"} $1=="# end" {$2++} {print}'
unreadable dup.tsv "a second, failing row for a test"
expect "$tmp/cmp.err" "a second row for exp (unfused)" "the duplicate row is not named"
edit "$tmp/a.tsv" "$tmp/eyefails.tsv" '$2=="eye" {$12="FAIL"} {print}'
compare "$tmp/missing.tsv" "$tmp/eyefails.tsv" 1 "a new test that fails"
expect "$tmp/cmp.out" "^REGRESSION  eye (unfused): not in the old log, and fails" "the new failing test is not named"
# names differing after 79 characters are different tests
long=$(printf 'n%.0s' $(seq 1 100))
edit "$tmp/a.tsv" "$tmp/long1.tsv" '$2=="eye" {$2="'"$long"'1"} {print}'
edit "$tmp/a.tsv" "$tmp/long2.tsv" '$2=="eye" {$2="'"$long"'2"} {print}'
compare "$tmp/long1.tsv" "$tmp/long2.tsv" 1 "names that differ after 79 characters"
expect "$tmp/cmp.out" "^REGRESSION  ${long}1 (unfused): missing" "the long name is cut in the message"
for bad in nan -1 n/a inf ' 1e-7' 1e-7x 0x1p-3; do
    edit "$tmp/a.tsv" "$tmp/diff.tsv" '$2=="mul" {$5="'"$bad"'"} {print}'
    unreadable diff.tsv "a PASS row with max_diff '$bad'"
done
for bad in 17x ' 17' +17 017 ''; do
    edit "$tmp/a.tsv" "$tmp/end.tsv" '$1=="# end" {$2="'"$bad"'"} {print}'
    unreadable end.tsv "the end line '# end	$bad'"
done
edit "$tmp/a.tsv" "$tmp/phase.tsv" '$2=="mul" {$1="1x"} {print}'
unreadable phase.tsv "a phase '1x'"
edit "$tmp/a.tsv" "$tmp/timedtest.tsv" '$2=="mul" {$13=5; $14=5} {print}'
unreadable timedtest.tsv "a test row with times"
edit "$tmp/a.tsv" "$tmp/bytestest.tsv" '$2=="mul" {$15=5} {print}'
unreadable bytestest.tsv "a test row with bytes"
edit "$tmp/t100.tsv" "$tmp/nobytes.tsv" '$2=="mul" && $3 ~ /^bench:/ {$15=""} {print}'
unreadable nobytes.tsv "a TIME row without its bytes"
edit "$tmp/t100.tsv" "$tmp/noflops.tsv" '$2=="mul" && $3 ~ /^bench:/ {$16=""} {print}'
unreadable noflops.tsv "a TIME row without its flops"
edit "$tmp/a.tsv" "$tmp/device2.tsv" '$1=="# device" {print} {print}'
unreadable device2.tsv "two device lines"
for col in 9 10 11; do # atol, rtol, nrel_tol
    edit "$tmp/a.tsv" "$tmp/loose.tsv" '$2=="mul" {$'$col'=sprintf("%.3e", $'$col' * 2 + 1e-6)} {print}'
    compare "$tmp/a.tsv" "$tmp/loose.tsv" 1 "a tolerance (column $col) loosened"
    expect "$tmp/cmp.out" "^REGRESSION  mul (unfused): tolerance \(atol\|rtol\|nrel_tol\) loosened" "the loosened tolerance is not named"
    compare "$tmp/loose.tsv" "$tmp/a.tsv" 0 "a tolerance (column $col) tightened"
done
edit "$tmp/a.tsv" "$tmp/incomplete.tsv" '$1=="# end" {print "# incomplete\tSIGTERM after 3 of 17 tests"} {print}'
unreadable incomplete.tsv "a log marked incomplete"
expect "$tmp/cmp.err" "incomplete log (SIGTERM" "the incomplete log is not called so"
# not a regular file: a FIFO must not hang, a directory must not be read
mkfifo "$tmp/fifo.tsv"
timeout 10 "$bin" --compare "$tmp/a.tsv" "$tmp/fifo.tsv" >"$tmp/cmp.out" 2>"$tmp/cmp.err"
[ $? = 2 ] || fail "a FIFO as NEW: not exit 2 within 10 s"
expect "$tmp/cmp.err" "fifo.tsv' is not a regular file" "the FIFO is not named"
mkdir "$tmp/d.tsv"
unreadable d.tsv "a directory as a log"
# hashed lookup: 1.5 million rows against themselves in under 10 s
awk 'NR <= 9 {print} END {
         for (i = 0; i < 1500000; i++) printf "4\tt%d\tfused\tT=64\t1.000000e-06\to[1,2]\t1.000000e-07\t1.000000e-14\t1.000e-06\t1.000e-05\t1.000e-05\tPASS\t\t\t\t\n", i
         print "# end\t1500000" }' "$tmp/a.tsv" >"$tmp/big.tsv"
# CPU seconds (user + system) of the compare alone, read from the shell's
# `times`: wall time on a shared CI machine measures the neighbours
sh -c 'timeout 60 "$@" >"$0.out" 2>"$0.err"; echo $? >"$0.rc"; times >"$0.times"' "$tmp/cmp" \
    "$bin" --compare "$tmp/big.tsv" "$tmp/big.tsv"
[ "$(cat "$tmp/cmp.rc")" = 0 ] || { cat "$tmp/cmp.err"; fail "1.5M rows: --compare exited $(cat "$tmp/cmp.rc")"; }
secs=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp/cmp.times")
[ "$secs" -lt 10 ] || fail "1.5M rows: --compare took $secs CPU seconds (limit 10)"
expect "$tmp/cmp.out" "^0 regressions (1500000 rows before, 1500000 now)" "1.5M rows: wrong summary"
rm -f "$tmp/big.tsv"

# ---- results that survive: signals, full disks, concurrent runs ---------
# only what a finished run leaves: no temp or snapshot files
leftovers() { ls "$1" | grep -q '\.tmp$' && { ls "$1"; fail "$2: temp files left in $1"; }; ok; }
# a signal mid-run (a CI timeout, Ctrl-C, even SIGKILL): the tests done so
# far survive, marked incomplete, in the log and the JUnit report, in place
# of a previous run's log; --compare refuses them
for sig in TERM INT KILL; do
    rm -rf "$tmp/sig" && mkdir "$tmp/sig"
    cp "$tmp/a.tsv" "$tmp/sig/s.tsv" # a previous, complete log: it must not survive
    "$bin" --log "$tmp/sig/s.tsv" --junit "$tmp/sig/s.xml" >/dev/null 2>"$tmp/sig.err" &
    pid=$!
    for i in $(seq 1 300); do # until three tests have finished (at most 30 s)
        grep -q '^# incomplete' "$tmp/sig/s.tsv" && [ "$(grep -c '	PASS	' "$tmp/sig/s.tsv")" -ge 3 ] && break
        sleep 0.1
    done
    kill -$sig $pid
    wait $pid 2>/dev/null
    rc=$?
    [ $rc -gt 128 ] || fail "SIG$sig: exit status $rc, expected 128 + the signal"
    expect "$tmp/sig/s.tsv" "^# incomplete	cut short after [0-9]* of [0-9]* tests" "SIG$sig: the log is not marked incomplete"
    [ "$(grep -c '	PASS	' "$tmp/sig/s.tsv")" -ge 3 ] || fail "SIG$sig: the finished tests are not in the log"
    [ $sig = KILL ] || expect "$tmp/sig.err" "SIG$sig: the results so far, marked incomplete, are in .*s.tsv" "SIG$sig: no message"
    xmllint --noout --schema tests/junit.xsd "$tmp/sig/s.xml" 2>"$tmp/xml.err" || { cat "$tmp/xml.err"; fail "SIG$sig: JUnit invalid"; }
    expect "$tmp/sig/s.xml" '<error message="cut short after' "SIG$sig: the JUnit report is not marked incomplete"
    compare "$tmp/sig/s.tsv" "$tmp/sig/s.tsv" 2 "SIG$sig: --compare of an incomplete log"
    [ $sig = KILL ] || leftovers "$tmp/sig" "SIG$sig" # SIGKILL may leave the snapshot it was writing
done
# SIGPIPE: the reader of stdout went away (| head -1)
rm -rf "$tmp/sig" && mkdir "$tmp/sig"
("$bin" --phase 1-3 --log "$tmp/sig/p.tsv" 2>"$tmp/sig.err"; echo $? >"$tmp/sig.rc") | head -n 1 >/dev/null
[ "$(cat "$tmp/sig.rc")" = 141 ] || fail "SIGPIPE: exit status $(cat "$tmp/sig.rc"), expected 141"
expect "$tmp/sig/p.tsv" "^# incomplete	" "SIGPIPE: the log is missing or not marked incomplete"
leftovers "$tmp/sig" "SIGPIPE"
# two runs at once into one --log DIR: two whole logs, neither torn
rm -rf "$tmp/two" && mkdir "$tmp/two"
"$bin" --phase 1 --log "$tmp/two" >/dev/null 2>&1 &
"$bin" --phase 1 --log "$tmp/two" >/dev/null 2>&1
wait $!
set -- "$tmp"/two/*.tsv
[ $# = 2 ] || { ls "$tmp/two"; fail "two runs into one --log DIR left $# logs"; }
compare "$1" "$2" 0 "two concurrent logs against each other"
leftovers "$tmp/two" "two runs"
# outputs that cannot be written stop the run before its first test (exit 2, why)
expect_refused() { # WHY PATTERN ARGS...: exit 2, PATTERN on stderr, no test run
    why=$1 pattern=$2
    shift 2
    "$bin" --phase 1 "$@" >"$tmp/ref.out" 2>"$tmp/ref.err"
    rc=$?
    [ $rc = 2 ] || fail "$why: exit status $rc, expected 2"
    expect "$tmp/ref.err" "$pattern" "$why: no reason given"
    grep -q 'PASS\|FAIL' "$tmp/ref.out" && fail "$why: tests ran"
    ok
}
expect_refused "--log in a missing directory" "No such file or directory" --log "$tmp/nodir/x.tsv"
expect_refused "--junit in a missing directory" "No such file or directory" --junit "$tmp/nodir/x.xml"
expect_refused "--log and --junit the same file" "same file" --log "$tmp/same" --junit "$tmp/same"
: >"$tmp/same"
expect_refused "--log and --junit the same file, spelt apart" "same file" --log "$tmp/same" --junit "$tmp/../$(basename "$tmp")/same"
expect_refused "--log a FIFO" "not a regular file" --log "$tmp/fifo.tsv"
FAULT_PATH=full.tsv LD_PRELOAD=$shim expect_refused "--log on a full disk" "No space left on device" --log "$tmp/full.tsv"
# --dump on a full disk: an I/O error (exit 2, [ERROR] naming the file), not a kernel FAIL
FAULT_PATH=dumpfull LD_PRELOAD=$shim "$bin" --test sigmoid --dump "$tmp/dumpfull" >"$tmp/full.out" 2>&1
rc=$?
[ $rc = 2 ] || fail "--dump on a full disk: exit status $rc, expected 2"
expect "$tmp/full.out" "^\[ERROR\] phase 1  sigmoid" "--dump on a full disk: no [ERROR] line"
expect "$tmp/full.out" "writing .*sigmoid__y.npy failed: No space left on device" "--dump on a full disk: no reason"
FAULT_PATH=dumpfull LD_PRELOAD=$shim "$bin" --test sigmoid --dump "$tmp/dumpfull" --junit "$tmp/io-error.xml" >/dev/null 2>&1
xmllint --noout --schema tests/junit.xsd "$tmp/io-error.xml" 2>"$tmp/xml.err" || { cat "$tmp/xml.err"; fail "the JUnit report of an I/O error is invalid"; }
expect "$tmp/io-error.xml" 'failures="0" errors="1"' "an I/O error is not a JUnit error"
# the disk fills mid-run: the tests still run and pass, the run is an I/O error (2), not a FAIL
FAULT_PATH=full.tsv FAULT_AFTER=4 LD_PRELOAD=$shim "$bin" --phase 1 --log "$tmp/full.tsv" >"$tmp/full.out" 2>"$tmp/full.err"
rc=$?
[ $rc = 2 ] || fail "a disk full mid-run: exit status $rc, expected 2"
expect "$tmp/full.err" "cannot write the log .*full.tsv': No space left on device" "a disk full mid-run: no reason"
expect "$tmp/full.out" " 0 failed" "a disk full mid-run: tests failed or did not finish"
# stdout that cannot take the output is an error, whatever the command
for args in "--phase 1" "--list" "--help" "--compare $tmp/a.tsv $tmp/a.tsv"; do
    # shellcheck disable=SC2086
    "$bin" $args >/dev/full 2>"$tmp/full.err"
    rc=$?
    [ $rc = 2 ] || fail "'$args' with stdout on /dev/full: exit status $rc, expected 2"
    expect "$tmp/full.err" "cannot write to stdout: No space left on device" "'$args' > /dev/full: no reason"
done

# ---- memory: a test whose memory a limit or the system refuses is refused
# alone, with the numbers, launches nothing, and the run goes on and writes
# its log (status 3: the README's "refused" status)
mem_run() { # WHY PATTERN: $tmp/mem.out from a run of sigmoid and chunked_T64
    rc=$?
    [ $rc = 3 ] || { cat "$tmp/mem.out" "$tmp/mem.err"; fail "$1: exit status $rc, expected 3 (a refused test)"; }
    expect "$tmp/mem.out" "^\[REFUSED\] phase 8  chunked_T64 .*$2" "$1: the test is not refused with the numbers"
    expect "$tmp/mem.out" "^\[PASS\] phase 1  sigmoid" "$1: the other test did not pass"
    expect "$tmp/mem.tsv" "^8	chunked_T64	chunked	$2	n/a	.*	FAIL	" "$1: the log does not hold the refusal"
    expect "$tmp/mem.tsv" "^# end	2$" "$1: the log is not whole"
}
FAULT_CALLOC_OVER=1000000 LD_PRELOAD=$shim "$bin" --test sigmoid --test chunked_T64 --set T=1024 --log "$tmp/mem.tsv" >"$tmp/mem.out" 2>"$tmp/mem.err"
mem_run "host memory over 1 MB (shim; q is 2 MB)" "refused: the system gave no host memory for a host array ([0-9.]* [KM]iB)"
# a shape over a 1 GB address-space limit is refused where its memory would
# pass it: its line, the log (FAIL, the refusal in the shape column), JUnit
# <error>, status 3
command -v prlimit >/dev/null 2>&1 || fail "prlimit not found (Debian: util-linux)"
prlimit --as=$((1 << 30)) "$bin" --test sigmoid --test chunked_T64 --set T=65536 --log "$tmp/mem.tsv" --junit "$tmp/mem.xml" \
    >"$tmp/mem.out" 2>"$tmp/mem.err"
mem_run "prlimit --as 1 GB" \
    "refused: host+device memory (one on this build) needs [0-9.]* [KMG]iB ([0-9.]* [KMG]iB of [^)]*), over ulimit -v less what is mapped [0-9.]* [KM]iB"
expect "$tmp/mem.xml" "errors=\"1\"" "prlimit: JUnit does not count the refusal as an error"
expect "$tmp/mem.xml" "<error message=\"refused: " "prlimit: JUnit has no <error> for the refusal"
FAULT_MALLOC_OVER=100000 LD_PRELOAD=$shim "$bin" --test sigmoid --test chunked_T64 --log "$tmp/mem.tsv" >"$tmp/mem.out" 2>"$tmp/mem.err"
mem_run "device memory over 100 kB (shim)" "refused: the system gave no device memory for buffer 'q' ([0-9.]* KiB)"
# the device buffer is had, the host staging image that fills it is not (once
# a SIGSEGV under a memory limit)
FAULT_MALLOC_OVER=100000 FAULT_MALLOC_SPARE=1 LD_PRELOAD=$shim "$bin" --test sigmoid --test chunked_T64 --log "$tmp/mem.tsv" \
    >"$tmp/mem.out" 2>"$tmp/mem.err"
mem_run "the staging image of a device buffer (shim)" "refused: the system gave no host memory for the upload image of 'q' ([0-9.]* KiB)"

# ---- JUnit: valid against the schema of what it emits, failures included --
command -v xmllint >/dev/null 2>&1 || fail "xmllint not found (Debian: apt-get install libxml2-utils)"
"$escape" "$tmp" || fail "test_report_escape could not write its report"
for x in a f escape; do
    xmllint --noout --schema tests/junit.xsd "$tmp/$x.xml" 2>"$tmp/xml.err" || { cat "$tmp/xml.err"; fail "JUnit report $x.xml invalid"; }
    ok
done
expect "$tmp/a.xml" '<testsuite name="phase 2" tests="7" failures="0"' "phase 2 suite missing or miscounted"
expect "$tmp/f.xml" '<testsuite name="phase 1" tests="2" failures="1"' "the failing run's suite miscounted"
expect "$tmp/f.xml" '<testcase classname="phase 1" name="neg_wrong_reference/unfused"' "the failing test's case is missing"
expect "$tmp/f.xml" '<failure message="max_diff=[0-9.e+-]* at y\[[0-9]*,[0-9]*\] nrel=[0-9.e+-]* nmse=[0-9.e+-]* tol=exact">y: 256 of 256 elements' "the failure has no max_diff, tolerance or message"

expect "$tmp/escape.xml" 'name="odd&lt;name&gt;&amp;&quot;'"'"'/v&gt;1"' "a test name not escaped"
expect "$tmp/escape.xml" 'max_diff=n/a tol=5.0e-01+2.5e-01' "max_diff of a test that compared nothing is not n/a"
expect "$tmp/escape.xml" 'shape&#9;with tabs &lt;&amp;&gt;?&#10;line 1&#10;line 2 ??\[31m &quot;quoted&quot; &amp; &lt;tag&gt; 5 µs<' "a failure text not escaped"
compare "$tmp/escape.tsv" "$tmp/escape.tsv" 1 "the log of odd text read back (its failing row still fails)"
expect "$tmp/cmp.out" "^1 regressions (2 rows before, 2 now)" "the log of odd text lost or split a row"

echo "report: $checks checks passed"

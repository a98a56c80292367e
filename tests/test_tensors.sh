#!/bin/sh
# Tensors in and out, shape overrides, bench output (docs/bench.md):
#   tests/test_tensors.sh BINARY
# --dump then --load of a phase-8 test reproduces its max_diff and its output
# bytes; with numpy (Debian python3-numpy) the dumped shapes and dtypes are
# checked, numpy recomputes the max_diff from the dumped got/ref pairs, and
# numpy-written float64 files load; malformed files are clear errors (exit 2);
# --set runs a Qwen3.5-like shape and refuses impossible ones (exit 2);
# --bench prints its table, no progress line goes to a pipe; its log carries
# each variant's bytes and flops, which tools/gpu/roofline.sh reads.
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() { echo "tensors: FAIL $*"; exit 1; }
ok() { checks=$((checks + 1)); }

# max_diff=... of the only test line of a run's output
max_diff() { sed -n 's/^\[PASS\].*max_diff=\([^ ]*\).*/\1/p' "$1"; }

# a small phase-8 test: two sequences, a ragged chunk (T = 50 < C = 64), H_v/H_k = 3
test=deltanet_single_chunk
shape="--set T=50 --set n_seqs=2 --set H_k=2 --set H_v=6 --set D_k=64 --set D_v=32"
# shellcheck disable=SC2086
"$bin" --test $test $shape --dump "$tmp/d1" >"$tmp/dump.out" 2>&1 || { cat "$tmp/dump.out"; fail "--dump run"; }
for t in q k v g beta state o_tiled_map o_tiled_map_ref state_tiled_map state_tiled_map_ref; do
    [ -s "$tmp/d1/${test}__$t.npy" ] || fail "--dump wrote no ${test}__$t.npy"
done
ok
want=$(max_diff "$tmp/dump.out")
[ -n "$want" ] || fail "no max_diff in: $(cat "$tmp/dump.out")"

# --load of what --dump wrote: same max_diff, and the same bytes dumped again
"$bin" --test $test --load "$tmp/d1" --dump "$tmp/d2" >"$tmp/load.out" 2>&1 || { cat "$tmp/load.out"; fail "--load run"; }
[ "$(max_diff "$tmp/load.out")" = "$want" ] || fail "--load: max_diff $(max_diff "$tmp/load.out"), --dump run had $want"
grep -q "Hk=2 Hv=6 Dk=64 Dv=32 C=64 .*inputs=$tmp/d1" "$tmp/load.out" || fail "--load: shape not taken from the files: $(cat "$tmp/load.out")"
for t in q k v g beta state o_tiled_map o_tiled_map_ref state_tiled_map state_tiled_map_ref; do
    cmp -s "$tmp/d1/${test}__$t.npy" "$tmp/d2/${test}__$t.npy" || fail "--load then --dump: ${test}__$t.npy differs"
done
ok; ok

# numpy: shapes (ggml order reversed), dtypes, the max_diff, and numpy's own files loaded
py=
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -n "$py" ]; then
    mkdir "$tmp/d3"
    "$py" - "$tmp/d1" "$test" "$want" "$tmp/d3" <<'EOF' || fail "numpy checks"
import sys, numpy as np
d, test, want, out = sys.argv[1:5]
B, T, Hk, Hv, Dk, Dv = 2, 50, 2, 6, 64, 32
shapes = {"q": (B, T, Hk, Dk), "k": (B, T, Hk, Dk), "v": (B, T, Hv, Dv), "g": (B, T, Hv), "beta": (B, T, Hv),
          "state": (B, Hv, Dv, Dk), "o_tiled_map": (T * B * Hv, Dv), "state_tiled_map": (B * Hv * Dv, Dk)}
a = {}
for name, shape in shapes.items():
    a[name] = np.load(f"{d}/{test}__{name}.npy")
    assert a[name].shape == shape and a[name].dtype == np.float32, (name, a[name].shape, a[name].dtype)
    if name.endswith("_map"):
        ref = np.load(f"{d}/{test}__{name}_ref.npy")
        assert ref.shape == shape and ref.dtype == np.float64, (name, ref.shape, ref.dtype)
        a[name] = np.abs(a[name].astype(np.float64) - ref).max()
got = "%.2e" % max(a["o_tiled_map"], a["state_tiled_map"])
assert got == want, f"numpy max_diff {got}, test_deltanet printed {want}"
# q is L2-normalised per head and token and scaled by 1/sqrt(D_k): the layout is the documented one
norms = np.linalg.norm(a["q"].astype(np.float64), axis=-1)
assert np.allclose(norms, Dk ** -0.5, rtol=1e-5), norms
for name in ("q", "k", "v", "g", "beta", "state"):  # numpy's writer, float64, plain names
    np.save(f"{out}/{name}.npy", a[name].astype(np.float64))
EOF
    "$bin" --test $test --load "$tmp/d3" >"$tmp/np.out" 2>&1 || { cat "$tmp/np.out"; fail "--load of numpy-written float64 files"; }
    [ "$(max_diff "$tmp/np.out")" = "$want" ] || fail "numpy-written files: max_diff $(max_diff "$tmp/np.out"), want $want"
    ok; ok
else
    echo "tensors: numpy not found (Debian: python3-numpy): shape checks skipped"
fi

# expect STATUS PATTERN ARGS...: exit status and a message on stderr
expect() {
    want_rc=$1 pattern=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" = "$want_rc" ] || fail "'$*' exited $rc, expected $want_rc: $(cat "$tmp/err")"
    cat "$tmp/out" "$tmp/err" | grep -q -- "$pattern" || fail "'$*' did not print '$pattern'"
    ok
}

# malformed or missing inputs: exit 2, naming the file
mkdir "$tmp/bad"
cp "$tmp/d1/${test}__"*.npy "$tmp/bad/"
head -c 200 "$tmp/d1/${test}__v.npy" >"$tmp/bad/${test}__v.npy"
expect 2 "${test}__v.npy: .* bytes of data, its shape needs" --test $test --load "$tmp/bad"
echo "not numpy" >"$tmp/bad/${test}__v.npy"
expect 2 "${test}__v.npy: not a .npy file" --test $test --load "$tmp/bad"
cp "$tmp/d1/${test}__v.npy" "$tmp/bad/${test}__g.npy"
cp "$tmp/d1/${test}__v.npy" "$tmp/bad/${test}__v.npy"
expect 2 "${test}__g.npy has 4 dimensions, g has 3" --test $test --load "$tmp/bad"
cp "$tmp/d1/${test}__g.npy" "$tmp/bad/${test}__g.npy"
rm "$tmp/bad/${test}__beta.npy"
expect 2 "neither .*${test}__beta.npy nor .*beta.npy exists" --test $test --load "$tmp/bad"
expect 2 "runs phase-8 tests only" --phase 3 --load "$tmp/d1"
# a NaN or Inf in an input is an input error (exit 2, [ERROR]) naming the
# file and the element, not the kernel's NaN output
mkdir "$tmp/nan"
cp "$tmp/d1/${test}__"*.npy "$tmp/nan/"
python3 - "$tmp/nan/${test}__k.npy" <<'EOF'
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
data = 10 + struct.unpack("<H", b[8:10])[0]  # .npy 1.0: magic, version, header length, header
assert b"<f4" in b[:data], "the dump is float32"
b[data + 4 * 5 : data + 4 * 6] = struct.pack("<f", float("inf"))
open(path, "wb").write(b)
EOF
expect 2 "${test}__k.npy: element \[0, 0, 0, 5\] (flat 5) is inf: inputs must be finite" --test $test --load "$tmp/nan"
grep -q "^\[ERROR\] phase 8  $test" "$tmp/out" || fail "a non-finite input: no [ERROR] line: $(cat "$tmp/out")"
# a header is read as numpy reads it: a key besides descr, fortran_order and
# shape is refused even when its string holds a shape; fortran_order is False
# or True, nothing else (both were read as a good header, the test passed)
reheader() { # SRC DST DICT: SRC's data under a new header dict
    python3 - "$@" <<'EOF'
import struct, sys
src, dst, new = sys.argv[1:4]
b = open(src, "rb").read()
data = 10 + struct.unpack("<H", b[8:10])[0]
head = new.encode() + b" " * (-(10 + len(new) + 1) % 64) + b"\n"
open(dst, "wb").write(b[:8] + struct.pack("<H", len(head)) + head + b[data:])
EOF
}
mkdir "$tmp/hdr"
cp "$tmp/d1/${test}__"*.npy "$tmp/hdr/"
reheader "$tmp/d1/${test}__g.npy" "$tmp/hdr/${test}__g.npy" \
    "{'descr': '<f4', 'fortran_order': False, 'note': \"'shape': (2, 50, 6)\", 'shape': (2, 50, 6), }"
expect 2 "${test}__g.npy: malformed .npy header: an extra key 'note'" --test $test --load "$tmp/hdr"
reheader "$tmp/d1/${test}__g.npy" "$tmp/hdr/${test}__g.npy" "{'descr': '<f4', 'fortran_order': Falsely, 'shape': (2, 50, 6), }"
expect 2 "${test}__g.npy: malformed .npy header: fortran_order is not False or True" --test $test --load "$tmp/hdr"
reheader "$tmp/d1/${test}__g.npy" "$tmp/hdr/${test}__g.npy" "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 50, 6), }"
expect 0 "max_diff=$want" --test $test --load "$tmp/hdr"
# a FIFO where a file should be is refused, not opened (the run hung for ever)
rm "$tmp/hdr/${test}__q.npy"
mkfifo "$tmp/hdr/${test}__q.npy"
timeout 20 "$bin" --test $test --load "$tmp/hdr" >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "${test}__q.npy is not a regular file" "$tmp/out" || fail "--load of a FIFO: exit $rc: $(cat "$tmp/out")"
ok
# a well-formed set the kernels cannot run (D_k = 300) is bad input, exit 2,
# as --set D_k=300 is (it was a kernel FAIL, exit 1); D_k = 129 is past the
# chunked kernels' but the recurrent kernel's: its rows run it (it was refused
# for every row), a chunked row skips it, saying why
layer_files() { # DIR D: a layer's six inputs of T = 2, one head of D, every element -0.1
    mkdir "$1"
    python3 - "$1" "$2" <<'EOF'
import struct, sys
D = int(sys.argv[2])
def save(name, shape):
    n = 1
    for s in shape: n *= s
    d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, shape))
    head = d.encode() + b" " * (-(10 + len(d) + 1) % 64) + b"\n"
    open(f"{sys.argv[1]}/{name}.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head
                                                 + struct.pack("<f", -0.1) * n)
for name, shape in (("q", (1, 2, 1, D)), ("k", (1, 2, 1, D)), ("v", (1, 2, 1, D)), ("g", (1, 2, 1)),
                    ("beta", (1, 2, 1)), ("state", (1, 1, D, D))):
    save(name, shape)
EOF
}
layer_files "$tmp/wide" 300
expect 2 "--load: the files give D_k = 300, out of range: D_k is 1 to 256" --test $test --load "$tmp/wide"
layer_files "$tmp/dk129" 129
expect 0 "^\[PASS\] phase 8  recurrent_prompt .*Dk=129" --test recurrent_prompt --load "$tmp/dk129"
# ... and alone, it tested nothing: status 2, saying so
expect 2 "^\[SKIP\] phase 8  chunked_T64 .*chunked refuses: D_k past" --test chunked_T64 --load "$tmp/dk129"
grep -q "nothing was tested: every selected test was skipped (the shape --load gave" "$tmp/err" ||
    fail "a --load that every selected test skipped: $(cat "$tmp/err")"
# --dump of the generated grid: every case's inputs and outputs in files of
# their own (at most 64 names were kept: later cases overwrote earlier ones;
# the output 'state #2' overwrote the second case's input 'state')
"$bin" --test grid_recurrent --dump "$tmp/grid" >"$tmp/out" 2>&1 || fail "--dump of grid_recurrent: $(cat "$tmp/out")"
cases=$(sed -n 's/.*subset grid: \([0-9]*\) cases run.*/\1/p' "$tmp/out")
python3 - "$tmp/grid" "$cases" <<'EOF' || fail "--dump of the grid: files overwritten"
import os, re, struct, sys
d, cases = sys.argv[1], int(sys.argv[2])
ndim = {}
for f in os.listdir(d):
    if not f.endswith(".npy"): continue
    b = open(os.path.join(d, f), "rb").read(10 + 512)
    head = b[10:10 + struct.unpack("<H", b[8:10])[0]].decode()
    dims = re.search(r"'shape': \(([^)]*)\)", head).group(1)
    ndim[f] = len([x for x in dims.split(",") if x.strip()])
def named(pattern):
    return [f for f in ndim if re.fullmatch("grid_recurrent__" + pattern + r"\.npy", f)]
inputs, outputs, qs = named(r"state(__\d+)?"), named(r"state_\d+"), named(r"q(__\d+)?")
assert cases > 6 and len(qs) == cases and len(inputs) == cases and len(outputs) == cases, \
    (cases, len(qs), len(inputs), len(outputs))
assert all(ndim[f] == 4 for f in inputs), "an input 'state' file holds a 2-D output"
assert all(ndim[f] == 2 for f in outputs)
EOF
ok
# one run per --dump directory: a second one is refused while the first runs
"$bin" --phase 8 --dump "$tmp/busy" >/dev/null 2>&1 &
busy=$!
for i in $(seq 1 100); do [ -e "$tmp/busy/.test_deltanet.lock" ] && break; sleep 0.1; done
expect 2 "--dump: .*busy is in use by another run (pid $busy)" --test sigmoid --dump "$tmp/busy"
kill $busy
wait $busy 2>/dev/null
ls "$tmp/busy" | grep -q '\.tmp$' && fail "--dump left temp files behind"
# SIGTERM the moment a temp file exists: it is renamed or removed before the
# run ends (without the signal block in npy_write 2 of 10 such kills left one)
for try in 1 2 3 4 5; do
    rm -rf "$tmp/cut"
    "$bin" --phase 8 --dump "$tmp/cut" >/dev/null 2>&1 &
    cut=$!
    for i in $(seq 1 400); do ls "$tmp/cut" 2>/dev/null | grep -q '\.tmp$' && break; done
    kill $cut
    wait $cut 2>/dev/null
    ls "$tmp/cut" 2>/dev/null | grep -q '\.tmp$' && fail "SIGTERM during --dump left a temp file (try $try)"
done
: >"$tmp/file"
expect 2 "is not a directory" --test sigmoid --dump "$tmp/file"
# plain names (DIR/q.npy...) feed any test; one that derives its own shape
# from the row does not run on them: an input error naming the file, no
# max_diff (it was [FAIL], status 1, with the max_diff of generated inputs)
mkdir "$tmp/plain"
for t in q k v g beta state; do cp "$tmp/d1/${test}__$t.npy" "$tmp/plain/$t.npy"; done
expect 0 "max_diff=$want" --test $test --load "$tmp/plain"
expect 2 "^\[ERROR\] phase 8  auto_short_B1 .* --load: .*/q.npy has shape .*, this test runs .*: not run$" \
    --test auto_short_B1 --load "$tmp/plain"
grep -q "max_diff" "$tmp/out" && fail "a test not run on --load's files printed a max_diff: $(cat "$tmp/out")"

# --set: a Qwen3.5-like shape (linear attention H_k = 16, H_v = 48, D = 128) on a short T
expect 0 "2 passed, 0 failed" --set H_k=16 --set H_v=48 --set T=20 --test chunked_T64 --test recurrent_vs_chunked
grep -q "Hv=\(12\|48\) " "$tmp/out" || fail "--set H_v=48: $(cat "$tmp/out")"
expect 2 "not a multiple of H_k" --set H_k=16 --set H_v=40 --test chunked_T64
expect 2 "T out of range" --set T=0 --test chunked_T64
expect 2 "unknown key" --set heads=4
expect 2 "T takes a whole number, 'abc' is not one" --set T=abc

# --bench: the table, the emulation label on the CPU build; no progress line in a pipe
expect 0 "speed-up vs unfused" --bench --reps 2 --test compare_T1_B1 --log "$tmp/bench.tsv"
for l in unfused recurrent chunked; do grep -q "^ *$l  *[0-9.]* " "$tmp/out" || fail "--bench: no $l row"; done
if [ "$("$bin" --env | sed -n 's/^backend \([a-z]*\),.*/\1/p')" = cpu ]; then
    grep -q "emulation, not performance" "$tmp/out" || fail "--bench on the CPU build: no emulation label"
fi
grep -q "test 1 of" "$tmp/err" && fail "progress line written to a pipe"
ok
# the log's bench rows carry each variant's bytes and flops per call, which
# tools/gpu/roofline.sh reads: recurrent_x36 is 36 recurrent calls, a state copy
# moves less than the recurrent layer (its state and inputs) and computes nothing
awk -F'\t' '/^#/ { next } !("bytes" in col) { for (c = 1; c <= NF; c++) col[$c] = c; next }
    $3 ~ /^bench:/ { b[substr($3, 7)] = $col["bytes"]; f[substr($3, 7)] = $col["flops"] }
    END { r = b["recurrent"]; x = b["recurrent_x36"]; s = b["state_copy"]
          exit !(r > 0 && f["recurrent"] > 0 && (x - 36 * r)^2 < (1e-6 * x)^2 &&
                 (f["recurrent_x36"] - 36 * f["recurrent"])^2 < (1e-6 * f["recurrent_x36"])^2 &&
                 s > 0 && s < r && f["state_copy"] == 0) }' "$tmp/bench.tsv" ||
    fail "--bench --log: bytes/flops per variant inconsistent: $(grep bench: "$tmp/bench.tsv")"
root=$(dirname "$0")/..
bash "$root/tools/gpu/roofline.sh" "$tmp/bench.tsv" >"$tmp/roofline.tsv" || fail "tools/gpu/roofline.sh on a --bench log"
[ "$(cut -f 2 "$tmp/roofline.tsv" | tr '\n' ' ')" = "variant recurrent chunked state_copy recurrent_x36 " ] ||
    fail "tools/gpu/roofline.sh: not one row per variant: $(cat "$tmp/roofline.tsv")"
ok

echo "tensors: $checks checks passed"

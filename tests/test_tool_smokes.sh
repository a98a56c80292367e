#!/bin/sh
# Every script of tools/ (but the gfx906 lens's, which make isa-check and the
# simulator's self-test run) and of integration/ run in CI at least this far:
# its arguments parsed (no arguments or an unknown option: status 2 and its
# usage), and a tiny case where one runs without a GPU or a checkout of
# ggml: crossover.sh on the CPU build at one token count, sweep_table.py,
# tolerance_table.py and perf_table.awk on small logs, decode_ref.sh cutting
# ggml's kernel from a stand-in source, check_on_gpu.sh --dry-run,
# apply_and_build.sh refusing a tree older than the op form. Scripts that need
# what CI lacks (ncu, PyTorch, gguf-py) are compiled or parsed only and say so.
# roofline.sh (tests/test_tensors.sh), e2e_bench.sh, e2e_stats.py
# (tests/test_e2e_tools.sh), server_check.sh and server_check.py
# (tests/test_server_check.sh), deps.sh (tests/test_deps.sh) and
# results_index.py (make check) have their own tests.
#   sh tests/test_tool_smokes.sh [test_deltanet binary, default build/cpu/test_deltanet]
set -u
bin=${1:-build/cpu/test_deltanet}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
fail() { echo "tool smokes: FAIL $*"; fails=$((fails + 1)); }
# status CMD...: runs CMD, prints its exit status (output kept in $tmp/out)
status() { "$@" > "$tmp/out" 2>&1; echo $?; }
expect() { # expect STATUS WHAT CMD...
    want=$1 what=$2; shift 2; checks=$((checks + 1))
    got=$(status "$@")
    [ "$got" = "$want" ] || { fail "$what: exit $got, not $want: $(head -c 300 "$tmp/out")"; return 1; }
}

# --- arguments: no arguments or an unknown option is bad usage (2) ---------------------------------------------
for s in tools/gpu/ab.sh tools/gpu/decode_ref.sh tools/gpu/hotspots.sh tools/gpu/fla_ref.sh \
         tools/setup/rocm_chroot.sh integration/llama.cpp/apply_and_build.sh \
         integration/llama.cpp/check_hip_build.sh integration/llama.cpp/check_on_gpu.sh \
         integration/llama.cpp/check_patch.sh; do
    expect 2 "$s without arguments" bash "$s" && grep -q "usage\|$(basename "$s")" "$tmp/out" ||
        fail "$s: no usage line"
done
for s in tools/gpu/ab.sh integration/llama.cpp/apply_and_build.sh integration/llama.cpp/check_hip_build.sh \
         integration/llama.cpp/check_on_gpu.sh integration/llama.cpp/check_patch.sh; do
    expect 2 "$s --no-such-option" bash "$s" --no-such-option x y
done
for p in tools/gpu/sweep_table.py tools/report/tolerance_table.py integration/llama.cpp/code_objects.py; do
    got=$(status python3 "$p"); checks=$((checks + 1))
    [ "$got" = 1 ] || [ "$got" = 2 ] || fail "$p without arguments: exit $got"
done

# --- tiny cases ------------------------------------------------------------------------------------------------
# crossover.sh: one token count on the CPU build (its times are emulation; the table's shape is the check)
CROSSOVER_T=2 CROSSOVER_B=1 bash tools/gpu/crossover.sh "$bin" > "$tmp/cross.tsv" 2> "$tmp/out"
checks=$((checks + 1))
[ "$(sed -n 1p "$tmp/cross.tsv")" = "$(printf 'T\tB\trecurrent_us\tchunked_us\tfaster')" ] &&
    awk -F'\t' 'NR == 2 && $1 == 2 && $2 == 1 && $3 > 0 && $4 > 0 && ($5 == "recurrent" || $5 == "chunked") { ok = 1 }
                END { exit !ok }' "$tmp/cross.tsv" || fail "crossover.sh: $(cat "$tmp/cross.tsv" "$tmp/out")"

# sweep_table.py on a decode_ref TSV of one shape: ggml 4 us against auto 2 us is 2.00, the goal met
{ printf 'build\tT\tB\tcall\tmethod\tmedian_us\tmin_us\to_rel_diff\tstate_rel_diff\n'
  for c in copy:1 ggml:4 kdn:2 chunked:8 auto:2; do
      printf 'main\t1\t1\t%s\tqueued\t%s\t%s\t0\t0\n' "${c%%:*}" "${c#*:}" "${c#*:}"
  done; } > "$tmp/decode_ref.tsv"
checks=$((checks + 1))
python3 tools/gpu/sweep_table.py "$tmp/decode_ref.tsv" > "$tmp/sweep.tsv" 2> "$tmp/out" &&
    grep -q '2\.00' "$tmp/sweep.tsv" || fail "sweep_table.py: $(cat "$tmp/sweep.tsv" "$tmp/out")"

# tolerance_table.py on the CPU baseline: a table with a row per phase
checks=$((checks + 1))
python3 tools/report/tolerance_table.py results/baseline-cpu.tsv > "$tmp/tol.md" 2> "$tmp/out" &&
    grep -q '^| 8 ' "$tmp/tol.md" || fail "tolerance_table.py: $(head -c 300 "$tmp/tol.md") $(cat "$tmp/out")"

# perf_table.awk: medians over rounds and the ratio (kdn 2, 4, 9 -> 4; stock 3, 5 -> 4: 1.00), then the
# quartiles of the per-round ratios (3/2, 5/4; round 3 has no stock run); one run in the layout of a graphs-on
# build (ggml's warm-up notice after the name, the numbers on the next line)
printf '### perf kdn: a\n  GDN(x): ggml_backend_cuda_graph_compute: CUDA graph warmup complete\n     1 runs -   2.00 us/run - 1 kB\n### perf stock: a\n  GDN(x): 1 runs -   3.00 us/run - 1\n### perf stock: a\n  GDN(x): 1 runs -   5.00 us/run - 1\n### perf kdn: a\n  GDN(x): 1 runs -   4.00 us/run - 1\n### perf kdn: a\n  GDN(x): 1 runs -   9.00 us/run - 1\n' \
    > "$tmp/perf.txt"
checks=$((checks + 1))
[ "$(awk -F' - ' -f integration/llama.cpp/perf_table.awk "$tmp/perf.txt" | sed -n 2p)" = "$(printf 'GDN(x)\t4\t4\t1.00\t1.25\t1.50')" ] ||
    fail "perf_table.awk: $(awk -F' - ' -f integration/llama.cpp/perf_table.awk "$tmp/perf.txt")"

# decode_ref.sh --cut-only: ggml's kernel template cut from a stand-in source, up to its closing brace
printf '#include "x"\ntemplate <int S_v, bool KDA, bool keep_rs_t>\n__global__ void k() {\n    body();\n}\nafter();\n' > "$tmp/gdn.cu"
expect 0 "decode_ref.sh --cut-only" bash tools/gpu/decode_ref.sh --cut-only "$tmp/gdn.cu" "$tmp/cut" &&
    { [ "$(wc -l < "$tmp/cut/ggml_gdn_kernel.cuh")" = 4 ] && ! grep -q after "$tmp/cut/ggml_gdn_kernel.cuh" ||
      fail "decode_ref.sh: the cut is not the template: $(cat "$tmp/cut/ggml_gdn_kernel.cuh")"; }
printf 'no kernel here\n' > "$tmp/none.cu"
expect 1 "decode_ref.sh on a source without the kernel" bash tools/gpu/decode_ref.sh --cut-only "$tmp/none.cu" "$tmp/cut"

# check_on_gpu.sh --dry-run: arguments checked, the plan printed (--perf-cases: the perf runs' -p); --rounds 0
# is bad usage
expect 0 "check_on_gpu.sh --dry-run" bash integration/llama.cpp/check_on_gpu.sh --dry-run --rounds 2 \
    --perf-cases 'n_seq_tokens=1,' "$tmp" "$tmp/chk" &&
    { grep -q "perf (x2) -o GATED_DELTA_NET (perf: -p 'n_seq_tokens=1,')" "$tmp/out" && [ "$(grep -c 'new test_gated_delta_net(.*K=' "$tmp/out")" = 12 ] || fail "check_on_gpu.sh --dry-run: $(cat "$tmp/out")"; }
# --graphs: ggml configured with its graphs on (CUDA's flag, HIP's), and only then
expect 0 "check_on_gpu.sh --graphs" bash integration/llama.cpp/check_on_gpu.sh --dry-run --graphs "$tmp" "$tmp/chk" &&
    { grep -q -- '-DGGML_CUDA_GRAPHS=ON)' "$tmp/out" || fail "check_on_gpu.sh --graphs: $(head -1 "$tmp/out")"; }
expect 0 "check_on_gpu.sh --graphs (hip)" bash integration/llama.cpp/check_on_gpu.sh --dry-run --backend hip --graphs "$tmp" "$tmp/chk" &&
    { grep -q -- '-DGGML_HIP_GRAPHS=ON)' "$tmp/out" || fail "check_on_gpu.sh --graphs (hip): $(head -1 "$tmp/out")"; }
expect 0 "check_on_gpu.sh without --graphs" bash integration/llama.cpp/check_on_gpu.sh --dry-run "$tmp" "$tmp/chk" &&
    { ! grep -q -- 'GRAPHS' "$tmp/out" || fail "check_on_gpu.sh: graphs without --graphs: $(head -1 "$tmp/out")"; }
expect 2 "check_on_gpu.sh --rounds 0" bash integration/llama.cpp/check_on_gpu.sh --rounds 0 "$tmp" "$tmp/chk"
# --device: every run on the card named (the second of two cards); the default is the first
expect 0 "check_on_gpu.sh --device" bash integration/llama.cpp/check_on_gpu.sh --dry-run --backend hip --device ROCm1 "$tmp" "$tmp/chk" &&
    { grep -q -- '-b ROCm1 and fusion_check ROCm1' "$tmp/out" || fail "check_on_gpu.sh --device: $(cat "$tmp/out")"; }

# mtp_perf_cases.sh: the 12 MTP verify cases inside make_test_cases_perf() of a stand-in file, once
printf 'static cases make_test_cases() {\n    c(new test_gated_delta_net(1));\n}\nstatic cases make_test_cases_perf() {\n    c(new test_gated_delta_net(2));\n    return c;\n}\nint after;\n' > "$tmp/tbo.cpp"
expect 0 "mtp_perf_cases.sh" bash integration/llama.cpp/mtp_perf_cases.sh "$tmp/tbo.cpp" &&
    expect 0 "mtp_perf_cases.sh again" bash integration/llama.cpp/mtp_perf_cases.sh "$tmp/tbo.cpp" &&
    { awk '/make_test_cases_perf/ { p = 1 } p && /K=\*\/[234]\)\);$/ { n++ } /^}/ { p = 0 } END { exit n != 12 }' "$tmp/tbo.cpp" &&
      [ "$(grep -c 'test_gated_delta_net' "$tmp/tbo.cpp")" = 14 ] ||
      fail "mtp_perf_cases.sh: not 12 cases in make_test_cases_perf(): $(cat "$tmp/tbo.cpp")"; }
grep -q 'test_gated_delta_net(2)' "$tmp/tbo.cpp" && printf 'int x;\n' > "$tmp/none.cpp" &&
    expect 1 "mtp_perf_cases.sh on a file without perf cases" bash integration/llama.cpp/mtp_perf_cases.sh "$tmp/none.cpp"

# apply_and_build.sh on a tree older than the op form the patch needs: refused with that message (1)
mkdir -p "$tmp/old/src/ggml-cuda" && echo '// no snapshot-cache fusion' > "$tmp/old/src/ggml-cuda/gated_delta_net.cuh"
expect 1 "apply_and_build.sh on an old tree" bash integration/llama.cpp/apply_and_build.sh --apply-only "$tmp/old" &&
    { grep -q 'older than' "$tmp/out" || fail "apply_and_build.sh: $(cat "$tmp/out")"; }

# what CI lacks: compiled or parsed only
for p in tools/gpu/fla_ref.py tools/e2e/synth_gguf.py; do
    checks=$((checks + 1))
    python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$p" || fail "$p does not parse"
done
expect 77 "hotspots.sh without ncu" env PATH=/usr/bin:/bin bash tools/gpu/hotspots.sh t r

[ "$fails" = 0 ] || { echo "tool smokes: $fails of $checks checks failed"; exit 1; }
echo "tool smokes: $checks checks of tools/ and integration/ scripts passed (fla_ref.py, synth_gguf.py parsed only: PyTorch, gguf-py)"

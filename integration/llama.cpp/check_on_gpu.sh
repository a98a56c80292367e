#!/usr/bin/env bash
# The check of ggml-kdn.patch on a GPU: builds and installs libkdn from this tree, applies the patch to a llama.cpp
# or ggml checkout and builds its test-backend-ops (apply_and_build.sh), then runs test-backend-ops on
# GATED_DELTA_NET in test mode (against ggml's CPU backend) and in perf mode, each with libkdn and with ggml's own
# kernel (GGML_KDN_DISABLE=1, the same binary; on CUDA perf also with ggml's PDL off), tabulates the perf runs, and
# runs fusion_check.cpp (the op fused with the copy of its snapshots into a cache, which test-backend-ops never
# builds) both ways. Before the build it adds the MTP verify perf cases to the checkout's test-backend-ops.cpp
# (mtp_perf_cases.sh: T = 2, 3, 4 tokens with K = T snapshots, 32 and 48 value heads, 1 and 4 sequences).
#
#   integration/llama.cpp/check_on_gpu.sh [--backend cuda|hip] [--target T] [--prefix DIR] [--rounds N]
#                                         [--perf-cases REGEX] [--device NAME] [--graphs]
#                                         [--build-only | --skip-build | --dry-run]
#                                         LLAMA_OR_GGML_DIR OUTDIR
# OUTDIR gets: lib.log build.log test.txt perf.txt (every run, each after a '### mode name: command' line) and
# perf-compare.tsv (--rounds N: the perf runs N times over, alternating their order each round, each case's
# median over the rounds: test-backend-ops' decode cases move by 20 % between processes; --perf-cases: only
# the perf cases whose parameters match REGEX (test-backend-ops -p), so that many rounds of a few cases fit a
# device lease, e.g. 'n_seq_tokens=1,' for decode; --dry-run: the
# arguments checked and the commands printed, nothing built or run)
# (--build-only: stop after the build; --skip-build: only the runs, on a build that is already there -- so other
# GPU work can share the build's time but not the timed runs). The CUDA build turns ggml's FlashAttention
# kernels and NCCL off to cut the compile time; neither touches GATED_DELTA_NET. --device: the ggml backend device
# every run takes (default CUDA0 or ROCm0; on several cards run it once per card: --skip-build --device ROCm1 ...).
# --graphs: ggml built with CUDA (HIP) graphs on, as llama.cpp's own build has them (a standalone ggml checkout
# builds CUDA without them): test-backend-ops then replays each graph of repeated ops instead of launching every node
# from the host, so its perf rows time the kernels as llama.cpp's decode replays them, not the host's launch path.
# Exit status: 0 both test runs and both fusion checks passed, 1 a step failed (its log says which), 2 bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
backend=cuda target="" prefix=/tmp/kdn-prefix skip_build=0 build_only=0 rounds=1 dry_run=0 device= perf_cases= graphs=0
while [ $# -gt 0 ]; do
    case "$1" in
        --backend)    backend=${2:?}; shift 2 ;;
        --target)     target=${2:?}; shift 2 ;;
        --prefix)     prefix=${2:?}; shift 2 ;;
        --skip-build) skip_build=1; shift ;;
        --build-only) build_only=1; shift ;;
        --rounds)     rounds=${2:?}; shift 2 ;;
        --perf-cases) perf_cases=${2:?}; shift 2 ;;
        --device)     device=${2:?}; shift 2 ;;
        --dry-run)    dry_run=1; shift ;;
        --graphs)     graphs=1; shift ;;
        -*)           echo "check_on_gpu.sh: unknown option $1" >&2; exit 2 ;;
        *)            break ;;
    esac
done
[ $# -eq 2 ] || { sed -n '/^#   integration/,/OUTDIR$/p' "${BASH_SOURCE[0]}" | sed 's/^# //'; exit 2; }
case "$rounds" in ''|*[!0-9]*|0) echo "check_on_gpu.sh: --rounds takes a whole number >= 1" >&2; exit 2 ;; esac
src=$1 out=$2
mkdir -p "$out" || exit 2
build="$src/build-kdn-$backend"
case "$backend" in
    cuda) device=${device:-CUDA0}; target=${target:-90}; make_target=${target/#/sm_}
          speed_flags=(-DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF) ;;
    hip)  device=${device:-ROCm0}; target=${target:-gfx906}; make_target=$target; speed_flags=(-DGGML_CUDA_FA=OFF) ;;
    *)    echo "check_on_gpu.sh: --backend must be cuda or hip" >&2; exit 2 ;;
esac
graphs_flag=-DGGML_CUDA_GRAPHS; [ "$backend" = hip ] && graphs_flag=-DGGML_HIP_GRAPHS
[ "$graphs" = 1 ] && speed_flags+=("$graphs_flag=ON")
step() { echo "check_on_gpu.sh: $*"; }
if [ "$dry_run" = 1 ]; then
    step "would build libkdn ($backend, $make_target) into $prefix, patch and build $src in $build" \
         "(cmake ${speed_flags[*]}), then run" \
         "test-backend-ops test and perf (x$rounds) -o GATED_DELTA_NET${perf_cases:+ (perf: -p '$perf_cases')}" \
         "-b $device and fusion_check $device into $out;" \
         "perf cases added to $src/tests/test-backend-ops.cpp:"
    "$here/mtp_perf_cases.sh" --print "$src/tests/test-backend-ops.cpp"
    exit
fi

if [ "$skip_build" = 0 ]; then
    step "libkdn ($backend, $make_target) -> $prefix"
    arch_var=GPU_TARGET; [ "$backend" = cuda ] && arch_var=CUDA_ARCH
    (cd "$root" && make lib BACKEND="$backend" "$arch_var=$make_target" -j"$(nproc)" &&
        make install BACKEND="$backend" "$arch_var=$make_target" PREFIX="$prefix") > "$out/lib.log" 2>&1 ||
        { step "libkdn build failed (lib.log)"; tail -20 "$out/lib.log"; exit 1; }
    "$here/mtp_perf_cases.sh" "$src/tests/test-backend-ops.cpp" > "$out/build.log" 2>&1 ||
        { step "the MTP verify perf cases were not added (build.log)"; cat "$out/build.log"; exit 1; }
    step "ggml with the patch -> $build"
    SECONDS=0
    "$here/apply_and_build.sh" --backend "$backend" --target "$target" --prefix "$prefix" --build-dir "$build" \
        --targets test-backend-ops "$src" -- "${speed_flags[@]}" >> "$out/build.log" 2>&1 ||
        { step "build failed (build.log)"; tail -30 "$out/build.log"; exit 1; }
    step "built in ${SECONDS}s"
    # fusion_check links the ggml just built (its libraries sit in bin/ in llama.cpp, src/... in ggml)
    inc="$src/include"; [ -d "$src/ggml/include" ] && inc="$src/ggml/include"
    link=()
    for d in $(find "$build" -name 'libggml*.so*' -printf '%h\n' | sort -u); do link+=(-L"$d" -Wl,-rpath,"$d"); done
    ${CXX:-c++} -std=c++17 -O2 "$here/fusion_check.cpp" -I"$inc" "${link[@]}" \
        -lggml -lggml-base -o "$build/fusion_check" >> "$out/build.log" 2>&1 ||
        { step "fusion_check did not build (build.log)"; tail -20 "$out/build.log"; exit 1; }
fi
[ "$build_only" = 1 ] && exit 0

tbo="$build/bin/test-backend-ops"
strip_colours() { sed 's/\x1b\[[0-9;]*m//g'; }
# name:environment of each run; "nopdl": ggml's programmatic dependent launch off (GGML_CUDA_PDL=0, CUDA only),
# which lets ggml's kernels start while the previous kernel finishes (libkdn's recurrent kernel launches that way
# whatever the variable says).
test_runs="kdn:GGML_KDN_DISABLE=0 stock:GGML_KDN_DISABLE=1"
perf_runs=$test_runs
[ "$backend" = cuda ] && perf_runs="$perf_runs kdn-nopdl:GGML_KDN_DISABLE=0,GGML_CUDA_PDL=0 stock-nopdl:GGML_KDN_DISABLE=1,GGML_CUDA_PDL=0"
status=0
: > "$out/test.txt"
: > "$out/perf.txt"
# test once; perf $rounds times, every other round in reverse order
reverse() { local r=""; for w in "$@"; do r="$w $r"; done; echo "$r"; }
plan="test:$test_runs"
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then plan="$plan|perf:$perf_runs"; else plan="$plan|perf:$(reverse $perf_runs)"; fi
done
IFS='|' read -r -a passes <<< "$plan"
for pass in "${passes[@]}"; do
    mode=${pass%%:*} runs=${pass#*:}
    for run in $runs; do
        name=${run%%:*} env_list=${run#*:} cases=()
        [ "$mode" = perf ] && [ -n "$perf_cases" ] && cases=(-p "$perf_cases")
        echo "### $mode $name: ${env_list//,/ } $tbo $mode -o GATED_DELTA_NET -b $device ${cases[*]}" >> "$out/$mode.txt"
        # shellcheck disable=SC2046  # the environment list splits on purpose
        env $(echo "$env_list" | tr , ' ') "$tbo" "$mode" -o GATED_DELTA_NET -b "$device" "${cases[@]}" 2>&1 |
            strip_colours > "$out/run.txt"
        rc=${PIPESTATUS[0]}
        cat "$out/run.txt" >> "$out/$mode.txt"
        step "$mode $name: exit $rc, $(grep -c '^ *[A-Z_]*(.*): OK$' "$out/run.txt") cases OK, $(grep -c 'FAIL' "$out/run.txt")" \
             "FAIL lines, $(grep -c ' us/run' "$out/run.txt") timed"
        [ "$mode" = test ] && [ "$rc" != 0 ] && status=1
    done
done
# The cache-copy fusion that test-backend-ops never builds (fusion_check.cpp), with libkdn and with ggml's kernel.
for run in $test_runs; do
    name=${run%%:*} env_list=${run#*:}
    echo "### fusion $name: $env_list $build/fusion_check $device" >> "$out/test.txt"
    env "$env_list" "$build/fusion_check" "$device" 2>&1 | strip_colours > "$out/run.txt"
    rc=${PIPESTATUS[0]}
    cat "$out/run.txt" >> "$out/test.txt"
    step "fusion_check $name: exit $rc, $(tail -1 "$out/run.txt")"
    [ "$rc" != 0 ] && status=1
done
rm -f "$out/run.txt"

# One row per perf case (perf_table.awk): each run's microseconds per op, the median over the rounds, and
# ggml's time over libkdn's (with and without PDL): above 1 libkdn is faster.
awk -F' - ' -f "$here/perf_table.awk" "$out/perf.txt" > "$out/perf-compare.tsv"
cat "$out/perf-compare.tsv"
exit $status

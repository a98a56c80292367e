#!/usr/bin/env bash
# Side-by-side prefill timing of the working tree's kernels and of variant
# files that replace one kernel source (same machine, one call): for each
# VARIANT (a path like variants/deltanet_two_launch_x.cpp standing in for
# kernels/deltanet_two_launch.cpp), build, check, and bench the Qwen3-Next prefill rows.
# usage: tools/ab_bench.sh OUTDIR [VARIANT ...]
set -euo pipefail
out=$1; shift
tests=(--test compare_T4096_B1 --test compare_T4096_B4 --test compare_T16384_B1)
run() { # label
    make BACKEND=cuda -j16 >/dev/null
    ./build/cuda/test_deltanet --test 'two_launch_*' > "$out/$1.check.txt" 2>&1 || true
    ./build/cuda/test_deltanet --bench --reps 10 "${tests[@]}" > "$out/$1.bench.txt" 2>&1 || true
    printf '%-28s %s | %s\n' "$1" "$(tail -1 "$out/$1.check.txt")" \
        "$(awk '$1 == "two_launch" { printf "%s ", $2 }' "$out/$1.bench.txt")"
}
mkdir -p "$out"
run tree
for v in "$@"; do
    target=kernels/$(basename "$v" | sed 's/_[^_]*\.cpp$/.cpp/')
    cp "$target" "$out/saved.cpp"
    cp "$v" "$target"
    run "$(basename "$v" .cpp)"
    cp "$out/saved.cpp" "$target"
done

#!/usr/bin/env bash
# The check of ggml-kdn.patch on a GPU: builds and installs libkdn from this tree, applies the patch to a llama.cpp
# or ggml checkout and builds its test-backend-ops (apply_and_build.sh), then runs test-backend-ops on
# GATED_DELTA_NET in test mode (against ggml's CPU backend) and in perf mode, each with libkdn and with ggml's own
# kernel (GGML_KDN_DISABLE=1, the same binary), and tabulates the perf runs side by side.
#
#   integration/llama.cpp/check_on_gpu.sh [--backend cuda|hip] [--target T] [--prefix DIR] [--skip-build]
#                                         LLAMA_OR_GGML_DIR OUTDIR
# OUTDIR gets: lib.log build.log test-kdn.txt test-stock.txt perf-kdn.txt perf-stock.txt perf-compare.tsv
# (--skip-build: only the runs, on a build that is already there). The CUDA build turns ggml's FlashAttention
# kernels and NCCL off to cut the compile time; neither touches GATED_DELTA_NET.
# Exit status: 0 both test runs passed, 1 a step failed (its log says which), 2 bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
backend=cuda target="" prefix=/tmp/kdn-prefix skip_build=0
while [ $# -gt 0 ]; do
    case "$1" in
        --backend)    backend=${2:?}; shift 2 ;;
        --target)     target=${2:?}; shift 2 ;;
        --prefix)     prefix=${2:?}; shift 2 ;;
        --skip-build) skip_build=1; shift ;;
        -*)           echo "check_on_gpu.sh: unknown option $1" >&2; exit 2 ;;
        *)            break ;;
    esac
done
[ $# -eq 2 ] || { sed -n '7,8p' "${BASH_SOURCE[0]}" | sed 's/^# //'; exit 2; }
src=$1 out=$2
mkdir -p "$out" || exit 2
build="$src/build-kdn-$backend"
case "$backend" in
    cuda) device=CUDA0; target=${target:-90}; make_target=${target/#/sm_}
          speed_flags=(-DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF) ;;
    hip)  device=ROCm0; target=${target:-gfx906}; make_target=$target; speed_flags=(-DGGML_CUDA_FA=OFF) ;;
    *)    echo "check_on_gpu.sh: --backend must be cuda or hip" >&2; exit 2 ;;
esac
step() { echo "check_on_gpu.sh: $*"; }

if [ "$skip_build" = 0 ]; then
    step "libkdn ($backend, $make_target) -> $prefix"
    arch_var=GPU_TARGET; [ "$backend" = cuda ] && arch_var=CUDA_ARCH
    (cd "$root" && make lib BACKEND="$backend" "$arch_var=$make_target" -j"$(nproc)" &&
        make install BACKEND="$backend" "$arch_var=$make_target" PREFIX="$prefix") > "$out/lib.log" 2>&1 ||
        { step "libkdn build failed (lib.log)"; tail -20 "$out/lib.log"; exit 1; }
    step "ggml with the patch -> $build"
    SECONDS=0
    "$here/apply_and_build.sh" --backend "$backend" --target "$target" --prefix "$prefix" --build-dir "$build" \
        --targets test-backend-ops "$src" -- "${speed_flags[@]}" > "$out/build.log" 2>&1 ||
        { step "build failed (build.log)"; tail -30 "$out/build.log"; exit 1; }
    step "built in ${SECONDS}s"
fi

tbo="$build/bin/test-backend-ops"
strip_colours() { sed 's/\x1b\[[0-9;]*m//g'; }
status=0
for mode in test perf; do
    for impl in kdn stock; do
        disable=0; [ "$impl" = stock ] && disable=1
        GGML_KDN_DISABLE=$disable "$tbo" "$mode" -o GATED_DELTA_NET -b "$device" 2>&1 | strip_colours \
            > "$out/$mode-$impl.txt"
        rc=${PIPESTATUS[0]}
        step "$mode with $impl: exit $rc, $(grep -c ': OK$' "$out/$mode-$impl.txt") OK," \
             "$(grep -c 'FAIL' "$out/$mode-$impl.txt") FAIL lines"
        [ "$mode" = test ] && [ "$rc" != 0 ] && status=1
    done
done

# One row per perf case: ggml's kernel, libkdn, and how many times faster libkdn is.
awk -F' - ' '
    FNR == 1 { impl = (FILENAME ~ /perf-stock/) ? "stock" : "kdn" }
    / us\/run/ { name = $1; sub(/^ */, "", name); sub(/: .*/, "", name)
                 us = $2; sub(/ *us\/run.*/, "", us); gsub(/ /, "", us)
                 t[name, impl] = us; if (!(name in seen)) { seen[name] = 1; order[++n] = name } }
    END { print "case\tstock_us\tkdn_us\tspeedup"
          for (i = 1; i <= n; i++) { c = order[i]; s = t[c, "stock"]; k = t[c, "kdn"]
              printf "%s\t%s\t%s\t%s\n", c, s, k, (s > 0 && k > 0) ? sprintf("%.2f", s / k) : "-" } }
' "$out/perf-stock.txt" "$out/perf-kdn.txt" > "$out/perf-compare.tsv"
column -t -s $'\t' "$out/perf-compare.tsv"
exit $status

#!/usr/bin/env bash
# llama.cpp's token-recurrent kernel (plain and with programmatic dependent
# launch), a device copy and libkdn's calls timed the same way in one process
# (tools/gpu/decode_ref.cu says how): cuts ggml's kernel template out of
# GGML_GDN_CU (a ggml or llama.cpp checkout's src/ggml-cuda/gated_delta_net.cu;
# nothing of it is kept here), builds decode_ref.cu against the libkdn.a of
# each TREE (a checkout of this repository with `make lib BACKEND=cuda` done)
# and runs the binaries alternately, twice each. Prints a TSV: build, T, B,
# call, method (sync, queued, stream, graph, host), median and min us,
# ggml-vs-that-call difference of o and state, runs timed and calls per run
# (long calls' bursts shrink); tools/gpu/sweep_table.py makes the table.
# DECODE_REF_SHAPES: space-separated T:B (default: 1:1 1:4 1:128 64:1 64:4).
# usage: tools/gpu/decode_ref.sh [--cut-only] GGML_GDN_CU OUTDIR TREE [TREE ...]   (CUDA machine)
#   --cut-only: only cut ggml's kernel into OUTDIR/ggml_gdn_kernel.cuh (no build, no GPU)
set -euo pipefail
cut_only=0
[ "${1:-}" = --cut-only ] && { cut_only=1; shift; }
[ $# -ge $((3 - cut_only)) ] || { sed -n '13p' "$0" | sed 's/^# //'; exit 2; }
src=$1 out=$2; shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
# the kernel: from its template line to the first closing brace in column 0
awk '/^template <int S_v, bool KDA, bool keep_rs_t>/ { on = 1 } on { print } on && /^}/ { exit }' "$src" \
    > "$out/ggml_gdn_kernel.cuh"
[ -s "$out/ggml_gdn_kernel.cuh" ] || { echo "decode_ref.sh: no kernel template in $src" >&2; exit 1; }
[ "$cut_only" = 1 ] && exit 0
command -v nvcc > /dev/null || { echo "decode_ref.sh: needs nvcc and a CUDA device" >&2; exit 77; }
bins=()
for tree in "$@"; do
    tree=$(cd "$tree" && pwd) name=$(basename "$tree")
    nvcc -O3 -arch=sm_90 -DGGML_GDN_KERNEL="\"$out/ggml_gdn_kernel.cuh\"" -I"$tree/kernels" \
        "$here/decode_ref.cu" "$tree/build/cuda/libkdn.a" -o "$out/decode_ref_$name"
    bins+=("$out/decode_ref_$name")
done
for pass in 1 2; do
    for b in "${bins[@]}"; do
        # shellcheck disable=SC2086 # the shapes are words
        if [ "$pass$b" = "1${bins[0]}" ]; then "$b" "${b##*/decode_ref_}" ${DECODE_REF_SHAPES:-}
        else "$b" "${b##*/decode_ref_}" ${DECODE_REF_SHAPES:-} | tail -n +2; fi
    done
done | tee "$out/decode_ref.tsv"

#!/usr/bin/env bash
# Applies ggml-kdn.patch to a llama.cpp (or ggml) checkout and builds it against an installed libkdn, so that
# ggml's CUDA/HIP backend runs GGML_OP_GATED_DELTA_NET in libkdn (README.md in this folder).
#
#   integration/llama.cpp/apply_and_build.sh [options] LLAMA_CPP_DIR
#     --backend hip|cuda   GPU backend of ggml and of the installed libkdn (default hip)
#     --target T           hip: GPU target (default gfx906); cuda: CMAKE_CUDA_ARCHITECTURES (default 90)
#     --prefix DIR         where `make install PREFIX=DIR` put libkdn (default /usr/local); its lib/pkgconfig
#                          is put in front of PKG_CONFIG_PATH
#     --build-dir DIR      CMake build folder (default LLAMA_CPP_DIR/build-kdn)
#     --targets "A B"      what to build (default "test-backend-ops llama-bench"; ggml checkouts: test-backend-ops)
#     --apply-only         apply the patch and stop
#     --no-kdn             build the same tree with -DGGML_KDN=OFF (the stock kernel), for comparisons
#     -- ARGS...           further arguments for the CMake configure step
# The patch is applied once (a tree that already has it is left as it is). Exit status: 0 built, 1 the patch or the
# build failed, 2 bad usage or libkdn not found by pkg-config, 3 a tree the patch must not go into although it
# applies: one that elides the recurrent-state gather (unsupported_trees.sh; nothing is changed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_file="$here/ggml-kdn.patch"
# shellcheck source=unsupported_trees.sh
. "$here/unsupported_trees.sh"
backend=hip target="" prefix=/usr/local build_dir="" targets="" apply_only=0 kdn=ON
extra=()

usage() { sed -n '5,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
die() { echo "apply_and_build.sh: $1" >&2; exit "${2:-1}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --backend)    backend=${2:?}; shift 2 ;;
        --target)     target=${2:?}; shift 2 ;;
        --prefix)     prefix=${2:?}; shift 2 ;;
        --build-dir)  build_dir=${2:?}; shift 2 ;;
        --targets)    targets=${2:?}; shift 2 ;;
        --apply-only) apply_only=1; shift ;;
        --no-kdn)     kdn=OFF; shift ;;
        --)           shift; extra=("$@"); break ;;
        -h|--help)    usage ;;
        -*)           echo "apply_and_build.sh: unknown option $1" >&2; usage ;;
        *)            [ -z "${src:-}" ] || usage; src=$1; shift ;;
    esac
done
[ -n "${src:-}" ] || usage
[ -d "$src" ] || die "no such directory: $src" 2
src=$(cd "$src" && pwd)
case "$backend" in hip|cuda) ;; *) die "--backend must be hip or cuda (got $backend)" 2 ;; esac

# llama.cpp keeps ggml under ggml/; a ggml checkout is ggml itself.
if [ -d "$src/ggml/src/ggml-cuda" ]; then
    ggml_dir="$src/ggml"; default_targets="test-backend-ops llama-bench"
    tree_flags=(-DLLAMA_BUILD_TESTS=ON -DLLAMA_CURL=OFF)
elif [ -d "$src/src/ggml-cuda" ]; then
    ggml_dir="$src"; default_targets="test-backend-ops"
    tree_flags=(-DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF)
else
    die "$src is neither a llama.cpp nor a ggml checkout (no ggml/src/ggml-cuda or src/ggml-cuda)" 2
fi
targets=${targets:-$default_targets}

# --- apply -----------------------------------------------------------------------------------------------------
# The patch is written for the op form whose dst carries K snapshots and whose CUDA code has the snapshot-cache
# fusion; an older tree (K = state->ne[1]) would take the hunks but not compile, so refuse it here.
needs_form="the GATED_DELTA_NET form with K snapshots in dst (ggml_gated_delta_net(..., state, K), ggml-org/ggml
  d99724f, Aug 2026, or a llama.cpp of that time)"
grep -q 'ggml_cuda_gated_delta_net_fused_cache' "$ggml_dir/src/ggml-cuda/gated_delta_net.cuh" 2> /dev/null ||
    die "$ggml_dir is older than $needs_form"
if elision=$(kdn_state_gather_elision "$ggml_dir"); then
    die "$(kdn_state_gather_elision_message "$ggml_dir" "$elision")" 3
fi
if patch -d "$ggml_dir" -p1 -R --dry-run -s -f < "$patch_file" > /dev/null 2>&1; then
    echo "apply_and_build.sh: the patch is already applied in $ggml_dir"
elif patch -d "$ggml_dir" -p1 --dry-run -s -f < "$patch_file" > /dev/null 2>&1; then
    patch -d "$ggml_dir" -p1 -s -f < "$patch_file"
    echo "apply_and_build.sh: applied ggml-kdn.patch to $ggml_dir"
else
    patch -d "$ggml_dir" -p1 --dry-run -f < "$patch_file" >&2 || true
    die "ggml-kdn.patch does not apply to $ggml_dir: it needs $needs_form"
fi
[ "$apply_only" = 1 ] && exit 0

# --- configure and build ---------------------------------------------------------------------------------------
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if [ "$kdn" = ON ]; then
    pkg-config --exists kdn || die "pkg-config finds no kdn (PKG_CONFIG_PATH=$PKG_CONFIG_PATH): run
  make lib BACKEND=$backend && make install BACKEND=$backend PREFIX=$prefix   in deltanet-gfx906 first" 2
    echo "apply_and_build.sh: libkdn $(pkg-config --modversion kdn): $(pkg-config --cflags --libs kdn)"
fi
build_dir=${build_dir:-$src/build-kdn}
if [ "$backend" = hip ]; then
    target=${target:-gfx906}
    if command -v hipconfig > /dev/null; then
        export HIPCXX=${HIPCXX:-$(hipconfig -l)/clang} HIP_PATH=${HIP_PATH:-$(hipconfig -R)}
    fi
    backend_flags=(-DGGML_HIP=ON -DGPU_TARGETS="$target" -DAMDGPU_TARGETS="$target")
else
    target=${target:-90}
    backend_flags=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$target")
fi
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$src" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGGML_KDN="$kdn" \
      "${backend_flags[@]}" "${tree_flags[@]}" "${extra[@]}"
# shellcheck disable=SC2086  # targets is a list
cmake --build "$build_dir" --target $targets -j "$(nproc)"
echo "apply_and_build.sh: built $targets in $build_dir/bin (GGML_KDN=$kdn)"

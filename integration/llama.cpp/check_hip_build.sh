#!/usr/bin/env bash
# The HIP build of a patched llama.cpp or ggml tree as MI50 users make it: ROCm 6.4 (Debian forky's hipcc,
# clang 21; TOOLCHAIN=rocm6, the default) or ROCm 7.2 (Debian experimental's hipcc 7.2.4, clang 22; TOOLCHAIN=rocm7)
# in the project's chroot (tools/setup/rocm_chroot.sh TOOLCHAIN), gfx906. Builds libkdn (`make lib TOOLCHAIN=...`),
# installs it under the tree's build folder, applies ggml-kdn.patch and builds test-backend-ops with
#   -DGGML_HIP=ON -DGPU_TARGETS=gfx906 -DGGML_KDN=ON -DGGML_CUDA_FA=OFF
# (apply_and_build.sh, run in the chroot; --targets builds others instead, e.g. only ggml-hip, the library every
# check below reads), then reports:
#   - the patch is applied to the tree;
#   - the real libkdn path was compiled (gated_delta_net_kdn.cu's object calls kdn_gated_delta_net; the stub
#     calls nothing) and the linked ggml library defines kdn_gated_delta_net;
#   - every gfx906 code object of make lib's libkdn.a is in the linked library, byte for byte
#     (code_objects.py: the offload bundles' code objects, by sha256);
#   - the symbols the linked library exports that come from libkdn (only its public API may).
#
#   integration/llama.cpp/check_hip_build.sh [--label "NAME COMMIT"] [--report FILE] [--targets "T..."] DIR
#
# --label names the tree in the report (default: its git commit, if it is a checkout). The tree is fetched by
# the caller and never part of this repository. ROCM6_CHROOT=DIR (ROCM7_CHROOT) reuses a chroot (tools/setup/rocm_chroot.sh;
# the ggml build adds cmake, ninja-build, pkg-config, libhipblas-dev and librocblas-dev to it). About 20
# CPU-minutes and 6 GB. Exit status: 0 every check holds, 1 a check failed or the build did, 2 bad usage,
# 3 apply_and_build.sh refused the tree (README.md, "Which trees"), 77 the chroot cannot be made here (the reason
# is printed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
label="" report="" targets=test-backend-ops
while [ $# -gt 0 ]; do
    case "$1" in
        --label)  label=${2:?}; shift 2 ;;
        --report) report=${2:?}; shift 2 ;;
        --targets) targets=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
        -*) echo "check_hip_build.sh: unknown option $1" >&2; exit 2 ;;
        *) [ -z "${src:-}" ] || { echo "check_hip_build.sh: one tree only" >&2; exit 2; }; src=$1; shift ;;
    esac
done
[ -n "${src:-}" ] && [ -d "$src" ] || { echo "usage: check_hip_build.sh [--label NAME] [--report FILE] DIR" >&2; exit 2; }
src=$(cd "$src" && pwd)
if [ -z "$label" ]; then
    label=$(git -C "$src" rev-parse --short=9 HEAD 2>/dev/null || echo "(not a git checkout)")
fi
toolchain=${TOOLCHAIN:-rocm6}
case "$toolchain" in
    rocm6) rocm="ROCm 6.4" ;;
    rocm7) rocm="ROCm 7.2" ;;
    *) echo "check_hip_build.sh: TOOLCHAIN is rocm6 or rocm7, not '$toolchain'" >&2; exit 2 ;;
esac
build=$src/build-kdn-$toolchain
prefix=$build/kdn-prefix
chroot_tool() { "$root/tools/setup/rocm_chroot.sh" "$toolchain" "$@"; }

# --- build ------------------------------------------------------------------------------------------------------
chroot_tool setup --ggml || exit $?
make -C "$root" --no-print-directory lib TOOLCHAIN="$toolchain"
make -C "$root" --no-print-directory install TOOLCHAIN="$toolchain" PREFIX="$prefix"
libkdn=$root/build/hip-$toolchain/libkdn.a
mkdir -p "$build"
# CMake caches pkg-config's answer: a libkdn installed since the last configure must be found afresh
rm -f "$build/CMakeCache.txt"
env "$(echo "$toolchain" | tr a-z A-Z)_BIND=$src" "$root/tools/setup/rocm_chroot.sh" "$toolchain" run bash "$here/apply_and_build.sh" --backend hip --target gfx906 \
    --prefix "$prefix" --build-dir "$build" --targets "$targets" "$src" -- -DGGML_CUDA_FA=OFF \
    2>&1 | tee "$build/build.log"

# --- checks -----------------------------------------------------------------------------------------------------
ggml_dir=$src/ggml
[ -d "$ggml_dir/src/ggml-cuda" ] || ggml_dir=$src
linked=$(find "$build" -name 'libggml-hip.so' -o -name 'libggml-hip.a' | head -n 1)
kdn_obj=$(find "$build" -name 'gated_delta_net_kdn.cu.o' | head -n 1)
fails=0
out=$(mktemp)
trap 'rm -f "$out" "$out".*' EXIT
check() { # check WHAT OK?: one line of the report
    if [ "$2" = 0 ]; then echo "ok    $1"; else echo "FAIL  $1"; fails=$((fails + 1)); fi
}
{
    echo "# check_hip_build.sh: libkdn in a patched ggml HIP build ($rocm, gfx906)"
    echo "command: TOOLCHAIN=$toolchain integration/llama.cpp/check_hip_build.sh --label \"$label\" --targets \"$targets\" $(basename "$src")"
    echo "tree: $label"
    echo "deltanet-gfx906: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo -dirty)"
    echo "toolchain: $(chroot_tool run hipcc --version 2>/dev/null | grep -E '^(HIP version|Debian clang)' | paste -sd ';' -)"
    echo "configure: -DGGML_HIP=ON -DGPU_TARGETS=gfx906 -DGGML_KDN=ON -DGGML_CUDA_FA=OFF, built: $targets"
    echo "linked library: ${linked#"$src"/}"
    echo

    rc=0
    patch -d "$ggml_dir" -p1 -R --dry-run -s -f < "$here/ggml-kdn.patch" > /dev/null 2>&1 || rc=$?
    check "ggml-kdn.patch is applied to ${ggml_dir#"$src"/}" "$rc"

    rc=1
    [ -n "$kdn_obj" ] && nm -u "$kdn_obj" | grep -qw kdn_gated_delta_net && rc=0
    check "the real path compiled: ${kdn_obj#"$build"/} calls kdn_gated_delta_net (the stub calls nothing)" "$rc"
    rc=1
    [ -n "$linked" ] && nm --defined-only "$linked" | grep -qw 'T kdn_gated_delta_net' && rc=0
    check "the linked library defines kdn_gated_delta_net" "$rc"

    python3 "$here/code_objects.py" gfx906 "$libkdn" | cut -f2,3 | sort -u > "$out.kdn"
    : > "$out.linked"
    [ -z "$linked" ] || python3 "$here/code_objects.py" gfx906 "$linked" | cut -f2,3 | sort -u > "$out.linked"
    missing=$(comm -23 "$out.kdn" "$out.linked" | wc -l)
    rc=1
    [ -s "$out.kdn" ] && [ "$missing" = 0 ] && rc=0
    check "libkdn's gfx906 code objects in the linked library, byte-identical to make lib's: $(($(wc -l < "$out.kdn") - missing)) of $(wc -l < "$out.kdn") (the library holds $(wc -l < "$out.linked"))" "$rc"
    sed 's/^/      /' "$out.kdn"

    : > "$out.syms"
    if [ -n "$linked" ] && [ "${linked##*.}" = so ]; then
        nm -D --defined-only "$linked" | awk '{ print $NF }' > "$out.syms"
    elif [ -n "$linked" ]; then
        nm -g --defined-only "$linked" | awk 'NF == 3 { print $3 }' > "$out.syms"
    fi
    # what libkdn.a defines globally; of these, only the public API may leave the library
    nm -g --defined-only "$libkdn" | awk 'NF == 3 { print $3 }' | sort -u > "$out.kdnsyms"
    public=$(sed -n 's/^[a-z_][a-z_ ]*[ *]\(kdn_[a-z_0-9]*\)(.*/\1/p' "$root/kernels/gated_delta_net.h" | sort -u)
    sort -u "$out.syms" | comm -12 - "$out.kdnsyms" > "$out.exported"
    extra=$(echo "$public" | comm -13 - "$out.exported")
    rc=0
    [ -z "$extra" ] || rc=1
    check "exported from the linked library and defined by libkdn: $(wc -l < "$out.exported") symbols, all public API" "$rc"
    sed 's/^/      /' "$out.exported"
    [ -z "$extra" ] || echo "$extra" | sed 's/^/      not public: /'
    echo
    echo "$fails failed"
} | tee "$out.report"
[ -z "$report" ] || cp "$out.report" "$report"
fails=$(tail -n 1 "$out.report" | cut -d' ' -f1)
[ "$fails" = 0 ]

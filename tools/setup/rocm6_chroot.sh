#!/bin/sh
# ROCm 6.4 as MI50 users build with it (Debian testing "forky": hipcc 7.0.2,
# HIP 6.4, clang 21), in a chroot, next to the host's own hipcc.
#
#   tools/setup/rocm6_chroot.sh setup [--ggml]   make (or reuse) the chroot and write
#                                          build/rocm6/bin/: hipcc, llvm-objdump,
#                                          llvm-readelf, clang-offload-bundler, cc,
#                                          each running the chroot's own tool
#   tools/setup/rocm6_chroot.sh run CMD [ARG...] run CMD in the chroot, in the current
#                                          directory
#
# --ggml also installs what a ggml/llama.cpp HIP build needs (cmake, ninja,
# pkg-config, hipBLAS, rocBLAS).
#
# ROCM6_CHROOT=DIR uses the chroot in DIR (made once, by this script or by
# hand with the same packages) instead of build/rocm6/chroot.
# ROCM6_BIND="DIR..." also makes these directories visible in the chroot (the
# repository always is).
#
# What making it needs: root (or sudo without a password), debootstrap, 3 GB
# of free disk (the chroot takes 1.6 GB; --ggml's packages and a ggml build
# about 5 GB more), and network access to deb.debian.org (about 5 minutes). What
# running it needs: root (or sudo) for a private mount namespace (unshare -m)
# and chroot. The repository, /dev and /proc are bind-mounted at their own
# paths inside that namespace only, so no mount outlives a command and
# `rm -rf build` never reaches through one. Commands run as the calling user.
# When something is missing the script says what and exits 77 (skipped): it
# never reports a build it did not make.
set -eu
PATH=$PATH:/usr/sbin:/sbin   # debootstrap, chroot: a user's PATH may lack them
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHROOT=${ROCM6_CHROOT:-$ROOT/build/rocm6/chroot}
BIN=$ROOT/build/rocm6/bin
MIRROR=http://deb.debian.org/debian
SUITE=forky
PACKAGES="build-essential hipcc libamdhip64-dev"
GGML_PACKAGES="cmake ninja-build pkg-config libhipblas-dev librocblas-dev"
NEED_KB=3000000

skip() { echo "rocm6 chroot: $*; skipped" >&2; exit 77; }

# Root for mount and chroot: ourselves, or sudo that asks no password.
as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
    else skip "needs root (or sudo without a password) to mount and chroot"; fi
}

# CMD in the chroot, as the calling user, with the repository, ROCM6_BIND,
# /dev and /proc mounted in a private mount namespace.
in_chroot() {
    binds="$ROOT ${ROCM6_BIND:-}"
    as_root unshare -m --propagation private sh -eu -c '
        ch=$1 user=$2 cwd=$3 binds=$4; shift 4
        for d in $binds; do mkdir -p "$ch$d" && mount --bind "$d" "$ch$d"; done
        mount --bind /dev "$ch/dev"
        mount -t proc proc "$ch/proc"
        exec chroot --userspec="$user" "$ch" env HOME=/tmp PATH=/usr/bin:/bin:/usr/sbin:/sbin \
            sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"' \
        sh "$CHROOT" "$(id -u):$(id -g)" "$(pwd)" "$binds" "$@"
}

# apt in the chroot as root (the forky Release file may be past its Valid-Until date).
chroot_apt() {
    as_root unshare -m --propagation private sh -eu -c '
        mount --bind /dev "$1/dev"; mount -t proc proc "$1/proc"; ch=$1; shift
        exec chroot "$ch" env DEBIAN_FRONTEND=noninteractive PATH=/usr/bin:/bin:/usr/sbin:/sbin apt-get \
            -o Acquire::Check-Valid-Until=false -qq "$@"' sh "$CHROOT" "$@"
}

has_packages() {
    [ -x "$CHROOT/usr/bin/hipcc" ] && [ -f "$CHROOT/usr/include/hip/hip_runtime.h" ] || return 1
    [ "$1" = 0 ] || { [ -x "$CHROOT/usr/bin/cmake" ] && [ -e "$CHROOT/usr/include/hipblas/hipblas.h" ]; }
}

make_chroot() {
    debootstrap=$(command -v debootstrap) || skip "needs debootstrap (apt-get install debootstrap) to make $CHROOT"
    parent=$(dirname "$CHROOT")
    mkdir -p "$parent"
    free=$(df -Pk "$parent" | awk 'NR == 2 { print $4 }')
    [ "$free" -ge "$NEED_KB" ] || skip "needs 3 GB free under $parent (has $((free / 1024)) MB)"
    # Debian 12's debootstrap has no script named forky; sid's makes any suite after it.
    script=/usr/share/debootstrap/scripts/$SUITE
    [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
    tmp=$CHROOT.partial
    as_root rm -rf "$tmp"
    echo "rocm6 chroot: debootstrap $SUITE into $CHROOT (a few minutes)" >&2
    as_root "$debootstrap" --variant=minbase "$SUITE" "$tmp" "$MIRROR" "$script" > "$parent/debootstrap.log" 2>&1 ||
        skip "debootstrap failed (network to deb.debian.org?): see $parent/debootstrap.log"
    as_root mv "$tmp" "$CHROOT"
}

install_packages() {
    echo "rocm6 chroot: apt-get install $*" >&2
    log=$(dirname "$CHROOT")/apt.log
    { chroot_apt update && chroot_apt install -y --no-install-recommends "$@"; } > "$log" 2>&1 ||
        skip "apt-get in $CHROOT failed (network to deb.debian.org?): see $log"
}

# build/rocm6/bin/TOOL runs TOOL in the chroot: the Makefile and the tools
# take these as HIPCC, OBJDUMP, READELF.
write_wrappers() {
    llvm=$(cd "$CHROOT/usr/lib" && ls -d llvm-*/bin/llvm-objdump 2>/dev/null | sort -V | tail -n 1)
    [ -n "$llvm" ] || skip "no llvm-objdump in $CHROOT (is hipcc's LLVM installed?)"
    llvm=/usr/lib/${llvm%/llvm-objdump}
    mkdir -p "$BIN"
    for t in hipcc:/usr/bin/hipcc llvm-objdump:$llvm/llvm-objdump llvm-readelf:$llvm/llvm-readelf \
             clang-offload-bundler:$llvm/clang-offload-bundler cc:/usr/bin/cc; do
        printf '#!/bin/sh\nROCM6_CHROOT=%s exec %s/tools/setup/rocm6_chroot.sh run %s "$@"\n' \
            "$CHROOT" "$ROOT" "${t#*:}" > "$BIN/${t%%:*}.new"
        chmod +x "$BIN/${t%%:*}.new"
        mv "$BIN/${t%%:*}.new" "$BIN/${t%%:*}"
    done
}

setup() {
    ggml=0
    [ "${1:-}" = --ggml ] && ggml=1
    if ! has_packages 0; then
        [ -d "$CHROOT" ] || make_chroot
        install_packages $PACKAGES
    fi
    if ! has_packages "$ggml"; then install_packages $GGML_PACKAGES; fi
    has_packages "$ggml" || skip "$CHROOT lacks hipcc or its headers after installing them"
    write_wrappers
    in_chroot hipcc --version >/dev/null 2>&1 || skip "hipcc does not run in $CHROOT"
}

case "${1:-}" in
    setup) shift; setup "$@" ;;
    run) shift; [ -x "$CHROOT/usr/bin/hipcc" ] || skip "no ROCm 6 chroot at $CHROOT (tools/setup/rocm6_chroot.sh setup)"
         in_chroot "$@" ;;
    *) echo "usage: tools/setup/rocm6_chroot.sh setup [--ggml] | run CMD [ARG...]" >&2; exit 2 ;;
esac

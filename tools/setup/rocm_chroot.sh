#!/bin/sh
# ROCm as MI50 users build with it, in a Debian chroot, next to the host's own
# hipcc (Debian 12: ROCm 5.2). One chroot per toolchain:
#
#   rocm6  ROCm 6.4: Debian testing "forky" (hipcc 7.0.2, HIP 6.4, clang 21)
#   rocm7  ROCm 7.2: Debian sid with the ROCm packages from experimental
#          (hipcc 7.2.4, HIP 7.2, clang 22)
#
#   tools/setup/rocm_chroot.sh TOOLCHAIN setup [--ggml]   make (or reuse) the chroot and
#                                          write build/TOOLCHAIN/bin/: hipcc, llvm-objdump,
#                                          llvm-readelf, clang-offload-bundler, cc,
#                                          each running the chroot's own tool
#   tools/setup/rocm_chroot.sh TOOLCHAIN run CMD [ARG...]  run CMD in the chroot, in the
#                                          current directory
#
# --ggml also installs what a ggml/llama.cpp HIP build needs (cmake, ninja,
# pkg-config, hipBLAS, rocBLAS).
#
# ROCM6_CHROOT=DIR (ROCM7_CHROOT=DIR) uses the chroot in DIR (made once, by
# this script or by hand with the same packages and pins) instead of
# build/rocm6/chroot (build/rocm7/chroot). ROCM6_BIND="DIR..." (ROCM7_BIND)
# also makes these directories visible in the chroot (the repository always is).
#
# What making one needs: root (or sudo without a password), debootstrap, 3 GB
# of free disk (a chroot takes about 2 GB; --ggml's packages and a ggml build
# about 5 GB more), and network access to deb.debian.org (rocm6: about 5
# minutes; rocm7: 2, debootstrap 67 s and the packages 60 s). What running it
# needs: root (or sudo) for a private mount namespace (unshare -m) and chroot.
# The repository, /dev and /proc are bind-mounted at their own paths inside
# that namespace only, so no mount outlives a command and `rm -rf build` never
# reaches through one. Commands run as the calling user. When something is
# missing the script says what and exits 77 (skipped): it never reports a
# build it did not make.
set -eu
PATH=$PATH:/usr/sbin:/sbin   # debootstrap, chroot: a user's PATH may lack them
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MIRROR=http://deb.debian.org/debian
PACKAGES="build-essential hipcc libamdhip64-dev"
GGML_PACKAGES="cmake ninja-build pkg-config libhipblas-dev librocblas-dev"
NEED_KB=3000000

usage() { echo "usage: tools/setup/rocm_chroot.sh rocm6|rocm7 setup [--ggml] | run CMD [ARG...]" >&2; exit 2; }

# The toolchains: the suite debootstrap makes, the HIP version its headers must
# have, and the source packages taken from experimental (pinned above the suite:
# apt's resolver then takes their binaries and nothing else from there), for
# PACKAGES and for GGML_PACKAGES.
TC=${1:-}
case "$TC" in
    #      suite       HIP     experimental: PACKAGES' sources       GGML_PACKAGES' sources
    rocm6) SUITE=forky HIP=6.4 PINS=""                                    GGML_PINS="" ;;
    rocm7) SUITE=sid   HIP=7.2 PINS="rocm-llvm rocm-hipamd rocr-runtime" GGML_PINS="hipblas hipblas-common rocblas rocsolver roctracer" ;;
    *) usage ;;
esac
shift
VAR=$(echo "$TC" | tr a-z A-Z)   # ROCM6, ROCM7: the prefix of the variables this script reads
eval "CHROOT=\${${VAR}_CHROOT:-\$ROOT/build/\$TC/chroot} BIND=\${${VAR}_BIND:-}"
BIN=$ROOT/build/$TC/bin

skip() { echo "$TC chroot: $*; skipped" >&2; exit 77; }

# Root for mount and chroot: ourselves, or sudo that asks no password.
as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
    else skip "needs root (or sudo without a password) to mount and chroot"; fi
}

# CMD in the chroot, as the calling user, with the repository, the BIND
# directories, /dev and /proc mounted in a private mount namespace.
in_chroot() {
    binds="$ROOT $BIND"
    as_root unshare -m --propagation private sh -eu -c '
        ch=$1 user=$2 cwd=$3 binds=$4; shift 4
        for d in $binds; do mkdir -p "$ch$d" && mount --bind "$d" "$ch$d"; done
        mount --bind /dev "$ch/dev"
        mount -t proc proc "$ch/proc"
        exec chroot --userspec="$user" "$ch" env HOME=/tmp PATH=/usr/bin:/bin:/usr/sbin:/sbin \
            sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"' \
        sh "$CHROOT" "$(id -u):$(id -g)" "$(pwd)" "$binds" "$@"
}

# apt in the chroot as root (a testing or experimental Release file may be past
# its Valid-Until date).
chroot_apt() {
    as_root unshare -m --propagation private sh -eu -c '
        mount --bind /dev "$1/dev"; mount -t proc proc "$1/proc"; ch=$1; shift
        exec chroot "$ch" env DEBIAN_FRONTEND=noninteractive PATH=/usr/bin:/bin:/usr/sbin:/sbin apt-get \
            -o Acquire::Check-Valid-Until=false -qq "$@"' sh "$CHROOT" "$@"
}

# HIP's version in the chroot's headers, "MAJOR.MINOR" (empty without them).
hip_version() {
    sed -n 's/^#define HIP_VERSION_\(MAJOR\|MINOR\) \([0-9]*\).*/\2/p' "$CHROOT/usr/include/hip/hip_version.h" 2>/dev/null |
        paste -sd. -
}

has_packages() {
    [ -x "$CHROOT/usr/bin/hipcc" ] && [ "$(hip_version)" = "$HIP" ] || return 1
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
    echo "$TC chroot: debootstrap $SUITE into $CHROOT (a few minutes)" >&2
    as_root "$debootstrap" --variant=minbase "$SUITE" "$tmp" "$MIRROR" "$script" > "$CHROOT.debootstrap.log" 2>&1 ||
        skip "debootstrap failed (network to deb.debian.org?): see $CHROOT.debootstrap.log"
    as_root mv "$tmp" "$CHROOT"
}

# experimental in the chroot's sources, below every suite (apt gives it
# priority 1), and the source packages SRC... pinned above them from it.
pin_experimental() {
    [ -n "$*" ] || return 0
    pins=$(for s in "$@"; do printf ' src:%s' "$s"; done)
    printf 'deb %s experimental main\n' "$MIRROR" | as_root tee "$CHROOT/etc/apt/sources.list.d/experimental.list" > /dev/null
    printf 'Package:%s\nPin: release a=experimental\nPin-Priority: 990\n' "$pins" |
        as_root tee "$CHROOT/etc/apt/preferences.d/$TC-experimental" > /dev/null
}

install_packages() {
    echo "$TC chroot: apt-get install $*" >&2
    log=$CHROOT.apt.log
    { chroot_apt update && chroot_apt install -y --no-install-recommends "$@"; } > "$log" 2>&1 ||
        skip "apt-get in $CHROOT failed (network to deb.debian.org?): see $log"
}

# build/TOOLCHAIN/bin/TOOL runs TOOL in the chroot: the Makefile and the tools
# take these as HIPCC, OBJDUMP, READELF.
write_wrappers() {
    llvm=$(cd "$CHROOT/usr/lib" && ls -d llvm-*/bin/llvm-objdump 2>/dev/null | sort -V | tail -n 1)
    [ -n "$llvm" ] || skip "no llvm-objdump in $CHROOT (is hipcc's LLVM installed?)"
    llvm=/usr/lib/${llvm%/llvm-objdump}
    mkdir -p "$BIN"
    for t in hipcc:/usr/bin/hipcc llvm-objdump:$llvm/llvm-objdump llvm-readelf:$llvm/llvm-readelf \
             clang-offload-bundler:$llvm/clang-offload-bundler cc:/usr/bin/cc; do
        printf '#!/bin/sh\n%s_CHROOT=%s exec %s/tools/setup/rocm_chroot.sh %s run %s "$@"\n' \
            "$VAR" "$CHROOT" "$ROOT" "$TC" "${t#*:}" > "$BIN/${t%%:*}.new"
        chmod +x "$BIN/${t%%:*}.new"
        mv "$BIN/${t%%:*}.new" "$BIN/${t%%:*}"
    done
}

setup() {
    ggml=0
    [ "${1:-}" = --ggml ] && ggml=1
    # another toolchain's chroot (a ROCM7_CHROOT naming rocm6's) is never changed into this one's
    have=$(hip_version)
    [ -z "$have" ] || [ "$have" = "$HIP" ] ||
        skip "$CHROOT has HIP $have, not $HIP: another toolchain's chroot? (${VAR}_CHROOT)"
    if ! has_packages 0; then
        [ -d "$CHROOT" ] || make_chroot
        pin_experimental $PINS $GGML_PINS
        install_packages $PACKAGES
    fi
    if ! has_packages "$ggml"; then
        pin_experimental $PINS $GGML_PINS
        install_packages $GGML_PACKAGES
    fi
    has_packages "$ggml" || skip "$CHROOT lacks hipcc, its headers or HIP $HIP after installing them"
    write_wrappers
    in_chroot hipcc --version >/dev/null 2>&1 || skip "hipcc does not run in $CHROOT"
}

case "${1:-}" in
    setup) shift; setup "$@" ;;
    run) shift; [ -x "$CHROOT/usr/bin/hipcc" ] || skip "no $TC chroot at $CHROOT (tools/setup/rocm_chroot.sh $TC setup)"
         in_chroot "$@" ;;
    *) usage ;;
esac

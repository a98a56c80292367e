#!/bin/sh
# libkdn.a exports the public API only: the functions kernels/gated_delta_net.h
# declares (the Makefile links the library's objects into one and makes every
# other global local). Checked on an installed library, as a caller sees it:
#   - nm of libkdn.a: its defined global symbols are exactly the API;
#   - kdn.pc's -L directories exist;
#   - tests/kdn_example.c linked with pkg-config's flags and with
#     tests/symbol_clash.c, which defines threadIdx, gridDim, a __tsan_ hook and
#     internal kdn_ names for itself: it links, every global symbol it has from
#     libkdn is API, and (CPU build) it runs and passes.
# Usage: tests/test_symbols.sh BACKEND [TOOLCHAIN]   (CC: the caller's compiler)
set -eu
backend=${1:-cpu}
toolchain=${2:-host}
mkdir -p build
prefix=$(mktemp -d "$PWD/build/kdn-symbols.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
make --no-print-directory BACKEND="$backend" TOOLCHAIN="$toolchain" install PREFIX="$prefix" >/dev/null
fail() { echo "symbols ($backend): $*"; exit 1; }

public=$(sed -n 's/^[a-z_][a-z_ ]*[ *]\(kdn_[a-z_0-9]*\)(.*/\1/p' kernels/gated_delta_net.h | sort)
archive=$(nm -g --defined-only "$prefix/lib/libkdn.a" | awk 'NF == 3 { print $3 }' | sort)
if [ "$archive" != "$public" ]; then
    printf '%s\n' "$archive" | grep -vxF "$public" | head -n 10 | sed 's/^/  not API: /'
    fail "libkdn.a defines $(printf '%s\n' "$archive" | wc -l) global symbols, the API is $(printf '%s\n' "$public" | wc -l)"
fi

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libs=$(pkg-config --libs kdn)
for f in $libs; do
    case "$f" in -L*) [ -d "${f#-L}" ] || fail "kdn.pc links from ${f#-L}, which does not exist" ;; esac
done

# shellcheck disable=SC2086  # flags are lists
${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$prefix/clash" tests/kdn_example.c tests/symbol_clash.c \
    $(pkg-config --cflags kdn) $libs || fail "a program defining threadIdx, gridDim, ... does not link with libkdn.a"
# the program's globals that came from libkdn (its own: symbol_clash.c, kdn_example.c)
own=$(${CC:-cc} -std=c11 -c tests/symbol_clash.c -o "$prefix/own.o" && nm -g --defined-only "$prefix/own.o" | awk '{ print $3 }')
lib_names=$(nm "$prefix/lib/libkdn.a" | awk 'NF == 3 { print $3 }' | sort -u)
leaked=$(nm -g --defined-only "$prefix/clash" | awk 'NF == 3 { print $3 }' | sort -u |
         grep -vxF "$own" | grep -xF "$lib_names" | grep -vxF "$public" || true)
[ -z "$leaked" ] || fail "the linked program has libkdn's non-API globals: $(echo $leaked)"
if [ "$backend" = cpu ]; then
    "$prefix/clash" >/dev/null || fail "kdn_example fails when the program defines libkdn's internal names"
fi
echo "symbols: libkdn.a exports the $(echo "$public" | wc -l) API functions only; a program defining threadIdx, gridDim, __tsan_read4, kdn_malloc links$([ "$backend" = cpu ] && echo ' and runs') ($backend)"

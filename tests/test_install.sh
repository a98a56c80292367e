#!/bin/sh
# make lib && make install PREFIX=<tmp>, then tests/kdn_example.c compiled
# against the installed header and library with pkg-config, as a user would,
# and run (CPU build). Usage: tests/test_install.sh [BACKEND]
set -eu
backend=${1:-cpu}
prefix=$(mktemp -d "${TMPDIR:-/tmp}/kdn-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
make --no-print-directory BACKEND="$backend" install PREFIX="$prefix" >/dev/null
for f in include/gated_delta_net.h lib/libkdn.a lib/libkdn.so lib/pkgconfig/kdn.pc; do
    [ -f "$prefix/$f" ] || { echo "install: $f missing"; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
${CC:-cc} -std=c11 -Wall -Wextra -Werror tests/kdn_example.c $(pkg-config --cflags --libs kdn) -o "$prefix/kdn_example"
"$prefix/kdn_example"
# libkdn.so exports the public API and nothing else: its defined dynamic
# symbols are exactly the functions the installed header declares
public=$(sed -n 's/^[a-z_][a-z_ ]*[ *]\(kdn_[a-z_0-9]*\)(.*/\1/p' "$prefix/include/gated_delta_net.h" | sort)
exported=$(nm -D --defined-only "$prefix/lib/libkdn.so" | awk 'NF == 3 { print $3 }' | sort)
if [ "$exported" != "$public" ]; then
    echo "install: libkdn.so's exported symbols are not the public API (< header, > exported):"
    printf '%s\n' "$public" >"$prefix/public.txt"
    printf '%s\n' "$exported" >"$prefix/exported.txt"
    diff "$prefix/public.txt" "$prefix/exported.txt" | head -n 20
    exit 1
fi
# ... and that is all a caller needs: the example linked against the shared library alone
${CC:-cc} -std=c11 -Wall -Wextra -Werror tests/kdn_example.c -I"$prefix/include" -L"$prefix/lib" -lkdn \
    -Wl,-rpath,"$prefix/lib" -lm -o "$prefix/kdn_example_so"
"$prefix/kdn_example_so"
echo "install: make install + pkg-config + kdn_example (static and shared) passed, libkdn.so exports the $(echo "$public" | wc -l) public functions only ($backend)"

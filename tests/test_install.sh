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
echo "install: make install + pkg-config + kdn_example passed ($backend)"

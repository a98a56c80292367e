#!/bin/sh
# tools/setup/deps.sh installs only what is missing: on PATHs of stub tools, its
# --list names Debian's nodejs/npm only where no npm is found (a Node.js from
# another source must stay: Debian's nodejs conflicts with it), the ROCm
# packages only where no hipcc is found, pkg-config where it is missing, and
# nothing else that is present.
#   tests/test_deps.sh
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checks=0
fail() { echo "deps: FAIL $*"; exit 1; }
# numpy is looked up in Debian's python3 (/usr/bin/python3), not on PATH
numpy=$(/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || echo python3-numpy)
# stubs BIN TOOL...: an executable that does nothing, per tool, on a fresh PATH
stubs() {
    mkdir -p "$tmp/$1" && ln -sf "$(command -v id)" "$tmp/$1/id"
    dir=$1
    shift
    for t in "$@"; do printf '#!/bin/sh\n' >"$tmp/$dir/$t" && chmod +x "$tmp/$dir/$t"; done
}
listed() { PATH="$tmp/$1" /bin/bash tools/setup/deps.sh --list; }
ALL="make cc g++ hipcc llvm-objdump-15 c++filt python3 xmllint pkg-config"
stubs foreign_node $ALL npm
[ "$(listed foreign_node)" = "$numpy" ] || fail "with every tool and a foreign npm it lists '$(listed foreign_node)'"
checks=$((checks + 1))
stubs no_node $ALL
case " $(listed no_node) " in *" nodejs npm "*) ;; *) fail "without npm it lists '$(listed no_node)', not nodejs npm" ;; esac
checks=$((checks + 1))
stubs no_rocm make cc g++ llvm-objdump-15 c++filt python3 xmllint pkg-config npm
case " $(listed no_rocm) " in *" hipcc libamdhip64-dev rocm-device-libs "*) ;; *) fail "without hipcc it lists '$(listed no_rocm)'" ;; esac
case " $(listed no_rocm) " in *nodejs*) fail "with npm present it lists nodejs" ;; esac
checks=$((checks + 2))
stubs no_pkgconfig make cc g++ hipcc llvm-objdump-15 c++filt python3 xmllint npm
case " $(listed no_pkgconfig) " in *" pkg-config "*) ;; *) fail "without pkg-config it lists '$(listed no_pkgconfig)'" ;; esac
checks=$((checks + 1))
echo "deps: $checks checks passed"

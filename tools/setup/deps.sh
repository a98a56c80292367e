#!/usr/bin/env bash
# Installs, from Debian's archive, what `make test` needs and this machine
# lacks (a tool already on PATH is kept, wherever it came from: a Node.js
# from another source stays, where Debian's nodejs would conflict with it):
# GNU Make and a C/C++ compiler, ROCm's HIP compiler and runtime (the gfx906
# build), LLVM 15's disassembler (the ISA gates), binutils' c++filt, python3
# with numpy (the --dump checks), xmllint (the JUnit report), pkg-config (an
# installed libkdn's callers) and npm (the workflow validator). Uses sudo when not root. .ci/run and `make deps` run it.
#   tools/setup/deps.sh          install what is missing
#   tools/setup/deps.sh --list   print the Debian packages it would install, install nothing
set -euo pipefail

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
need=""
command -v make  >/dev/null 2>&1 || need="$need make"
command -v cc    >/dev/null 2>&1 || need="$need gcc"
command -v g++   >/dev/null 2>&1 || need="$need g++"
command -v hipcc >/dev/null 2>&1 || need="$need hipcc libamdhip64-dev rocm-device-libs"
# the ISA lens (make isa, make test's gfx906 gates) disassembles with LLVM's tools
command -v llvm-objdump-15 >/dev/null 2>&1 || command -v llvm-objdump >/dev/null 2>&1 || need="$need llvm-15"
command -v c++filt >/dev/null 2>&1 || need="$need binutils"
command -v python3 >/dev/null 2>&1 || need="$need python3"
command -v xmllint >/dev/null 2>&1 || need="$need libxml2-utils"   # validates the JUnit report
# an installed libkdn's callers build with pkg-config (README's example, tests/test_install.sh)
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
# the --dump checks read the .npy files back with numpy (tests/test_tensors.sh)
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || need="$need python3-numpy"
# tests/test_workflows.sh installs action-validator (npm) under build/tools
command -v npm >/dev/null 2>&1 || need="$need nodejs npm"
if [ "${1:-}" = --list ]; then
    echo "${need# }"
    exit 0
fi
if [ -z "$need" ]; then
    echo "deps: everything make test needs is installed"
    exit 0
fi
echo "deps: installing$need"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # the packages are words
$SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null

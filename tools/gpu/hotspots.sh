#!/usr/bin/env bash
# Where a CUDA kernel's time goes: Nsight Compute's full section set for the
# first 2 launches matching REGEX in one test (details.txt: throughput,
# occupancy, warp stalls), and the per-instruction stall samples of the SASS
# (source.csv; the CUDA build carries -lineinfo for the source view of the
# saved profile.ncu-rep). Run on a GPU machine.
# usage: tools/gpu/hotspots.sh TEST REGEX [OUTDIR] [test_deltanet binary]
set -euo pipefail
[ $# -ge 2 ] || { sed -n '7p' "$0" | sed 's/^# //'; exit 2; }
command -v ncu > /dev/null || { echo "hotspots.sh: needs Nsight Compute's ncu on PATH (a CUDA machine)" >&2; exit 77; }
test=$1 regex=$2 out=${3:-hotspots} bin=${4:-build/cuda/test_deltanet}
mkdir -p "$out"
ncu --set full --import-source yes -k "regex:$regex" -c 2 -f -o "$out/profile" "$bin" --test "$test" > "$out/ncu.log" 2>&1
ncu -i "$out/profile.ncu-rep" --page details --print-units base > "$out/details.txt"
ncu -i "$out/profile.ncu-rep" --page source --csv --print-source sass > "$out/source.csv"

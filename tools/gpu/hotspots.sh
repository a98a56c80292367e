#!/usr/bin/env bash
# Where a CUDA kernel's time goes: Nsight Compute's full section set for the
# first two launches matching REGEX in one test (details.txt: throughput,
# occupancy, warp stalls), and the per-instruction stall samples of the SASS
# (source.csv; the CUDA build carries -lineinfo for the source view of the
# saved profile.ncu-rep). Run on a GPU machine.
# usage: tools/gpu/hotspots.sh TEST REGEX [OUTDIR] [test_deltanet binary]
set -euo pipefail
test=$1 regex=$2 out=${3:-hotspots} bin=${4:-build/cuda/test_deltanet}
mkdir -p "$out"
ncu --set full --import-source yes -k "regex:$regex" -c 2 -f -o "$out/profile" "$bin" --test "$test" > "$out/ncu.log" 2>&1
ncu -i "$out/profile.ncu-rep" --page details --print-units base > "$out/details.txt"
ncu -i "$out/profile.ncu-rep" --page source --csv --print-source sass > "$out/source.csv"

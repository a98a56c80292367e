#!/usr/bin/env bash
# Where a CUDA kernel's warps wait: Nsight Compute's stall samples summed per
# source line (the CUDA build carries -lineinfo), the lines with most samples
# first. Run on a GPU machine; it profiles the first launch of each kernel
# matching REGEX in one test.
# usage: tools/hotspots.sh TEST REGEX [OUTDIR] [test_deltanet binary]
set -euo pipefail
test=$1 regex=$2 out=${3:-hotspots} bin=${4:-build/cuda/test_deltanet}
mkdir -p "$out"
ncu --set full --import-source yes -k "regex:$regex" -c 2 -f -o "$out/profile" "$bin" --test "$test" > "$out/ncu.log" 2>&1
ncu -i "$out/profile.ncu-rep" --page details --print-units base > "$out/details.txt"
ncu -i "$out/profile.ncu-rep" --page source --csv --print-source sass > "$out/source.csv"

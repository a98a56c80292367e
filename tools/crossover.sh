#!/usr/bin/env bash
# Short prompts: the token-recurrent kernel against the two-launch chunked
# form on Qwen3-Next heads, T from 2 up, B = 1 and 4 -- the measurement behind
# AUTO_RECURRENT_MAX_T (phases/pipeline.h, docs/performance.md).
# usage: tools/crossover.sh [test_deltanet binary, default build/cuda/test_deltanet]
set -euo pipefail
bin=${1:-build/cuda/test_deltanet}
printf 'T\tB\trecurrent_us\ttwo_launch_us\tfaster\n'
for B in 1 4; do
    for T in 2 8 16 32 64 96 128 160 192 256 384 512; do
        "$bin" --bench --reps 10 --test compare_T64_B1 --set T="$T" --set n_seqs="$B" |
            awk -v T="$T" -v B="$B" '$1 == "recurrent" { r = $2 } $1 == "two_launch" { c = $2 }
                END { printf "%d\t%d\t%s\t%s\t%s\n", T, B, r, c, (r + 0 <= c + 0 ? "recurrent" : "two_launch") }'
    done
done

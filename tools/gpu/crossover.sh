#!/usr/bin/env bash
# Short prompts: one layer variant against another (default: the
# token-recurrent kernel against the chunked form) on Qwen3-Next
# heads, T from 2 up, B = 1 and 4 -- the measurement behind the library's
# recurrent/chunked threshold (kdn_gdn_recurrent_max_t, docs/api.md). Both
# rows run the library's dispatch (kdn_layer_run) with the path forced. The
# times come from the result log's bench:<variant> rows (median_us), the
# variant names from phases/layer_variants.h (the log's variant column).
# usage: tools/gpu/crossover.sh [test_deltanet binary, default build/cuda/test_deltanet] [VARIANT_A VARIANT_B]
#   (CROSSOVER_T / CROSSOVER_B: other token counts / batch sizes, space-separated;
#    CROSSOVER_CHUNK: the chunked path's chunk size, 32 or 64, instead of the test's)
set -euo pipefail
bin=${1:-build/cuda/test_deltanet}
a=${2:-recurrent} b=${3:-chunked}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# median_us of bench:VARIANT in the log, by column name
median() {
    awk -F'\t' -v want="bench:$1" '/^#/ { next } !col { for (i = 1; i <= NF; i++) if ($i == "median_us") col = i; next }
        $3 == want { print $col; found = 1 } END { if (!found) exit 1 }' "$log"
}
printf 'T\tB\t%s_us\t%s_us\tfaster\n' "$a" "$b"
for B in ${CROSSOVER_B:-1 4}; do
    for T in ${CROSSOVER_T:-2 8 16 32 64 96 128 160 192 256 384 512}; do
        "$bin" --bench --reps 10 --test compare_T64_B1 --set T="$T" --set n_seqs="$B" \
            ${CROSSOVER_CHUNK:+--set chunk="$CROSSOVER_CHUNK"} --log "$log" > /dev/null
        ta=$(median "$a") || { echo "crossover: no bench:$a row in the log" >&2; exit 1; }
        tb=$(median "$b") || { echo "crossover: no bench:$b row in the log" >&2; exit 1; }
        awk -v T="$T" -v B="$B" -v ta="$ta" -v tb="$tb" -v a="$a" -v b="$b" \
            'BEGIN { printf "%d\t%d\t%s\t%s\t%s\n", T, B, ta, tb, (ta + 0 <= tb + 0 ? a : b) }'
    done
done

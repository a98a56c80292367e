#!/usr/bin/env bash
# The time a kernel's own work implies on the MI50 (13.4 TFLOP/s fp32,
# 1024 GB/s): for each compare_* row of a --bench result log (the TSV of
# --log, v3: its bench:<label> rows carry each variant's bytes and flops per
# call, dn_layer_cost's counts), each variant's work against both peaks, next
# to the measured median.
# usage: tools/gpu/roofline.sh LOG.tsv [variant ...]
# (variants default to recurrent chunked state_copy recurrent_x36)
set -euo pipefail
log=$1
shift
variants=${*:-recurrent chunked state_copy recurrent_x36}
[ "$(head -n 1 "$log")" = "# test_deltanet log v3" ] ||
    { echo "roofline.sh: $log is not a test_deltanet v3 log (bytes and flops per bench row)" >&2; exit 2; }
printf 'row\tvariant\tmeasured_us\tMB\tGFLOP\tmi50_memory_us\tmi50_compute_us\tmi50_roofline_us\n'
awk -F'\t' -v want=" $variants " '
    /^#/ { next }
    !("median_us" in col) { for (c = 1; c <= NF; c++) col[$c] = c; next }
    $3 ~ /^bench:/ && $2 ~ /^compare_/ && index(want, " " substr($3, 7) " ") {
        us = $col["median_us"]; bytes = $col["bytes"]; flops = $col["flops"]
        mem = bytes / 1024e9 * 1e6; cmp = flops / 13.4e12 * 1e6
        printf "%s\t%s\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\n", $2, substr($3, 7), us, bytes / 1e6, flops / 1e9, mem, cmp,
               (mem > cmp ? mem : cmp)
    }' "$log"

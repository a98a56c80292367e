#!/usr/bin/env bash
# The time a kernel's own work implies on the MI50 (13.4 TFLOP/s fp32,
# 1024 GB/s): for each compare_* row of a --bench output, each variant's
# bytes and flops (its GB/s and GFLOP/s columns times its median, i.e.
# dn_layer_cost's counts) against both peaks, next to the measured time.
# usage: tools/roofline.sh results/h100-bench-phase8.txt [variant ...]
# (variants default to recurrent two_launch state_copy recurrent_x36)
set -euo pipefail
log=$1
shift
variants=${*:-recurrent two_launch state_copy recurrent_x36}
printf 'row\tvariant\tmeasured_us\tMB\tGFLOP\tmi50_memory_us\tmi50_compute_us\tmi50_roofline_us\n'
awk -v want=" $variants " '
    /^\[(PASS|FAIL)\]/ { row = $4 }
    NF >= 6 && index(want, " " $1 " ") && $2 ~ /^[0-9.]+$/ {
        us = $2; bytes = $4 * us * 1e3; flops = $5 * us * 1e3  # GB/s * us * 1e3 = bytes
        mem = bytes / 1024e9 * 1e6; cmp = flops / 13.4e12 * 1e6
        printf "%s\t%s\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\n", row, $1, us, bytes / 1e6, flops / 1e9, mem, cmp, (mem > cmp ? mem : cmp)
    }' "$log"

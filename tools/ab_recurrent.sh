#!/usr/bin/env bash
# Side-by-side timing of the token-recurrent kernel (decode and short
# prompts) against a variant file in its place, in one device call: a copy of
# the tree gets VARIANT as kernels/deltanet_recurrent.cpp, both are built, the
# tree's recurrent and library tests run, then decode (T = 1, B = 1 and 128,
# twice each, alternating) and the short-prompt rows of tools/crossover.sh
# (T = 2..192, B = 1 and 4, tree and variant back to back per shape).
# usage: tools/ab_recurrent.sh OUTDIR VARIANT
# OUTDIR/ab_crossover.tsv: T, B, recurrent median us of the tree and of the
# variant, two_launch (tree), tree / variant.
set -uo pipefail
out=$1 variant=$2 tree=$PWD alt=${TMPDIR:-/tmp}/ab_recurrent.$$
mkdir -p "$out" "$alt" && cp -r . "$alt/" && cp "$variant" "$alt/kernels/deltanet_recurrent.cpp"
(make BACKEND=cuda -j8 > "$out/build_tree.txt" 2>&1) &
(cd "$alt" && make BACKEND=cuda -j8 > "$out/build_variant.txt" 2>&1) &
wait
for d in "$tree:tree" "$alt:variant"; do
    (cd "${d%%:*}" && ./build/cuda/test_deltanet --test 'recurrent_*' --test 'gdn_*' --test 'auto_*' \
        > "$out/${d##*:}.check.txt" 2>&1)
    echo "${d##*:} check: $(tail -1 "$out/${d##*:}.check.txt")"
done
for d in "$tree:tree" "$alt:variant" "$tree:tree" "$alt:variant"; do
    (cd "${d%%:*}" && ./build/cuda/test_deltanet --bench --reps 20 --test compare_T1_B1 --test compare_T1_B128 \
        >> "$out/${d##*:}.decode.txt" 2>&1)
done
median() { awk -v v="$1" '$1 == v { print $2 }' "$2"; }
printf 'T\tB\ttree_recurrent_us\tvariant_recurrent_us\ttwo_launch_us\ttree_over_variant\n' > "$out/ab_crossover.tsv"
for B in 1 4; do
    for T in 2 8 16 32 64 96 128 160 192; do
        for d in "$tree:tree" "$alt:variant"; do
            (cd "${d%%:*}" && ./build/cuda/test_deltanet --bench --reps 10 --test compare_T64_B1 --set T="$T" \
                --set n_seqs="$B" > "$out/raw_${d##*:}.txt" 2>&1)
        done
        a=$(median recurrent "$out/raw_tree.txt") b=$(median recurrent "$out/raw_variant.txt")
        printf '%d\t%d\t%s\t%s\t%s\t%s\n' "$T" "$B" "$a" "$b" "$(median two_launch "$out/raw_tree.txt")" \
            "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b }')" >> "$out/ab_crossover.tsv"
    done
done
rm -rf "$alt"
cat "$out/ab_crossover.tsv"

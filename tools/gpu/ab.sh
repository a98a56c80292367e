#!/usr/bin/env bash
# Side-by-side timing of the working tree's kernels and of variants, in one
# call on one machine: each VARIANT is a copy of the tree (build directory
# included, so only what changed recompiles) with one source replaced, given
# as kernels/NAME.cpp=FILE, or another checkout of the repository given as a
# directory (built where it is; e.g. the commit before a change that spans
# files, from git archive). Every build is checked first (the CHECK
# tests), then benched in PASSES rounds, builds alternating inside a round (their
# order reversed every other round),
# each SET of --set overrides on every TEST. Times are read from the
# harness's TSV log (--log: its bench:<label> rows, median_us and min_us),
# never from the console.
#
# usage: tools/gpu/ab.sh [options] OUTDIR [kernels/NAME.cpp=FILE | DIR ...]
#   --test NAME     a test to bench (repeatable; default compare_T64_B1)
#   --check GLOB    a test to run before timing (repeatable; default none)
#   --set "A=x B=y" one shape: --set overrides for every --test (repeatable;
#                   default: the tests' own shapes)
#   --reps N        --reps of each bench run (default 10)
#   --passes P      rounds over all builds (default 2)
#   --backend B     build and run BACKEND=B (default cuda; cpu runs the same
#                   steps on the executor, for trying the script itself)
# OUTDIR/ab.tsv: one row per build, pass, set, test and bench label (median and
# min us); OUTDIR/ab_summary.tsv: per set, test and label the median over the
# passes of each build and tree / build (> 1: the variant is faster).
set -euo pipefail
tests=() checks=() sets=() reps=10 passes=2 backend=cuda
while [ $# -gt 0 ]; do
    case "$1" in
        --test) tests+=("$2"); shift 2 ;;
        --check) checks+=("$2"); shift 2 ;;
        --set) sets+=("$2"); shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --passes) passes=$2; shift 2 ;;
        --backend) backend=$2; shift 2 ;;
        -*) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || { sed -n '14,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
[ ${#tests[@]} -gt 0 ] || tests=(compare_T64_B1)
[ ${#sets[@]} -gt 0 ] || sets=("")
tree=$PWD work=${TMPDIR:-/tmp}/ab.$$
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/logs" "$work"

# builds: name -> directory
names=(tree) dirs=("$tree")
for spec in "$@"; do
    if [ -d "$spec" ]; then
        names+=("$(basename "$(cd "$spec" && pwd)")") dirs+=("$(cd "$spec" && pwd)")
        continue
    fi
    target=${spec%%=*} file=${spec#*=}
    if [ "$target" = "$spec" ] || [ ! -f "$tree/$target" ] || [ ! -f "$file" ]; then
        echo "ab.sh: want kernels/NAME.cpp=FILE with both files present, or a directory, got '$spec'" >&2
        exit 2
    fi
    name=$(basename "$file" .cpp) dir=$work/$name
    cp -a "$tree/." "$dir/"
    cp "$file" "$dir/$target"
    names+=("$name") dirs+=("$dir")
done
for i in "${!names[@]}"; do
    (cd "${dirs[$i]}" && make BACKEND="$backend" -j"$(nproc)" > "$out/build_${names[$i]}.txt" 2>&1) ||
        { echo "ab.sh: ${names[$i]} did not build ($out/build_${names[$i]}.txt)" >&2; exit 1; }
done
bin=build/$backend/test_deltanet
if [ ${#checks[@]} -gt 0 ]; then
    check_args=()
    for c in "${checks[@]}"; do check_args+=(--test "$c"); done
    for i in "${!names[@]}"; do
        (cd "${dirs[$i]}" && "./$bin" "${check_args[@]}" > "$out/check_${names[$i]}.txt" 2>&1) || true
        echo "${names[$i]} check: $(tail -1 "$out/check_${names[$i]}.txt")"
    done
fi

test_args=()
for t in "${tests[@]}"; do test_args+=(--test "$t"); done
printf 'build\tpass\tset\ttest\tlabel\tmedian_us\tmin_us\n' > "$out/ab.tsv"
for pass in $(seq 1 "$passes"); do
    for s in "${!sets[@]}"; do
        set_args=()
        for kv in ${sets[$s]}; do set_args+=(--set "$kv"); done
        # odd passes in the given order, even passes reversed: no build always runs first
        order=("${!names[@]}")
        if ((pass % 2 == 0)); then order=(); for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("$i"); done; fi
        for i in "${order[@]}"; do
            log=$out/logs/${names[$i]}_p${pass}_s$s.tsv
            (cd "${dirs[$i]}" && "./$bin" --bench --reps "$reps" "${test_args[@]}" "${set_args[@]}" --log "$log" \
                > /dev/null 2>&1) || true
            # the log's columns by name (its column line); bench rows: variant bench:<label>
            awk -F'\t' -v b="${names[$i]}" -v p="$pass" -v s="${sets[$s]:-default}" \
                '/^#/ { next } !("median_us" in col) { for (c = 1; c <= NF; c++) col[$c] = c; next }
                 $3 ~ /^bench:/ { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b, p, s, $2, substr($3, 7),
                                  $col["median_us"], $col["min_us"] }' \
                "$log" >> "$out/ab.tsv"
        done
    done
done

# per (set, test, label): median over passes per build, then tree / build
awk -F'\t' -v builds="${names[*]}" '
    NR > 1 { k = $3 "\t" $4 "\t" $5; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
             n[k, $1]++; v[k, $1, n[k, $1]] = $6 }
    function med(k, b,   m, i, j, t, a) {
        m = n[k, b]; if (!m) return ""
        for (i = 1; i <= m; i++) a[i] = v[k, b, i]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    END {
        nb = split(builds, bs, " ")
        printf "set\ttest\tlabel"; for (i = 1; i <= nb; i++) printf "\t%s_us", bs[i]
        for (i = 2; i <= nb; i++) printf "\ttree_over_%s", bs[i]; printf "\n"
        for (x = 1; x <= nk; x++) {
            k = keys[x]; printf "%s", k
            for (i = 1; i <= nb; i++) { m[i] = med(k, bs[i]); printf "\t%.1f", m[i] }
            for (i = 2; i <= nb; i++) printf "\t%s", (m[i] > 0 ? sprintf("%.3f", m[1] / m[i]) : "")
            printf "\n"
        }
    }' "$out/ab.tsv" > "$out/ab_summary.tsv"
if command -v column > /dev/null; then column -t -s "$(printf '\t')" "$out/ab_summary.tsv"; else cat "$out/ab_summary.tsv"; fi

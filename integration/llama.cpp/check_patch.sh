#!/usr/bin/env bash
# Does ggml-kdn.patch apply where users are? `git apply --check` of the patch to each tree given -- a ggml checkout,
# or a llama.cpp or whisper.cpp one, which keep ggml under ggml/ (--directory=ggml) -- and to variants derived from
# each at run time:
#   + chunked include   src/ggml-cuda/gated_delta_net.cu with the line the chunked Gated Delta-Net pull request
#                       adds after its first line (#include "chunk_gated_delta_net.cuh"), unless the tree has it
#   as whisper.cpp      a ggml checkout's files under ggml/, as whisper.cpp keeps them (--directory=ggml)
# The variants are copies of the files the patch changes, in a temporary folder: no tree given is written to.
#
#   integration/llama.cpp/check_patch.sh [--patch FILE] [--report FILE] TREE...
#
# One line per tree or variant: the tree, its layout, then "applied", "already applied" (the patch is in it), or
# "FAILED" with the hunk git apply stopped at (the file, which of its hunks, the hunk's @@ line); a tree that has the
# patch gets no variants. For a tree that elides the recurrent-state gather (unsupported_trees.sh) the line adds
# that apply_and_build.sh refuses it (exit 3).
# --patch: another patch to check (default ggml-kdn.patch beside this script); --report: the lines also go to FILE,
# after a header naming the command, this tree's commit and the patch's sha256.
# Exit status: 0 it applies to every tree and variant, 1 it does not to one, 2 bad usage.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=unsupported_trees.sh
. "$here/unsupported_trees.sh"
patch_file=$here/ggml-kdn.patch report="" trees=() args="$*"
usage() { sed -n '/^#   integration/p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --patch)  patch_file=${2:?}; shift 2 ;;
        --report) report=${2:?}; shift 2 ;;
        -h|--help) usage ;;
        -*) echo "check_patch.sh: unknown option $1" >&2; usage ;;
        *)  trees+=("$1"); shift ;;
    esac
done
[ ${#trees[@]} -gt 0 ] || usage
[ -f "$patch_file" ] || { echo "check_patch.sh: no patch $patch_file" >&2; exit 2; }
patch_file=$(cd "$(dirname "$patch_file")" && pwd)/$(basename "$patch_file")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
changed=$(awk '/^--- a\// { sub(/^--- a\//, ""); print }' "$patch_file")
chunked_include='#include "chunk_gated_delta_net.cuh"'
gdn_cu=src/ggml-cuda/gated_delta_net.cu

# hunk_at FILE LINE: which of the patch's hunks of FILE starts at old line LINE (git apply names that line)
hunk_at() {
    awk -v f="$1" -v l="$2" '
        /^diff --git / { cur = ($3 == "a/" f); next }
        cur && /^@@ / { n++; split($2, a, ","); if (substr(a[1], 2) == l) { i = n; h = $1 " " $2 " " $3 " " $4 } }
        END { if (i) printf "hunk %d of %d, %s", i, n, h; else printf "the hunk at line %s", l }' "$patch_file"
}

# check_tree LABEL DIR: one line for DIR (a ggml tree, or one with ggml/ under it); status 1 when it does not apply
check_tree() {
    local label=$1 dir=$2 ggml=$2 layout=ggml opt=() out rc result failed path elision
    if [ ! -d "$dir/src/ggml-cuda" ]; then
        ggml=$dir/ggml layout="ggml/ (llama.cpp, whisper.cpp)" opt=(--directory=ggml)
    fi
    # git apply inside another repository's subfolder skips the files outside it: look no higher than DIR
    out=$(cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply --check -v "${opt[@]}" "$patch_file" 2>&1)
    rc=$?
    if [ $rc = 0 ] && grep -q '^Skipped patch' <<< "$out"; then
        result="FAILED: git apply skipped $(grep -c '^Skipped patch' <<< "$out") files"; rc=1
    elif [ $rc = 0 ]; then
        result=applied
    elif (cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply --check -R "${opt[@]}" "$patch_file") \
            > /dev/null 2>&1; then
        result="already applied"; rc=0
    elif failed=$(sed -n 's/^error: patch failed: \(.*\):\([0-9]*\)$/\1 \2/p' <<< "$out" | head -n 1) &&
            [ -n "$failed" ]; then
        path=${failed% *}; path=${path#ggml/}
        result="FAILED: $path, $(hunk_at "$path" "${failed##* }")"
    else
        result="FAILED: $(grep -m 1 '^error' <<< "$out")"
    fi
    if elision=$(kdn_state_gather_elision "$ggml"); then
        result="$result; apply_and_build.sh refuses it (exit 3): ${elision#"$ggml"/} names $kdn_elision_symbol"
    fi
    printf '%s\t%s\t%s\n' "$label" "$layout" "$result"
    last_result=$result
    [ $rc = 0 ]
}

# copy_changed FROM TO: the files of ggml tree FROM that the patch changes, at their places under TO
copy_changed() {
    local f
    for f in $changed; do
        [ -f "$1/$f" ] || continue
        mkdir -p "$(dirname "$2/$f")" && cp "$1/$f" "$2/$f"
    done
}

fails=0 n=0
{
    echo "# check_patch.sh: git apply --check of $(basename "$patch_file") to each tree and its derived variants"
    echo "command: integration/llama.cpp/check_patch.sh $args"
    echo "deltanet-gfx906: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '(not a checkout)')"
    echo "patch: sha256 $(sha256sum < "$patch_file" | cut -c1-16)"
    printf 'tree\tlayout\tresult\n'
    for t in "${trees[@]}"; do
        [ -d "$t/src/ggml-cuda" ] || [ -d "$t/ggml/src/ggml-cuda" ] ||
            { printf '%s\t-\tFAILED: neither a ggml tree nor one with ggml/ under it\n' "$t"; fails=$((fails + 1)); continue; }
        dir=$(cd "$t" && pwd) ggml=$dir
        [ -d "$dir/src/ggml-cuda" ] || ggml=$dir/ggml
        check_tree "$t" "$dir" || fails=$((fails + 1))
        n=$((n + 1))
        # variants of a patched tree would be half patched (the new files are not copied)
        [ "${last_result%%;*}" = "already applied" ] && continue
        if ! grep -qxF "$chunked_include" "$ggml/$gdn_cu" 2> /dev/null; then
            v=$tmp/$n-chunked && copy_changed "$ggml" "$v"
            sed -i "1a $chunked_include" "$v/$gdn_cu" 2> /dev/null
            check_tree "$t + chunked include" "$v" || fails=$((fails + 1))
        fi
        if [ "$ggml" = "$dir" ]; then
            v=$tmp/$n-whisper && copy_changed "$ggml" "$v/ggml"
            check_tree "$t as whisper.cpp" "$v" || fails=$((fails + 1))
        fi
    done
    echo "$fails failed"
} | tee "$tmp/report"
[ -z "$report" ] || cp "$tmp/report" "$report"
[ "$(tail -n 1 "$tmp/report")" = "0 failed" ]

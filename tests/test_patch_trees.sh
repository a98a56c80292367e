#!/bin/sh
# ggml-kdn.patch against trees made here from its own context, offline (make check):
#   - a ggml tree whose changed files hold exactly the lines the patch's hunks read, at their line numbers (filler
#     between): check_patch.sh must find it applying there, to the variant with the chunked kernel's include after
#     line 1 of gated_delta_net.cu, and in whisper.cpp's layout (ggml/ under the tree). A hunk that reads a line the
#     variant moves fails there;
#   - check_patch.sh reports such a hunk: a patch that adds a line after line 1 is FAILED on that variant, by name;
#   - apply_and_build.sh --apply-only refuses (exit 3, the symbol named, nothing written) the tree with the
#     recurrent-state gather elision's predicate declared, in both layouts, and applies the patch to the plain tree.
#   sh tests/test_patch_trees.sh [PATCH]   (default integration/llama.cpp/ggml-kdn.patch)
set -u
here=integration/llama.cpp
patch=${1:-$here/ggml-kdn.patch}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
fail() { echo "patch trees: FAIL $*"; fails=$((fails + 1)); }
check() { checks=$((checks + 1)); }

# make_tree PATCH DIR: every file the patch changes, its hunks' old lines at their line numbers, filler between
make_tree() {
    awk -v root="$2" '
        function fill(to) { while (n < to) { n++; print "// line " n " of " f > out } }
        /^diff --git / { if (out) { fill(n + 3); close(out) } out = ""; body = 0; next }
        /^--- a\// { f = substr($0, 7); out = root "/" f; n = 0
                     d = out; sub(/\/[^\/]*$/, "", d); system("mkdir -p \"" d "\""); next }
        /^@@ / && out { split($2, a, ","); fill(substr(a[1], 2) - 1); body = 1; next }
        body && out && /^[ -]/ { n++; print substr($0, 2) > out }
        END { if (out) fill(n + 3) }' "$1"
}
make_tree "$patch" "$tmp/ggml"
# the op form apply_and_build.sh asks for (a header the patch does not change)
echo 'struct ggml_cuda_gated_delta_net_fused_cache;' > "$tmp/ggml/src/ggml-cuda/gated_delta_net.cuh"
gdn=src/ggml-cuda/gated_delta_net.cu

# --- check_patch.sh: the tree and its two variants -------------------------------------------------------------
check
bash $here/check_patch.sh --patch "$patch" "$tmp/ggml" > "$tmp/out" 2>&1 || fail "check_patch.sh: $(cat "$tmp/out")"
for v in "" " + chunked include" " as whisper.cpp"; do
    check
    grep -q "^$tmp/ggml$v	.*	applied$" "$tmp/out" || fail "the patch does not apply to the tree$v: $(grep "^$tmp/ggml$v	" "$tmp/out")"
done

# --- check_patch.sh names the hunk that reads a line the variant moves -------------------------------------------
mkdir -p "$tmp/a/$(dirname $gdn)" "$tmp/b/$(dirname $gdn)"
cp "$tmp/ggml/$gdn" "$tmp/a/$gdn" && sed '1a #include "top_of_file.cuh"' "$tmp/a/$gdn" > "$tmp/b/$gdn"
(cd "$tmp" && diff -u --label "a/$gdn" --label "b/$gdn" "a/$gdn" "b/$gdn" |
    { echo "diff --git a/$gdn b/$gdn"; cat; }) > "$tmp/top.patch"
check
bash $here/check_patch.sh --patch "$tmp/top.patch" "$tmp/ggml" > "$tmp/out" 2>&1
[ $? = 1 ] && grep -q "^$tmp/ggml + chunked include	.*	FAILED: $gdn, hunk 1 of 1, @@ -1," "$tmp/out" &&
    grep -q "^$tmp/ggml	.*	applied$" "$tmp/out" ||
    fail "check_patch.sh passed a hunk at the top of the file on the chunked variant: $(cat "$tmp/out")"

# --- apply_and_build.sh: the elision refused in both layouts, the plain tree patched ---------------------------
cp -r "$tmp/ggml" "$tmp/elided" && mkdir -p "$tmp/llama" && cp -r "$tmp/elided" "$tmp/llama/ggml"
for t in elided llama/ggml; do
    echo 'bool ggml_cuda_gdn_state_gather_elidable(const ggml_cgraph * cgraph, const ggml_tensor * gr);' \
        >> "$tmp/$t/src/ggml-cuda/gated_delta_net.cuh"
done
for t in elided llama; do
    check
    bash $here/apply_and_build.sh --apply-only "$tmp/$t" > "$tmp/out" 2>&1
    rc=$?
    [ $rc = 3 ] && grep -q 'ggml_cuda_gdn_state_gather_elidable' "$tmp/out" ||
        fail "apply_and_build.sh on the elided tree ($t): exit $rc: $(cat "$tmp/out")"
    [ -z "$(find "$tmp/$t" -name 'gated_delta_net_kdn*')" ] || fail "apply_and_build.sh wrote to the refused tree $t"
done
check
bash $here/check_patch.sh --patch "$patch" "$tmp/elided" > "$tmp/out" 2>&1
grep -q "^$tmp/elided	.*	applied; apply_and_build.sh refuses it (exit 3)" "$tmp/out" ||
    fail "check_patch.sh does not say the elided tree is refused: $(cat "$tmp/out")"
if [ "$patch" = "$here/ggml-kdn.patch" ]; then
    check
    bash $here/apply_and_build.sh --apply-only "$tmp/ggml" > "$tmp/out" 2>&1 && [ -f "$tmp/ggml/src/ggml-cuda/gated_delta_net_kdn.cu" ] &&
        grep -q ggml_cuda_gated_delta_net_kdn "$tmp/ggml/$gdn" || fail "apply_and_build.sh on the plain tree: $(cat "$tmp/out")"
fi

[ "$fails" = 0 ] || { echo "patch trees: $fails of $checks checks failed"; exit 1; }
echo "patch trees: $checks checks passed (the patch on a tree of its own context, the chunked include, whisper.cpp's layout; the state-gather elision refused)"

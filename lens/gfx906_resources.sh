#!/bin/sh
# Resource use of every kernel as the gfx906 compiler reports it
# (-Rpass-analysis=kernel-resource-usage): VGPRs, SGPRs, scratch, static LDS,
# spills and the waves per SIMD they allow. Prints a Markdown table.
#
#   lens/gfx906_resources.sh [--check] FILE.cpp...
#
# --check: exit 1 when a kernel exceeds gfx906's 64 KB of LDS, uses scratch
# memory or spills VGPRs (every kernel, the ladder's too). SGPR
# spills are shown but allowed: the compiler parks them in lanes of a VGPR
# (v_writelane/v_readlane), which costs instructions, not memory. Dynamic
# LDS is sized at launch and not seen here: the launchers of kernels that use
# it check the 64 KB themselves.
set -eu
HIPCC=${HIPCC:-hipcc}
GPU_TARGET=${GPU_TARGET:-gfx906}
check=0
[ "${1:-}" = "--check" ] && { check=1; shift; }
demangle() { if command -v c++filt >/dev/null 2>&1; then c++filt; else cat; fi; }

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for f in "$@"; do
    "$HIPCC" -x hip --offload-arch="$GPU_TARGET" -O3 -DKDN_BACKEND_HIP -Rpass-analysis=kernel-resource-usage \
        -c "$f" -o /dev/null 2>&1 |
    awk -v file="$f" '
        # every remark line ends in "VALUE [-Rpass-analysis=kernel-resource-usage]"
        /remark: Function Name:/ { name = $(NF-1) }
        # clang 15 (ROCm 5) prints "SGPRs:", clang 21 (ROCm 6) "TotalSGPRs:"
        /remark: +(Total)?SGPRs:/ { sgpr = $(NF-1) }
        /remark: +VGPRs:/        { vgpr = $(NF-1) }
        /ScratchSize/            { scratch = $(NF-1) }
        /Occupancy/              { occ = $(NF-1) }
        /SGPRs Spill:/           { sspill = $(NF-1) }
        /VGPRs Spill:/           { vspill = $(NF-1) }
        /LDS Size/               { print file "\t" name "\t" vgpr "\t" sgpr "\t" scratch "\t" vspill "/" sspill "\t" $(NF-1) "\t" occ }' >> "$rows"
done

echo "| file | kernel | VGPRs | SGPRs | scratch B/lane | VGPR/SGPR spills | static LDS B | waves/SIMD |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
status=0
tab=$(printf '\t')
while IFS="$tab" read -r file kernel vgpr sgpr scratch spills lds occ; do
    pretty=$(echo "$kernel" | demangle | sed 's/(.*//')
    echo "| $file | \`$pretty\` | $vgpr | $sgpr | $scratch | $spills | $lds | $occ |"
    if [ "$lds" -gt 65536 ]; then
        echo "gfx906: $pretty uses $lds B of LDS (> 64 KB)" >&2
        status=1
    fi
    if [ "$scratch" != 0 ] || [ "${spills%%/*}" != 0 ]; then
        echo "gfx906: $pretty spills (scratch $scratch B/lane, spills $spills)" >&2
        status=1
    fi
done < "$rows"
[ "$check" = 1 ] && exit "$status"
exit 0

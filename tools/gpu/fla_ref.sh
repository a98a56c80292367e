#!/usr/bin/env bash
# flash-linear-attention's chunked Gated Delta-Net on the device, both dot
# precisions (tools/gpu/fla_ref.py says how): FLA is a checkout of
# fla-org/flash-linear-attention (run from there, never kept here); EINOPS a
# folder holding the einops package where the device's Python lacks it
# (Debian's python3-einops unpacked will do) or empty. Shapes as T:B
# (default: the prefill rows of results/h100-past-tables.md 4096:1 4096:4 16384:1). Prints TSV.
# usage: tools/gpu/fla_ref.sh FLA EINOPS [T:B ...]   (CUDA machine with PyTorch and Triton)
set -euo pipefail
[ $# -ge 2 ] || { sed -n '8p' "$0" | sed 's/^# //'; exit 2; }
fla=$(cd "$1" && pwd) einops=$2; shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shapes=("$@"); [ ${#shapes[@]} -gt 0 ] || shapes=(4096:1 4096:4 16384:1)
export PYTHONPATH="$fla${einops:+:$einops}${PYTHONPATH:+:$PYTHONPATH}"
TRITON_F32_DEFAULT=ieee python3 "$here/fla_ref.py" fla_fp32 "${shapes[@]}"
python3 "$here/fla_ref.py" fla_tf32 "${shapes[@]}" | tail -n +2

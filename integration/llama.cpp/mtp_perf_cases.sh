#!/usr/bin/env bash
# Adds MTP verify perf cases to a test-backend-ops.cpp (check_on_gpu.sh runs it before the build): a speculative
# verify call of T = 2, 3, 4 tokens keeping K = T state snapshots, with 32 and 48 value heads of 128 on 16 key
# heads (q and k as qwen35/qwen35moe graphs hand them to the op), at 1 and 4 sequences -- 12 cases, inserted after
# the last GATED_DELTA_NET case of make_test_cases_perf(). A file that has them is left as it is.
#
#   integration/llama.cpp/mtp_perf_cases.sh [--print] TEST_BACKEND_OPS_CPP
#
# --print: the lines that would be inserted (the file need not exist yet). Exit status: 0 added (or already there), 1 the
# file has no GATED_DELTA_NET case in make_test_cases_perf(), 2 bad usage.
set -euo pipefail
print=0
[ "${1:-}" = --print ] && { print=1; shift; }
[ $# = 1 ] && { [ "$print" = 1 ] || [ -f "$1" ]; } || { sed -n '/^#   integration/p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2; exit 2; }
file=$1
marker='// MTP verify calls (deltanet-gfx906 mtp_perf_cases.sh): T tokens, K = T snapshots'

cases() { # the lines, indented by $1
    local hv b t
    echo "$1$marker"
    for hv in 32 48; do
        for b in 1 4; do
            for t in 2 3 4; do
                echo "${1}test_cases.emplace_back(new test_gated_delta_net(GGML_TYPE_F32, 16, 128, $t, $b, $((hv / 16)), false, false, /*K=*/$t));"
            done
        done
    done
}

if [ "$print" = 1 ]; then cases "    "; exit 0; fi
grep -qF "$marker" "$file" && { echo "mtp_perf_cases.sh: $file has the MTP verify cases"; exit 0; }
# the last test_gated_delta_net line between make_test_cases_perf() and the end of that function
last=$(awk '/make_test_cases_perf\(\) *\{/ { in_perf = 1 } in_perf && /new test_gated_delta_net\(/ { last = NR }
            in_perf && /^}/ { exit } END { print last + 0 }' "$file")
[ "$last" -gt 0 ] || { echo "mtp_perf_cases.sh: no GATED_DELTA_NET case in make_test_cases_perf() of $file" >&2; exit 1; }
indent=$(sed -n "${last}s/^\([[:space:]]*\).*/\1/p" "$file")
cases "$indent" > "$file.mtp"
sed -i "${last}r $file.mtp" "$file"
rm -f "$file.mtp"
echo "mtp_perf_cases.sh: $(($(cases "" | wc -l) - 1)) MTP verify perf cases added to $file after its line $last"

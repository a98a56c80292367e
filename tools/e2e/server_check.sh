#!/usr/bin/env bash
# libkdn inside llama-server with parallel slots, end to end on a synthetic model: builds libkdn and the patched
# llama.cpp's llama-server (integration/llama.cpp; no web UI, nothing fetched), writes the qwen35moe model of
# tools/e2e/synth_gguf.py with a vocabulary the server can print (--tokenizer spm), then runs tools/e2e/server_check.py
# with ggml's kernel (GGML_KDN_DISABLE=1; its batching noise sets the bounds) and with libkdn against those bounds:
# concurrent requests on 4 slots, the same prompts again on slots that held another prompt, each prompt alone on a
# fresh server, and the control (a carried context, which must be seen). Every server's log must show the
# implementation it ran (libkdn ran the op and refused no call, or libkdn never ran).
#
#   tools/e2e/server_check.sh [options] LLAMA_CPP_DIR OUTDIR
#     --backend cuda|hip   GPU backend (default cuda)
#     --target T           cuda: CMAKE_CUDA_ARCHITECTURES (default 90); hip: GPU target (default gfx906)
#     --work DIR           model and libkdn prefix (default /tmp/kdn-e2e)
#     --build-dir DIR      llama.cpp build folder (default LLAMA_CPP_DIR/build-e2e-BACKEND)
#     --steps LIST         comma list of build,models,check (default all of them)
#     --lengths LIST       prompt lengths in tokens (default server_check.py's: 17,300,900,2000)
# OUTDIR gets log.txt (every command and its stderr), env.txt, server_check.tsv (one row per implementation x
# prompt x compared phase, with the distances, bounds and verdict), check-ggml.txt and check-kdn.txt (each run's
# summary), responses-ggml.json and responses-kdn.json (every answer), servers/ (every server's log).
# Exit status: 0 both implementations passed, 1 a step or a check failed (log.txt says which), 2 bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=e2e_common.sh
. "$here/e2e_common.sh"
steps=build,models,check lengths=""

while [ $# -gt 0 ]; do
    case "$1" in
        --backend|--target|--work|--build-dir|--steps) e2e_option "$1" "${2:?}"; shift 2 ;;
        --lengths)  lengths=${2:?}; shift 2 ;;
        -h|--help)  e2e_usage "${BASH_SOURCE[0]}" ;;
        -*)         echo "server_check.sh: unknown option $1" >&2; e2e_usage "${BASH_SOURCE[0]}" ;;
        *)          break ;;
    esac
done
[ $# -eq 2 ] || e2e_usage "${BASH_SOURCE[0]}"
e2e_setup "$1" "$2"
model=$work/qwen35moe-spm.gguf

# check IMPL [ARGS]: server_check.py on IMPL's kernel; its status, after every server log passed the guard
check() {
    local impl=$1 rc f
    shift
    step "server_check.py with $impl (GGML_KDN_DISABLE=$(disable_of "$impl"))"
    SECONDS=0
    GGML_KDN_DISABLE=$(disable_of "$impl") python3 "$here/server_check.py" --server "$bin/llama-server" \
        --model "$model" --label "$impl" --responses "$out/responses-$impl.json" --tsv "$out/server_check.tsv" \
        --logs "$out/servers" ${lengths:+--lengths "$lengths"} "$@" > "$out/check-$impl.txt" 2>&1
    rc=$?
    cat "$out/check-$impl.txt" >> "$log"
    [ "$rc" = 2 ] && die "$impl: no verdict (a server did not start or answer)"
    for f in "$out/servers/$impl"-*.log; do e2e_guard_log "$impl" "$f" "$(basename "$f")"; done
    step "$impl: exit $rc in ${SECONDS}s: $(tail -1 "$out/check-$impl.txt")"
    return "$rc"
}

e2e_env_txt "backend $backend target $target lengths ${lengths:-default}"
if has_step build; then
    e2e_build llama-server -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF
fi
[ -x "$bin/llama-server" ] || die "no llama-server in $bin (run --steps build)"
if has_step models; then
    step "model (qwen35moe, SentencePiece-style vocabulary) -> $model"
    e2e_model "$model" --arch qwen35moe --tokenizer spm
fi
[ -f "$model" ] || die "no model $model (run --steps models)"
if has_step check; then
    rm -rf "$out/servers" "$out/server_check.tsv"
    mkdir -p "$out/servers"
    check ggml; ggml_rc=$?
    check kdn --yardstick "$out/responses-ggml.json"; kdn_rc=$?
    [ "$ggml_rc" = 0 ] && [ "$kdn_rc" = 0 ] || die "a check failed: ggml exit $ggml_rc, libkdn exit $kdn_rc" \
        "(server_check.tsv, check-*.txt)"
fi
step "done"

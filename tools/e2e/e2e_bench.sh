#!/usr/bin/env bash
# libkdn inside llama.cpp, end to end, on synthetic models: builds libkdn and a patched llama.cpp
# (integration/llama.cpp), writes GGUFs with random weights of the real linear-attention shape (tools/e2e/synth_gguf.py),
# and measures, with libkdn and with ggml's own kernel in the same binaries (GGML_KDN_DISABLE=1):
#   bench  llama-bench pp512/2048/8192 at ubatch 512 and 2048 and tg128, rounds of one run of each implementation
#          back to back (order alternating), added until every kdn/ggml ratio's 95 % interval is within
#          +-HALF_WIDTH (or --rounds-max)                                                    -> bench.jsonl, bench.tsv
#   op     the op's own time inside the model graph: CUDA, Nsight Compute's gpu__time_duration of the op's kernels
#          during llama-bench runs; HIP (or no ncu), test-backend-ops perf on the op alone (a fallback: the op
#          outside the model)                                                                   -> op.txt, op.tsv
#   kl     full-precision logits of one prompt (tools/e2e/e2e_logits.c) at ubatch 512, 2048 and 1 (one token per
#          call: the decode path), KL divergence (tools/e2e/e2e_kl.c) of libkdn against ggml's kernel, beside the
#          yardsticks: ggml against itself (a rerun, other ubatch sizes) and ggml on the same model with every
#          gate 1 % off                                                                         -> kl.tsv
#
#   tools/e2e/e2e_bench.sh [options] LLAMA_CPP_DIR OUTDIR
#     --backend cuda|hip   GPU backend (default cuda)
#     --target T           cuda: CMAKE_CUDA_ARCHITECTURES (default 90); hip: GPU target (default gfx906)
#     --work DIR           models, logit dumps, libkdn prefix (default /tmp/kdn-e2e)
#     --build-dir DIR      llama.cpp build folder (default LLAMA_CPP_DIR/build-e2e-BACKEND)
#     --steps LIST         comma list of build,models,bench,op,kl (default all of them)
#     --arch A             qwen35moe (default; q/k reach the op with 16 heads, libkdn's tiled head map) or qwen3next
#     --smoke              every step at small sizes, one pass (checks the pipeline, measures nothing)
#     --rounds-min N, --rounds-max N, --half-width X   (default 4, 12, 0.03)
#     --bench-seconds S    add no round once the bench step has run S seconds (after --rounds-min; default no limit)
# OUTDIR gets log.txt (every command and its stderr), env.txt, and the files named above.
# Exit status: 0 every step ran, 1 a step failed (log.txt says which), 2 bad usage.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=e2e_common.sh
. "$here/e2e_common.sh"
steps=build,models,bench,op,kl arch=qwen35moe smoke=0
rounds_min="" rounds_max="" half_width=0.03 bench_seconds=""

while [ $# -gt 0 ]; do
    case "$1" in
        --backend|--target|--work|--build-dir|--steps) e2e_option "$1" "${2:?}"; shift 2 ;;
        --arch)       arch=${2:?}; shift 2 ;;
        --smoke)      smoke=1; shift ;;
        --rounds-min) rounds_min=${2:?}; shift 2 ;;
        --rounds-max) rounds_max=${2:?}; shift 2 ;;
        --half-width) half_width=${2:?}; shift 2 ;;
        --bench-seconds) bench_seconds=${2:?}; shift 2 ;;
        -h|--help)    e2e_usage "${BASH_SOURCE[0]}" ;;
        -*)           echo "e2e_bench.sh: unknown option $1" >&2; e2e_usage "${BASH_SOURCE[0]}" ;;
        *)            break ;;
    esac
done
[ $# -eq 2 ] || e2e_usage "${BASH_SOURCE[0]}"
e2e_setup "$1" "$2"
case "$arch" in qwen35moe|qwen3next) ;; *) echo "e2e_bench.sh: --arch must be qwen35moe or qwen3next" >&2; exit 2 ;; esac

# Sizes: the full run, or a smoke pass that only checks that every step works.
if [ "$smoke" = 1 ]; then
    prompts=512 gens=16 ubatches=512 reps=1 kl_tokens=256 kl_ubatches="64 256"
    rounds_min=${rounds_min:-2} rounds_max=${rounds_max:-2} op_configs=("512 0 512" "0 16 512")
else
    prompts=512,2048,8192 gens=128 ubatches=512,2048 reps=3 kl_tokens=2048 kl_ubatches="512 2048"
    rounds_min=${rounds_min:-4} rounds_max=${rounds_max:-12} op_configs=("8192 0 512" "8192 0 2048" "0 128 512")
fi
model=$work/$arch.gguf
model_gates=$work/$arch-gates101.gguf
# the op's kernels: ggml's, and libkdn's product kernels (recurrent, chunked, strided gather)
op_kernels='gated_delta_net_cuda|kernel_deltanet|kernel_chunked|kernel_gather_strided'

stats() { python3 "$root/tools/e2e/e2e_stats.py" "$@"; }

do_build() {
    e2e_build "llama-bench test-backend-ops" -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    ${CC:-cc} -std=c11 -O2 -Wall "$root/tools/e2e/e2e_logits.c" -I"$src/include" -I"$src/ggml/include" -L"$bin" \
        -Wl,-rpath,"$bin" -lllama -o "$bin/e2e_logits" >> "$log" 2>&1 &&
        ${CC:-cc} -std=c11 -O2 -Wall "$root/tools/e2e/e2e_kl.c" -lm -o "$bin/e2e_kl" >> "$log" 2>&1 ||
        die "e2e_logits / e2e_kl build"
}

do_models() {
    step "models ($arch) -> $work"
    e2e_model "$model" --arch "$arch"
    e2e_model "$model_gates" --arch "$arch" --gate-scale 1.01
}

# One llama-bench run of one implementation, its jsonl rows tagged with the round and the implementation.
bench_run() {
    local round=$1 impl=$2
    echo "### round $round $impl" >> "$log"
    GGML_KDN_DISABLE=$(disable_of "$impl") "$bin/llama-bench" -m "$model" -ngl 99 -fa off -p "$prompts" \
        -n "$gens" -ub "$ubatches" -r "$reps" -o jsonl 2>> "$log" |
        sed "s/^{/{\"e2e_round\": $round, \"e2e_impl\": \"$impl\", /" >> "$out/bench.jsonl"
}

do_bench() {
    step "llama-bench: -p $prompts -n $gens -ub $ubatches -r $reps," \
        "$rounds_min..$rounds_max rounds${bench_seconds:+ (rounds added for $bench_seconds s)}"
    : > "$out/bench.jsonl"
    local r order impl
    SECONDS=0
    for ((r = 0; r < rounds_max; r++)); do
        order="kdn ggml"; [ $((r % 2)) = 1 ] && order="ggml kdn"
        for impl in $order; do bench_run "$r" "$impl" || die "llama-bench ($impl, round $r)"; done
        [ $((r + 1)) -ge "$rounds_min" ] || continue
        stats bench "$out/bench.jsonl" --check "$half_width" > /dev/null && break
        if [ -n "$bench_seconds" ] && [ "$SECONDS" -ge "$bench_seconds" ]; then
            step "bench: ${SECONDS} s, no round added after $((r + 1)) (--bench-seconds $bench_seconds)"
            break
        fi
    done
    stats bench "$out/bench.jsonl" > "$out/bench.tsv" || die "bench table"
    cat "$out/bench.tsv"
}

op_profile_ncu() {
    local cfg impl p g u
    : > "$out/op.txt"
    for cfg in "${op_configs[@]}"; do
        read -r p g u <<< "$cfg"
        for impl in kdn ggml; do
            echo "### $impl $p $g $u" >> "$out/op.txt"
            echo "### ncu $impl $p $g $u" >> "$log"
            GGML_KDN_DISABLE=$(disable_of "$impl") ncu --clock-control none --metrics gpu__time_duration.sum \
                --kernel-name "regex:$op_kernels" --csv --print-units base \
                "$bin/llama-bench" -m "$model" -ngl 99 -fa off -p "$p" -n "$g" -ub "$u" -r 1 --no-warmup -o jsonl \
                >> "$out/op.txt" 2>> "$log" || die "ncu ($impl $cfg)"
        done
    done
    stats op "$out/op.txt" "$out/bench.jsonl" > "$out/op.tsv" || die "op table"
}

# Without a profiler: the op alone, at the model-shaped cases of test-backend-ops (32 heads of 128).
op_test_backend_ops() {
    local impl
    : > "$out/op.txt"
    for impl in kdn ggml; do
        echo "### $impl" >> "$out/op.txt"
        GGML_KDN_DISABLE=$(disable_of "$impl") "$bin/test-backend-ops" perf -o GATED_DELTA_NET -b "$device" \
            >> "$out/op.txt" 2>&1 || die "test-backend-ops perf ($impl)"
    done
    stats tbo "$out/op.txt" > "$out/op.tsv" || die "op table"
}

do_op() {
    if [ "$backend" = cuda ] && command -v ncu > /dev/null; then
        step "op time in the model graph (Nsight Compute: $op_kernels)"
        op_profile_ncu
    else
        step "op time: no profiler here, test-backend-ops perf on the op alone (fallback)"
        op_test_backend_ops
    fi
    cat "$out/op.tsv"
}

# dump IMPL UBATCH MODEL NAME: the prompt's logits; the run's log must show which implementation ran the op
dump() {
    local impl=$1 ub=$2 m=$3 name=$4 runlog=$work/dump.log
    GGML_KDN_DISABLE=$(disable_of "$impl") "$bin/e2e_logits" "$m" "$ub" "$kl_tokens" "$work/$name.f32" \
        > "$runlog" 2>&1
    local rc=$?
    echo "### dump $impl ub$ub $(basename "$m") -> $name (exit $rc)" >> "$log"
    [ "$rc" = 0 ] || die "e2e_logits dump $name"
    e2e_guard_log "$impl" "$runlog" "$name"
}

kl_row() {
    local label=$1 base=$2 test=$3 line
    line=$("$bin/e2e_kl" "$work/$base.f32" "$work/$test.f32") || die "kl $label: $line"
    printf '%s\t%s\n' "$label" "$line" >> "$out/kl.tsv"
}

do_kl() {
    local small large
    read -r small large <<< "$kl_ubatches"
    step "logits: $kl_tokens tokens, ubatch $small, $large and 1"
    dump ggml "$small" "$model" ggml-a
    dump ggml "$small" "$model" ggml-b
    dump kdn "$small" "$model" kdn-small
    dump ggml "$large" "$model" ggml-large
    dump kdn "$large" "$model" kdn-large
    dump ggml 1 "$model" ggml-one
    dump kdn 1 "$model" kdn-one
    dump ggml "$small" "$model_gates" ggml-gates
    printf 'comparison\tpositions\tkl_mean\tkl_p99\tkl_max\ttop1_agree\trms_dlogit\tnonfinite\n' > "$out/kl.tsv"
    kl_row "libkdn ub$small vs ggml ub$small" ggml-a kdn-small
    kl_row "libkdn ub$large vs ggml ub$large" ggml-large kdn-large
    kl_row "libkdn ub1 vs ggml ub1" ggml-one kdn-one
    kl_row "libkdn ub$large vs ggml ub$small" ggml-a kdn-large
    kl_row "yardstick: ggml ub$small rerun" ggml-a ggml-b
    kl_row "yardstick: ggml ub$large vs ggml ub$small" ggml-a ggml-large
    kl_row "yardstick: ggml ub1 vs ggml ub$small" ggml-a ggml-one
    kl_row "yardstick: ggml gates x1.01 vs ggml, ub$small" ggml-a ggml-gates
    rm -f "$work"/*.f32
    cat "$out/kl.tsv"
}

e2e_env_txt "backend $backend target $target arch $arch smoke $smoke"
has_step build && do_build
for tool in llama-bench e2e_logits e2e_kl; do [ -x "$bin/$tool" ] || die "no $tool in $bin (run --steps build)"; done
has_step models && do_models
[ -f "$model" ] || die "no model $model (run --steps models)"
has_step bench && do_bench
has_step op && do_op
has_step kl && do_kl
step "done"

# What the end-to-end scripts of tools/e2e share (sourced, not run): the options every one takes, the backend's
# names, the build of libkdn and of the patched llama.cpp, the synthetic model, the env.txt header, the log and its
# step lines, and the guard that a run's log shows the implementation it was meant to run.
#
# The sourcing script sets root (this repository), sources this file (the shared options' defaults), sets its own
# steps, parses the shared options with e2e_option, then calls e2e_setup LLAMA_CPP_DIR OUTDIR once (src, out, build,
# bin, log and the backend's names).
# shellcheck shell=bash

backend=cuda target="" work=/tmp/kdn-e2e build=""

# e2e_usage SCRIPT: its header's usage lines (from the command line to the exit statuses); exit 2
e2e_usage() {
    sed -n '/^#   tools\/e2e\//,/^# Exit status/p' "$1" | sed 's/^# \{0,1\}//'
    exit 2
}

# e2e_option NAME VALUE: one shared option (--backend, --target, --work, --build-dir, --steps); status 1 if NAME is
# not one of them
e2e_option() {
    case "$1" in
        --backend)   backend=$2 ;;
        --target)    target=$2 ;;
        --work)      work=$2 ;;
        --build-dir) build=$2 ;;
        --steps)     steps=$2 ;;
        *)           return 1 ;;
    esac
}

# e2e_setup LLAMA_CPP_DIR OUTDIR: folders, the log, the backend's device and build names; exit 2 on bad usage
e2e_setup() {
    local name
    name=$(basename "$0")
    src=$(cd "$1" && pwd) || exit 2
    out=$2
    mkdir -p "$out" "$work" || exit 2
    out=$(cd "$out" && pwd)
    build=${build:-$src/build-e2e-$backend}
    bin=$build/bin
    log=$out/log.txt
    case "$backend" in
        cuda) target=${target:-90}; device=CUDA0; arch_var=CUDA_ARCH; make_target=sm_$target
              speed_flags=(-DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF) ;;
        hip)  target=${target:-gfx906}; device=ROCm0; arch_var=GPU_TARGET; make_target=$target
              speed_flags=(-DGGML_CUDA_FA=OFF) ;;
        *)    echo "$name: --backend must be cuda or hip" >&2; exit 2 ;;
    esac
    export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

step() { echo "$(basename "$0"): $*"; echo "### $(date -u +%H:%M:%S) $*" >> "$log"; }
die() { step "FAILED: $*"; tail -25 "$log" | sed 's/^/  | /'; exit 1; }
has_step() { case ",$steps," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
disable_of() { [ "$1" = ggml ] && echo 1 || echo 0; }   # GGML_KDN_DISABLE for an implementation
# the commit of a folder that is itself a git checkout (a copy inside another checkout says so, not its host's)
checkout_of() {
    [ "$(git -C "$1" rev-parse --show-toplevel 2> /dev/null)" = "$1" ] || { echo "(not a git checkout)"; return; }
    echo "git $(git -C "$1" rev-parse HEAD), $(git -C "$1" status --porcelain | wc -l) changed files"
}

# e2e_env_txt LINE: OUTDIR/env.txt: LINE (the script's settings), both trees, the GPU and the toolchains; empties
# the log
e2e_env_txt() {
    {
        echo "$1"
        echo "libkdn tree: $root $(checkout_of "$root")"
        echo "llama.cpp: $src $(checkout_of "$src")"
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2> /dev/null
        command -v nvcc > /dev/null && nvcc --version | tail -2
        command -v ncu > /dev/null && ncu --version | tail -1
        command -v hipconfig > /dev/null && hipconfig --version
    } > "$out/env.txt" 2>&1
    : > "$log"
}

# e2e_build "TARGETS" CMAKE_ARGS...: libkdn installed under WORK/kdn, then the patched llama.cpp's TARGETS in BUILD
e2e_build() {
    local prefix=$work/kdn targets=$1
    shift
    step "libkdn ($backend, $make_target) -> $prefix"
    (cd "$root" && make lib BACKEND="$backend" "$arch_var=$make_target" -j"$(nproc)" &&
        make install BACKEND="$backend" "$arch_var=$make_target" PREFIX="$prefix") >> "$log" 2>&1 ||
        die "libkdn build"
    step "llama.cpp with the patch -> $build ($targets)"
    SECONDS=0
    "$root/integration/llama.cpp/apply_and_build.sh" --backend "$backend" --target "$target" --prefix "$prefix" \
        --build-dir "$build" --targets "$targets" "$src" -- "${speed_flags[@]}" "$@" >> "$log" 2>&1 ||
        die "llama.cpp build"
    step "built in ${SECONDS}s"
}

# e2e_model OUT.gguf SYNTH_ARGS...: a synthetic model (tools/e2e/synth_gguf.py with the checkout's gguf-py)
e2e_model() {
    local gguf=$1
    shift
    PYTHONPATH=$src/gguf-py python3 "$root/tools/e2e/synth_gguf.py" "$@" "$gguf" >> "$log" 2>&1 ||
        die "synth_gguf $gguf"
}

# e2e_guard_log IMPL RUNLOG WHAT: stop unless RUNLOG shows IMPL ran the op: libkdn ran it and refused no call
# (kdn), or libkdn never ran (ggml, GGML_KDN_DISABLE=1); the patch's lines of RUNLOG go to the log
e2e_guard_log() {
    local impl=$1 runlog=$2 what=$3
    grep -i 'libkdn' "$runlog" >> "$log"
    if [ "$impl" = kdn ]; then
        grep -q 'runs in libkdn' "$runlog" || die "$what: libkdn did not run the op"
        ! grep -q 'libkdn refused' "$runlog" || die "$what: libkdn refused a call (log.txt)"
    else
        ! grep -q 'runs in libkdn' "$runlog" || die "$what: GGML_KDN_DISABLE=1 but libkdn ran"
    fi
}

#!/bin/sh
# Mutation testing: planted faults, one at a time, in a copy of the tree; the
# CPU build is rebuilt and the tests that should see the fault are run. A
# fault is killed when that run fails (a wrong result, an executor error, a
# crash or a hang past the time limit). Prints one line per fault and
# "mutate: K of N faults killed"; exits 1 unless every fault is killed (and
# 2 if a fault no longer applies to the source: the list is stale).
#   tests/mutate.sh           the quick subset (make test)
#   tests/mutate.sh --all     every fault (make mutate; docs/ci.md's nightly job)
#   tests/mutate.sh --list    the faults, without running them
#   tests/mutate.sh --check   that every fault still applies to its marked line (no build; make test)
#   tests/mutate.sh NAME...   the faults named (shell patterns, e.g. 'barrier:chunked_intra.cpp:37*')
# Barrier faults run their tests on the race detector's build (build/cpu-race,
# make RACECHECK=1): a missing barrier shows as an LDS race, reported whatever
# the thread order; then under the executor's desc and shuffle schedules.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-quick}
case "$mode" in
quick | --all | --list | --check) ;;
-*) echo "usage: tests/mutate.sh [--all | --list | --check | NAME...]" >&2; exit 2 ;;
*) mode=named ;;
esac
limit=${MUTATE_TIMEOUT:-300} # seconds per test run: a fault that hangs is killed by it

# ---- the faults ------------------------------------------------------------
# fault NAME FILE MARK PERL TESTS [quick]: PERL (a perl substitution) rewrites
# the one line of FILE that carries the marker comment "mutate: MARK"; TESTS
# are --test patterns, space-separated. "quick" puts the fault in make test's
# subset. A marker that is missing or not unique, a PERL that no longer
# changes its line and a marker no fault uses all fail --check: a rename
# cannot silently stop a fault from applying.
FAULTS=$(mktemp)
trap 'rm -f "$FAULTS"' EXIT
trap 'exit 130' INT TERM
fault() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" >>"$FAULTS"; }

# the tests each kernel's faults run (seconds each on the CPU build, not minutes)
REC='recurrent_decode recurrent_odd_dims recurrent_strong_decay recurrent_state_x1000 compare_T1_B1'
CHUNKED='chunked_*'
R=kernels/deltanet_recurrent.cpp WI=kernels/chunked_intra.cpp WS=kernels/chunked_state.cpp
# a term of the layer scaled by 0.999 (a 0.1 % error), per kernel
fault rec_out_intra $R rec_out 's/fmaf\(d\[i\], dots\[kCols\], a \* dots\[i\]\)/fmaf(0.999f * d[i], dots[kCols], a * dots[i])/' "$REC compare_T1024_B1" quick
fault rec_out_state $R rec_out 's/fmaf\(d\[i\], dots\[kCols\], a \* dots\[i\]\)/fmaf(d[i], dots[kCols], 0.999f * a * dots[i])/' "$REC"
fault rec_delta $R rec_delta 's/d\[i\] = cur.beta \*/d[i] = 0.999f * cur.beta */' "$REC"
fault rec_decay $R rec_state 's/S\[i\]\[r\] = fmaf\(cur.k\[r\], d\[i\], a \* S\[i\]\[r\]\)/S[i][r] = fmaf(cur.k[r], d[i], 0.999f * a * S[i][r])/' "$REC"
fault rec_decay_after_update $R rec_state 's/S\[i\]\[r\] = fmaf\(cur.k\[r\], d\[i\], a \* S\[i\]\[r\]\)/S[i][r] = a * fmaf(cur.k[r], d[i], S[i][r])/' "$REC"
# ggml's scale of q wrong (its square root) in the chunked path's outputs (the library's rows through the chunked kernels)
fault chunked_q_scale $WS chunked_q_scale 's/xq\[a\]\[b\] \*= q_scale;/xq[a][b] *= sqrtf(q_scale);/' 'gdn_T64_chunked gdn_T300_auto_perm'
# KDA: token t's row factors read from the buffer being filled with token t + 1's
fault kda_factor_buffer $R kda_factors 's/kda, t & 1,/kda, (t + 1) & 1,/' 'gdn_*kda*'
# the per-token decay factor off by 2^-23 with a steady sign (as CUDA's expf was, a tenth of it:
# docs/tolerances.md): the weak-decay T = 1000 grid case must see it
fault rec_decay_biased $R rec_decay_factor 's/kdn_decay\(cur.g\)/(expf(cur.g) * (1.0f + 0x1p-23f))/' "grid_recurrent"
fault chunked_out_intra $WS state_out 's/fmaf\(p4\[st\]\[a\]\[e\], /fmaf(0.999f * p4[st][a][e], /' "$CHUNKED"
fault chunked_state_update $WS state_update 's/fmaf\(total, s_row\[b\], acc\[u\]\[b\]\)/fmaf(total, s_row[b], 0.999f * acc[u][b])/' "$CHUNKED"
# gfx906's unguarded G1 loads taken where D_k is not a multiple of 8: the last batch reads past each row
fault chunked_partial_batch $WS batches 's/\(kGuardedLoads \|\| c->s.D_k % \(4 \* kSteps\) == 0\)/true/' 'nonfinite_chunked_dk4'
fault chunked_decay_after_update $WS state_update 's/fmaf\(total, s_row\[b\], acc\[u\]\[b\]\)/total * (s_row[b] + acc[u][b])/' "$CHUNKED"
# a wrong snapshot slot: slots 0 and 1 (2 and 3, ...) swapped in the recurrent kernel
fault snapshot_slot $R rec_snapshot 's/\(args, S, T - 1 - t, s_off/(args, S, ((T - 1 - t) ^ 1) < args.K ? (T - 1 - t) ^ 1 : T - 1 - t, s_off/' 'gdn_*K[24]*'
# the grouped-head map swapped in the kernels only (the reference keeps its own)
fault head_map_swapped kernels/heads.h head_map 's/head_map == 0 \? h % H_k/head_map == 1 ? h % H_k/' "chunked_gqa3_c32 recurrent_odd_dims" quick
# a chunk's tail one token short
fault intra_tail $WI intra_tail 's/n = T - t0 < C \? T - t0 : C;/n = T - t0 < C ? T - t0 - 1 : C;/' "$CHUNKED"
# snapshots to state_dst: ignored (dst's tail), or its slot stride taken as a slot's size
fault state_dst_ignored kernels/gated_delta_net.c state_dst 's/c->state_dst \? c->state_dst : tail/tail/' 'gdn_cache* gdn_in_place*'
fault state_slot_stride kernels/gated_delta_net.c snap_stride 's/\(long\)slot_stride\(c\)/(long)slot_elements(c)/' 'gdn_cache*'
# v read in place as a view: the head stride taken as in a contiguous v (right only for those)
fault v_view_head_stride $WI v_view 's/h \* v_head;/h * (v_head - v_head + D_v);/' 'gdn_*perm*'

# every barrier of the product kernels and the unfused pipeline's, removed;
# the fault's marker is the barrier's ordinal in its file (barriers are found,
# not named). QUICK_MARKS: marker names of the barriers in make test's subset.
barriers() { # barriers FILE TESTS [QUICK_MARKS]
    n=$(grep -c '__syncthreads();' "$root/$1")
    i=0
    while [ "$i" -lt "$n" ]; do
        i=$((i + 1))
        text=$(grep '__syncthreads();' "$root/$1" | sed -n "${i}p")
        line=$(grep -n '__syncthreads();' "$root/$1" | sed -n "${i}p" | cut -d: -f1)
        q=
        for k in ${3:-}; do case "$text" in *"mutate: $k") q=quick ;; esac; done
        fault "barrier:$(basename "$1"):$line" "$1" "#$i" '$n = 0; s/__syncthreads\(\);/++$n == '"$i"' ? "\/* barrier removed *\/;" : $&/ge' "$2" barrier$q
    done
    for k in ${3:-}; do QUICK_BARRIERS="$QUICK_BARRIERS $1:$k"; done
}
QUICK_BARRIERS=
# quick: two chunked_intra.cpp barriers that survived every test under the
# ascending-only executor (after phases c and d).
barriers $WI "$CHUNKED" "intra_after_tiles intra_after_invert"
barriers $WS "$CHUNKED"
barriers $R 'gdn_*kda*'
barriers phases/kernels/gemm.cpp 'gemm_*'
barriers phases/kernels/triangular.cpp 'solve_tri*'

if [ "$mode" = --list ]; then
    cut -f1,2,5,6 "$FAULTS"
    exit 0
fi

# mutated FILE MARK PERL: FILE with PERL applied to the line marked MARK
# ("#N": PERL counts the barriers itself, over the whole file)
mutated() {
    case $2 in
    \#*) perl -0pe "$3" "$root/$1" ;;
    *) MARK="mutate: $2" perl -pe 'if (/\Q$ENV{MARK}\E$/) { '"$3"' }' "$root/$1" ;;
    esac
}
# why the fault cannot apply (empty when it can): its marker is missing or not
# unique, or PERL leaves the file as it is (the code moved)
stale_reason() { # stale_reason FILE MARK PERL
    case $2 in
    \#*) ;;
    *)
        m=$(grep -c -- "mutate: $2\$" "$root/$1")
        [ "$m" = 1 ] || { echo "marker 'mutate: $2' found $m times in $1 (want once)"; return; }
        ;;
    esac
    mutated "$1" "$2" "$3" | cmp -s - "$root/$1" && echo "the fault does not change $1 (line marked $2)"
}
if [ "$mode" = --check ]; then
    n=0 stale=0
    while IFS="$(printf '\t')" read -r name file mark perl tests flags; do
        n=$((n + 1))
        why=$(stale_reason "$file" "$mark" "$perl")
        [ -z "$why" ] || { echo "STALE   $name: $why"; stale=$((stale + 1)); }
    done <"$FAULTS"
    # every quick barrier's marker on a barrier; every marker in the tree used by a fault
    for qb in $QUICK_BARRIERS; do
        grep -q "__syncthreads(); // mutate: ${qb#*:}\$" "$root/${qb%%:*}" ||
            { echo "STALE   quick barrier ${qb#*:}: no barrier of ${qb%%:*} carries its marker"; stale=$((stale + 1)); }
    done
    used=$(cut -f3 "$FAULTS"; for qb in $QUICK_BARRIERS; do echo "${qb#*:}"; done)
    for m in $(git -C "$root" grep -h -o 'mutate: [a-z0-9_]*$' -- kernels phases | cut -d' ' -f2 | sort -u); do
        echo "$used" | grep -qx "$m" || { echo "STALE   marker 'mutate: $m' in the source: no fault uses it"; stale=$((stale + 1)); }
    done
    [ "$stale" = 0 ] || { echo "mutate: $stale stale of $n faults and their markers"; exit 2; }
    echo "mutate: $n of $n faults apply to their marked lines"
    exit 0
fi

# ---- running them ------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work" "$FAULTS"' EXIT
# Sources with their times, and the builds already made next to them, so
# that a fault recompiles only its file.
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp -p --parents -t "$work")
for b in cpu cpu-race; do [ ! -d "$root/build/$b" ] || { mkdir -p "$work/build" && cp -pR "$root/build/$b" "$work/build/"; }; done
cd "$work" || exit 2
# build_for BUILD: the copy's CPU build (cpu) or the race detector's (cpu-race)
build_for() {
    case $1 in cpu) race= ;; *) race=RACECHECK=1 ;; esac
    make -j2 BACKEND=cpu $race "build/$1/test_deltanet" >>build.log 2>&1
}
build() { build_for cpu && build_for cpu-race; }
build || { cat build.log; echo "mutate: the unmutated tree does not build"; exit 2; }

# runs TESTS with BUILD's test_deltanet under the schedules given; 0 if
# every run passed (the fault lived)
survives() { # survives TESTS BUILD SCHEDULE...
    tests=$1 bin=build/$2/test_deltanet
    shift 2
    set -f # the patterns are for --test, not the shell
    args=
    for t in $tests; do args="$args --test $t"; done
    for s in "$@"; do
        KDN_CPU_SCHEDULE=$s timeout "$limit" $bin $args >run.log 2>&1 || { set +f; return 1; }
    done
    set +f
    return 0
}

# 0 if the fault lived: its tests passed on each build and schedule they run
# under. Barrier faults: the race detector's build first; the plain build
# (desc, shuffle) is rebuilt only if the fault lived there.
lives() { # lives FLAGS TESTS
    case "$1" in
    barrier*) survives "$2" cpu-race asc && { build_for cpu || return 0; } && survives "$2" cpu desc shuffle:1 ;;
    *) survives "$2" cpu asc ;;
    esac
}

killed=0 total=0 stale=0 lived=
tab=$(printf '\t')
while IFS="$tab" read -r name file mark perl tests flags; do
    case "$mode:$flags" in quick:*quick*) ;; quick:*) continue ;; esac
    if [ "$mode" = named ]; then
        chosen=
        for pat in "$@"; do case "$name" in $pat) chosen=1 ;; esac; done
        [ -n "$chosen" ] || continue
    fi
    total=$((total + 1))
    cp "$file" "$file.orig"
    why=$(root=. stale_reason "$file" "$mark" "$perl")
    (root=. mutated "$file.orig" "$mark" "$perl") >"$file"
    if [ -n "$why" ]; then
        echo "STALE   $name: $why"
        stale=$((stale + 1))
    elif ! { : >build.log && case "$flags" in barrier*) build_for cpu-race ;; *) build_for cpu ;; esac; }; then
        echo "STALE   $name: does not compile"
        stale=$((stale + 1))
    else
        if lives "$flags" "$tests"; then
            echo "LIVED   $name ($tests)"
            lived="$lived $name"
        else
            echo "killed  $name: $(grep -m1 '^\[FAIL\]\|runtime error\|Terminated' run.log | cut -c1-60)$(grep -m1 -o 'LDS race at [^(]*' run.log | sed 's/^/ -- /')"
            killed=$((killed + 1))
        fi
    fi
    mv "$file.orig" "$file"
    touch "$file"
done <"$FAULTS"
echo "mutate: $killed of $total faults killed"
[ "$stale" = 0 ] || exit 2
[ "$killed" = "$total" ] || exit 1
exit 0

"""Hand-worked cases (make test)."""

from lens.cu import CU, align
from lens.launch import Launch
from lens.machine import BARRIER_LAT, LAT_LDS, LAT_STORE, LAT_VMEM, LDS_BYTES_PER_CLK, WAVE
from lens.program import Code


# ---- hand-worked cases (make test) ------------------------------------------------------------
def synthetic(lines, name="case"):
    """A Code from assembler-like lines ('label:' or 'mnemonic operands', branch operands name a
    label), for the hand-worked cases: no arguments, v0 = the lane's thread id."""
    labels, body = {}, []
    for ln in lines:
        if ln.endswith(":"):
            labels[ln[:-1]] = 4 * len(body)
        else:
            body.append(ln)
    insts = []
    for i, ln in enumerate(body):
        mnem, _, ops = ln.partition(" ")
        tgt = labels[ops.strip()] if mnem.startswith(("s_branch", "s_cbranch")) else None
        insts.append((4 * i, mnem, ops.strip() if tgt is None else "", tgt))
    meta = {"vgpr": 8, "sgpr": 16, "lds_static": 0, "kernarg_size": 0, "args": []}
    desc = dict(user_sgprs=0, wg_id=[0, 0, 0], wg_info=0, private_offset=0, workitem_ids=0, private_buffer=0,
                dispatch_ptr=0, queue_ptr=0, kernarg_ptr=0, dispatch_id=0, flat_scratch=0, private_size=0)
    return Code(name, insts, meta, desc)


def run_synthetic(lines, threads=64, fast=True, limit=1 << 22):
    code = synthetic(lines)
    cu = CU(code, Launch((1, 1, 1), (threads, 1, 1)), [(0, 0, 0)], fast=fast)
    return cu.run(limit=limit), cu


def ready_at(c, simd=0):
    return align(c, simd)


def selftest():
    """Cases whose clocks are worked out by hand from the rules in the module docstring (one wave on
    SIMD 0 issues at clocks 0, 4, 8, ...; the run ends 4 clocks after s_endpgm issues). Returns the
    failures."""
    LOAD, VALU, END = "global_load_dwordx4 v[0:3], v[4:5], off", "v_fmac_f32_e32 v6, v7, v7", "s_endpgm"
    LDS = "ds_read_b128 v[0:3], v4"
    load_done = 16 + LAT_VMEM            # 1 KB at 64 B per clock, then the latency
    lds_done = WAVE * 16 / LDS_BYTES_PER_CLK + LAT_LDS
    cases = [
        # (what, program, clocks worked out by hand)
        ("a load used at once", [LOAD, "s_waitcnt vmcnt(0)", VALU, END], ready_at(load_done) + 8 + 4),
        ("a load behind 100 VALU instructions", [LOAD] + [VALU] * 100 + ["s_waitcnt vmcnt(0)", END],
         ready_at(load_done) + 4 + 4),
        ("a load behind more work than its latency", [LOAD] + [VALU] * 200 + ["s_waitcnt vmcnt(0)", END],
         4 * 203),
        ("two loads waited one by one", [LOAD, LOAD, "s_waitcnt vmcnt(1)", VALU, "s_waitcnt vmcnt(0)", END],
         ready_at(32 + LAT_VMEM) + 8),        # the second load's service starts when the first one's ends
        ("a wait for two loads 50 VALU instructions apart", [LOAD] + [VALU] * 50 + [LOAD, "s_waitcnt vmcnt(0)", END],
         ready_at(204 + load_done) + 8),
        ("a wait with nothing outstanding", ["s_waitcnt vmcnt(0)", VALU, END], 12),
        ("an LDS read behind 16 FMAs", [LDS] + [VALU] * 16 + ["s_waitcnt lgkmcnt(0)", END],
         max(ready_at(lds_done), 68) + 8),
        ("an LDS read used at once", [LDS, "s_waitcnt lgkmcnt(0)", END], ready_at(lds_done) + 8),
        # a rotated loop: the wait heads the loop body in address order, the load ends it; executed,
        # every iteration's load is waited for at the top of the next one (3 iterations)
        ("a rotated loop whose wait sits above its loads",
         ["s_mov_b32 s0, 3", "s_branch head", "top:", "s_waitcnt vmcnt(0)", VALU, "head:", LOAD,
          "s_add_i32 s0, s0, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", "s_waitcnt vmcnt(0)", END],
         # load 1 at 8; each later load 8 clocks after the previous wait ends; the exit wait, then s_endpgm
         ready_at(ready_at(ready_at(8 + load_done) + 8 + load_done) + 8 + load_done) + 8),
        ("a loop waiting on its own stores (vmcnt counts stores)",
         ["s_mov_b32 s0, 3", "top:", "global_store_dwordx4 v[4:5], v[0:3], off", "s_waitcnt vmcnt(0)",
          "s_add_i32 s0, s0, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", END],
         # store at 4, its wait until 4 + 16 + LAT_STORE; 16 clocks (wait, add, cmp, branch) to the
         # next store; after the third wait, add, cmp, branch and s_endpgm
         ready_at(ready_at(ready_at(4 + 16 + LAT_STORE) + 16 + 16 + LAT_STORE) + 16 + 16 + LAT_STORE) + 16 + 4),
        ("a quarter-rate chain (v_mul_lo_u32: 16 clocks each)", ["v_mul_lo_u32 v1, v1, v1"] * 10 + [END],
         16 * 10 + 4),
        ("a full-rate chain", ["v_add_u32_e32 v1, v1, v1"] * 10 + [END], 4 * 10 + 4),
        # s_lshl3_add_u32 (D = (S0 << 3) + S1), which ROCm 7.2's code objects use for scalar LDS
        # addresses and the older toolchains' never did, gives the trip count: (1 << 3) + 2 = 10 trips
        # of 3 scalar instructions after the 2 that set it up, one instruction per turn
        ("a loop whose trip count s_lshl3_add_u32 computes",
         ["s_mov_b32 s0, 1", "s_lshl3_add_u32 s1, s0, 2", "top:", "s_add_i32 s1, s1, -1", "s_cmp_lg_u32 s1, 0",
          "s_cbranch_scc1 top", END], 4 * (2 + 3 * 10) + 4),
    ]
    fails = []
    for what, prog, want in cases:
        got, _ = run_synthetic(prog)
        if got != want:
            fails.append("simulator selftest, %s: %s clocks, worked out by hand: %s" % (what, got, want))
    # a barrier between uneven waves: wave 0 (SIMD 0) runs 10 VALU, wave 1 (SIMD 1) 50; both wait at
    # the barrier for wave 1, whose s_barrier issues at 1 + 4 * (4 + 50) (4 scalar instructions
    # first); the release is BARRIER_LAT later at each wave's next turn; then s_endpgm, wave 0's
    # (SIMD 0) last. Wave 0 reaches the barrier after 3 scalar instructions, 10 VALU, s_branch.
    uneven = ["v_readfirstlane_b32 s0, v0", "s_cmp_lt_u32 s0, 64", "s_cbranch_scc0 long", "short:"] + \
        [VALU] * 10 + ["s_branch meet", "long:", "s_nop 0"] + [VALU] * 50 + ["meet:", "s_barrier", END]
    got, cu = run_synthetic(uneven, threads=128)
    arrive = 1 + 4 * (4 + 50)
    want = ready_at(arrive + BARRIER_LAT, 0) + 4
    if got != want:
        fails.append("simulator selftest, a barrier between uneven waves: %s clocks, by hand %s" % (got, want))
    fast_wait = cu.waves[0].stall.get((None, "barrier"), 0)
    if fast_wait != ready_at(arrive + BARRIER_LAT, 0) - 4 * (3 + 10 + 1):
        fails.append("simulator selftest, the short wave's barrier wait: %s clocks" % fast_wait)
    # an SGPR spilled to a lane of a VGPR never written before (what compilers do under SGPR
    # pressure): the lane holds the value, the other lanes stay unknown, the loop runs its 3 trips
    spill = ["s_mov_b32 s0, 3", "top:", "v_writelane_b32 v7, s0, 5", "v_readlane_b32 s1, v7, 5",
             "s_add_i32 s0, s1, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", END]
    _, cu = run_synthetic(spill)
    lane5 = cu.waves[0].r.v[7]
    if cu.unknown or cu.waves[0].r.s[0] != 0 or type(lane5) is not tuple or lane5[5] != 1 or lane5[0] is not None:
        fails.append("simulator selftest, an SGPR spilled to a never-written VGPR's lane: %d unknown branches, "
                     "s0 = %s, v7 = %s" % (cu.unknown, cu.waves[0].r.s[0], lane5 if type(lane5) is not tuple
                                           else "lane 5 %s, lane 0 %s" % (lane5[5], lane5[0])))
    # s_lshl3_add_u32's carry: (0x20000000 << 3) + 5 = 2^32 + 5, so s1 = 5 and SCC = 1 (unsigned overflow)
    _, cu = run_synthetic(["s_mov_b32 s0, 0x20000000", "s_lshl3_add_u32 s1, s0, 5", END])
    if (cu.waves[0].r.s[1], cu.waves[0].r.scc) != (5, 1):
        fails.append("simulator selftest, s_lshl3_add_u32's carry: s1 = %s, scc = %s (by hand 5, 1)" % (
            cu.waves[0].r.s[1], cu.waves[0].r.scc))
    # fast-forward: a long loop simulated clock by clock and fast-forwarded agree within 1 %
    loop = ["s_mov_b32 s0, 2000", "top:", LOAD, "v_add_co_u32_e32 v4, vcc, 16, v4", VALU, VALU,
            "s_waitcnt vmcnt(0)", VALU, "s_add_i32 s0, s0, -1", "s_cmp_lg_u32 s0, 0", "s_cbranch_scc1 top", END]
    # and a loop whose lanes leave one by one (exec shrinks, the path stays the same until exec is
    # empty: lane i runs 100 + 8 i iterations): the fast-forward must land on the exit, not lose exec
    lanes_leave = ["v_lshl_add_u32 v1, v0, 3, 100", "s_mov_b64 s[2:3], 0", "top:", VALU,
                   "v_subrev_u32_e32 v1, 1, v1", "v_cmp_eq_u32_e32 vcc, 0, v1", "s_or_b64 s[2:3], vcc, s[2:3]",
                   "s_andn2_b64 exec, exec, s[2:3]", "s_cbranch_execz done", "s_branch top", "done:", END]
    for what, prog, threads in (("a loop with a fixed trip count", loop, 256),
                                ("a loop whose lanes leave one by one", lanes_leave, 64)):
        slow, _ = run_synthetic(prog, threads=threads, fast=False)
        try:
            quick, cu = run_synthetic(prog, threads=threads, fast=True, limit=2 * slow)
        except RuntimeError as e:
            fails.append("simulator selftest, fast-forward of %s: %s" % (what, e))
            continue
        if not cu.skipped or abs(quick - slow) > 0.01 * slow:
            fails.append("simulator selftest, fast-forward of %s: %s clocks (skipped %s), clock by clock %s" % (
                what, quick, cu.skipped, slow))
    return fails

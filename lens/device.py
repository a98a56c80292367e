"""The device: rounds of workgroups over 60 CUs."""

from lens.cu import CU
from lens.launch import workgroups_per_cu
from lens.machine import CLOCK_UNDER_LOAD, CUS, DISPATCH_FLOOR_US, HBM_BYTES_PER_S


# ---- the device: rounds of workgroups over 60 CUs -------------------------------------------------
class SimResult:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def wg_coords(i, grid):
    return (i % grid[0], i // grid[0] % grid[1], i // (grid[0] * grid[1]))


def run_rounds(code, launch, clock, fast=True):
    """[(count, size, CU clocks, CU)]: the rounds of a launch, each one simulated CU at this clock
    (fast: long loops fast-forwarded)."""
    n = launch.grid[0] * launch.grid[1] * launch.grid[2]
    per_cu, _ = workgroups_per_cu(code, launch)
    if per_cu == 0:
        raise ValueError("%s: does not fit a CU (LDS %d B)" % (code.name, code.meta.get("lds_static", 0) + launch.lds))
    slots = CUS * per_cu
    full, tail = divmod(n, slots)
    rounds = []
    for count, size in ((full, slots), (1 if tail else 0, tail)):
        if not count:
            continue
        first = (full * slots) if size != slots else 0
        ids = [wg_coords(first + i * CUS, launch.grid) for i in range(-(-size // CUS)) if i * CUS < size]
        cu = CU(code, launch, ids, fast=fast, clock=clock)
        rounds.append((count, size, cu.run(), cu))
    return rounds


def round_seconds(rounds, hbm_total, n, clock):
    """Each round's (count, seconds): the longer of its CU's clocks and its share of the HBM bytes."""
    return [(count, max(clocks / clock, hbm_total * size / n / HBM_BYTES_PER_S)) for count, size, clocks, _ in rounds]


def simulate(code, launch, clock=CLOCK_UNDER_LOAD):
    """Simulated time of one launch with the CUs at this clock: rounds of CUS x workgroups-per-CU
    workgroups (dispatched in order, round robin over the CUs); a round lasts as long as its busiest
    simulated CU (CU 0, which the round-robin dispatch gives the most workgroups) or its share of the
    kernel's HBM bytes at the sustained bandwidth, whichever is longer. Every full round is taken to
    cost what the first one does. No launch costs less than the dispatch floor."""
    n = launch.grid[0] * launch.grid[1] * launch.grid[2]
    per_cu, waves_simd = workgroups_per_cu(code, launch)
    rounds = run_rounds(code, launch, clock)
    total_vmem = sum(c * cu.vmem_bytes * min(CUS, size) / max(1, len(cu.groups)) for c, size, _, cu in rounds)
    hbm_total = launch.hbm_bytes if launch.hbm_bytes is not None else total_vmem
    secs = sum(c * s for c, s in round_seconds(rounds, hbm_total, n, clock))
    return SimResult(us=max(DISPATCH_FLOOR_US, secs * 1e6), rounds=rounds, per_cu=per_cu, waves_simd=waves_simd,
                     wgs=n, slots=CUS * per_cu, unknown=sum(cu.unknown for _, _, _, cu in rounds),
                     hbm_us=hbm_total / HBM_BYTES_PER_S * 1e6, clock=clock)

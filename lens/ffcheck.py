"""The fast-forward against clock-by-clock simulation on product launches (make isa-check): each
launch's rounds must agree within FF_TOL in clocks and in every SIMD's VALU busy, and the
fast-forward must have skipped clocks (else the check proves nothing)."""
from lens.device import run_rounds
from lens.launch import Launch
from lens.machine import CLOCK_UNDER_LOAD
from lens.product import recorded_launches

FF_TOL = 0.01
# (path, T, B, value heads, the kernel's name starts with): a token loop whose workgroups share a CU
# unevenly (one ends, the others speed up), and the chunked path's two passes
FF_CASES = [("recurrent", 320, 1, 32, "kernel_deltanet_recurrent"), ("chunked", 512, 1, 32, "kernel_chunked_state"),
            ("chunked", 256, 1, 12, "kernel_chunked_intra")]


def compare(code, launch, what):
    """Failures (strings) of one launch, fast-forwarded against clock by clock."""
    fails = []
    quick = run_rounds(code, launch, CLOCK_UNDER_LOAD, fast=True)
    slow = run_rounds(code, launch, CLOCK_UNDER_LOAD, fast=False)
    for (_, size, qc, qcu), (_, _, sc, scu) in zip(quick, slow):
        busy_q = [round(b / qc, 4) for b in qcu.valu_busy]
        busy_s = [round(b / sc, 4) for b in scu.valu_busy]
        line = "%s, round of %d workgroups: %d clocks, VALU busy %s fast-forwarded (%d clocks skipped); " \
               "%d clocks, busy %s clock by clock" % (what, size, qc, busy_q, qcu.skipped, sc, busy_s)
        if abs(qc - sc) > FF_TOL * sc or any(abs(a - b) > FF_TOL * b for a, b in
                                             zip(qcu.valu_busy, scu.valu_busy)):
            fails.append("fast-forward disagrees: " + line)
        elif not qcu.skipped and size == quick[0][1]:
            fails.append("fast-forward skipped nothing: " + line)
        else:
            print("fast-forward check: " + line)
    return fails


def ff_check(objects, cases=FF_CASES):
    fails = []
    for path, T, B, heads, kernel in cases:
        for name, grid, block, lds, args in recorded_launches(path, T, B, heads):
            if name.startswith(kernel):
                fails += compare(objects.get(name), Launch(grid, block, lds, args),
                                 "%s T=%d B=%d H_v=%d" % (name.split("(")[0], T, B, heads))
    return fails

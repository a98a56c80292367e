"""Bands from prediction error: a kernel style's band is the range of its out-of-sample ratios (predicted over
measured, every row of the style in results/gfx906-calibration.tsv, misses included, and 1): a simulated time t
stands for a real one in [t / high, t / low]. results/gfx906-bands.tsv holds them (python3 -m lens bands;
tests/bands_check.py checks the file follows from the table)."""
import os
import sys

from lens.codeobj import ROOT, read_tsv

CALIBRATION = os.path.join(ROOT, "results/gfx906-calibration.tsv")
BANDS = os.path.join(ROOT, "results/gfx906-bands.tsv")
BAND_COLS = ["style", "rows", "low", "high"]


def derive_bands(calibration_rows):
    """[style, rows, low, high] per style: the least and greatest ratio of its rows (as the table prints them),
    and 1 (the simulated time itself stays inside its band: a style of one row still has a width)."""
    by = {}
    for r in calibration_rows:
        by.setdefault(r["style"], []).append(float(r["ratio"]))
    return [[s, str(len(v)), "%.3f" % min(v + [1.0]), "%.3f" % max(v + [1.0])] for s, v in sorted(by.items())]


def write_bands(path=BANDS):
    with open(path, "w") as f:
        f.write("\t".join(BAND_COLS) + "\n")
        for r in derive_bands(read_tsv(CALIBRATION)):
            f.write("\t".join(r) + "\n")


def style_of(kernel):
    """The style of a product or peer kernel: a token loop in registers, an LDS-resident state pass
    (chunked or slab), a decode kernel of columns per wave, or a memory-bound copy."""
    if "gather" in kernel:
        return "HBM matrix-vector"
    if "recurrent" in kernel or "gated_delta_net_cuda" in kernel:
        return "register-state token loop"
    if "cpw" in kernel:
        return "column-per-wave decode"
    return "LDS state slab"


def figure_band(us, style):
    """(low, high) real time of a simulated time us of a kernel of this style, from results/gfx906-bands.tsv
    (a style without rows there takes the widest band of all styles)."""
    bands = {r["style"]: (float(r["low"]), float(r["high"])) for r in read_tsv(BANDS)}
    if not bands:
        return us, us
    lo, hi = bands.get(style) or (min(v[0] for v in bands.values()), max(v[1] for v in bands.values()))
    return us / hi, us / lo

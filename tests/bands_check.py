"""results/gfx906-bands.tsv follows from results/gfx906-calibration.tsv: every style's low and high are the
least and greatest out-of-sample ratio of its rows (lens/bands.py derive_bands), so a number edited by hand
in either file fails here.

  python3 tests/bands_check.py [--self-test]

--self-test: the check must reject a bands table with one number changed and one with a style missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lens.bands import BANDS, BAND_COLS, CALIBRATION, derive_bands  # noqa: E402
from lens.codeobj import read_tsv  # noqa: E402


def problems(calibration_rows, band_rows):
    """What differs between the bands table and the bands its calibration table gives."""
    want = {r[0]: r for r in derive_bands(calibration_rows)}
    have = {r["style"]: [r[c] for c in BAND_COLS] for r in band_rows}
    out = ["style %s: %s in the bands table, %s from the calibration table" % (s, have.get(s), want.get(s))
           for s in sorted(set(want) | set(have)) if want.get(s) != have.get(s)]
    if not calibration_rows:
        out.append("no calibration rows")
    return out


def self_test(calibration_rows, band_rows):
    if problems(calibration_rows, band_rows):
        return ["the self-test needs a consistent pair of tables"]
    edited = [dict(r) for r in band_rows]
    edited[0]["high"] = "%.3f" % (float(edited[0]["high"]) + 0.001)
    fails = [] if problems(calibration_rows, edited) else ["a hand-edited high went unnoticed"]
    return fails + ([] if problems(calibration_rows, band_rows[1:]) else ["a missing style went unnoticed"])


def main(argv):
    cal, bands = read_tsv(CALIBRATION), read_tsv(BANDS)
    fails = self_test(cal, bands) if "--self-test" in argv else problems(cal, bands)
    for f in fails:
        print("bands check: " + f, file=sys.stderr)
    if not fails:
        print("bands check: %s%s follows from %s (%d styles)" % (
            "self-test passed; " if "--self-test" in argv else "", os.path.basename(BANDS),
            os.path.basename(CALIBRATION), len(bands)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

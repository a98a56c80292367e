"""results/gfx906-mtp.tsv follows from the lens's floor (lens/work.py layer_floor_us with K snapshots):
every row's bytes_us is the floor of its shape and its x_bytes_and_dispatch the simulated time over bytes
plus the dispatch floor, so a number edited by hand, or a floor that forgot the snapshots, fails here; and
the floor itself equals a call worked out by hand.

  python3 tests/mtp_check.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lens.codeobj import read_tsv  # noqa: E402
from lens.machine import DISPATCH_FLOOR_US  # noqa: E402
from lens.mtp import TABLE  # noqa: E402
from lens.work import layer_floor_us  # noqa: E402


def hand_worked():
    """T = 4 tokens, K = 4 snapshots, one sequence, 32 value heads of 128 on 16 key heads: the state in
    and 4 out (128 x 128 x 32 floats each) and per token q and k (16 x 128), v and the output (32 x 128),
    the gate and beta (32 each): 10 683 392 bytes at 0.86 TB/s."""
    want = (5 * 128 * 128 * 32 + 4 * (2 * 16 * 128 + 2 * 32 * 128 + 2 * 32)) * 4 / 0.86e12 * 1e6
    got = layer_floor_us(4, 1, 32, K=4)
    return [] if abs(got - want) < 1e-9 else ["the MTP floor of T = K = 4: %.4f us, by hand %.4f" % (got, want)]


def table_problems(rows):
    out = []
    for r in rows:
        T, K, B, H = (int(r[c]) for c in ("T", "K", "B", "H_v"))
        bytes_us = layer_floor_us(T, B, H, K=K)
        ratio = float(r["simulated_us"]) / (float(r["bytes_us"]) + DISPATCH_FLOOR_US)
        # the table's times to 0.01 us, its ratio to 0.001
        if abs(float(r["bytes_us"]) - bytes_us) > 0.0051 or abs(float(r["x_bytes_and_dispatch"]) - ratio) > 0.002:
            out.append("%s T=%d K=%d B=%d H_v=%d: bytes_us %s (floor %.2f), ratio %s (from its time %.3f)" % (
                r["toolchain"], T, K, B, H, r["bytes_us"], bytes_us, r["x_bytes_and_dispatch"], ratio))
    return out


def main():
    rows = read_tsv(TABLE)
    fails = hand_worked() + table_problems(rows)
    for f in fails:
        print("mtp check: " + f, file=sys.stderr)
    if not rows:
        print("mtp check: %s has no rows" % TABLE, file=sys.stderr)
        return 1
    print("mtp check: %d rows of results/gfx906-mtp.tsv follow from the floor; the floor as worked by hand"
          % len(rows) if not fails else "mtp check: %d problems" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

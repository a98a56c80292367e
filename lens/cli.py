"""The command line, run from the repository's root (the Makefile's isa, isa-check, isa-vs-llama and
calibrate targets):

  python3 -m lens isa-report                    ISA tables + build/isa/isa.tsv (static.py)
  python3 -m lens isa-check                     the static gates of make test
  python3 -m lens selftest                      hand-worked cases
  python3 -m lens calibrate [OUT.tsv]           microbenchmarks and in-sample kernel rows (calibrate.py)
  python3 -m lens validate FORK_DIR [TOOLCHAIN]  out of sample -> results/gfx906-calibration.tsv (validate.py)
  python3 -m lens bands                         results/gfx906-bands.tsv from that table (bands.py)
  python3 -m lens peers FORK_DIR [TOOLCHAIN CO_DIR]  libkdn and the fork's kernels -> results/gfx906-peers.tsv
  python3 -m lens table [TOOLCHAIN CO_DIR]      the product simulated -> results/gfx906-sim.tsv
  python3 -m lens check [TOOLCHAIN CO_DIR]      the simulated-time gate against that table
  python3 -m lens ff-check [TOOLCHAIN CO_DIR]   fast-forward against clock by clock (ffcheck.py)
  python3 -m lens vs-llama GGML_DIR [TOOLCHAIN CO_DIR]   llama.cpp's kernel beside libkdn (vs_llama.py)
  python3 -m lens mtp [TOOLCHAIN CO_DIR]        MTP verify calls against their bytes (mtp.py)
  python3 -m lens figures [TOOLCHAIN]           docs/performance.md's MI50 tables (figures.py)
  python3 -m lens isa-run [quick|full [LOG]]    the product's objects run on real data (isa_run.py)
"""
import os
import sys

from lens.codeobj import ROOT, toolchain_and_objects_dir
from lens.gate import check, CODE_TABLE, LOOPS_TABLE, REGRESSION, SIM_TABLE, save_tables
from lens.product import SHAPES, PRODUCT_SRC, print_rows, product_rows
from lens.program import Objects
from lens.selftest import selftest
from lens import calibrate, isa_run, mtp, peers, static, validate, vs_llama
from lens.ffcheck import ff_check
from lens.figures import figures


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd in ("isa-report", "isa-check"):
        return static.main([argv[0], cmd[4:]])
    if cmd == "vs-llama":
        return vs_llama.main([argv[0]] + argv[2:])
    if cmd == "mtp":
        return mtp.main(argv)
    if cmd == "isa-run":
        return isa_run.main(argv[2:])
    if cmd == "figures":
        print(figures(argv[2] if len(argv) > 2 else "rocm6.4"))
        return 0
    if cmd == "selftest":
        fails = selftest()
        for f in fails:
            print(f, file=sys.stderr)
        print("gfx906 simulator selftest: %s" % ("%d failures" % len(fails) if fails else "all cases as worked out by hand"))
        return 1 if fails else 0
    if cmd == "calibrate":
        return calibrate.main(argv)
    if cmd == "validate":
        return validate.main(argv)
    if cmd in ("bands", "peers"):
        return peers.main(argv)
    if cmd in ("table", "check", "ff-check"):
        # table|check [TOOLCHAIN CO_DIR]: default the local hipcc's, build/isa
        toolchain, co_dir = toolchain_and_objects_dir(argv[2:4])
        objects = Objects([os.path.join(co_dir, f + ".co") for f in PRODUCT_SRC])
        if cmd == "ff-check":
            fails = ff_check(objects)
            for f in fails:
                print("gfx906 simulator " + f, file=sys.stderr)
            print("gfx906 simulator fast-forward check: %s" % ("%d failures" % len(fails) if fails else
                                                              "within 1 % of clock by clock"))
            return 1 if fails else 0
        if cmd == "check":
            res = check(objects, toolchain)
            if res is None:
                print("gfx906 simulator gate: no %s rows in %s, skipped" % (toolchain, os.path.relpath(SIM_TABLE,
                                                                                                ROOT)))
                return 0
            fails, checked = res
            for f in fails:
                print("gfx906 simulator gate: " + f, file=sys.stderr)
            if not fails:
                print("gfx906 simulator gate (%s): no product kernel's simulated time more than %d %% over %s "
                      "(%d rows simulated again, the rest unchanged code)" % (
                          toolchain, round(100 * (REGRESSION - 1)), os.path.relpath(SIM_TABLE, ROOT), checked))
            return 1 if fails else 0
        shapes = SHAPES
        if os.environ.get("SIM_SHAPES"):  # T:B[:H_v[:key]], e.g. "4096:1 1:1 512:1:16 64:1:32:key"
            shapes = [tuple(int(v) if v.isdigit() else v for v in w.split(":"))
                      for w in os.environ["SIM_SHAPES"].split()]
        rows = product_rows(objects, toolchain, shapes=shapes)
        print_rows(rows)
        save_tables(rows, objects, toolchain)
        print("wrote %s (%s rows), %s, %s" % (os.path.relpath(SIM_TABLE, ROOT), toolchain,
                                            os.path.relpath(LOOPS_TABLE, ROOT), os.path.relpath(CODE_TABLE,
                                                                                                   ROOT)))
        return 0
    sys.exit(__doc__)


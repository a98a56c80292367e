"""A simulator of gfx906 (MI50) compute units running a kernel's own machine code.

It reads a gfx906 code object (lens/codeobj.py builds and disassembles
it), and runs one kernel symbol at one launch shape:

  functional  every wave executes its instructions in execution order: scalar
              and vector integer arithmetic is evaluated on the kernel's
              arguments, workgroup ids and lane ids, so branches and loop trip
              counts follow from the launch shape; values loaded from memory
              are unknown (None) and so are the results computed from them.
              A branch on an unknown condition is counted and taken as
              "fall through" (SimResult.unknown_branches says how many).
  timing      one CU: 4 SIMDs, each wave one issue turn every 4 clocks
              (clock % 4 == its SIMD), one instruction per wave per turn, at
              most one instruction of each type (VALU, SALU, LDS, vector
              memory, scalar memory, branch) per clock; a VALU occupies its
              SIMD 4 clocks (full rate), 8 (half rate, 64-bit float, 64-bit
              shifts), 16 (quarter rate: transcendentals, 32-bit integer
              multiplies, v_mad_u64_u32); s_waitcnt with exact vmcnt /
              lgkmcnt / expcnt semantics (stores count in vmcnt); s_barrier;
              the CU's LDS and its vector-memory path serve bytes at a rate
              (shared ceilings), with fixed latencies after service.
  device      occupancy (VGPRs, SGPRs, LDS, 10 waves per SIMD) gives the
              workgroups a CU holds; the grid runs in rounds of 60 CUs x that
              many workgroups, the tail round included; each round takes the
              longer of its simulated CUs and its share of the kernel's HBM
              bytes at the sustained HBM bandwidth.

What it leaves out (docs/performance.md, "MI50 simulator"): caches other than
an L2 that serves repeated reads (the HBM ceiling counts the compulsory bytes
only), instruction fetch and the instruction buffer, LDS bank conflicts,
memory-address coalescing beyond "a wave's lanes move active_lanes x width
bytes", clock changes within a run (one clock per launch: lens/machine.py) and the
scheduler's dispatch order beyond round robin.

Stages, one module each, each importing only the ones above it:

  machine      the physical parameters
  codeobj      code objects: hipcc, llvm-readelf's metadata, llvm-objdump's disassembly
  decode       instruction classes and costs, operands
  semantics    a wave's registers and what each instruction does to them
  program      a kernel: instructions with their semantics, loops, descriptor
  launch       a launch's argument segment and dispatch packet; occupancy
  ggml         ggml's HIP kernels launched as its launchers launch them
  fork         the gfx906 fork's GDN kernels, built from a checkout, and their launches
  fastforward  the long-loop shortcut (steady iterations skipped, control slice replayed)
  cu           one compute unit's timing, clock by clock
  device       rounds of workgroups over the 60 CUs
  selftest     hand-worked cases
  calibrate    calibration kernels (calib/) against published gfx906 measurements
  validate     published kernel timings predicted out of sample (leave one source out)
  bands        each kernel style's band from those predictions' errors
  work         the product kernels' work (the floors)
  product      the launches kdn_gated_delta_net makes (launches.cpp records them), simulated, cached
  func_float   functional mode: gfx906's float arithmetic (which ops exact, which approximate)
  func_ops     functional mode: each instruction on real values (DPP, memory, LDS, counters)
  functional   functional mode: waves, barriers, poison until s_waitcnt, global memory and LDS
  isa_faults   faults planted in built objects (make isa-run ISA_FAULT=...)
  func_cpu     the same call by the CPU executor's libkdn (build/cpu), on the same bytes
  isa_run      make isa-run: the product's objects run on real inputs, checked against fp64 and the CPU
  gate         the tables in results/ and make test's gate on them
  ffcheck      the fast-forward against clock by clock on product launches (make isa-check)
  static       the ISA report and static gates (resources, loops, serialised loads)
  vs_llama     llama.cpp's kernel simulated beside libkdn
  mtp          MTP verify calls simulated against their bytes
  peers        libkdn beside the fork's kernels at the same shapes
  figures      docs/performance.md's tables from results/gfx906-sim.tsv
  cli          the command line: python3 -m lens (cli.py lists the commands)

Python 3 standard library only.
"""

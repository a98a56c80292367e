"""The simulated MI50: its physical parameters."""

# ---- the machine: physical parameters ----------------------------------------------------------
# docs/lens-constants.md gives each constant's source, or that it has none and its sensitivity.
# Calibrated against published gfx906 measurements (results/gfx906-calibration.tsv): HBM_BYTES_PER_S,
# LDS_BYTES_PER_CLK and the dispatch floor below. Taken from the Vega ISA manual /
# the MI50 data sheet: the rest. Latencies are in clocks at CLOCK; the memory-side ones (LAT_VMEM,
# LAT_STORE) are times, so at another clock they are those times in that clock's cycles.
CLOCK = 1.725e9            # Hz, MI50 boost clock: the clock the latencies below are given at

# The clock a simulated launch runs at where no measurement states another: the MI50's under llama.cpp
# load, its peak engine clock. The source: Vega 20 dies serving llama.cpp at a 200 W cap run at their
# 1730 MHz (exabit-io/llama.cpp-gfx906-tuning, README sections 1 and 6; prefill means 1675-1690 MHz,
# reports/2026-09-08-fa-counters.md); 999 MHz only at a cap of 85 W or less, or under the SMC's clamp.
# The MI50's peak is 1725 MHz under a 300 W cap. A validation row runs at the clock its source states.
CLOCK_UNDER_LOAD = 1.725e9
# A kernel launched behind another on one stream costs at least this (published: small kernels "run
# back to back at the ~4 us dispatch floor of GCN", rocprofv3 kernel trace of llama.cpp on a Vega 20
# die, exabit-io/llama.cpp-gfx906-tuning reports/2026-09-08-m1-kernel-trace.md).
DISPATCH_FLOOR_US = 4.0
CUS = 60
SIMDS = 4
WAVE = 64
MAX_WAVES_PER_SIMD = 10
LDS_PER_CU = 65536
VGPRS_PER_LANE = 256       # per SIMD lane; granule 4
SGPRS_PER_SIMD = 800       # granule 16
LDS_BYTES_PER_CLK = 100    # per CU, sustained ds_read_b128 rate (peak 128): calibrated
VMEM_BYTES_PER_CLK = 64    # per CU, the vector-memory (L1 / texture-address) path
HBM_BYTES_PER_S = 0.84e12  # sustained, device-wide: calibrated
LAT_VMEM = 500             # clocks from a vector load's service to its data (an L2/HBM mix)
LAT_STORE = 300            # clocks from a store's service to its vmcnt decrement (write acknowledged)
LAT_LDS = 64               # clocks from an LDS instruction's service to its data
LAT_SMEM = 120             # clocks for a scalar load (scalar cache)
LAT_EXPORT = 16            # clocks until a store's data has been read out of its VGPRs (expcnt)
BARRIER_LAT = 16           # clocks from the last wave's arrival to the release

M32 = 0xffffffff
M64 = (1 << 64) - 1
KERNARG_BASE = 0x10000000      # where the simulated kernel-argument segment lives
DISPATCH_BASE = 0x20000000     # the simulated HSA dispatch packet

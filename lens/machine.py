"""The simulated MI50: its physical parameters."""

# ---- the machine: physical parameters ----------------------------------------------------------
# Calibrated against published gfx906 measurements (results/gfx906-calibration.tsv): HBM_BYTES_PER_S,
# LDS_BYTES_PER_CLK. Taken from the Vega ISA manual / the MI50 data sheet: the rest.
CLOCK = 1.725e9            # Hz, MI50 boost clock
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

"""The work of the product kernels: FMAs and compulsory bytes, the floors of the simulated tables."""

# ---- the work of the product kernels (the floors of the simulated tables) --------------------
# Qwen3-Next's Delta-Net: 16 key heads, 32 value heads of 128 x 128, chunk 64.
H_K, H_V, D_K, D_V, CHUNK = 16, 32, 128, 128, 64


def intra_wave_fmas(C, Dk, Dv, inv):
    """FMA instructions the slowest wave of kernel_chunked_intra issues. A
    wave's lanes run in lockstep, so a wave costs what its busiest lanes do:
    phase c, 16 FMAs per key column in every wave that has a job (4 x 4 tiles,
    a diagonal tile's K.K and Q.K halves in one job); phase d, the lane FMAs
    of the inversion spread evenly (small); phase e, per pass of 128 columns
    and per group of 32 lanes, 4 x 4 FMAs per owned row and batch of 4 source
    rows: two blocks of C / 16 rows, the short one's batches feeding both."""
    nt = C // 4
    jobs = nt * (nt - 1) + nt
    waves = 4
    h = C // 16
    group = lambda g: 16 * 2 * h * -(-(g * h + h) // 4) + 16 * h * ((C - g * h) // 4 - -(-(g * h + h) // 4))
    per_wave = []
    for w in range(waves):
        tiles = 16 * Dk if 64 * w < jobs else 0
        wy = max(group(2 * w), group(2 * w + 1)) * (-(-Dv // 128) + -(-Dk // 128))
        per_wave.append(tiles + inv / 64 / waves + wy)
    return max(per_wave)


def work_intra(T, B, C=CHUNK, Dk=D_K, Dv=D_V):
    """kernel_chunked_intra: (workgroups, lane FMAs per workgroup, HBM bytes,
    FMA instructions of its slowest wave)."""
    nt = C // 4
    tiles = (2 * nt * (nt - 1) // 2 + 2 * nt) * 16 * Dk                       # phase c: A, P, the diagonal both
    inv = C * 16 * 15 // 2 // 16 * 16                                          # phase d: 16 x 16 diagonal blocks
    for I in range(1, C // 16):
        cols = 16 * I
        inv += 16 * sum(cols - j for j in range(cols)) + 16 * cols * 17 // 2     # A_I,<I Tinv_<I, then Tinv_II (.)
    rw = C // 8
    wy = 2 * sum(rw * (g * rw + rw) * 4 for g in range(8)) * (Dv // 4)         # U and W: Tinv is lower triangular
    wg = -(-T // C) * H_V * B
    qk_bytes = 2 * T * B * H_K * Dk * 4                                         # q, k once (shared by 2 value heads)
    per_chunk_out = (C + 2 * C * C + C * Dv + C * Dk) * 4                       # gamma, Tinv, P, U, W
    bytes_ = qk_bytes + T * B * H_V * (Dv + 2) * 4 + wg * per_chunk_out
    return wg, tiles + inv + wy, bytes_, intra_wave_fmas(C, Dk, Dv, inv)


def work_state(T, B, C=CHUNK, Dk=D_K, Dv=D_V):
    """kernel_chunked_state, counted per 32 state columns of a head (the
    totals do not depend on the kernel's slab width)."""
    chunks = -(-T // C)
    per_chunk = 2 * C * Dk * 32 + C * (C // 2 + 4) * 32 + C * Dk * 32          # G1 ([W; Q] S), G2 (P V_new), G3
    wg = -(-Dv // 32) * H_V * B
    heads = H_V * B
    bytes_ = (heads * chunks * (C * Dk + C * C + C * Dv + C * Dv + C) * 4      # W, P, U, o, gamma
              + 2 * T * B * H_K * Dk * 4                                        # q, k from L2 after the first read
              + 2 * heads * Dk * Dv * 4)                                        # the state in and out
    return wg, chunks * per_chunk, bytes_


def work_recurrent(T, B, Dk=D_K, Dv=D_V, cols=1, K=1):
    """kernel_deltanet_recurrent: a workgroup per 16 x cols state columns of a
    head (16 groups of 16 lanes, each group cols columns). Work: S.k, S.q and
    the update per row and column (3 FMAs); a wave issues, per token and row
    of its lanes, those for each of its cols columns plus one for k.q, which
    every column of a group shares (so the cols = 2 layout issues 7 FMA
    instructions per row where two groups of cols = 1 take 8). Bytes: the
    state in, K states out (snapshots of the last K tokens; 1: the final
    state), each token's vectors."""
    wg = -(-Dv // (16 * cols)) * H_V * B
    heads = H_V * B
    bytes_ = (1 + K) * heads * Dk * Dv * 4 + T * B * (2 * H_K * Dk + H_V * (2 * Dv + 2)) * 4
    return wg, T * 3 * Dk * 16 * cols, bytes_, T * (3 * cols + 1) * -(-Dk // 16)


def work_recurrent_2cols(T, B):
    return work_recurrent(T, B, cols=2)


# ---- the layer's floor: the token recurrence, whatever the algorithm -------------------------------
def layer_floor_us(T, B, heads, gate="scalar", peak_flops=13.4e12, peak_hbm=0.86e12, Dk=D_K, Dv=D_V, K=1):
    """The Delta-Net layer's floor: 3 D_k D_v multiply-adds per token and value head (S.k, the update,
    S.q) at the fp32 peak, or its compulsory bytes at the sustained HBM rate, whichever is longer: the
    state in and K states out (an MTP verify call keeps one per token, K = T), q and k per key head (half
    the value heads), v and the output per value head, the gate (a row per key dimension for the per-key
    gate) and beta. A chunked form's extra arithmetic does not lower it."""
    flops = 2.0 * 3 * Dk * Dv * T * B * heads
    gate_floats = Dk if gate == "key" else 1
    nbytes = 4.0 * ((1 + K) * Dk * Dv * heads * B + T * B * (2 * (heads // 2) * Dk + 2 * heads * Dv
                                                             + heads * (gate_floats + 1)))
    return max(flops / peak_flops, nbytes / peak_hbm) * 1e6

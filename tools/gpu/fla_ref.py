#!/usr/bin/env python3
"""flash-linear-attention's chunked Gated Delta-Net timed on the device
(results/h100-past-tables.md's comparison columns), on the Qwen3-Next shape: H = 32 heads for
q, k and v (the key heads repeated, as llama.cpp's graph does), D = 128,
L2-normalised fp32 q and k, log-decays g < 0, beta in (0, 1), a random
initial state; `chunk_gated_delta_rule(q, k, v, g, beta, scale=1,
initial_state, output_final_state=True)`, median of triton's do_bench.
Run once per dot precision: TRITON_F32_DEFAULT=ieee (fp32 FMA dots, what
this project's kernels do) and unset (tl.dot on TF32 tensor cores, fla's
default). Nothing of fla is kept in this repository: tools/gpu/fla_ref.sh takes
a checkout's path.

  python3 tools/gpu/fla_ref.py LABEL T:B ...   prints TSV: label, T, B, median_us
"""
import sys

import torch
import triton.testing
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

H, D = 32, 128


def inputs(T, B, gen):
    def rand(*shape):
        return torch.randn(*shape, generator=gen, device="cuda", dtype=torch.float32)
    q = torch.nn.functional.normalize(rand(B, T, H, D), dim=-1)
    k = torch.nn.functional.normalize(rand(B, T, H, D), dim=-1)
    v = rand(B, T, H, D)
    g = -torch.nn.functional.softplus(rand(B, T, H))       # log-decay < 0
    beta = torch.sigmoid(rand(B, T, H))
    h0 = rand(B, H, D, D) * 0.1
    return q, k, v, g, beta, h0


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: fla_ref.py LABEL T:B ...")
    label = sys.argv[1]
    gen = torch.Generator(device="cuda").manual_seed(20261124)
    print("label\tT\tB\tmedian_us")
    for shape in sys.argv[2:]:
        T, B = (int(x) for x in shape.split(":"))
        q, k, v, g, beta, h0 = inputs(T, B, gen)
        def call():
            return chunk_gated_delta_rule(q, k, v, g, beta, scale=1.0, initial_state=h0,
                                          output_final_state=True)
        call()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(call, return_mode="median")
        print("%s\t%d\t%d\t%.1f" % (label, T, B, ms * 1e3), flush=True)


if __name__ == "__main__":
    main()

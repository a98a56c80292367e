#!/usr/bin/env python3
"""Writes a GGUF with random weights in the shape of a Gated Delta-Net hybrid model, for llama.cpp's tools.

    PYTHONPATH=LLAMA_CPP/gguf-py python3 tools/e2e/synth_gguf.py --arch qwen35moe OUT.gguf
        [--layers 8] [--experts 16] [--experts-used 8] [--vocab 32768] [--seed 1] [--gate-scale 1.0]
        [--tokenizer none|spm]

The linear-attention layers have the shape of Qwen3-Next-80B-A3B and Qwen3.5-35B-A3B: hidden 2048, 16 key heads and
32 value heads of 128, conv kernel 4, three Delta-Net layers to one attention layer (16 query heads and 2 KV heads of
256, rotary on 64 dimensions), MoE FFN with experts of 512 and a shared expert of 512. Layer and expert counts and the
vocabulary are smaller than the real models' (options): 819 M parameters, 1.6 GB in F16.

qwen3next and qwen35moe differ in how the GDN inputs reach the op: qwen3next repeats q and k to the 32 value heads
before the op, qwen35moe passes 16 key heads and lets the op broadcast them (libkdn's tiled head map).

Weights are drawn per tensor from a generator seeded by (seed, CRC of the tensor name): a file is reproducible, and
--gate-scale changes nothing but the decay multipliers ssm_a (g = softplus(alpha + dt_bias) * ssm_a, so every gate
g moves by that factor). Scales keep activations near unit size: matrices N(0, 1/fan_in), embeddings N(0, 1),
norms 1, the LM head N(0, 3^2/hidden) so the next-token distributions are peaked like a trained model's rather than
flat. The tokenizer is "none" with a vocab_size by default: llama-bench draws random token ids, nothing is tokenized.
llama-server turns every generated token into text, which a vocabulary of "none" cannot: --tokenizer spm writes a
SentencePiece-style list of the same size (<unk>, <s>, </s>, the 256 byte tokens, then made-up words), enough to
print tokens; prompts go to the server as token ids.
The tensor names, key names and the writer come from the gguf-py of the llama.cpp checkout on PYTHONPATH.
"""
import argparse
import zlib
from dataclasses import dataclass

import numpy as np

import gguf
from gguf.constants import MODEL_ARCH, MODEL_ARCH_NAMES, MODEL_TENSOR, MODEL_TENSORS, TENSOR_NAMES


@dataclass(frozen=True)
class Shape:
    hidden: int = 2048
    key_heads: int = 16
    value_heads: int = 32
    head_dim: int = 128          # Delta-Net head size, keys and values
    conv_kernel: int = 4
    full_attention_interval: int = 4
    attn_heads: int = 16
    attn_kv_heads: int = 2
    attn_head_dim: int = 256
    rope_dims: int = 64
    expert_ff: int = 512
    shared_ff: int = 512
    layers: int = 8
    experts: int = 16
    experts_used: int = 8
    vocab: int = 32768
    context: int = 262144
    rms_eps: float = 1e-6
    rope_base: float = 1e7

    @property
    def key_dim(self) -> int:
        return self.key_heads * self.head_dim

    @property
    def value_dim(self) -> int:
        return self.value_heads * self.head_dim

    def is_delta_net(self, layer: int) -> bool:
        return (layer + 1) % self.full_attention_interval != 0


ARCHES = {"qwen3next": MODEL_ARCH.QWEN3NEXT, "qwen35moe": MODEL_ARCH.QWEN35MOE}
QWEN35_ROPE_SECTIONS = [11, 11, 10, 0]  # what llama.cpp's converter writes when a checkpoint names none


@dataclass(frozen=True)
class Tensor:
    name: str
    ne: tuple            # ggml order: ne[0] is the contiguous dimension
    init: str            # normal | ones | decay | dt_bias
    scale: float = 1.0
    dtype: type = np.float16


def matrix(name, fan_in, fan_out, extra=()):
    return Tensor(name, (fan_in, fan_out) + tuple(extra), "normal", fan_in ** -0.5)


def vector(name, n, init="ones"):
    return Tensor(name, (n,), init, dtype=np.float32)


def tensor_name(arch, kind, layer=None, suffix=".weight"):
    if kind not in MODEL_TENSORS[arch]:
        raise SystemExit(f"synth_gguf: {MODEL_ARCH_NAMES[arch]} has no tensor {kind.name} in this gguf-py")
    base = TENSOR_NAMES[kind] if layer is None else TENSOR_NAMES[kind].format(bid=layer)
    return base + suffix


def delta_net_tensors(arch, s, il):
    n = lambda kind, suffix=".weight": tensor_name(arch, kind, il, suffix)
    out = [
        matrix(n(MODEL_TENSOR.ATTN_QKV), s.hidden, 2 * s.key_dim + s.value_dim),
        matrix(n(MODEL_TENSOR.ATTN_GATE), s.hidden, s.value_dim),
        Tensor(n(MODEL_TENSOR.SSM_CONV1D), (s.conv_kernel, 2 * s.key_dim + s.value_dim), "normal",
               s.conv_kernel ** -0.5, np.float32),
        vector(n(MODEL_TENSOR.SSM_DT, ".bias"), s.value_heads, "dt_bias"),
        vector(n(MODEL_TENSOR.SSM_A, ""), s.value_heads, "decay"),
        vector(n(MODEL_TENSOR.SSM_NORM), s.head_dim),
        matrix(n(MODEL_TENSOR.SSM_OUT), s.value_dim, s.hidden),
    ]
    if arch == MODEL_ARCH.QWEN3NEXT:
        out.append(matrix(n(MODEL_TENSOR.SSM_BETA_ALPHA), s.hidden, 2 * s.value_heads))
    else:
        out.append(matrix(n(MODEL_TENSOR.SSM_BETA), s.hidden, s.value_heads))
        out.append(matrix(n(MODEL_TENSOR.SSM_ALPHA), s.hidden, s.value_heads))
    return out


def attention_tensors(arch, s, il):
    n = lambda kind: tensor_name(arch, kind, il)
    q_dim = s.attn_heads * s.attn_head_dim
    kv_dim = s.attn_kv_heads * s.attn_head_dim
    return [
        matrix(n(MODEL_TENSOR.ATTN_Q), s.hidden, 2 * q_dim),  # query and its output gate, interleaved per head
        matrix(n(MODEL_TENSOR.ATTN_K), s.hidden, kv_dim),
        matrix(n(MODEL_TENSOR.ATTN_V), s.hidden, kv_dim),
        matrix(n(MODEL_TENSOR.ATTN_OUT), q_dim, s.hidden),
        vector(n(MODEL_TENSOR.ATTN_Q_NORM), s.attn_head_dim),
        vector(n(MODEL_TENSOR.ATTN_K_NORM), s.attn_head_dim),
    ]


def ffn_tensors(arch, s, il):
    n = lambda kind: tensor_name(arch, kind, il)
    return [
        Tensor(n(MODEL_TENSOR.FFN_GATE_INP), (s.hidden, s.experts), "normal", s.hidden ** -0.5, np.float32),
        matrix(n(MODEL_TENSOR.FFN_GATE_EXP), s.hidden, s.expert_ff, (s.experts,)),
        matrix(n(MODEL_TENSOR.FFN_UP_EXP), s.hidden, s.expert_ff, (s.experts,)),
        matrix(n(MODEL_TENSOR.FFN_DOWN_EXP), s.expert_ff, s.hidden, (s.experts,)),
        Tensor(n(MODEL_TENSOR.FFN_GATE_INP_SHEXP), (s.hidden,), "normal", s.hidden ** -0.5, np.float32),
        matrix(n(MODEL_TENSOR.FFN_GATE_SHEXP), s.hidden, s.shared_ff),
        matrix(n(MODEL_TENSOR.FFN_UP_SHEXP), s.hidden, s.shared_ff),
        matrix(n(MODEL_TENSOR.FFN_DOWN_SHEXP), s.shared_ff, s.hidden),
    ]


def model_tensors(arch, s):
    out = [
        Tensor(tensor_name(arch, MODEL_TENSOR.TOKEN_EMBD), (s.hidden, s.vocab), "normal", 1.0),
        vector(tensor_name(arch, MODEL_TENSOR.OUTPUT_NORM), s.hidden),
        Tensor(tensor_name(arch, MODEL_TENSOR.OUTPUT), (s.hidden, s.vocab), "normal", 3.0 * s.hidden ** -0.5),
    ]
    for il in range(s.layers):
        out.append(vector(tensor_name(arch, MODEL_TENSOR.ATTN_NORM, il), s.hidden))
        out.append(vector(tensor_name(arch, MODEL_TENSOR.ATTN_POST_NORM, il), s.hidden))
        out += delta_net_tensors(arch, s, il) if s.is_delta_net(il) else attention_tensors(arch, s, il)
        out += ffn_tensors(arch, s, il)
    return out


def draw(t: Tensor, seed: int, gate_scale: float) -> np.ndarray:
    rng = np.random.default_rng([seed, zlib.crc32(t.name.encode())])
    shape = tuple(reversed(t.ne))  # numpy's last axis is ggml's ne[0]
    if t.init == "normal":
        x = rng.standard_normal(shape, dtype=np.float32) * np.float32(t.scale)
    elif t.init == "ones":
        x = np.ones(shape, np.float32)
    elif t.init == "decay":   # -exp(A_log), A_log = log U(1, 16): the models' initialisation
        x = -rng.uniform(1.0, 16.0, shape).astype(np.float32) * np.float32(gate_scale)
    elif t.init == "dt_bias":  # softplus^-1(dt), dt log-uniform in [1e-3, 1e-1]
        dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), shape))
        x = (dt + np.log(-np.expm1(-dt))).astype(np.float32)
    else:
        raise ValueError(t.init)
    return x.astype(t.dtype)


def write_spm_vocab(w: gguf.GGUFWriter, vocab: int):
    """<unk> <s> </s>, the byte tokens <0x00>..<0xFF>, then words "\u2581w<id>" (the SentencePiece space mark)."""
    special = [("<unk>", gguf.TokenType.UNKNOWN), ("<s>", gguf.TokenType.CONTROL), ("</s>", gguf.TokenType.CONTROL)]
    tokens = special + [(f"<0x{b:02X}>", gguf.TokenType.BYTE) for b in range(256)]
    tokens += [(f"\u2581w{i}", gguf.TokenType.NORMAL) for i in range(len(tokens), vocab)]
    w.add_tokenizer_model("llama")
    w.add_token_list([t for t, _ in tokens])
    w.add_token_types([int(k) for _, k in tokens])
    w.add_token_scores([-float(i) for i in range(len(tokens))])
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)


def write_hparams(w: gguf.GGUFWriter, arch, s: Shape, tokenizer: str):
    w.add_name(f"synthetic {MODEL_ARCH_NAMES[arch]} (random weights)")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(s.context)
    w.add_embedding_length(s.hidden)
    w.add_block_count(s.layers)
    w.add_feed_forward_length(s.expert_ff)
    w.add_head_count(s.attn_heads)
    w.add_head_count_kv(s.attn_kv_heads)
    w.add_key_length(s.attn_head_dim)
    w.add_value_length(s.attn_head_dim)
    w.add_rope_dimension_count(s.rope_dims)
    w.add_rope_freq_base(s.rope_base)
    w.add_layer_norm_rms_eps(s.rms_eps)
    w.add_expert_count(s.experts)
    w.add_expert_used_count(s.experts_used)
    w.add_expert_feed_forward_length(s.expert_ff)
    w.add_expert_shared_feed_forward_length(s.shared_ff)
    w.add_ssm_conv_kernel(s.conv_kernel)
    w.add_ssm_state_size(s.head_dim)
    w.add_ssm_group_count(s.key_heads)
    w.add_ssm_time_step_rank(s.value_heads)
    w.add_ssm_inner_size(s.value_dim)
    w.add_full_attention_interval(s.full_attention_interval)
    if arch == MODEL_ARCH.QWEN35MOE:
        w.add_rope_dimension_sections(QWEN35_ROPE_SECTIONS)
    if tokenizer == "spm":
        write_spm_vocab(w, s.vocab)
    else:
        w.add_tokenizer_model("none")
        w.add_vocab_size(s.vocab)


def write(path, arch, s: Shape, seed: int, gate_scale: float, tokenizer: str):
    tensors = model_tensors(arch, s)
    w = gguf.GGUFWriter(path, MODEL_ARCH_NAMES[arch])
    write_hparams(w, arch, s, tokenizer)
    for t in tensors:
        w.add_tensor_info(t.name, tuple(reversed(t.ne)), np.dtype(t.dtype),
                          int(np.prod(t.ne)) * np.dtype(t.dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for t in tensors:  # one tensor in memory at a time
        w.write_tensor_data(draw(t, seed, gate_scale))
    w.close()
    n_params = sum(int(np.prod(t.ne)) for t in tensors)
    print(f"synth_gguf: {path}: {MODEL_ARCH_NAMES[arch]}, {s.layers} layers "
          f"({sum(map(s.is_delta_net, range(s.layers)))} Delta-Net), {s.experts} experts ({s.experts_used} used), "
          f"vocab {s.vocab} ({tokenizer}), {n_params / 1e6:.0f} M parameters, seed {seed}, gate scale {gate_scale}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--arch", choices=sorted(ARCHES), default="qwen35moe")
    p.add_argument("--layers", type=int, default=Shape.layers)
    p.add_argument("--experts", type=int, default=Shape.experts)
    p.add_argument("--experts-used", type=int, default=Shape.experts_used)
    p.add_argument("--vocab", type=int, default=Shape.vocab)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gate-scale", type=float, default=1.0, help="multiplies every ssm_a (every gate g)")
    p.add_argument("--tokenizer", choices=("none", "spm"), default="none",
                   help="spm: a made-up SentencePiece vocabulary (llama-server prints tokens)")
    a = p.parse_args()
    if a.layers < Shape.full_attention_interval or a.layers % Shape.full_attention_interval:
        p.error(f"--layers must be a multiple of {Shape.full_attention_interval} (three Delta-Net layers to one "
                "attention layer)")
    s = Shape(layers=a.layers, experts=a.experts, experts_used=a.experts_used, vocab=a.vocab)
    write(a.out, ARCHES[a.arch], s, a.seed, a.gate_scale, a.tokenizer)


if __name__ == "__main__":
    main()

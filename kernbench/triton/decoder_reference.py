"""The decoder layer's inputs and its torch reference (``workload=decoder_layer``).

:func:`inputs` draws the layer's host tensors from ``workload.seed``; :func:`reference`
computes the decode step in torch the way the kernels do it (fp32 arithmetic, every
intermediate stored in ``workload.dtype``, the unnormalised P cast to the cache's dtype
before P·V as ``decode_attention`` does), so ``max_abs_error`` measures the device's values, not two
orders of rounding. It must not touch the simulator.

Layouts (row-major, as the kernels index them): activations ``(batch, features)``;
projection weights ``(out_features, in_features)`` as ``torch.nn.Linear`` holds them;
the fused QKV output ``(batch, (heads + 2 kv_heads) x head_dim)``, Q then K then V; KV
caches ``(batch, kv_heads, context_tokens + 1, head_dim)`` whose last slot the step
fills; rotary tables ``(batch, head_dim / 2)`` at position ``context_tokens``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernbench.config.schema import DecoderLayerWorkloadConfig


@dataclass
class HostLayer:
    """The layer's host tensors (weights, caches, the step's input and rotary tables)."""

    x: torch.Tensor
    attn_norm: torch.Tensor
    w_qkv: torch.Tensor
    w_o: torch.Tensor
    mlp_norm: torch.Tensor
    w_gate: torch.Tensor
    w_up: torch.Tensor
    w_down: torch.Tensor
    k_cache: torch.Tensor
    v_cache: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor


def dtype_of(w: DecoderLayerWorkloadConfig) -> torch.dtype:
    return getattr(torch, w.dtype)


def inputs(w: DecoderLayerWorkloadConfig) -> HostLayer:
    """Random inputs from ``workload.seed``: weights scaled by 1/sqrt(fan-in) (and norm
    weights near 1) so activations stay near unit size, as a trained model's do."""
    gen = torch.Generator().manual_seed(w.seed)
    dtype = dtype_of(w)

    def randn(*shape: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
        t = torch.randn(*shape, generator=gen, dtype=torch.float32)
        return (t * scale + shift).to(dtype)

    qkv = (w.heads + 2 * w.kv_heads) * w.head_dim
    slots = w.context_tokens + 1
    cache = (w.batch, w.kv_heads, slots, w.head_dim)
    k_cache, v_cache = randn(*cache), randn(*cache)
    k_cache[:, :, w.context_tokens] = 0  # the slot this step writes
    v_cache[:, :, w.context_tokens] = 0
    cos, sin = rotary_tables(w)
    return HostLayer(
        x=randn(w.batch, w.hidden),
        attn_norm=randn(w.hidden, scale=0.1, shift=1.0),
        w_qkv=randn(qkv, w.hidden, scale=w.hidden**-0.5),
        w_o=randn(w.hidden, w.heads * w.head_dim, scale=(w.heads * w.head_dim) ** -0.5),
        mlp_norm=randn(w.hidden, scale=0.1, shift=1.0),
        w_gate=randn(w.ffn, w.hidden, scale=w.hidden**-0.5),
        w_up=randn(w.ffn, w.hidden, scale=w.hidden**-0.5),
        w_down=randn(w.hidden, w.ffn, scale=w.ffn**-0.5),
        k_cache=k_cache,
        v_cache=v_cache,
        cos=cos,
        sin=sin,
    )


def rotary_tables(w: DecoderLayerWorkloadConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every sequence's new position (``context_tokens``), one half of
    a head each (fp32): angle ``pos x theta^(-2i / head_dim)``."""
    half = w.head_dim // 2
    freq = w.rope_theta ** (-torch.arange(half, dtype=torch.float64) * 2 / w.head_dim)
    angle = (w.context_tokens * freq).to(torch.float32)
    return angle.cos().expand(w.batch, half).clone(), angle.sin().expand(w.batch, half).clone()


def reference(h: HostLayer, w: DecoderLayerWorkloadConfig) -> torch.Tensor:
    """The layer's output (the residual stream after the step) in ``workload.dtype``."""
    dtype = dtype_of(w)
    q_cols, kv_cols = w.heads * w.head_dim, w.kv_heads * w.head_dim
    qkv = linear(rms_norm(h.x, h.attn_norm, w.rms_eps), h.w_qkv)
    q = rotate(qkv[:, :q_cols].view(w.batch, w.heads, w.head_dim), h.cos, h.sin).to(dtype)
    k = qkv[:, q_cols : q_cols + kv_cols].view(w.batch, w.kv_heads, w.head_dim)
    k_cache, v_cache = h.k_cache.clone(), h.v_cache.clone()
    k_cache[:, :, w.context_tokens] = rotate(k, h.cos, h.sin).to(dtype)
    v_cache[:, :, w.context_tokens] = qkv[:, q_cols + kv_cols :].view(k.shape)
    attn = attention(q, k_cache, v_cache).reshape(w.batch, q_cols)
    x = (h.x.float() + linear(attn, h.w_o).float()).to(dtype)
    mid = rms_norm(x, h.mlp_norm, w.rms_eps)
    gate, up = linear(mid, h.w_gate).float(), linear(mid, h.w_up).float()
    act = (torch.nn.functional.silu(gate) * up).to(dtype)
    return (x.float() + linear(act, h.w_down).float()).to(dtype)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T`` summed in fp32, stored in x's dtype."""
    return (x.float() @ weight.float().T).to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half rotary embedding of heads ``x`` (batch, heads, dim) in fp32."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
    """Grouped-query decode attention of q (batch, heads, dim) over whole caches."""
    group = q.shape[1] // k_cache.shape[1]
    k = k_cache.float().repeat_interleave(group, dim=1)
    v = v_cache.float().repeat_interleave(group, dim=1)
    scores = torch.einsum("bhd,bhsd->bhs", q.float(), k) / math.sqrt(q.shape[-1])
    p = (scores - scores.amax(-1, keepdim=True)).exp()  # unnormalised, as the kernel's
    acc = torch.einsum("bhs,bhsd->bhd", p.to(v_cache.dtype).float(), v)
    return (acc / p.sum(-1, keepdim=True)).to(q.dtype)

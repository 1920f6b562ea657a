"""Inputs and torch references of the shipped kernels, one ``*_case`` function each.

A case function is how ``workload=triton`` runs any kernel, shipped or the user's:
``case(acc, w) -> Case`` deploys the inputs on ``acc`` (an
:class:`~kernbench.triton.Accelerator`) from the sizes in ``w`` (the workload config),
and says the launch grid, the arguments and, per output tensor, the expected torch
values. A user's kernel ``pkg.mod:my_kernel`` needs ``my_kernel_case`` beside it in
``pkg.mod``, with this signature (docs/how-to/triton.md, "Your own kernel").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton

from kernbench.config.schema import TritonWorkloadConfig
from kernbench.triton import kernels
from kernbench.triton.accelerator import Accelerator, DeviceTensor


@dataclass
class Case:
    """One launch: ``kernel[grid](*args, **kwargs)``, and what its outputs must hold."""

    kernel: Any
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: list[tuple[DeviceTensor, torch.Tensor]] = field(default_factory=list)


def _dtype(w: TritonWorkloadConfig) -> torch.dtype:
    dtype = getattr(torch, w.dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"workload.dtype: {w.dtype!r} is not a torch floating dtype")
    return dtype


def _sampler(w: TritonWorkloadConfig) -> Callable[..., torch.Tensor]:
    """``randn(*shape)`` in ``workload.dtype``, from one generator seeded ``workload.seed``."""
    gen, dtype = torch.Generator().manual_seed(w.seed), _dtype(w)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen, dtype=torch.float32).to(dtype)

    return randn


def vector_add_case(acc: Accelerator, w: TritonWorkloadConfig) -> Case:
    randn = _sampler(w)
    xs, ys = randn(w.size), randn(w.size)
    x, y = acc.tensor(xs), acc.tensor(ys)
    out = acc.empty_like(x)
    grid = (triton.cdiv(w.size, w.block_size),)
    args = (x, y, out, w.size)
    return Case(kernels.vector_add, grid, args, {"BLOCK_SIZE": w.block_size}, [(out, xs + ys)])


def softmax_case(acc: Accelerator, w: TritonWorkloadConfig) -> Case:
    xs = _sampler(w)(w.rows, w.cols)
    x = acc.tensor(xs)
    out = acc.empty_like(x)
    block = triton.next_power_of_2(w.cols)
    args = (out, x, x.stride(0), out.stride(0), w.cols)
    expected = torch.softmax(xs.float(), dim=1).to(xs.dtype)
    return Case(kernels.softmax, (w.rows,), args, {"BLOCK_SIZE": block}, [(out, expected)])


def matmul_case(acc: Accelerator, w: TritonWorkloadConfig) -> Case:
    randn = _sampler(w)
    a_host, b_host = randn(w.m, w.k), randn(w.k, w.n)
    a, b = acc.tensor(a_host), acc.tensor(b_host)
    c = acc.empty((w.m, w.n), a_host.dtype)
    grid = (triton.cdiv(w.m, w.block_m) * triton.cdiv(w.n, w.block_n),)
    strides = (*a.stride(), *b.stride(), *c.stride())
    blocks = {"BLOCK_SIZE_M": w.block_m, "BLOCK_SIZE_N": w.block_n, "BLOCK_SIZE_K": w.block_k}
    expected = (a_host.float() @ b_host.float()).to(a_host.dtype)
    args = (a, b, c, w.m, w.n, w.k, *strides)
    return Case(kernels.matmul, grid, args, blocks | {"GROUP_SIZE_M": 8}, [(c, expected)])


def layer_norm_case(acc: Accelerator, w: TritonWorkloadConfig) -> Case:
    randn = _sampler(w)
    xs, ws, bs = randn(w.rows, w.cols), randn(w.cols), randn(w.cols)
    x, weight, bias = acc.tensor(xs), acc.tensor(ws), acc.tensor(bs)
    y = acc.empty_like(x)
    eps = 1e-5
    block = triton.next_power_of_2(w.cols)
    ref = torch.nn.functional.layer_norm(xs.float(), (w.cols,), ws.float(), bs.float(), eps)
    args = (x, y, weight, bias, x.stride(0), w.cols, eps)
    return Case(kernels.layer_norm, (w.rows,), args, {"BLOCK_SIZE": block}, [(y, ref.to(xs.dtype))])


def decode_attention_case(acc: Accelerator, w: TritonWorkloadConfig) -> Case:
    if w.num_heads % w.num_kv_heads:
        raise ValueError(
            f"workload.num_heads: {w.num_heads} is not divisible by "
            f"workload.num_kv_heads = {w.num_kv_heads}"
        )
    group = w.num_heads // w.num_kv_heads
    for key, value in (("num_heads / num_kv_heads", group), ("head_dim", w.head_dim)):
        if value & (value - 1):
            raise ValueError(f"workload.{key}: {value} is not a power of two (a tl.arange)")
    randn = _sampler(w)
    qs = randn(w.num_heads, w.head_dim)
    ks = randn(w.num_kv_heads, w.seq_len, w.head_dim)
    vs = randn(w.num_kv_heads, w.seq_len, w.head_dim)
    q, k, v = acc.tensor(qs), acc.tensor(ks), acc.tensor(vs)
    out = acc.empty_like(q)
    scale = 1.0 / math.sqrt(w.head_dim)
    kk = ks.float().repeat_interleave(group, dim=0)  # (heads, seq, dim)
    vv = vs.float().repeat_interleave(group, dim=0)
    p = torch.softmax(torch.einsum("hd,hsd->hs", qs.float(), kk) * scale, dim=-1)
    ref = torch.einsum("hs,hsd->hd", p, vv).to(qs.dtype)
    consts = {"GROUP": group, "HEAD_DIM": w.head_dim, "BLOCK_N": w.block_n}
    args = (q, k, v, out, w.seq_len, scale)
    return Case(kernels.decode_attention, (w.num_kv_heads,), args, consts, [(out, ref)])


CASES: dict[str, Callable[[Accelerator, TritonWorkloadConfig], Case]] = {
    "vector_add": vector_add_case,
    "softmax": softmax_case,
    "matmul": matmul_case,
    "layer_norm": layer_norm_case,
    "decode_attention": decode_attention_case,
}

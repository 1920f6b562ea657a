"""The decoder layer's own kernels (RMSNorm, rotary, KV append, SiLU·up, residual add)
equal their torch references, on sizes that are not multiples of their blocks, so
every masked tail is exercised; one accelerator (topology=small, VA) runs them all."""

from __future__ import annotations

import pytest
import torch
import triton

from kernbench.triton import Accelerator
from kernbench.triton import kernels as k


@pytest.fixture(scope="module")
def acc():
    with Accelerator(["topology=small", "address=va"]) as a:
        yield a


@pytest.fixture
def randn():
    gen = torch.Generator().manual_seed(7)
    return lambda *shape: torch.randn(*shape, generator=gen)


def test_rms_norm_on_odd_rows(acc, randn):
    rows, n, eps = 3, 300, 1e-6  # a 512 block, 212 elements masked off
    xs, ws = randn(rows, n), randn(n)
    x, w = acc.tensor(xs), acc.tensor(ws)
    y = acc.empty_like(x)
    acc.run(k.rms_norm, (rows,), x, w, y, n, n, eps, BLOCK_SIZE=triton.next_power_of_2(n))
    expected = xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + eps) * ws
    torch.testing.assert_close(acc.to_torch(y), expected)


def rotate_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's ``x * cos + rotate_half(x) * sin`` with cos and sin of one half."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def test_rotary_on_odd_heads_and_half_dims(acc, randn):
    # 3 tokens x 5 heads of 18 (halves of 9 in a block of 16), heads in blocks of 4;
    # written into a cache-like output with a gap between heads (stride 24 > 18)
    tokens, heads, half, gap = 3, 5, 9, 6
    dim = 2 * half
    xs, cos, sin = randn(tokens, heads * dim), randn(tokens, half), randn(tokens, half)
    x, c, s = acc.tensor(xs), acc.tensor(cos), acc.tensor(sin)
    out = acc.tensor(torch.zeros(tokens, heads, dim + gap))
    strides = (0, heads * dim, 0, heads * (dim + gap), dim + gap)
    grid = (tokens, triton.cdiv(heads, 4))
    acc.run(k.rotary, grid, x, out, c, s, *strides, heads, half, BLOCK_H=4, BLOCK=16)
    want = rotate_half(xs.view(tokens, heads, dim), cos[:, None], sin[:, None])
    got = acc.to_torch(out)
    torch.testing.assert_close(got[..., :dim], want)
    assert not got[..., dim:].any()  # the gap is untouched


def test_kv_append_writes_one_slot_per_head(acc, randn):
    # V of 2 tokens x 3 heads of 12 (in a block of 16) into slot 5 of a 7-slot cache
    tokens, heads, dim, slots, pos = 2, 3, 12, 7, 5
    xs = randn(tokens, 2 * heads * dim)  # K then V, as a fused projection leaves them
    x = acc.tensor(xs)
    cache = acc.tensor(torch.zeros(tokens, heads, slots, dim))
    args = (heads * dim, 2 * heads * dim, pos * dim, heads * slots * dim, slots * dim)
    grid = (tokens, triton.cdiv(heads, 2))
    acc.run(k.kv_append, grid, x, cache, *args, heads, dim, BLOCK_H=2, BLOCK=16)
    want = torch.zeros(tokens, heads, slots, dim)
    want[:, :, pos] = xs[:, heads * dim :].view(tokens, heads, dim)
    torch.testing.assert_close(acc.to_torch(cache), want)


def test_silu_mul_on_an_odd_length(acc, randn):
    n = 1001  # 4 blocks of 256, the last 23 elements long
    gate, up = randn(n), randn(n)
    g, u = acc.tensor(gate), acc.tensor(up)
    out = acc.empty_like(g)
    acc.run(k.silu_mul, (triton.cdiv(n, 256),), g, u, out, n, BLOCK_SIZE=256)
    torch.testing.assert_close(acc.to_torch(out), torch.nn.functional.silu(gate) * up)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_residual_add_in_place(acc, randn, dtype):
    n = 777
    xs, ys = randn(n).to(dtype), randn(n).to(dtype)
    x, y = acc.tensor(xs), acc.tensor(ys)
    acc.run(k.residual_add, (triton.cdiv(n, 256),), x, y, n, BLOCK_SIZE=256)
    torch.testing.assert_close(acc.to_torch(x), (xs.float() + ys.float()).to(dtype))
    torch.testing.assert_close(acc.to_torch(y), ys)  # the sublayer output is only read

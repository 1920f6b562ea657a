"""The supported subset of ``triton.language`` beyond the shipped kernels: values match
torch and each op issues the commands docs/how-to/triton.md says (reductions one MATH
each, index arithmetic and views nothing)."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernbench.runtime import DPPolicy  # noqa: E402
from kernbench.sim.metrics import record_dispatch  # noqa: E402
from kernbench.triton import Accelerator  # noqa: E402


@triton.jit
def _square(x):
    return x * x


@triton.jit
def ops_kernel(x_ptr, out_ptr, idx_ptr, cum_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :])  # 1 DMA (one run)
    y = _square(tl.exp2(x))  # 2 MATH (a user helper runs interpreted)
    t = tl.trans(y)  # view: nothing
    tl.store(out_ptr + cols[:, None] * R + rows[None, :], t)  # 1 DMA
    tl.store(idx_ptr + rows, tl.argmax(x, axis=1) // 2)  # 2 MATH (// once) + 1 DMA
    tl.store(cum_ptr + rows[:, None] * C + cols[None, :], tl.cumsum(x, axis=1))  # 1 + 1


def test_supported_ops_match_torch_and_issue_their_commands():
    acc = Accelerator(["topology=small", "address=la"], pes=1)
    policy = DPPolicy("column_wise", 1)
    r, c = 8, 16
    xs = torch.randn(r, c)
    x = acc.tensor(xs, policy)
    out = acc.empty((c, r), torch.float32, policy)
    idx = acc.empty((r,), torch.int32, policy)
    cum = acc.empty((r, c), torch.float32, policy)
    res = acc.run(ops_kernel, (1,), x, out, idx, cum, R=r, C=c)
    torch.testing.assert_close(acc.to_torch(out), (torch.exp2(xs) ** 2).T)
    assert torch.equal(acc.to_torch(idx), (xs.argmax(dim=1) // 2).to(torch.int32))
    torch.testing.assert_close(acc.to_torch(cum), xs.cumsum(dim=1))
    m = res.metrics
    assert (m["dma_commands"], m["math_commands"], m["gemm_commands"]) == (4, 5, 0)


@triton.jit
def tile_copy_kernel(src, dst, C: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    offs = rows[:, None] * C + cols[None, :]
    scale = tl.num_programs(0) * 10 + tl.num_programs(1)  # a scalar: no command
    tl.store(dst + offs, tl.load(src + offs) * scale)


def test_a_2d_grid_gives_each_program_its_ids():
    acc = Accelerator(["topology=small", "address=va"], mapping="block")
    xs = torch.randn(32, 48)
    x = acc.tensor(xs)
    out = acc.empty_like(x)
    res = acc.run(tile_copy_kernel, (4, 3), x, out, C=48, BM=8, BN=16)
    assert torch.equal(acc.to_torch(out), xs * 43)
    assert res.metrics["programs"] == 12
    assert res.metrics["math_commands"] == 12  # the one multiply per program


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr):
    i = tl.arange(0, B)[:, None, None] * M * M
    r = tl.arange(0, M)[None, :, None] * M
    c = tl.arange(0, M)[None, None, :]
    a = tl.load(a_ptr + i + r + c)
    b = tl.load(b_ptr + i + r + c)
    tl.store(c_ptr + i + r + c, tl.dot(a, b))


def test_a_batched_dot_is_one_gemm_with_the_batch_in_m():
    acc = Accelerator(["topology=small", "address=pa"], pes=1)
    policy = DPPolicy("column_wise", 1)
    a_host, b_host = torch.randn(2, 16, 16), torch.randn(2, 16, 16)
    a, b = acc.tensor(a_host, policy), acc.tensor(b_host, policy)
    c = acc.empty((2, 16, 16), torch.float32, policy)
    seen = record_dispatch(acc.system.pes[0]).issued  # the commands PE 0's CPU pushed
    acc.run(batched_dot_kernel, (1,), a, b, c, B=2, M=16)
    torch.testing.assert_close(acc.to_torch(c), a_host @ b_host)
    gemms = [(g.m, g.n, g.k) for g in seen if type(g).__name__ == "GemmCmd"]
    assert gemms == [(2 * 16, 16, 16)]


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def autotuned_double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def test_an_autotuned_kernel_runs_with_its_meta_parameters_given():
    acc = Accelerator(["topology=small"])
    xs = torch.randn(100)
    x = acc.tensor(xs)
    res = acc.run(autotuned_double, (2,), x, 100, BLOCK=64)
    assert torch.equal(acc.to_torch(x), xs * 2)
    assert res.metrics["programs"] == 2
    with pytest.raises(TypeError, match="is not a @triton.jit kernel"):
        acc.run(len, (1,), x)

"""The supported subset of ``triton.language`` beyond the shipped kernels: values match
torch and each op issues the commands the README says (reductions one MATH each,
index arithmetic and views nothing)."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from kernbench.runtime import DPPolicy  # noqa: E402
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

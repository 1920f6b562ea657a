"""Simulated time of Triton kernels, worked out from the config (DESIGN §3.2, §10).

One access of ``b`` bytes on a PE's own HBM holds the PE's HBM resource (half-duplex:
reads and writes share it) ``b / (N x channel bandwidth)`` (n:1: one link of N channels;
1:1: b/N on each of N channels), from when its bytes are there and the resource is free.
A write's bytes are there after its way out (``dma->router + router->HBM``); it
completes that way's latency, the drain and the HBM access after that. A read is a
round trip (DESIGN §13.1): its bytes leave HBM after its request's way out (no payload)
and the HBM access, and it completes the way back (``HBM->router + router->dma``, the
same latencies) after its bytes have drained, with nothing after.
Every command first costs its ADR-0064 dispatch on PE_CPU.
"""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

import torch  # noqa: E402

from kernbench.commands import (  # noqa: E402
    DmaReadCmd,
    DmaStridedReadCmd,
    DmaWriteCmd,
    GemmCmd,
    MathCmd,
    Tile,
)
from kernbench.runtime import DPPolicy  # noqa: E402
from kernbench.sim.metrics import record_dispatch  # noqa: E402
from kernbench.sim.system import System  # noqa: E402
from kernbench.triton import Accelerator, kernels  # noqa: E402
from kernbench.triton.accelerator import compose_config  # noqa: E402

ONE_PE = DPPolicy("column_wise", 1)


def one_pe(*overrides: str) -> Accelerator:
    return Accelerator(["topology=small", "sim.oplog=true", *overrides], pes=1)


def record_commands(acc: Accelerator) -> list:
    """Every command PE 0's scheduler accepts, in order: what its CPU paid for (the
    recorder is PE 0's cost model from now on)."""
    return record_dispatch(acc.system.pes[0]).issued


def vector_add(acc: Accelerator, n: int, block: int):
    xs, ys = torch.randn(n), torch.randn(n)
    x, y = acc.tensor(xs, ONE_PE), acc.tensor(ys, ONE_PE)
    out = acc.empty_like(x)
    grid = (-(-n // block),)
    res = acc.run(kernels.vector_add, grid, x, y, out, n, BLOCK_SIZE=block)
    assert torch.equal(acc.to_torch(out), xs + ys)
    return res


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("mapping", ["n_to_one", "one_to_one"])
@pytest.mark.parametrize("model", ["pa", "la"])
def test_vector_add_on_one_pe_equals_its_closed_form(model, mapping, pes):
    """One program per PE on its own shard (2 PEs: the same, side by side)."""
    acc = Accelerator(["topology=small", f"address={model}", f"channel_mapping={mapping}"])
    acc.pes = pes
    n = 4096  # per program: load x, load y, add, store; fp32
    xs, ys = torch.randn(pes * n), torch.randn(pes * n)
    policy = DPPolicy("column_wise", pes)
    x, y = acc.tensor(xs, policy), acc.tensor(ys, policy)
    out = acc.empty_like(x)
    res = acc.run(kernels.vector_add, (pes,), x, y, out, pes * n, BLOCK_SIZE=n)
    assert torch.equal(acc.to_torch(out), xs + ys)
    topo = acc.system.cfg.topology
    mm, links, pe, cost = topo.cube.memory_map, topo.links, topo.pe, topo.pe.attrs.pe_cost_model
    bw = acc.system.graph.channels_per_pe * mm.hbm_channel_bw_gbs  # the PE's HBM bandwidth
    drain = n * 4 / bw
    way = links.dma_router_latency_ns + links.router_hbm_latency_ns  # out, or back: 6 ns
    read_latency = way + mm.hbm_access_latency_ns + way  # 52 ns besides the drain
    write_latency = way + mm.hbm_access_latency_ns  # 46 ns
    tile = Tile(0, (n,), 4)
    dispatch_dma = cost.fixed_per_cmd_cycles + DmaReadCmd(0, 1, tile).logical_bytes * (
        cost.byte_cycles_recip
    )
    dispatch_ns = dispatch_dma / cost.clock_freq_ghz
    add_ns = n / (pe.math_elems_per_cycle * pe.clock_ghz)
    # x is issued after the first dispatch and its bytes leave HBM 6 + 40 ns later; y is
    # issued one dispatch later, so its bytes are ready before x's have drained, and
    # the two reads' bytes drain back to back; y completes 6 ns (the way back) after
    # its last byte; the add waits for y; the store (dispatched long before) waits for
    # the add, then pays its way out, its drain and the access. Hence: one dispatch + 3
    # drains + a read's and a write's latencies + the add: 39 + 192 + 52 + 46 + 64 =
    # 393 ns (was 387, when a read paid 46 ns like a write).
    assert 2 * dispatch_ns <= dispatch_ns + drain  # y queues behind x (precondition)
    expected = dispatch_ns + 3 * drain + read_latency + write_latency + add_ns
    assert expected == 393
    assert res.kernel_latency_ns == expected
    assert res.metrics["bytes_moved"] == pes * 3 * n * 4
    cycles = 3 * dispatch_dma + cost.fixed_per_cmd_cycles
    cycles += MathCmd("add", (tile, tile), tile).logical_bytes * cost.byte_cycles_recip
    assert res.metrics["dispatch_cycles_total"] == pes * cycles
    # busy time / latency: DMA has x and y in flight from x's issue to y's end, then the
    # store: 52 + 2 drains, then 46 + a drain
    util = {k: res.metrics[f"{k}_utilization"] for k in ("cpu", "dma", "gemm", "math")}
    assert util == {
        "cpu": cycles / cost.clock_freq_ghz / expected,
        "dma": (3 * drain + read_latency + write_latency) / expected,
        "gemm": 0.0,
        "math": add_ns / expected,
    }
    assert res.metrics["bottleneck"] == "dma"


def test_a_masked_tail_moves_exactly_the_unmasked_bytes():
    acc = one_pe("address=va")
    seen = record_commands(acc)
    n, block = 1500, 1024  # program 1 holds 476 live elements of 1024
    res = vector_add(acc, n, block)
    assert res.metrics["bytes_moved"] == 3 * n * 4
    again = vector_add(acc, n, block)  # a second launch on the same system counts its own
    assert again.metrics["bytes_moved"] == 3 * n * 4
    dma = [c for c in seen if isinstance(c, (DmaReadCmd, DmaWriteCmd))]
    assert [c.nbytes for c in dma] == ([block * 4] * 3 + [(n - block) * 4] * 3) * 2


def test_a_fully_masked_block_moves_nothing():
    acc = one_pe("address=pa")
    seen = record_commands(acc)
    n = 1024
    x = acc.tensor(torch.randn(n), ONE_PE)
    out = acc.empty_like(x)
    res = acc.run(kernels.vector_add, (2,), x, x, out, 0, BLOCK_SIZE=n)  # n_elements = 0
    assert res.metrics["bytes_moved"] == 0
    assert [type(c) for c in seen] == [MathCmd, MathCmd]  # only the two programs' adds
    assert torch.equal(acc.to_torch(out), torch.zeros(n))


def test_a_matrix_tile_is_one_strided_descriptor_per_operand():
    ranges: dict[int, tuple] = {}  # every DMA stage's device range, from its requests

    def trace(pe, stage, issue, request, begin, done):
        ranges.setdefault(id(stage), (stage, stage.addr, stage.nbytes))  # holds the stage

    cfg = compose_config(["topology=small", "sim.oplog=true", "address=la"])
    acc = Accelerator(system=System(cfg, trace=trace), pes=1)
    seen = record_commands(acc)
    dma = acc.system.pes[0].dma
    m = n = k = 64
    a_host, b_host = torch.randn(m, k), torch.randn(k, n)
    a, b = acc.tensor(a_host, ONE_PE), acc.tensor(b_host, ONE_PE)
    c = acc.empty((m, n), torch.float32, ONE_PE)
    blocks = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1}
    strides = (*a.stride(), *b.stride(), *c.stride())
    acc.run(kernels.matmul, (4,), a, b, c, m, n, k, *strides, **blocks)
    torch.testing.assert_close(acc.to_torch(c), a_host @ b_host)
    strided = [x for x in seen if isinstance(x, DmaStridedReadCmd)]
    # per program: A tile 32 rows x 64 fp32 = 256 B, rows 256 B apart -> contiguous (one
    # plain run of 8 KiB); B tile 64 rows x 32 fp32 = 128 B at a 256 B stride -> strided
    assert [(x.rows, x.row_bytes, x.stride_bytes) for x in strided] == [(64, 128, 256)] * 4
    plain = [x for x in seen if isinstance(x, DmaReadCmd)]
    assert [x.nbytes for x in plain] == [32 * 64 * 4] * 4
    # the strided descriptor's rows are DMA stages of the scheduler, one per B row
    b_lo = b.runtime.shard_ptr(0)
    stages = [(addr, nbytes) for _, addr, nbytes in ranges.values()]
    b_stages = [st for st in stages if b_lo <= st[0] < b_lo + k * n * 4]
    b_rows = [(x.src_addr + r * 256, 128) for x in strided for r in range(64)]
    assert sorted(b_stages) == sorted(b_rows)
    assert dma.bytes_moved == 4 * (32 * 64 * 4 + 64 * 32 * 4 + 32 * 32 * 4)
    # each GEMM waits for its B tile: it retires a GEMM's duration or more after the
    # strided read before it (read-after-write on the tile the descriptor fills)
    pe = acc.system.cfg.topology.pe
    gemm_ns = 2 * 32 * 32 * 64 / (pe.gemm_flops_per_cycle * pe.clock_ghz)
    retired = [(t, kind) for t, _, ev, _, kind in acc.system.oplog.entries if ev == "retire"]
    b_done = [t for t, kind in retired if kind == "DmaStridedReadCmd"]
    g_done = [t for t, kind in retired if kind == "GemmCmd"]
    assert all(g >= b + gemm_ns for g, b in zip(g_done, b_done, strict=True))
    # one K step: the GEMM starts the accumulator (tl.zeros is no command)
    gemms = [x for x in seen if isinstance(x, GemmCmd)]
    assert [(g.m, g.n, g.k, g.accumulate) for g in gemms] == [(32, 32, 64, False)] * 4


def test_a_k_loop_accumulates_in_place():
    acc = one_pe("address=pa")
    seen = record_commands(acc)
    m = n = 32
    k = 96
    a_host, b_host = torch.randn(m, k), torch.randn(k, n)
    a, b = acc.tensor(a_host, ONE_PE), acc.tensor(b_host, ONE_PE)
    c = acc.empty((m, n), torch.float32, ONE_PE)
    blocks = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1}
    acc.run(kernels.matmul, (1,), a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), **blocks)
    torch.testing.assert_close(acc.to_torch(c), a_host @ b_host)
    gemms = [x for x in seen if isinstance(x, GemmCmd)]
    assert [g.accumulate for g in gemms] == [False, True, True]
    assert len({g.out.id for g in gemms}) == 1  # acc = tl.dot(a, b, acc): one tile

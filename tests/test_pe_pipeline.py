"""PE_CPU / PE_SCHEDULER behaviour with times computed by hand.

Default PE: GEMM 4096 flop/cycle at 1 GHz; a local DMA read is a round trip (DESIGN
§13.1): its request goes out over 6 ns of links with no payload, the HBM pays its 40 ns
access, the bytes come back over 6 ns of links and drain at 256 GB/s, nothing after the
last byte: a 4 KiB read completes 6 + 40 + 6 + 16 = 68 ns after issue.
"""

from __future__ import annotations

import dataclasses

from kernbench import tl
from kernbench.commands import DmaReadCmd, Tile
from kernbench.runtime import DPPolicy
from kernbench.sim.cost_model import DispatchCostModel
from tests.support import make_cfg, make_system

K_BYTES = 256 * 128 * 2  # a (256 x 128) fp16 block: 65536 B


def composite_kernel(kref_ptr, tiles):
    q = tl.zeros((64, 128))
    s = tl.zeros((64, 256))
    k = tl.block(kref_ptr, (256, 128))
    tl.composite(tl.op("gemm", a=q, b=k, out=s, m=64, n=256, k=128), tiles=tiles)


def test_tiled_composite_overlaps_dma_and_compute():
    system, ctx = make_system()
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    pe0 = [system.graph.pes[0]]
    ends = ctx.launch(composite_kernel, pe0, src.shard_ptr(0), 4)
    gemm_ns = 2 * 64 * 256 * 128 / 4096  # 1024 ns in all, 256 per tile
    read_ns = 6 + 40 + 6 + (K_BYTES / 4) / 256  # one 16 KiB chunk: 116 ns
    serial = 4 * read_ns + gemm_ns  # 1488 ns if stages ran one after another
    # Overlapped: the first chunk's read, then the GEMM engine never waits again (the
    # second chunk is in at 116 + 64, each later one 116 ns after its buffer frees at
    # the end of a 256 ns GEMM, well before that GEMM's successor ends).
    assert ends[0] - 0 == read_ns + gemm_ns == 1140
    assert ends[0] < serial
    assert system.pes[0].dma.stages_done == 4
    assert system.pes[0].engines["gemm"].stages_done == 4


def two_loads(ptr):
    tl.load(ptr, (4096,), dtype_bytes=1)
    tl.load(ptr + 4096, (4096,), dtype_bytes=1)


def _run_two_loads(depth):
    cfg = make_cfg(zero_cost=False)
    cfg.topology.pe = dataclasses.replace(cfg.topology.pe, scheduler_queue_depth=depth)
    system, ctx = make_system(cfg)
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    return ctx.launch(two_loads, [system.graph.pes[0]], src.shard_ptr(0))[0]


def test_queue_depth_one_makes_the_cpu_wait_for_the_queue():
    t = Tile(0, (4096,), 1)
    dispatch = DispatchCostModel(32, 0.25, 1.0).dispatch_ns(DmaReadCmd(0, 4096, t))
    assert dispatch == 32 + 28 * 0.25 == 39  # a DmaReadCmd is 28 logical bytes
    # Depth 2: load 1 issues at 39, load 2 at 78; load 1's bytes are back by
    # 39 + 68 = 107, before load 2's leave HBM at 78 + 46 = 124: no wait, 78 + 68.
    assert _run_two_loads(depth=2) == 78 + 68 == 146
    # Depth 1: load 2 is ready at 78 but waits for load 1 to retire at 39 + 68 = 107.
    assert _run_two_loads(depth=1) == 107 + 68 == 175


def test_cpu_runs_ahead_of_the_engines():
    cfg = make_cfg(zero_cost=False)
    system, ctx = make_system(cfg)
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))

    def many_loads(ptr):
        for i in range(8):
            tl.load(ptr + i * 65536, (65536,), dtype_bytes=1)

    end = ctx.launch(many_loads, [system.graph.pes[0]], src.shard_ptr(0))[0]
    cpu = system.pes[0].cpu
    assert cpu.busy_ns == 8 * 39
    # The HBM is the bottleneck: the first load issues at 39 and its bytes leave HBM at
    # 39 + 6 + 40; each later load is issued 39 ns after the one before, long before
    # HBM has carried that one's 256 ns of bytes, so HBM carries the 8 back to back;
    # the last byte reaches the DMA 6 ns later.
    assert end == 39 + 6 + 40 + 8 * 65536 / 256 + 6 == 2139


def test_dependent_math_waits_for_its_load():
    system, ctx = make_system()
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))

    def load_then_exp(ptr):
        x = tl.load(ptr, (64, 32))  # 4096 B fp16
        tl.exp(x)

    end = ctx.launch(load_then_exp, [system.graph.pes[0]], src.shard_ptr(0))[0]
    # the 4 KiB load (68 ns), then 2048 elements at 64 per cycle
    assert end == 68 + 64 * 32 / 64 == 100

"""Per-PE figures averaged over PEs whose times differ (issue 12).

In today's workloads every PE ends together, so "each PE's own time" and "the slowest
PE's time", or a mean and a max over PEs, give the same numbers. Here they differ.
"""

from __future__ import annotations

from kernbench import tl
from kernbench.sim.metrics import mean_utilization, utilization
from kernbench.sim.system import System
from kernbench.topology.routes import MemoryRoutes
from kernbench.workloads import stream
from tests.support import make_cfg, make_system


def test_stream_effective_bandwidth_is_the_mean_of_each_pes_own():
    """PE0's HBM is held by a 25600 B write booked before the stream starts (100 ns at
    256 GB/s); PE1's is free. Each reads two 4 KiB accesses (16 ns of drain each). The
    reservation model books the 25600 B outside any run, which a flow cannot do.

    A read is a round trip (DESIGN §13.1): both of a PE's reads are ready at 6 out +
    40 = 46 ns, and their bytes come back over the PE's HBM, the half-duplex resource the
    write holds until 100 (they no longer cross the DMA->router link the write holds
    too), so PE0's bytes start at 100 and 116: done at 116 + 16 + 6 back = 138 ns (was
    100 + 32 + 6 + 40 = 178: the first 46 ns of the round trip now overlap the write's
    hold). PE1's start at 46 and 62: done at 84 (was 78)."""
    cfg = make_cfg(access_bytes=4096, bytes_per_pe=8192, active_pes=2, outstanding=2,
                   fabric="reservation")  # fmt: skip
    system = System(cfg)
    mm = cfg.topology.cube.memory_map
    bw = mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs
    busy = 25600 / bw  # 100 ns
    pe0 = system.graph.pes[0]
    system.fabric.book(
        [(pe0.agg_router, 0, 25600, -1)], MemoryRoutes(system.router, pe0.node("dma")), 0.0
    )
    row = stream.run(system, cfg.workload)
    lk = cfg.topology.links
    way = lk.dma_router_latency_ns + lk.router_hbm_latency_ns  # 6 ns each way
    ready = way + mm.hbm_access_latency_ns  # 46 ns: out and served
    end0 = max(busy, ready) + 2 * 4096 / bw + way  # 138 ns: the second waits for the first
    end1 = ready + 2 * 4096 / bw + way  # 84 ns
    assert (end0, end1) == (138, 84)
    assert row["sim_time_ns"] == end0
    assert row["mean_pe_bw_gbs"] == (8192 / end0 + 8192 / end1) / 2
    assert row["aggregate_bw_gbs"] == 2 * 8192 / end0


def gemms(count_by_program):
    a, b = tl.zeros((64, 128)), tl.zeros((128, 128))
    for _ in range(count_by_program[tl.program_id(0)]):
        tl.dot(a, b)


def test_mean_utilization_averages_pes_with_different_busy_times():
    system, ctx = make_system()
    pes = [system.graph.pes[0], system.graph.pes[1]]
    ends = ctx.launch(gemms, pes, {0: 2, 1: 1})
    gemm_ns = 2 * 64 * 128 * 128 / 4096  # 512 ns
    latency = ends[0]
    assert latency == 2 * gemm_ns and ends[1] == gemm_ns
    units = [system.pes[0], system.pes[1]]
    assert [utilization(u, latency)["gemm_utilization"] for u in units] == [1.0, 0.5]
    assert mean_utilization(units, latency)["gemm_utilization"] == 0.75

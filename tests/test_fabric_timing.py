"""Exact DMA times on the default topology, computed by hand from DESIGN §3.2 and §13.1.

Default links: DMA->router 2 ns, router->HBM 4 ns, HBM access 40 ns, PE<->NOC 5 ns at
128 GB/s, NOC->router 3 ns, NOC<->NOC 20 ns at 64 GB/s; 8 channels x 32 GB/s = 256 GB/s
per PE on the aggregate (n:1) path. Dispatch cost is zero here so the fabric stands alone.

Every test here reads, and a read is a round trip (DESIGN §13.1): its request goes out
with no payload (the route's latency), the memory pays its 40 ns access, and the bytes
come back over the twins of the route's links (the same latencies, in reverse), done
at the last byte: ``issue + way + 40 + way + n / min bw``. (It used to be
``issue + way + n / min bw + 40``, with the bytes on the way out: each figure below
was one way's latency lower.)
"""

from __future__ import annotations

from kernbench import tl
from kernbench.runtime import DPPolicy
from tests.support import make_system

KIB4 = 4096


def read_kernel(src, owner_of_shard, nbytes, count):
    """Program p reads ``count`` blocks of ``nbytes`` from shard ``owner_of_shard[p]``."""
    base = src.shard_ptr(owner_of_shard[tl.program_id(0)])
    for i in range(count):
        tl.load(base + i * nbytes, (nbytes,), dtype_bytes=1)


def run_reads(pes, owners, nbytes=KIB4, count=1):
    system, ctx = make_system()
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    grid = [system.graph.pes[i] for i in pes]
    return system, ctx.launch(read_kernel, grid, src, owners, nbytes, count)


def test_4k_read_on_aggregate_path_drains_in_16ns_plus_path_latency():
    system, ends = run_reads([0], {0: 0})
    way = 2 + 4  # DMA -> agg_router -> hbm_ctrl, and back
    assert ends == {0: way + 40 + way + 4096 / 256}  # 68 ns (was 6 + 16 + 40 = 62)
    # the aggregate link back to the DMA was held for the drain alone: 4096 B at
    # 8 x 32 GB/s = 16 ns; the payload-free request left the way out idle
    agg = system.graph.link("sip0.cube0.pe0.agg_router", "sip0.cube0.pe0.dma")
    out = system.graph.link("sip0.cube0.pe0.dma", "sip0.cube0.pe0.agg_router")
    assert system.fabric.busy_ns()[agg.id] == 16
    assert system.fabric.busy_ns()[out.id] == 0


def test_two_reads_on_same_link_finish_16ns_apart():
    system, ctx = make_system()
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    ends = ctx.launch(read_kernel, [system.graph.pes[0]], src, {0: 0}, KIB4, 2)
    # both issue at 0; the second's bytes, ready at 52 too, wait for the first's to
    # leave the link back: 68 + 16 (was 62 + 16 = 78)
    assert ends == {0: 84.0}
    agg = system.graph.link("sip0.cube0.pe0.agg_router", "sip0.cube0.pe0.dma")
    assert system.fabric.bytes_carried[agg.id] == 2 * KIB4


def test_two_pes_on_their_own_hbm_paths_do_not_delay_each_other():
    _, ends = run_reads([0, 1], {0: 0, 1: 1})
    assert ends == {0: 68.0, 1: 68.0}  # each as if alone: 6 + 40 + 6 + 16


def test_remote_pe_read_crosses_the_noc():
    system, ends = run_reads([0], {0: 1})
    # out: pe0.dma -> noc (5 ns) -> pe1.agg_router (3) -> hbm_ctrl (4); the access;
    # back the same way, the bytes at the NOC -> PE link's 128 GB/s
    way = 5 + 3 + 4
    assert ends == {0: way + 40 + way + 4096 / 128}  # 96 ns (was 12 + 32 + 40 = 84)
    route = system.router.to_memory("sip0.cube0.pe0.dma", "sip0.cube0.pe1.agg_router")
    assert route.nodes == (
        "sip0.cube0.pe0.dma",
        "sip0.cube0.noc",
        "sip0.cube0.pe1.agg_router",
        "sip0.cube0.hbm_ctrl",
    )
    back = system.router.from_memory("sip0.cube0.pe0.dma", "sip0.cube0.pe1.agg_router")
    assert back.nodes == route.nodes[::-1]
    assert (back.latency_ns, back.min_bw_gbs, back.request_ns) == (way, 128, way)


def test_cross_cube_read_crosses_the_noc_to_noc_link():
    system, ends = run_reads([0], {0: 8})  # global PE 8 = sip0.cube1.pe0
    # pe0.dma -> cube0.noc (5) -> cube1.noc (20) -> pe0.agg_router (3) -> hbm (4); the
    # access; back the same way, the bytes at the cube1 -> cube0 NOC link's 64 GB/s
    way = 5 + 20 + 3 + 4
    assert ends == {0: way + 40 + way + 4096 / 64}  # 168 ns (was 32 + 64 + 40 = 136)
    route = system.router.to_memory("sip0.cube0.pe0.dma", "sip0.cube1.pe0.agg_router")
    assert route.nodes[1:3] == ("sip0.cube0.noc", "sip0.cube1.noc")
    back = system.router.from_memory("sip0.cube0.pe0.dma", "sip0.cube1.pe0.agg_router")
    assert back.nodes[-3:-1] == ("sip0.cube1.noc", "sip0.cube0.noc")


def test_one_to_one_4k_aligned_read_spreads_over_8_channels_in_the_same_16ns():
    from tests.support import make_cfg

    system, ctx = make_system(make_cfg(one_to_one=True))
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    ends = ctx.launch(read_kernel, [system.graph.pes[0]], src, {0: 0}, KIB4, 1)
    # 8 x 512 B at 32 GB/s each, side by side: 16 ns, after 6 out, 40, 6 back
    assert ends == {0: 2 + 4 + 40 + 4 + 2 + 512 / 32}  # 68 ns (was 6 + 16 + 40 = 62)
    for ch in range(8):  # each channel's bytes leave HBM on the link back out of it
        lk = system.graph.link("sip0.cube0.hbm_ctrl", f"sip0.cube0.pe0.ch_r{ch}")
        assert system.fabric.bytes_carried[lk.id] == 512

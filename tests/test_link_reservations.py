"""Link holding on the fabric: fractional times and one booking at a time (issue 12).

Default topology, PA, dispatch free: a local read on the aggregate (n:1) path holds the
PE's DMA->router link for ``bytes / (8 x 32 GB/s)``, then pays 2 + 4 ns of links and
40 ns of HBM access. 100 B take 0.390625 ns: a hold time truncated to whole
nanoseconds would let the second of two reads start at once.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.sim.fabric import Fabric
from kernbench.topology.graph import build_graph
from kernbench.topology.routes import MemoryRoutes, Router
from tests.address_support import launch_reads
from tests.support import make_cfg, make_system


def test_two_100_byte_reads_back_to_back_end_at_a_fractional_time():
    cfg = make_cfg()
    system, ctx = make_system(cfg)
    t = ctx.deploy(1 << 20)
    lk, mm = cfg.topology.links, cfg.topology.cube.memory_map
    hold = 100 / (mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs)  # 0.390625 ns
    one = lk.dma_router_latency_ns + lk.router_hbm_latency_ns + hold + mm.hbm_access_latency_ns
    ptr = t.shard_ptr(0)
    ends = launch_reads(system, ctx, [0], {0: [ptr, ptr + 100]}, 100)
    assert ends == {0: hold + one} == {0: 46.78125}


# Many PEs onto two targets, close together: requests queue on shared links and leave
# idle stretches (holes) that later requests of other sizes try to fill.
requests = st.lists(
    st.tuples(st.integers(0, 15), st.integers(0, 1), st.integers(1, 1 << 16), st.floats(0, 50)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(reqs=requests)
def test_reservations_on_one_link_never_overlap(reqs):
    """Each link carries one request at a time: a reservation lasts bytes / bandwidth,
    and on one link, taken in order of start time (a later booking may fill an idle
    stretch an earlier one left: fabric.py), none starts before the previous one ends."""
    graph = build_graph(make_cfg().topology)
    router, fabric = Router(graph), Fabric(graph, 40.0, record=True)
    now = 0.0
    for src, dst, nbytes, gap in reqs:
        now += gap
        s, d = graph.pes[src], graph.pes[dst]
        fabric.book([(d.agg_router, 0, nbytes, -1)], MemoryRoutes(router, s.node("dma")), now)
    by_link: dict[int, list[tuple[float, float]]] = {}
    for link, start, end, nbytes in fabric.reservations:
        assert end == start + nbytes / graph.links[link].bw_gbs
        by_link.setdefault(link, []).append((start, end))
    for spans in by_link.values():
        spans.sort()
        for (_, prev_end), (start, _) in itertools.pairwise(spans):
            assert start >= prev_end

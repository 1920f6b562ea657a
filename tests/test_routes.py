"""Routes found by one search per source equal the routes a search per (source,
destination) pair finds, which stops at its destination (kernbench.topology.routes)."""

from __future__ import annotations

import heapq

import pytest

from kernbench.topology.graph import DATA, TopologyGraph
from kernbench.topology.routes import Router
from tests.test_fair_properties import topology


def pairwise(graph: TopologyGraph, src: str, dst: str) -> tuple[tuple[int, ...], float] | None:
    """The route by a search that stops when it pops ``dst``: least latency, then fewest
    hops, then node name; a DMA engine, an HBM router or an HBM controller is never a
    transit hop (traffic ends there: the links back out of HBM are for reads' data)."""
    heap: list[tuple[float, int, str, tuple[int, ...]]] = [(0.0, 0, src, ())]
    seen: set[str] = set()
    while heap:
        lat, hops, node, path = heapq.heappop(heap)
        if node == dst:
            return path, lat
        endpoint = node.endswith((".dma", ".hbm_ctrl", ".agg_router")) or ".ch_r" in node
        if node in seen or (node != src and endpoint):
            continue
        seen.add(node)
        for lk in graph.out_links[node]:
            if lk.plane == DATA and lk.dst not in seen:
                heapq.heappush(heap, (lat + lk.latency_ns, hops + 1, lk.dst, path + (lk.id,)))
    return None


@pytest.mark.parametrize("shape", [(8, 2, 8, True), (2, 4, 2, True, 2), (3, 1, 1, False)])
def test_every_route_equals_the_search_that_stops_at_its_destination(shape):
    g = topology(*shape)
    router = Router(g)
    sources = [pe.node("dma") for pe in g.pes]
    nodes = sorted(g.out_links)
    for src in sources:
        for dst in nodes:
            want = pairwise(g, src, dst)
            if want is None:
                with pytest.raises(KeyError, match=f"no data route from {src} to {dst}"):
                    router.route(src, dst)
                continue
            route = router.route(src, dst)
            assert (route.link_ids, route.latency_ns) == want
            assert route.nodes == (src, *(g.links[i].dst for i in route.link_ids))
            assert route.min_bw_gbs == min(
                (g.links[i].bw_gbs for i in want[0]), default=float("inf")
            )


@pytest.mark.parametrize("shape", [(8, 2, 8, True), (2, 4, 2, True, 2), (3, 1, 1, False)])
def test_a_reads_data_comes_back_over_the_twins_of_its_requests_links(shape):
    """A read's way back (DESIGN §13.1) is its request's way out reversed, link by
    link over the link between the same two nodes the other way, with the same
    latency; its HBM link shares one resource with the way out's (half-duplex), every
    other link is a resource of its own (duplex)."""
    g = topology(*shape)
    router = Router(g)
    for pe in g.pes:
        for target in g.pes:
            for hbm_router in g.routers(target):
                out = router.to_memory(pe.node("dma"), hbm_router)
                back = router.from_memory(pe.node("dma"), hbm_router)
                assert back.reads and not out.reads
                assert back.nodes == out.nodes[::-1]
                pairs = zip(back.link_ids, reversed(out.link_ids), strict=True)
                for b, o in pairs:
                    there, home = g.links[o], g.links[b]
                    assert (home.src, home.dst) == (there.dst, there.src)
                    assert home.latency_ns == there.latency_ns
                    assert home.bw_gbs == there.bw_gbs
                    hbm = there.dst.endswith(".hbm_ctrl")
                    assert (home.resource == there.resource) == hbm
                assert back.latency_ns == out.latency_ns == back.request_ns
                assert back.min_bw_gbs == out.min_bw_gbs

"""Routes from the hierarchy equal the graph search's, on every route a workload uses
(kernbench.topology.routes, kernbench.topology.layout).

The reference (tests/graph_reference.py) is the first design: the graph built node by
node and link by link, one shortest-path search per source. On each topology below
the graph's links made from ids equal the reference's one by one, and every DMA's
route to every HBM router (a write's way out, a read's way back) equals the route the
search found: link ids, latency, narrowest bandwidth, nodes, resources. A property
test then holds routes to the definition on random link latencies: a path over real
links from the DMA into the router's HBM, of the least latency any path has.
"""

from __future__ import annotations

import dataclasses
import heapq
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.config.schema import HbmMappingMode, LinksConfig, TopologyConfig
from kernbench.topology.graph import DATA, build_graph
from kernbench.topology.routes import Route, Router
from tests import graph_reference as ref
from tests.support import make_cfg

LATENCY_KEYS = [
    "dma_router_latency_ns",
    "router_hbm_latency_ns",
    "pe_noc_latency_ns",
    "noc_router_latency_ns",
    "noc_noc_latency_ns",
    "pcie_latency_ns",
]


def topology(
    sips: int, cubes: int, pes: int, channels: int, one_to_one: bool, **latencies: float
) -> TopologyConfig:
    """The default topology reshaped, with some link latencies set."""
    topo = dataclasses.replace(
        make_cfg().topology, n_sips=sips, cubes_per_sip=cubes, pes_per_cube=pes
    )
    topo.links = dataclasses.replace(LinksConfig(), **latencies)
    topo.cube = dataclasses.replace(topo.cube)
    mm = topo.cube.memory_map = dataclasses.replace(topo.cube.memory_map)
    mm.hbm_pseudo_channels, mm.hbm_channels_per_pe = channels * pes, channels
    mm.hbm_mapping_mode = HbmMappingMode.one_to_one if one_to_one else HbmMappingMode.n_to_one
    return topo


# (id, topology, VA: with PE MMUs)
TOPOLOGIES = [
    ("default n:1", topology(1, 2, 8, 8, False), False),
    ("default 1:1 VA", topology(1, 2, 8, 8, True), True),
    ("small 1:1", topology(1, 2, 2, 8, True), False),
    ("2 SIPs", topology(2, 2, 2, 2, True), True),
    ("4 cubes x 4 PEs", topology(1, 4, 4, 4, True), False),
    ("odd channels 3x3x1x5", topology(3, 3, 1, 5, True), True),
    ("odd channels n:1", topology(3, 3, 3, 3, False), False),
    (
        "slow latencies",
        topology(
            2,
            3,
            2,
            3,
            True,
            noc_noc_latency_ns=77.5,
            pcie_latency_ns=1.25,
            router_hbm_latency_ns=0.1,
        ),
        True,
    ),  # fmt: skip
    # summed out (0.1 + 0.2 + 0.3) and back (0.3 + 0.2 + 0.1) they differ in the last bit
    (
        "float order",
        topology(
            1,
            2,
            2,
            2,
            True,
            pe_noc_latency_ns=0.1,
            noc_router_latency_ns=0.2,
            router_hbm_latency_ns=0.3,
        ),
        False,
    ),  # fmt: skip
    (
        "zero latencies: hops decide",
        topology(2, 3, 2, 1, True, **dict.fromkeys(LATENCY_KEYS, 0.0)),
        False,
    ),
    # dma_router > pe_noc + noc_router: a PE reaches its own memory through the NOC
    ("own memory through the NOC", topology(2, 2, 3, 2, True, dma_router_latency_ns=8.5), True),
    ("own memory tie: direct", topology(1, 2, 3, 2, True, dma_router_latency_ns=8.0), False),
]


@pytest.mark.parametrize(
    ("topo", "mmu"), [t[1:] for t in TOPOLOGIES], ids=[t[0] for t in TOPOLOGIES]
)
def test_links_made_from_ids_equal_the_graph_built_link_by_link(topo, mmu):
    g, want = build_graph(topo, with_mmu=mmu), ref.build(topo, with_mmu=mmu)
    assert list(g.links) == want.links
    assert len(g.links) == len(want.links)
    assert g.layout.bandwidths() == [lk.bw_gbs for lk in want.links]
    assert [g.layout.bandwidth(lk.id) for lk in want.links] == [lk.bw_gbs for lk in want.links]
    assert dict(g.twin) == want.twin
    assert [g.layout.twin(i) for i in range(len(want.links))] == [
        want.twin.get(i, -1) for i in range(len(want.links))
    ]
    assert dict(g.hbm_link) == want.hbm_link
    assert list(g.pes) == want.pes
    assert [g.routers(pe) for pe in g.pes] == [want.routers(pe) for pe in want.pes]
    assert (g.nodes, g.out_links, g.endpoints) == (want.nodes, want.out_links, want.endpoints)
    for lk in want.links:
        assert g.link(lk.src, lk.dst) == lk
    # what the fair fabric leaves out of its solve: the first design's rule
    rule = {
        lk.resource
        for lk in want.links
        for router in [lk.dst if lk.dst in want.hbm_link else lk.src]
        if router in want.hbm_link
        and lk.resource != want.hbm_link[router].resource
        and lk.bw_gbs >= want.hbm_link[router].bw_gbs
    }
    assert {i for i in range(len(want.links)) if g.layout.never_binds(i)} == rule


@pytest.mark.parametrize(
    ("topo", "mmu"), [t[1:] for t in TOPOLOGIES], ids=[t[0] for t in TOPOLOGIES]
)
def test_every_route_of_every_dma_to_every_router_equals_the_search(topo, mmu):
    g, want = build_graph(topo, with_mmu=mmu), ref.build(topo, with_mmu=mmu)
    router = Router(g)
    routers = [r for pe in want.pes for r in want.routers(pe)]
    for pe in want.pes:
        src = pe.node("dma")
        tree = ref.search(want, src)
        for hbm_router in routers:
            out = ref.to_memory(want, tree, src, hbm_router)
            got = router.to_memory(src, hbm_router)
            assert not got.reads and fields(got) == fields(out)
            assert got.top_id == max(out.link_ids)  # the fabrics' lists reach it
            got = router.from_memory(src, hbm_router)
            assert got.reads and fields(got) == fields(ref.from_memory(want, out))
            assert got.top_id == max(got.link_ids)


def fields(route: Route | ref.Way) -> tuple:
    """Everything a route says, but whether it is a read's."""
    return (
        route.link_ids,
        route.latency_ns,
        route.min_bw_gbs,
        route.nodes,
        route.resources,
        route.request_ns,
    )


def test_own_memory_goes_through_the_noc_only_when_the_direct_port_is_slower():
    """Default latencies: the direct port (2 ns) against the NOC (5 + 3 ns)."""
    for dma_router, hops in ((2.0, 2), (8.0, 2), (8.5, 3)):
        g = build_graph(topology(1, 1, 2, 1, True, dma_router_latency_ns=dma_router))
        pe = g.pes[1]
        route = Router(g).to_memory(pe.node("dma"), g.routers(pe)[0])
        assert len(route.link_ids) == hops
        assert route.latency_ns == min(dma_router, 8.0) + 4.0


def test_a_name_that_is_no_dma_or_router_of_the_topology_is_refused():
    g = build_graph(topology(1, 2, 2, 2, True))
    router = Router(g)
    for src, dst in [
        ("sip0.cube0.pe0.dma", "sip0.cube0.pe0.ch_r9"),  # channel 9: no PE owns it
        ("sip0.cube0.pe0.dma", "sip0.cube0.pe1.ch_r0"),  # channel 0 is pe0's
        ("sip0.cube0.pe0.dma", "sip0.cube2.pe0.ch_r0"),  # no cube 2
        ("sip0.cube0.pe0.dma", "sip0.cube0.pe0.agg_router"),  # 1:1 has none
        ("sip0.cube0.pe0.gemm", "sip0.cube0.pe0.ch_r0"),
        ("sip1.cube0.pe0.dma", "sip0.cube0.pe0.ch_r0"),
        ("sip0.cube00.pe0.dma", "sip0.cube0.pe0.ch_r0"),
    ]:
        with pytest.raises(KeyError, match="is not a"):
            router.to_memory(src, dst)


def least_latency(g: ref.Graph, src: str) -> dict[str, float]:
    """Plain Dijkstra by latency alone (no transit through a DMA, router or HBM)."""
    best: dict[str, float] = {}
    heap = [(0.0, src)]
    while heap:
        lat, node = heapq.heappop(heap)
        if node in best:
            continue
        best[node] = lat
        if node != src and node in g.endpoints:
            continue
        for lk in g.out_links[node]:
            if lk.plane == DATA and lk.dst not in best:
                heapq.heappush(heap, (lat + lk.latency_ns, lk.dst))
    return best


latency = st.one_of(st.just(0.0), st.integers(0, 50).map(float), st.floats(0.0, 1000.0))


@settings(max_examples=40, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    one_to_one=st.booleans(),
    latencies=st.fixed_dictionaries(dict.fromkeys(LATENCY_KEYS, latency)),
)
def test_routes_are_shortest_by_latency_on_random_link_latencies(shape, one_to_one, latencies):
    topo = topology(*shape, one_to_one, **latencies)
    g, want = build_graph(topo), ref.build(topo)
    router = Router(g)
    links = want.links
    for pe in want.pes:
        src = pe.node("dma")
        best = least_latency(want, src)
        for target in want.pes:
            for hbm_router in want.routers(target):
                route = router.to_memory(src, hbm_router)
                path = [links[i] for i in route.link_ids]
                assert path[0].src == src and path[-1] == want.hbm_link[hbm_router]
                assert all(a.dst == b.src for a, b in zip(path, path[1:], strict=False))
                assert all(lk.plane == DATA for lk in path)
                total = 0.0
                for lk in path:
                    total += lk.latency_ns
                assert route.latency_ns == total
                shortest = best[hbm_router] + path[-1].latency_ns
                assert math.isclose(route.latency_ns, shortest, rel_tol=1e-12, abs_tol=1e-12)

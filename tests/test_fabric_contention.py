"""The fabric under contention: a request takes the earliest stretch in which every
link of its path is free (holes included), and no two reservations of a link overlap."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.sim.fabric import ReservationFabric as Fabric
from kernbench.topology.graph import build_graph
from kernbench.topology.routes import MemoryRoutes, Router
from tests.support import make_cfg

requests = st.lists(
    st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(1, 1 << 16), st.floats(0, 300)),
    min_size=1,
    max_size=40,
)


def book_all(reqs, one_to_one=False):
    """Book each (src PE, dst PE, bytes, gap) at a growing time; return the graph and,
    per request, (issue time, link ids, start) plus every reservation before it."""
    cfg = make_cfg(one_to_one=one_to_one)
    graph = build_graph(cfg.topology)
    router, fabric = Router(graph), Fabric(graph, 40.0, record=True)
    now, booked = 0.0, []
    for src, dst, nbytes, gap in reqs:
        now += gap
        s, d = graph.pes[src], graph.pes[dst]
        target = graph.routers(d)[nbytes % len(graph.routers(d))]
        routes = MemoryRoutes(router, s.node("dma"))
        before = list(fabric.reservations)
        fabric.book([(target, 0, nbytes, -1)], routes, now)
        links = routes[target].link_ids
        booked.append((now, links, fabric.reservations[len(before)][1], nbytes, before))
    return graph, fabric, booked


@settings(max_examples=60, deadline=None)
@given(reqs=requests)
def test_reservations_of_one_link_never_overlap(reqs):
    _, fabric, _ = book_all(reqs, one_to_one=True)
    by_link: dict[int, list[tuple[float, float]]] = {}
    for link, start, end, _ in fabric.reservations:
        by_link.setdefault(link, []).append((start, end))
    for spans in by_link.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end - 1e-9


@settings(max_examples=60, deadline=None)
@given(reqs=requests)
def test_each_request_starts_at_the_earliest_time_its_whole_path_is_free(reqs):
    """The earliest feasible start is the issue time or the end of an earlier
    reservation on the path; every such candidate before the chosen start must clash."""
    graph, _, booked = book_all(reqs)
    for now, links, start, nbytes, before in booked:
        assert start >= now
        held = {i: nbytes / graph.links[i].bw_gbs for i in links}
        prior = [(i, s, e) for i, s, e, _ in before if i in held]
        candidates = {now} | {e for _, _, e in prior if now <= e < start}
        for c in candidates - {start}:
            if c < start:
                assert any(s < c + held[i] and c < e for i, s, e in prior), (c, start)


def test_a_pe_waiting_on_its_own_link_leaves_the_shared_link_to_the_next_pe():
    """Two 4 KiB reads from PE 1 and one from PE 2, all to PE 0's memory (n:1), at 0 ns:
    PE 1's second read waits for its 128 GB/s PE->NOC link (32 ns) although PE 0's
    256 GB/s HBM link is free after 16 ns; PE 2's read takes that hole, 16..32 ns."""
    cfg = make_cfg()
    graph = build_graph(cfg.topology)
    router, fabric = Router(graph), Fabric(graph, 40.0, record=True)
    agg = graph.pes[0].agg_router
    lk = cfg.topology.links
    hbm_bw = 8 * cfg.topology.cube.memory_map.hbm_channel_bw_gbs
    drain = 4096 / lk.pe_noc_bw_gbs  # the narrowest link: 32 ns
    hold = 4096 / hbm_bw  # on the HBM link: 16 ns
    path = lk.pe_noc_latency_ns + lk.noc_router_latency_ns + lk.router_hbm_latency_ns
    pe1 = MemoryRoutes(router, graph.pes[1].node("dma"))
    pe2 = MemoryRoutes(router, graph.pes[2].node("dma"))
    assert fabric.book([(agg, 0, 4096, -1)] * 2, pe1, 0.0) == drain + path + drain + 40
    assert fabric.book([(agg, 0, 4096, -1)], pe2, 0.0) == hold + path + drain + 40
    hbm = graph.hbm_link[agg].id
    assert sorted((s, e) for i, s, e, _ in fabric.reservations if i == hbm) == [
        (0.0, hold),
        (hold, 2 * hold),
        (drain, drain + hold),
    ]

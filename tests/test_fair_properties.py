"""Invariants of the fair-share fabric (DESIGN §3.2) on random traffic and topologies.

The fabric is driven directly: random requests (a source PE, a target PE, one or
several of the target's routers, bytes, a gap, read or write) issued on the
pipelines' event queue. A read's bytes come back on the reverse links; HBM's two
directions are one resource, every other link's are two (DESIGN §13.1).
The solver's rates are checked after every recomputation (an injected observer):

- no link above its bandwidth;
- work conservation: every queue crosses a saturated link (none could go faster);
- max-min between requesters, age priority within one: a requester's queues, oldest
  first, start where the older ones froze (their rates summed), and each queue that
  drains crosses a saturated link on which no queue rose past its own freeze level.

Over a whole run: the rate stretches recorded on every resource (both directions of
a half-duplex HBM link summed) never add up to more than its bandwidth at any
instant, every byte issued drained on each link it crossed, in its direction, the fast path (queues
alone on their links booked arithmetically, turned into flows when they meet other
traffic) completes every request when the flow-only model does, and a rerun gives
the same completion times. The solver also equals a plain round-by-round
progressive filling (the DESIGN's steps, written out here) on random inputs.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.sim.events import LocalQueue, SimEnv
from kernbench.sim.fair_fabric import FairFabric
from kernbench.sim.fairshare import progressive_fill
from kernbench.timebase import TICK_NS
from kernbench.topology.graph import build_graph
from kernbench.topology.routes import MemoryRoutes, Router
from tests.support import Stages, make_cfg

TOL = 1e-9  # relative: sums of float rates


def topology(pes_per_cube: int, cubes: int, channels: int, one_to_one: bool, sips: int = 1):
    cfg = make_cfg(one_to_one=one_to_one)
    topo = dataclasses.replace(
        cfg.topology, pes_per_cube=pes_per_cube, cubes_per_sip=cubes, n_sips=sips
    )
    topo.cube.memory_map.hbm_pseudo_channels = channels * pes_per_cube
    topo.cube.memory_map.hbm_channels_per_pe = channels
    return build_graph(topo)


def drive(graph, reqs, fast=True, record=False, observer=None, whole=False, reuse=True):
    """Issue every ``(src, dst, channels, nbytes, gap, reads)`` at its time; return the
    fabric and each transfer's completion time."""
    env = SimEnv()
    events = LocalQueue(env)
    fabric = FairFabric(
        graph, 40.0, events, record=record, fast=fast, on_solve=observer, whole=whole,
        reuse=reuse,
    )  # fmt: skip
    pes = graph.pes
    routes = dma_routes(graph)
    stages = Stages(events)
    transfers = []

    def issue(k: int) -> None:
        src, dst, channels, nbytes, _, reads = reqs[k]
        target = pes[dst % len(pes)]
        routers = graph.routers(target)
        chosen = [routers[(channels + i) % len(routers)] for i in range(1 + channels % 3)]
        t = transfers[k]
        requests = [(r, 0, nbytes, -1) for r in chosen]
        end = fabric.start(requests, routes[src % len(pes), reads], events.now, t, stages.finish)
        if end is not None:
            events.schedule(end, stages.finish, t)

    now = 0.0
    for k, req in enumerate(reqs):
        transfers.append(stages.new())
        now += req[4]
        events.schedule(now, issue, k)
    events.run()
    return fabric, [stages.outcome(t).end for t in transfers]


def dma_routes(graph) -> dict[tuple[int, bool], MemoryRoutes]:
    """Each PE's DMA route tables, writes' and reads', by (PE index, reads)."""
    router = Router(graph)
    return {
        (pe.index, reads): MemoryRoutes(router, pe.node("dma"), reads)
        for pe in graph.pes
        for reads in (False, True)
    }


def check_rates(bw, queues, rates) -> None:
    """The solver's invariants on one recomputation (see the module docstring)."""
    load: dict[int, float] = defaultdict(float)
    for (_, links, _), rate in zip(queues, rates, strict=True):
        assert rate >= 0.0
        for lk in links:
            load[lk] += rate
    for lk, total in load.items():
        assert total <= bw[lk] * (1 + TOL), ("link above its bandwidth", lk, total, bw[lk])
    saturated = {lk for lk, total in load.items() if total >= bw[lk] * (1 - TOL)}
    # Freeze levels: a requester's queues, oldest first, each start where the older
    # ones froze; a queue with no rate never started.
    level: list[float] = []
    seen: dict[str, float] = defaultdict(float)
    for (who, _, _), rate in zip(queues, rates, strict=True):
        seen[who] += rate
        level.append(seen[who])
    for q, ((_, links, _), rate) in enumerate(zip(queues, rates, strict=True)):
        assert saturated.intersection(links), ("not work-conserving", q)
        if rate <= 0.0:
            continue
        slack = TOL * max(bw)
        bottleneck = [
            lk
            for lk in links
            if lk in saturated
            and all(
                level[p] <= level[q] + slack
                for p, (_, other, _) in enumerate(queues)
                if rates[p] > 0.0 and lk in other
            )
        ]
        assert bottleneck, ("no bottleneck: not max-min between requesters", q, queues, rates)


def check_segments(graph, segments) -> None:
    """The recorded stretches of every resource (a link, or both directions of a
    half-duplex HBM link) never add up past its bandwidth."""
    edges: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for links, t0, t1, rate in segments:
        for lk in links:
            edges[graph.links[lk].resource] += [(t0, rate), (t1, -rate)]
    for res, marks in edges.items():
        total = 0.0
        for _, delta in sorted(marks, key=lambda m: (m[0], m[1])):  # ends first
            total += delta
            bw = graph.links[res].bw_gbs
            assert total <= bw * (1 + TOL), ("resource above its bandwidth", res, total)


requests = st.lists(
    st.tuples(
        st.integers(0, 15),  # source PE
        st.integers(0, 15),  # target PE
        st.integers(0, 7),  # which of the target's routers, and how many (1-3)
        st.integers(1, 1 << 16),  # bytes
        st.sampled_from([0.0, 0.5, 3.0, 17.0, 100.0, 400.0]),  # gap before it
        st.booleans(),  # a read (its bytes come back) or a write
    ),
    min_size=1,
    max_size=40,
)
topologies = st.tuples(
    st.sampled_from([2, 4, 8]), st.sampled_from([1, 2]), st.sampled_from([2, 4, 8]), st.booleans()
)


@settings(max_examples=80, deadline=None)
@given(reqs=requests, topo=topologies)
def test_rates_after_every_recomputation_are_feasible_work_conserving_and_fair(reqs, topo):
    graph = topology(*topo)
    bw = [lk.bw_gbs for lk in graph.links]
    solves = []
    drive(graph, reqs, observer=lambda now, queues, rates: solves.append((queues, rates)))
    for queues, rates in solves:
        check_rates(bw, queues, rates)


@settings(max_examples=80, deadline=None)
@given(reqs=requests, topo=topologies)
def test_recomputing_only_what_changed_equals_solving_every_queue_each_time(reqs, topo):
    """Selective update is exact: a recomputation over the queues linked to what
    changed, through shared links or a shared requester (whose age order couples its
    queues), gives every request the completion a solve of every joined queue gives;
    and those whole solves are max-min fair between requesters across the fabric."""
    graph = topology(*topo)
    bw = [lk.bw_gbs for lk in graph.links]
    solves = []
    _, whole = drive(
        graph, reqs, whole=True, observer=lambda now, queues, rates: solves.append((queues, rates))
    )
    for queues, rates in solves:
        check_rates(bw, queues, rates)
    _, selective = drive(graph, reqs)
    assert selective == pytest.approx(whole, rel=1e-12, abs=1e-9)


# Bursts: many requests at one instant, so several components change together.
bursts = st.lists(
    st.tuples(
        st.integers(0, 15),
        st.integers(0, 15),
        st.integers(0, 7),
        st.sampled_from([256, 700, 4096, 1 << 14]),
        st.sampled_from([0.0, 0.0, 0.0, 2.0, 60.0]),
        st.booleans(),
    ),
    min_size=2,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(reqs=bursts, topo=topologies)
def test_a_fill_per_component_equals_one_fill_of_every_component_found(reqs, topo):
    """The fabric's recomputation (a fill per kept component, rates kept for the same
    queues in the same order) against one fill of every queue the changed links reach,
    searched afresh: the same rates at every recomputation, the same link stretches
    and the same completions, bit for bit (float rounding would show)."""
    graph = topology(*topo)
    runs = []
    for reuse in (True, False):
        solves: list = []
        fabric, ends = drive(
            graph, reqs, record=True, reuse=reuse,
            observer=lambda now, queues, rates, seen=solves: seen.append((now, queues, rates)),
        )  # fmt: skip
        runs.append((ends, solves, fabric.segments))
    assert (runs[0][0], runs[0][2]) == (runs[1][0], runs[1][2])
    assert_kept_cover_fresh(runs[0][1], runs[1][1])


def assert_kept_cover_fresh(kept: list, fresh: list) -> None:
    """Recomputations ``(time, queues, rates)`` over kept components against the same
    over components searched afresh: one for one at the same times, each kept one
    covering at least the fresh one's queues (a kept component is never split, so it
    may hold queues no longer connected to the change) and giving each of them the
    very rate the fresh fill does."""
    assert [s[0] for s in kept] == [s[0] for s in fresh]
    for (_, queues, rates), (_, found, found_rates) in zip(kept, fresh, strict=True):
        by_queue = dict(zip(queues, rates, strict=True))
        assert {q: by_queue[q] for q in found} == dict(zip(found, found_rates, strict=True))


def disjoint(parts):
    """Queues of several groups sharing no link and no requester (group ``g``'s
    requesters and links are numbered apart from the others'), interleaved in the
    order ``parts`` gives: ``(group, requester, links)`` each."""
    return [(who * 8 + g, tuple(lk * 8 + g for lk in links)) for g, who, links in parts]


@settings(max_examples=80, deadline=None)
@given(
    bw=st.lists(st.sampled_from([0.1, 0.3, 1.0, 3.7, 8.0, 32.0]), min_size=48, max_size=48),
    parts=st.lists(
        st.tuples(
            st.integers(0, 2),  # group
            st.integers(0, 2),  # requester within it
            st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),
        ),
        min_size=1,
        max_size=18,
    ),
)
def test_filling_components_apart_equals_filling_them_together(bw, parts):
    """What the fabric's fill per component rests on: queues that share no link and no
    requester with the others get, from one fill of them all, bit for bit the rates a
    fill of their own group gives (bandwidths that round, so ties and float sums
    would show an order that leaked across groups)."""
    queues = disjoint(parts)
    together = progressive_fill([w for w, _ in queues], [ls for _, ls in queues], bw)
    for g in range(3):
        mine = [q for q, part in enumerate(parts) if part[0] == g]
        alone = progressive_fill([queues[q][0] for q in mine], [queues[q][1] for q in mine], bw)
        assert [together[q].hex() for q in mine] == [r.hex() for r in alone]


@settings(max_examples=60, deadline=None)
@given(reqs=requests, topo=topologies)
def test_no_resource_above_its_bandwidth_and_every_byte_drains_in_its_direction(reqs, topo):
    graph = topology(*topo)
    fabric, ends = drive(graph, reqs, fast=False, record=True)
    assert all(end >= 0.0 for end in ends)  # every transfer completed
    check_segments(graph, fabric.segments)
    drained: dict[int, float] = defaultdict(float)
    # A stretch ends on the time grid (kernbench.timebase), up to half a tick from
    # where its bytes ran out: up to rate x TICK_NS / 2 bytes more or less, each.
    slack: dict[int, float] = defaultdict(float)
    for links, t0, t1, rate in fabric.segments:
        for lk in links:
            drained[lk] += rate * (t1 - t0)
            slack[lk] += rate * TICK_NS / 2
    for lk, carried in enumerate(fabric.bytes_carried):
        assert drained[lk] == pytest.approx(carried, rel=1e-9, abs=1e-9 + slack[lk])
    # Per direction: a read's bytes only on the way back into the requesting DMA, a
    # write's only on the way out of it; into and out of HBM, each request's once.
    hbm = list(graph.hbm_link.values())
    issued = {False: 0, True: 0}
    for _, _, channels, nbytes, _, reads in reqs:
        issued[reads] += nbytes * (1 + channels % 3)
    carried = fabric.bytes_carried
    assert sum(carried[lk.id] for lk in hbm) == issued[False]
    assert sum(carried[graph.twin[lk.id]] for lk in hbm) == issued[True]
    into = sum(carried[lk.id] for lk in graph.links if lk.dst.endswith(".dma"))
    out_of = sum(carried[lk.id] for lk in graph.links if lk.src.endswith(".dma"))
    assert (into, out_of) == (issued[True], issued[False])


@settings(max_examples=80, deadline=None)
@given(reqs=requests, topo=topologies)
def test_the_fast_path_completes_every_request_when_flows_alone_do(reqs, topo):
    graph = topology(*topo)
    _, fast = drive(graph, reqs, fast=True)
    _, flows = drive(graph, reqs, fast=False)
    assert fast == pytest.approx(flows, rel=1e-12, abs=1e-9)
    _, again = drive(graph, reqs, fast=True)
    assert again == fast  # deterministic to the bit


def rounds(requesters, links, bw):
    """DESIGN §3.2's progressive filling, round by round, as written there."""
    spare = {lk: bw[lk] for ls in links for lk in ls}
    rate = [0.0] * len(links)
    frozen = [False] * len(links)
    while True:
        active = {}
        for q, who in enumerate(requesters):  # each requester's oldest unfrozen queue
            if not frozen[q] and who not in active:
                active[who] = q
        if not active:
            return rate
        count: dict[int, int] = defaultdict(int)
        for q in active.values():
            for lk in links[q]:
                count[lk] += 1
        step = min(spare[lk] / c for lk, c in count.items())
        for q in active.values():
            rate[q] += step
        for lk, c in count.items():
            spare[lk] -= step * c
            if spare[lk] <= 1e-12 * bw[lk]:
                for q, ls in enumerate(links):
                    if lk in ls:
                        frozen[q] = True


@settings(max_examples=300, deadline=None)
@given(
    bw=st.lists(st.sampled_from([1.0, 3.7, 8.0, 32.0, 64.0, 128.0, 256.0]), min_size=6, max_size=6),
    queues=st.lists(
        st.tuples(
            st.integers(0, 3), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)
        ),
        min_size=1,
        max_size=14,
    ),
)
def test_the_solver_equals_round_by_round_progressive_filling(bw, queues):
    requesters = [who for who, _ in queues]
    links = [tuple(ls) for _, ls in queues]
    got = progressive_fill(requesters, links, bw)
    assert got == pytest.approx(rounds(requesters, links, bw), rel=1e-9, abs=1e-9)
    named = [(str(w), ls, q) for q, (w, ls) in enumerate(zip(requesters, links, strict=True))]
    check_rates(bw, named, got)

"""Property tests (hypothesis) for the invariants of DESIGN §3.2 and §4."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.address import interleave
from kernbench.address.allocator import FreeListAllocator
from kernbench.address.la import LA_BASE, make_segment
from kernbench.address.pa import OFFSET_BITS, PhysAddr, Region, pe_base
from kernbench.address.pa_model import PhysicalLayer
from kernbench.sim.fabric import ReservationFabric as Fabric
from kernbench.topology.graph import build_graph
from kernbench.topology.routes import MemoryRoutes, Router
from tests.support import make_cfg

ops = st.lists(st.tuples(st.booleans(), st.integers(1, 5000), st.integers(0, 1000)), max_size=60)


@given(ops=ops, align=st.sampled_from([1, 8, 64, 256]))
def test_allocator_never_overlaps_and_coalesces_back_to_one_block(ops, align):
    size = 64 * 1024
    a = FreeListAllocator("t", 1000, size, align)
    live: dict[int, int] = {}
    for is_alloc, nbytes, pick in ops:
        if is_alloc or not live:
            try:
                addr = a.alloc(nbytes)
            except Exception:
                continue
            got = a.size_of(addr)
            assert got >= nbytes and addr % align == 0
            assert addr >= 1000 and addr + got <= 1000 + size
            for other, osize in live.items():
                assert addr + got <= other or other + osize <= addr
            live[addr] = got
        else:
            victim = sorted(live)[pick % len(live)]
            a.free(victim)
            del live[victim]
    for addr in list(live):
        a.free(addr)
    assert a.free_blocks == [(1000, size)]


def traffic(targets: int, gap: float):
    """Lists of (source PE, target PE below ``targets``, bytes, gap after the previous,
    read?) requests on the default topology's 16 PEs."""
    request = st.tuples(
        st.integers(0, 15),
        st.integers(0, targets - 1),
        st.integers(1, 1 << 16),
        st.floats(0, gap),
        st.booleans(),
    )
    return st.lists(request, min_size=1, max_size=40)


requests = traffic(16, 500)
# Many PEs onto two targets, close together: requests queue on shared links and leave
# idle stretches (holes) that later requests of other sizes try to fill.
hotspot_requests = traffic(2, 50)


def book_all(reqs: list[tuple[int, int, int, float, bool]]):
    """Book each (source PE, target PE, bytes, gap after the previous, read?) request
    on the default topology's fabric; the graph and every resource's reservations (a
    link's, or both directions' of a half-duplex HBM link), by the resource's id."""
    graph = build_graph(make_cfg().topology)
    router, fabric = Router(graph), Fabric(graph, 40.0, record=True)
    now = 0.0
    for src, dst, nbytes, gap, reads in reqs:
        now += gap
        s, d = graph.pes[src], graph.pes[dst]
        routes = MemoryRoutes(router, s.node("dma"), reads)
        fabric.book([(d.agg_router, 0, nbytes, -1)], routes, now)
    by_link: dict[int, list[tuple[float, float, int]]] = {}
    for link, start, end, nbytes in fabric.reservations:
        by_link.setdefault(graph.links[link].resource, []).append((start, end, nbytes))
    return graph, by_link


@settings(max_examples=60, deadline=None)
@given(reqs=requests)
def test_no_link_carries_more_than_bw_times_interval_plus_one_request(reqs):
    graph, by_link = book_all(reqs)
    for link, res in by_link.items():
        bw = graph.links[link].bw_gbs
        biggest = max(n for _, _, n in res)
        points = sorted({p for s, e, _ in res for p in (s, e)})
        for i, a in enumerate(points):
            for b in points[i + 1 :]:
                carried = sum(n * _overlap(s, e, a, b) / (e - s) for s, e, n in res)
                assert carried <= bw * (b - a) + biggest + 1e-6


def _overlap(s: float, e: float, a: float, b: float) -> float:
    return max(0.0, min(e, b) - max(s, a))


@given(
    sip=st.integers(0, 15),
    cube=st.integers(0, 15),
    pe=st.integers(0, 63),
    region=st.sampled_from(list(Region)),
    offset=st.integers(0, (1 << 36) - 1),
)
def test_pa_encode_decode_round_trip(sip, cube, pe, region, offset):
    pa = PhysAddr(sip, cube, pe, region, offset)
    assert pa.encode() < 1 << 51
    assert PhysAddr.decode(pa.encode()) == pa


@given(
    offset=st.integers(0, 1 << 20),
    nbytes=st.integers(1, 1 << 16),
    granule=st.sampled_from([1, 32, 256, 4096]),
    n=st.sampled_from([1, 2, 4, 8, 16]),
)
def test_interleave_split_conserves_bytes_and_never_overlaps(offset, nbytes, granule, n):
    pieces = interleave.split(offset, nbytes, granule, n)
    assert sum(p[2] for p in pieces) == nbytes
    assert len({p[0] for p in pieces}) == len(pieces)
    # every piece's bytes really are that channel's bytes of the range
    for ch, choff, nb in pieces:
        first = next(o for o in range(offset, offset + nbytes) if (o // granule) % n == ch)
        assert (first // (granule * n)) * granule + first % granule == choff
        assert nb == sum(1 for o in range(offset, offset + nbytes) if (o // granule) % n == ch)


@settings(max_examples=60, deadline=None)
@given(stripes_in=st.integers(0, 64), stripes=st.integers(1, 64), pe=st.integers(0, 15))
def test_whole_stripe_requests_equal_the_general_split(stripes_in, stripes, pe):
    """The closed form for whole stripes (each channel nbytes/N, channel c's first byte
    at offset + c*g) gives exactly the general interleave's requests, PA and LA."""
    graph = build_graph(make_cfg(one_to_one=True).topology)
    physical = PhysicalLayer(graph)
    stripe = physical.granule * physical.n_channels
    owner = graph.pes[pe]
    offset, nbytes = stripes_in * stripe, stripes * stripe
    pa = pe_base(owner.sip, owner.cube, owner.pe) + offset
    key = pa >> (OFFSET_BITS + 1)
    assert physical.resolve(pa, nbytes) == physical.split(key, pa, offset, nbytes)
    seg = make_segment(graph, owner, LA_BASE, pa, 128 * stripe)
    assert seg.resolve(offset, nbytes) == seg.split(offset, nbytes)


@settings(max_examples=60, deadline=None)
@given(reqs=hotspot_requests)
def test_reservations_on_one_link_never_overlap(reqs):
    """Each resource carries one request at a time (HBM's: a read or a write):
    a reservation lasts bytes / bandwidth, and on one resource, taken in order of
    start time (a later booking may fill an idle stretch an earlier one left:
    fabric.py), none starts before the previous one ends."""
    graph, by_link = book_all(reqs)
    for link, res in by_link.items():
        for start, end, nbytes in res:
            assert end == start + nbytes / graph.links[link].bw_gbs
        spans = sorted((start, end) for start, end, _ in res)
        for (_, prev_end), (start, _) in itertools.pairwise(spans):
            assert start >= prev_end

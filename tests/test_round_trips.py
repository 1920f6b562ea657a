"""Reads are round trips, HBM is half-duplex, every other link duplex (DESIGN §13.1).

Default topology, dispatch free, PA (no translation, no install). A PE's HBM is N = 8
channels x 32 GB/s: one half-duplex resource of 256 GB/s per PE under n:1 (its
aggregate link), one of 32 GB/s per channel under 1:1. PE<->NOC links are duplex at
128 GB/s each way. Latencies: DMA->router 2 + router->HBM 4 = 6 ns (local), PE->NOC 5
+ NOC->router 3 + router->HBM 4 = 12 ns (remote); the way back is the same links
reversed, with the same latencies; the HBM access is 40 ns.

A write's bytes go out with its request: ``issue + out + n / bw + access``. A read's
request goes out with no payload, the memory serves it, and its bytes come back:
``issue + out + access + back + n / bw``.
"""

from __future__ import annotations

import pytest

from kernbench import simulate
from kernbench.sim.events import LocalQueue, SimEnv
from kernbench.sim.fabric import ReservationFabric
from kernbench.sim.fair_fabric import FairFabric
from kernbench.topology.graph import build_graph
from kernbench.topology.routes import MemoryRoutes, Router
from tests.support import Stages, make_cfg

LINKS = make_cfg().topology.links
LOCAL = LINKS.dma_router_latency_ns + LINKS.router_hbm_latency_ns  # 6 ns each way
REMOTE = LINKS.pe_noc_latency_ns + LINKS.noc_router_latency_ns + LINKS.router_hbm_latency_ns
ACCESS = 40.0
HBM = 8 * 32.0  # a PE's HBM, GB/s (= bytes/ns)
PE_NOC = LINKS.pe_noc_bw_gbs  # 128 GB/s each way
KIB64 = 65536
MIB = 1 << 20


def stream(op: str, pattern: str = "local", fabric: str = "fair", one_to_one: bool = False,
           **kw: object) -> dict:  # fmt: skip
    from kernbench.config.schema import StreamPattern

    cfg = make_cfg(one_to_one=one_to_one, fabric=fabric, op=op,
                   pattern=StreamPattern(pattern), **kw)  # fmt: skip
    return simulate.run(cfg).metrics


@pytest.mark.parametrize("fabric", ["fair", "reservation"])
@pytest.mark.parametrize("one_to_one", [False, True])
def test_a_local_read_pays_the_way_out_the_access_and_the_way_back_before_its_bytes(
    one_to_one, fabric
):
    """One PE reads 1 MiB of its own memory in 64 KiB accesses, 4 in flight. The first
    access's request is out at 6 ns, served at 46, its first byte back at 52; from then
    the PE's HBM (256 GB/s: n:1's aggregate link, or 1:1's 8 channels of 8 KiB each
    at 32) never idles, since the next 3 requests are out long before: 6 + 40 + 6 +
    16 x 65536 / 256 = 4148 ns, and nothing after the last byte (was 4142: the access
    was paid after the bytes, and the way back not at all). The same as a write stays
    6 + 4096 + 40 = 4142: its bytes leave with the request."""
    kw = dict(access_bytes=KIB64, bytes_per_pe=MIB, active_pes=1, outstanding=4)
    read = stream("read", fabric=fabric, one_to_one=one_to_one, **kw)
    write = stream("write", fabric=fabric, one_to_one=one_to_one, **kw)
    assert read["sim_time_ns"] == LOCAL + ACCESS + LOCAL + MIB / HBM == 4148
    assert write["sim_time_ns"] == LOCAL + MIB / HBM + ACCESS == 4142
    # the read's bytes left HBM on the resource its writes share
    assert read["busiest_link"] == "sip0.cube0.pe0.agg_router<->sip0.cube0.hbm_ctrl" or (
        one_to_one and read["busiest_link"] == "sip0.cube0.pe0.ch_r0<->sip0.cube0.hbm_ctrl"
    )
    assert read["bytes_moved"] == write["bytes_moved"] == MIB


@pytest.mark.parametrize("one_to_one", [False, True])
def test_a_local_copy_shares_the_half_duplex_hbm_between_its_reads_and_writes(one_to_one):
    """One PE copies 1 MiB within its own memory, 64 KiB accesses, 4 buffers. The DMA
    issues in order, and a store waits for its load (it writes the loaded buffer), so
    load k+1 issues with store k, when load k completes. Load 0: out 6, access 40,
    back 6, 256 ns of bytes: done at 308. Then store k joins at +6 and load k+1 at +52;
    both cross the PE's one 256 GB/s HBM resource, the older (the store) first, so
    HBM carries their 2 x 65536 B back to back from +6: load k+1 is done 6 + 512 ns
    after load k. Load 15 is done at 308 + 15 x 518 = 8078; store 15 joins at 8084,
    drains 256 ns and pays the 40 ns access: 8380 ns. The bound, 2 MiB through
    256 GB/s, is 8192 ns: HBM idles for the first 52 ns, 6 ns per access (each
    store's way out) and the last 40 (its access). Were the HBM resource full-duplex
    (one per direction), a read and a write would overlap and the copy would take
    about half as long: the test that it does not is this one."""
    m = stream("copy", one_to_one=one_to_one, access_bytes=KIB64, bytes_per_pe=MIB,
               active_pes=1, outstanding=4)  # fmt: skip
    drain = KIB64 / HBM  # 256 ns
    load0 = LOCAL + ACCESS + LOCAL + drain
    step = LOCAL + 2 * drain
    assert m["sim_time_ns"] == load0 + 15 * step + LOCAL + drain + ACCESS == 8380
    assert m["sim_time_ns"] > 2 * MIB / HBM == 8192  # the bound
    assert m["bytes_moved"] == 2 * MIB


@pytest.mark.parametrize("one_to_one", [False, True])
def test_a_neighbor_copy_reads_back_and_writes_out_on_the_two_directions_of_its_link(
    one_to_one,
):
    """Every PE copies 1 MiB of the next PE's memory (reads it, writes it back), 64 KiB
    accesses, 4 buffers. PE i's loads come back on NOC->PE i and its stores go out on
    PE i->NOC: the duplex link's two directions, 128 GB/s each; PE i+1's HBM (256 GB/s,
    half-duplex) carries both, and no other PE's traffic.

    The bound: 2 MiB through the target's HBM at 256 GB/s, and 1 MiB each way over the
    PE<->NOC link at 128 GB/s: 8192 ns plus latencies. Simulated (in-order DMA, a
    store after its load, as in the local copy): load k takes 12 out + 40 + 12 back +
    65536 / 128 = 576 ns, and store k-1 drains beside it (128 + 128 = the HBM's 256,
    exactly), so load k+1 issues 576 ns after load k; after load 15 (16 x 576 =
    9216 ns) store 15 goes out: 12 + 512 + 40. 9780 ns: above the bound by 15 of the
    loads' 64 ns round trips, which the in-order queue leaves uncovered, plus the
    first load's and the last store's 512 ns of bytes alone on their link. Before
    reads came back on the reverse link, both a copy's loads and its stores loaded
    PE i->NOC, 2 MiB at 128 GB/s: 17268 ns."""
    m = stream("copy", "neighbor", one_to_one=one_to_one, access_bytes=KIB64,
               bytes_per_pe=MIB, active_pes="all", outstanding=4)  # fmt: skip
    load = REMOTE + ACCESS + REMOTE + KIB64 / PE_NOC
    simulated = 16 * load + REMOTE + KIB64 / PE_NOC + ACCESS
    bound = 2 * MIB / HBM
    assert m["sim_time_ns"] == simulated == 9780
    assert bound + REMOTE + ACCESS < m["sim_time_ns"] < 2 * MIB / PE_NOC
    assert m["bytes_moved"] == 16 * 2 * MIB
    # The pattern's peak: every resource it loads is busy 8192 ns at most (the target's
    # HBM: 2 MiB at 256; PE->NOC: the writes' 1 MiB at 128; NOC->PE: the reads' 1 MiB
    # at 128), so 16 PEs' 32 MiB over 8192 ns: 4096 GB/s (with both directions on
    # PE->NOC it would be 2048).
    assert m["peak_pattern_bw_gbs"] == 16 * 2 * MIB / bound == 4096
    assert m["bw_efficiency"] == 16 * 2 * MIB / 9780 / 4096


def write_and_read(fabric_kind: str, write_to: int, read_from: int) -> list[float]:
    """PE 0 issues a 64 KiB write to ``write_to``'s memory, then a 64 KiB read from
    ``read_from``'s, both at 0 ns, on a fresh fabric; their completion times."""
    graph = build_graph(make_cfg().topology)
    router, pes = Router(graph), graph.pes
    events = LocalQueue(SimEnv())
    fabric = {
        "flows": lambda: FairFabric(graph, ACCESS, events, fast=False),
        "fair": lambda: FairFabric(graph, ACCESS, events),
        "reservation": lambda: ReservationFabric(graph, ACCESS),
    }[fabric_kind]()
    dma = pes[0].node("dma")
    done = Stages(events)
    stages = [done.new(), done.new()]
    finish = done.finish

    def issue(_: object) -> None:
        for stage, reads, target in zip(stages, (False, True), (write_to, read_from), strict=True):
            routes = MemoryRoutes(router, dma, reads=reads)
            request = [(pes[target].agg_router, 0, KIB64, -1)]
            end = fabric.start(request, routes, events.now, stage, finish)
            if end is not None:
                events.schedule(end, finish, stage)

    events.schedule(0.0, issue, None)
    events.run()
    return [done.outcome(s).end for s in stages]


@pytest.mark.parametrize("fabric", ["flows", "fair", "reservation"])
def test_a_duplex_links_two_directions_do_not_constrain_each_other(fabric):
    """PE 0 writes 64 KiB to PE 1's memory and reads 64 KiB from PE 2's, both at 0 ns:
    the write's bytes go out on PE 0->NOC, the read's come back on NOC->PE 0, each at
    its own 128 GB/s, so each ends as if alone: the write at 12 + 512 + 40 = 564 ns,
    the read at 12 + 40 + 12 + 512 = 576 (one link shared by both would have given
    the pair 1024 ns of bytes). Against one target, PE 1, they share its half-duplex
    256 GB/s HBM, but 128 + 128 fill it exactly: the same times under fair sharing.
    The reservation model holds every link of a path for its bytes over that link's
    bandwidth from one start, so the write holds PE 1's HBM over [0, 256) and the
    read's bytes leave at 256: 256 + 12 + 512 = 780."""
    alone = [REMOTE + KIB64 / PE_NOC + ACCESS, REMOTE + ACCESS + REMOTE + KIB64 / PE_NOC]
    assert write_and_read(fabric, 1, 2) == alone == [564, 576]
    if fabric == "reservation":
        held = KIB64 / HBM
        booked = [alone[0], held + REMOTE + KIB64 / PE_NOC]
        assert write_and_read(fabric, 1, 1) == booked == [564, 780]
    else:
        assert write_and_read(fabric, 1, 1) == alone


@pytest.mark.parametrize("fabric", ["flows", "fair", "reservation"])
def test_a_local_write_and_read_share_the_half_duplex_hbm(fabric):
    """PE 0 writes 64 KiB to its own memory and reads 64 KiB of it, both at 0 ns. Both
    cross its one 256 GB/s HBM resource. The write joins at 6 ns and drains alone
    until the read's bytes are ready at 6 + 40 + 6 = 52; then, being older, it keeps
    the whole 256 GB/s (age priority within a PE): it is done at 6 + 256 = 262 and
    complete at 302. The read drains its 256 ns from 262: 518 (the reservation model
    books it after the write on the resource: the same). Were the two directions
    separate resources, the read would end at 52 + 256 = 308."""
    drain = KIB64 / HBM
    ends = [LOCAL + drain + ACCESS, LOCAL + 2 * drain]
    assert write_and_read(fabric, 0, 0) == ends == [302, 518]


@pytest.mark.parametrize("order", [(0, 8), (8, 0)])
def test_the_reservation_model_lets_a_read_ready_sooner_go_before_one_booked_earlier(order):
    """PE 0 (cube 0) and PE 8 (cube 1) both read 4 KiB of PE 8's memory at 0 ns. PE 0's
    data is ready at 32 + 40 = 72 ns, PE 8's at 6 + 40 = 46; PE 8's HBM is idle until
    then, so whichever is booked first, PE 8's read takes it at 46 and ends at
    46 + 6 + 4096 / 256 = 68, and PE 0's starts at 72: 72 + 32 + 4096 / 64 = 168 (the
    NOC->NOC link is its narrowest). Booked without the idle stretch before a read's
    data, PE 8 would wait for PE 0's bytes when booked second: 72 + 16 + 6 + 16 = 110."""
    graph = build_graph(make_cfg().topology)
    router, pes = Router(graph), graph.pes
    fabric = ReservationFabric(graph, ACCESS)
    ends = {}
    for src in order:
        routes = MemoryRoutes(router, pes[src].node("dma"), reads=True)
        ends[src] = fabric.book([(pes[8].agg_router, 0, 4096, -1)], routes, 0.0)
    far = REMOTE + LINKS.noc_noc_latency_ns  # 32 ns each way
    assert ends[8] == LOCAL + ACCESS + LOCAL + 4096 / HBM == 68
    assert ends[0] == far + ACCESS + far + 4096 / LINKS.noc_noc_bw_gbs == 168

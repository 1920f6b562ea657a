"""The fair-share fabric (DESIGN §3.2, ``sim.fabric=fair``): exact times by hand.

Default topology, dispatch free, LA. A PE's HBM is N = 8 channels x 32 GB/s (256 GB/s,
its aggregate n:1 link); PE<->NOC 128 GB/s, NOC<->NOC 64 GB/s; g = 256 B. A request
joins its links after its route's latency (local: DMA->router 2 + router->HBM 4 = 6 ns;
remote: PE->NOC 5 + NOC->router 3 + router->HBM 4 = 12 ns; from the other cube 20 ns
more), drains at the rate the links give it (max-min fair between PEs, oldest first
within one PE), then pays the 40 ns HBM access. Where a link is never idle from the
first byte to the last, the run ends at: first join + bytes over that link + 40.
"""

from __future__ import annotations

import pytest

from kernbench import simulate
from kernbench.config.schema import AddressConfig, AddressModel, FabricModel, StreamPattern
from kernbench.config.validate import validate
from kernbench.sim.metrics import jain_index
from tests.support import make_cfg

CUBE = 8  # PEs per cube on the default topology
ACCESS_LATENCY = 40.0


def stream(pattern: str, one_to_one: bool, fabric: str = "fair", **kw: object) -> dict:
    cfg = make_cfg(one_to_one=one_to_one, pattern=StreamPattern(pattern), **kw)
    cfg.address = AddressConfig(AddressModel.la)
    cfg.sim.fabric = FabricModel(fabric)
    return simulate.run(validate(cfg)).metrics


def latencies(cfg_links) -> tuple[float, float, float]:
    """(local, remote, other cube) route latencies of the default links."""
    lk = cfg_links
    local = lk.dma_router_latency_ns + lk.router_hbm_latency_ns
    remote = lk.pe_noc_latency_ns + lk.noc_router_latency_ns + lk.router_hbm_latency_ns
    return local, remote, remote + lk.noc_noc_latency_ns


LINKS = make_cfg().topology.links
LOCAL, REMOTE, FAR = latencies(LINKS)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_hotspot_keeps_pe0s_hbm_busy_from_its_first_byte_to_the_last(one_to_one):
    """The 8 PEs of cube 0 read PE 0's memory, 16 x 64 KiB each, 4 in flight. PE 0's
    own request joins at 6 ns and drains alone at 256 GB/s until the others join at
    12; from then on the 8 share the 256 GB/s (32 each; under 1:1 each channel's 32
    GB/s is shared by 8, 4 each on all 8 channels), every PE always has a request
    waiting, and PE 0 stays 6 x 256 = 1536 B ahead of each other PE: when it ends, the
    7 others have 7 x 1536 B left, which they drain in 42 ns sharing the 256 GB/s
    (36.6 each, below their 128 GB/s PE->NOC links). So
    PE 0's HBM never idles from 6 ns: 8 MiB / 256 + 6 + 40 = 32814 ns, both mappings
    (the reservation model gives 33076 n:1 and 33012 1:1 with one access in flight)."""
    n, size = 16, 65536
    m = stream("hotspot", one_to_one, access_bytes=size, bytes_per_pe=n * size,
               active_pes=CUBE, outstanding=4)  # fmt: skip
    assert m["sim_time_ns"] == LOCAL + CUBE * n * size / 256 + ACCESS_LATENCY == 32814
    # PE 0 ends 42 ns before the 7 others, which end together, last
    assert m["effective_bw_min_gbs"] == n * size / m["sim_time_ns"]
    ahead = (REMOTE - LOCAL) * 256  # bytes PE 0 drains alone before the others join
    fast, slow = n * size / (m["sim_time_ns"] - 7 * ahead / 256), n * size / m["sim_time_ns"]
    assert m["effective_bw_max_gbs"] == fast
    # Jain's index over one fast PE and 7 slow ones: (Σx)² / (n Σx²)
    jain = (fast + 7 * slow) ** 2 / (8 * (fast**2 + 7 * slow**2))
    assert m["bw_fairness"] == pytest.approx(jain, rel=1e-12)
    assert 0.99999 < jain < 1.0
    assert m["busiest_link"].endswith("->sip0.cube0.hbm_ctrl")


@pytest.mark.parametrize("one_to_one", [False, True])
def test_neighbor_fills_each_pes_link_to_the_noc_with_both_mappings(one_to_one):
    """Every PE reads the next PE's memory: its 128 GB/s PE->NOC link is its own.
    n:1: one request at a time at 128 GB/s. 1:1: an access is 8 channel requests of
    A/8, each capped by its 32 GB/s channel; oldest first, 4 of them fill the 128 GB/s
    link side by side, so the link never idles and the last 4 end together. Both:
    n x A / 128 + 12 + 40 = 8244 ns (the reservation model books the channel
    requests one after another on the link, so under 1:1 its last drains alone at
    32 GB/s: 8436 ns)."""
    n, size = 16, 65536
    kw = dict(access_bytes=size, bytes_per_pe=n * size, active_pes="all", outstanding=4)
    m = stream("neighbor", one_to_one, **kw)
    assert m["sim_time_ns"] == REMOTE + n * size / LINKS.pe_noc_bw_gbs + ACCESS_LATENCY == 8244
    assert m["busiest_link_utilization"] == n * size / LINKS.pe_noc_bw_gbs / 8244
    reserved = stream("neighbor", one_to_one, "reservation", **kw)["sim_time_ns"]
    assert reserved == (8244 + size / 8 / 32 - size / 8 / 128 if one_to_one else 8244)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_cross_cube_shares_the_noc_to_noc_link_equally(one_to_one):
    """The 8 PEs of cube 0 read the PE of the same index in cube 1 (64 x 4 KiB, 4 in
    flight): every byte crosses the 64 GB/s NOC->NOC link, 8 GB/s each, all joining at
    32 ns and ending together: 8 x 64 x 4096 / 64 + 32 + 40 = 32840 ns, each PE
    exactly 64 x 4096 / 32840 GB/s."""
    n, size = 64, 4096
    m = stream("cross_cube", one_to_one, access_bytes=size, bytes_per_pe=n * size,
               active_pes=CUBE, outstanding=4)  # fmt: skip
    t = FAR + CUBE * n * size / LINKS.noc_noc_bw_gbs + ACCESS_LATENCY
    assert m["sim_time_ns"] == t == 32840
    assert m["effective_bw_min_gbs"] == m["effective_bw_max_gbs"] == n * size / t
    assert m["bw_fairness"] == pytest.approx(1.0, abs=1e-15)  # every PE served alike
    assert m["busiest_link"] == "sip0.cube0.noc->sip0.cube1.noc"


def test_hotspot_one_granule_off_is_bound_by_the_busiest_channel():
    """Each of the 8 PEs reads one access of 9 granules from PE 0's shard. n:1: PE 0's
    256 GB/s link carries 8 x 9 x 256 B from 6 ns without idling: 6 + 72 + 40 = 118.
    1:1: channel 0 holds granules 0 and 8 of every access, 8 x 512 B at 32 GB/s, busy
    from 6 ns: 6 + 128 + 40 = 174 (reservation: 133 and 180)."""
    kw = dict(access_bytes=9 * 256, bytes_per_pe=9 * 256, active_pes=CUBE, outstanding=1)
    n_to_one = stream("hotspot", False, **kw)["sim_time_ns"]
    one_to_one = stream("hotspot", True, **kw)["sim_time_ns"]
    assert n_to_one == LOCAL + CUBE * 9 * 256 / 256 + ACCESS_LATENCY == 118
    assert one_to_one == LOCAL + CUBE * 2 * 256 / 32 + ACCESS_LATENCY == 174


@pytest.mark.parametrize("access", [4096, 65536, 262144])
@pytest.mark.parametrize("outstanding", [2, 4, 16])
def test_two_bottlenecks_all_pes_end_with_the_noc_to_noc_link(access, outstanding):
    """All 16 PEs read PE 0's memory, 1 MiB each. Cube 1's 8 MiB cross the 64 GB/s
    NOC->NOC link (8 GB/s each); cube 0's PEs share the rest of PE 0's 256 GB/s HBM
    (24 each) and finish first. The NOC->NOC link never idles from the first join
    (32 ns) while cube 1 has bytes left: 8 MiB / 64 + 32 + 40 = 131144 ns under n:1
    whatever the access size and depth; 1:1 ends within one route-and-access latency
    (72 ns) of it: its last channel requests drain at their channel's 32 GB/s (+6 to
    +24 ns measured). The reservation model moves with both (138568 at 64 KiB x 4,
    160840 at 256 KiB x 4)."""
    bound = FAR + 8 * (1 << 20) / LINKS.noc_noc_bw_gbs + ACCESS_LATENCY
    kw = dict(access_bytes=access, bytes_per_pe=1 << 20, active_pes="all", outstanding=outstanding)
    assert stream("hotspot", False, **kw)["sim_time_ns"] == bound == 131144
    one_to_one = stream("hotspot", True, **kw)["sim_time_ns"]
    assert bound <= one_to_one <= bound + FAR + ACCESS_LATENCY


def test_one_access_in_flight_pays_its_latency_every_access():
    """With one access in flight a PE is idle between accesses (40 ns of access, then
    32 of route latency before the next joins); cube 1's PEs, in lockstep at 8 GB/s,
    all idle together, so each of the 256 accesses of 4 KiB costs 512 + 72 ns."""
    m = stream("hotspot", False, access_bytes=4096, bytes_per_pe=1 << 20, active_pes="all",
               outstanding=1)  # fmt: skip
    per_access = 4096 / 8 + FAR + ACCESS_LATENCY
    assert m["sim_time_ns"] == 256 * per_access == 149504


def test_bw_fairness_is_jains_index_of_the_per_pe_bandwidths():
    """(Σx)² / (n Σx²): 1 when all are equal, 1/n when one PE has everything; the
    reservation model serves two bottlenecks' PEs less evenly than fair sharing."""
    assert jain_index([3.0, 3.0, 3.0, 3.0]) == 1.0
    assert jain_index([4.0, 0.0, 0.0, 0.0]) == 1 / 4
    assert jain_index([1.0, 2.0]) == 9 / 10
    kw = dict(access_bytes=65536, bytes_per_pe=1 << 20, active_pes="all", outstanding=4)
    fair = stream("hotspot", False, **kw)["bw_fairness"]
    reserved = stream("hotspot", False, "reservation", **kw)["bw_fairness"]
    assert reserved < fair < 1.0


def test_an_uncontended_request_ends_at_issue_plus_latency_drain_and_access():
    """One 4 KiB read from PE 0 to cube 1: 32 + 4096 / 64 + 40 = 136 ns."""
    m = stream("cross_cube", False, access_bytes=4096, bytes_per_pe=4096, active_pes=1)
    assert m["sim_time_ns"] == FAR + 4096 / LINKS.noc_noc_bw_gbs + ACCESS_LATENCY == 136


def test_uniform_reruns_give_the_same_op_log_and_times():
    cfg = make_cfg(one_to_one=True, pattern=StreamPattern.uniform, access_bytes=4096,
                   bytes_per_pe=64 * 4096, active_pes="all", outstanding=4)  # fmt: skip
    cfg.sim.oplog = True
    a, b = simulate.run(cfg), simulate.run(cfg)
    assert a.oplog and a.oplog == b.oplog and a.metrics == b.metrics

"""The fair-share fabric (DESIGN §3.2, §13.1, ``sim.fabric=fair``): exact times by hand.

Default topology, dispatch free, LA. A PE's HBM is N = 8 channels x 32 GB/s (256 GB/s,
its aggregate n:1 link), one half-duplex resource; PE<->NOC 128 GB/s and NOC<->NOC
64 GB/s each way; g = 256 B. Every run here reads. A read's request goes out with no
payload (local: DMA->router 2 + router->HBM 4 = 6 ns; remote: PE->NOC 5 + NOC->router
3 + router->HBM 4 = 12 ns; from the other cube 20 ns more, 32), the memory pays its
40 ns access, and the bytes come back over the same links reversed, with the same
latencies: they join the way back at issue + 2 x way + 40 (the *lead*: 52 ns local,
64 remote, 104 from the other cube), drain at the rate the links give them (max-min
fair between PEs, oldest first within one PE), and the read is done at its last byte,
with nothing after. Where a link is never idle from the first byte to the last, the
run ends at: first join + bytes over that link. (Before reads were round trips, a
request joined after one way and paid the access after its last byte, so most
figures here rose by the way back alone: 6, 12 or 32 ns, once per access where an
access's latency is exposed.)
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
    """(local, remote, other cube) route latencies of the default links, one way."""
    lk = cfg_links
    local = lk.dma_router_latency_ns + lk.router_hbm_latency_ns
    remote = lk.pe_noc_latency_ns + lk.noc_router_latency_ns + lk.router_hbm_latency_ns
    return local, remote, remote + lk.noc_noc_latency_ns


def lead(way: float) -> float:
    """From a read's issue until its first byte is on its way back: the request out,
    the access, the way back (the same links' twins, the same latency)."""
    return way + ACCESS_LATENCY + way


LINKS = make_cfg().topology.links
LOCAL, REMOTE, FAR = latencies(LINKS)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_hotspot_keeps_pe0s_hbm_busy_from_its_first_byte_to_the_last(one_to_one):
    """The 8 PEs of cube 0 read PE 0's memory, 16 x 64 KiB each, 4 in flight. PE 0's
    own bytes start back at 6 + 40 + 6 = 52 ns and drain alone at 256 GB/s until the
    others' start back at 12 + 40 + 12 = 64; from then on the 8 share the 256 GB/s (32
    each; under 1:1 each channel's 32 GB/s is shared by 8, 4 each on all 8 channels),
    every PE always has a request waiting (the next one's 64 ns lead is far shorter
    than the 3 queued accesses' 6 us of bytes), and PE 0 stays 12 x 256 = 3072 B ahead
    of each other PE: it ends at 64 + (1 MiB - 3072) / 32 = 32736, when the 7 others
    have 7 x 3072 B left, which they drain in 84 ns sharing the 256 GB/s (36.6 each,
    below their 128 GB/s NOC->PE links). So PE 0's HBM never idles from 52 ns:
    52 + 8 MiB / 256 = 32820 ns, both mappings (was 6 + 8 MiB / 256 + 40 = 32814, with
    PE 0 1536 B ahead: its lead over the others was one way's 6 ns, now a round trip's
    12). The busiest resource is PE 0's HBM, named for both its directions. (The
    reservation model, with one access in flight, gives 33082 n:1 and 33018 1:1:
    tests/test_stream_patterns.py.)"""
    n, size = 16, 65536
    m = stream("hotspot", one_to_one, access_bytes=size, bytes_per_pe=n * size,
               active_pes=CUBE, outstanding=4)  # fmt: skip
    assert m["sim_time_ns"] == lead(LOCAL) + CUBE * n * size / 256 == 32820
    # PE 0 ends 84 ns before the 7 others, which end together, last
    assert m["min_pe_bw_gbs"] == n * size / m["sim_time_ns"]
    ahead = (lead(REMOTE) - lead(LOCAL)) * 256  # bytes PE 0 drains alone before the others join
    assert ahead == 3072
    pe0 = lead(REMOTE) + (n * size - ahead) / 32
    assert pe0 == m["sim_time_ns"] - 7 * ahead / 256 == 32736
    fast, slow = n * size / pe0, n * size / m["sim_time_ns"]
    assert m["max_pe_bw_gbs"] == fast
    # Jain's index over one fast PE and 7 slow ones: (Σx)² / (n Σx²)
    jain = (fast + 7 * slow) ** 2 / (8 * (fast**2 + 7 * slow**2))
    assert m["bw_fairness"] == pytest.approx(jain, rel=1e-12)
    assert 0.99999 < jain < 1.0
    router = "ch_r0" if one_to_one else "agg_router"
    assert m["busiest_link"] == f"sip0.cube0.pe0.{router}<->sip0.cube0.hbm_ctrl"


@pytest.mark.parametrize("one_to_one", [False, True])
def test_neighbor_fills_each_pes_link_from_the_noc_with_both_mappings(one_to_one):
    """Every PE reads the next PE's memory: the bytes come back on its 128 GB/s
    NOC->PE link, its own (PE i+1's HBM, 256 GB/s, carries only PE i's reads).
    n:1: one request at a time at 128 GB/s. 1:1: an access is 8 channel requests of
    A/8, each capped by its 32 GB/s channel; oldest first, 4 of them fill the 128 GB/s
    link side by side, so the link never idles and the last 4 end together. Both: the
    first bytes start back at 12 + 40 + 12 = 64 ns, and the next requests' 64 ns leads
    hide behind the queued accesses' bytes: 64 + n x A / 128 = 8256 ns (was
    12 + 8192 + 40 = 8244, on PE->NOC). The reservation model books the same n:1:
    each request holds the link for A / 128 = 512 ns from its start, back to back from
    52 ns (the first one's ready time: 12 out + 40), so the 16th starts at
    52 + 15 x 512 = 7732 and is done 12 + 512 later, at 8256; under 1:1
    it books the channel requests one after another on the link, 64 ns each, from
    52 ns, so its last, starting at 52 + 127 x 64 = 8180, drains alone at its
    channel's 32 GB/s: 8180 + 12 + 8192 / 32 = 8448 ns (was 8436)."""
    n, size = 16, 65536
    kw = dict(access_bytes=size, bytes_per_pe=n * size, active_pes="all", outstanding=4)
    m = stream("neighbor", one_to_one, **kw)
    assert m["sim_time_ns"] == lead(REMOTE) + n * size / LINKS.pe_noc_bw_gbs == 8256
    assert m["busiest_link_utilization"] == n * size / LINKS.pe_noc_bw_gbs / 8256
    assert m["busiest_link"] == "sip0.cube0.noc->sip0.cube0.pe0.dma"  # the lowest id of 16 alike
    reserved = stream("neighbor", one_to_one, "reservation", **kw)["sim_time_ns"]
    assert reserved == (8256 + size / 8 / 32 - size / 8 / 128 if one_to_one else 8256)
    assert reserved == (8448 if one_to_one else 8256)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_cross_cube_shares_the_noc_to_noc_link_equally(one_to_one):
    """The 8 PEs of cube 0 read the PE of the same index in cube 1 (64 x 4 KiB, 4 in
    flight): every byte comes back over the 64 GB/s cube 1 NOC -> cube 0 NOC link,
    8 GB/s each, all joining at 32 + 40 + 32 = 104 ns and ending together (each
    access's 512 ns of bytes hides the next one's 104 ns lead):
    104 + 8 x 64 x 4096 / 64 = 32872 ns (was 32 + 32768 + 40 = 32840, over the link
    the other way), each PE exactly 64 x 4096 / 32872 GB/s."""
    n, size = 64, 4096
    m = stream("cross_cube", one_to_one, access_bytes=size, bytes_per_pe=n * size,
               active_pes=CUBE, outstanding=4)  # fmt: skip
    t = lead(FAR) + CUBE * n * size / LINKS.noc_noc_bw_gbs
    assert m["sim_time_ns"] == t == 32872
    assert m["min_pe_bw_gbs"] == m["max_pe_bw_gbs"] == n * size / t
    assert m["bw_fairness"] == pytest.approx(1.0, abs=1e-15)  # every PE served alike
    assert m["busiest_link"] == "sip0.cube1.noc->sip0.cube0.noc"


def test_hotspot_one_granule_off_is_bound_by_the_busiest_channel():
    """Each of the 8 PEs reads one access of 9 granules (2304 B) from PE 0's shard,
    the same addresses. n:1: PE 0's bytes start back at 52 ns and drain alone at
    256 GB/s in 9 ns, done at 61, before the 7 others' start back at 64 (so HBM idles
    3 ns: the claim that it never idles from the first byte no longer holds under n:1,
    where PE 0's head start, now 12 ns, outlasts its 9 ns of bytes); then the 7 share
    the 256 GB/s (36.6 each, below 128): 64 + 7 x 2304 / 256 = 127 ns (was
    6 + 72 + 40 = 118).
    1:1: channel 0 holds granules 0 and 8 of every access, 8 x 512 B at 32 GB/s, and
    is never idle from PE 0's 52 ns: by 64 PE 0 has 128 B left there, and the 7 others'
    512 B each join it: 52 + 8 x 512 / 32 = 180 ns (was 6 + 128 + 40 = 174); channels
    1-7 carry half that.
    Reservation, booked in PE order, each at its ready time (issue + way out + 40) on
    the way back, holding HBM for its bytes over 256 GB/s (n:1) or a channel for its
    own over 32 (1:1): n:1: PE 0 holds HBM over [46, 55), PE k = 1..7 over
    [55 + 9(k-1), 64 + 9(k-1)), and PE 7 is done 12 + 2304 / 128 after its start:
    109 + 30 = 139 (was 133). 1:1: channel 0 is held back to back from 46, 16 ns per
    PE, PE 7 from 158: 158 + 12 + 512 / 32 = 186 (was 180)."""
    kw = dict(access_bytes=9 * 256, bytes_per_pe=9 * 256, active_pes=CUBE, outstanding=1)
    n_to_one = stream("hotspot", False, **kw)["sim_time_ns"]
    one_to_one = stream("hotspot", True, **kw)["sim_time_ns"]
    assert n_to_one == lead(REMOTE) + (CUBE - 1) * 9 * 256 / 256 == 127
    assert one_to_one == lead(LOCAL) + CUBE * 2 * 256 / 32 == 180
    ready = LOCAL + ACCESS_LATENCY  # PE 0's, on the memory side: 46
    held = 9 * 256 / 256  # each PE's hold of n:1's HBM
    n_to_one = stream("hotspot", False, "reservation", **kw)["sim_time_ns"]
    one_to_one = stream("hotspot", True, "reservation", **kw)["sim_time_ns"]
    last = ready + held + (CUBE - 2) * held  # PE 7's start
    assert n_to_one == last + REMOTE + 9 * 256 / LINKS.pe_noc_bw_gbs == 139
    assert one_to_one == ready + (CUBE - 1) * 512 / 32 + REMOTE + 512 / 32 == 186


@pytest.mark.parametrize("access", [4096, 65536, 262144])
@pytest.mark.parametrize("outstanding", [2, 4, 16])
def test_two_bottlenecks_all_pes_end_with_the_noc_to_noc_link(access, outstanding):
    """All 16 PEs read PE 0's memory, 1 MiB each. Cube 1's 8 MiB come back over the
    64 GB/s cube 0 NOC -> cube 1 NOC link (8 GB/s each); cube 0's PEs share the rest of
    PE 0's 256 GB/s HBM (24 each) and finish first. The NOC->NOC link never idles from
    the first join (32 + 40 + 32 = 104 ns) while cube 1 has bytes left (with 2 or more
    in flight, each access's bytes, 512 ns or more at 8 GB/s, hide the next one's
    104 ns lead): 104 + 8 MiB / 64 = 131176 ns under n:1 whatever the access size and
    depth (was 32 + 131072 + 40 = 131144); 1:1 ends within one way out and access
    (72 ns) of it: its last channel requests drain at their channel's 32 GB/s. The
    reservation model moves with both, and ends later."""
    bound = lead(FAR) + 8 * (1 << 20) / LINKS.noc_noc_bw_gbs
    kw = dict(access_bytes=access, bytes_per_pe=1 << 20, active_pes="all", outstanding=outstanding)
    assert stream("hotspot", False, **kw)["sim_time_ns"] == bound == 131176
    one_to_one = stream("hotspot", True, **kw)["sim_time_ns"]
    assert bound <= one_to_one <= bound + FAR + ACCESS_LATENCY


def test_one_access_in_flight_pays_its_latency_every_access():
    """With one access in flight a PE is idle between accesses: the next read's
    request goes out (32 ns), is served (40) and its bytes come back (32) before they
    join; cube 1's PEs, in lockstep at 8 GB/s, all idle together, so each of the 256
    accesses of 4 KiB costs 104 + 512 ns (was 72 + 512: one way and the access)."""
    m = stream("hotspot", False, access_bytes=4096, bytes_per_pe=1 << 20, active_pes="all",
               outstanding=1)  # fmt: skip
    per_access = lead(FAR) + 4096 / 8
    assert m["sim_time_ns"] == 256 * per_access == 157696


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


def test_an_uncontended_read_ends_at_issue_plus_its_round_trip_and_drain():
    """One 4 KiB read from PE 0 to cube 1: out 32, access 40, back 32, then 4096 / 64:
    168 ns (was 32 + 64 + 40 = 136: one way, the access after the bytes)."""
    m = stream("cross_cube", False, access_bytes=4096, bytes_per_pe=4096, active_pes=1)
    assert m["sim_time_ns"] == FAR + ACCESS_LATENCY + FAR + 4096 / LINKS.noc_noc_bw_gbs == 168


def test_uniform_reruns_give_the_same_op_log_and_times():
    cfg = make_cfg(one_to_one=True, pattern=StreamPattern.uniform, access_bytes=4096,
                   bytes_per_pe=64 * 4096, active_pes="all", outstanding=4)  # fmt: skip
    cfg.sim.oplog = True
    a, b = simulate.run(cfg), simulate.run(cfg)
    assert a.oplog and a.oplog == b.oplog and a.metrics == b.metrics

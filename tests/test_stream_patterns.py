"""Stream traffic patterns under the reservation model: exact times from the route's links.

These are the closed forms of ``sim.fabric=reservation`` (DESIGN §3.2's first design,
kept for comparison): a request books every link of its path from one start. The
fair-share model's closed forms for the same cases are in tests/test_fair_fabric.py.

Default topology, dispatch free, LA (the study's model: no translation delay). Every
figure comes from the link bandwidths and latencies of the config, read here:
a PE's HBM is N = 8 channels x 32 GB/s (256 GB/s, its aggregate n:1 link), one
half-duplex resource; PE<->NOC is 128 GB/s and NOC<->NOC 64 GB/s each way; the
interleave granule g = 256 B. A remote route's latency is PE->NOC + NOC->router +
router->HBM (12 ns); a local one's DMA->router + router->HBM (6 ns).

A read is a round trip (DESIGN §13.1): its request goes out with no payload, the
memory pays its access latency, and its bytes come back over the same links the other
way (same latencies). Under reservation, a read is *ready* at issue + way out +
access; it is booked on its way back at the earliest start S >= ready at which each
resource is free for its bytes over that resource's bandwidth, holds each from S, and
is done at S + way back + n / (narrowest bandwidth), with nothing after. So where a
bottleneck is never idle from the first start to the last (every later request ready
before its turn), a run that used to end at ``t + way + access`` (t: from the first
start, at 0, to the last byte) now ends at ``first ready + t + way back``: its
schedule is the old one shifted by the first request's way out and access, and the
access is no longer paid after the last byte.
"""

from __future__ import annotations

import dataclasses

import pytest

from kernbench import simulate
from kernbench.config.schema import AddressConfig, AddressModel, StreamPattern
from kernbench.config.validate import validate
from kernbench.errors import ConfigError
from kernbench.workloads import patterns, stream
from tests.support import make_cfg, make_system

CUBE = 8  # PEs per cube on the default topology


def pattern_cfg(pattern: str, one_to_one: bool = False, **kw: object):
    cfg = make_cfg(one_to_one=one_to_one, pattern=StreamPattern(pattern), fabric="reservation",
                   **kw)  # fmt: skip
    cfg.address = AddressConfig(AddressModel.la)
    return validate(cfg)


def figures(cfg):
    """(links, channel bandwidth, N, g, HBM access latency) of a config."""
    topo = cfg.topology
    mm = topo.cube.memory_map
    return (
        topo.links,
        mm.hbm_channel_bw_gbs,
        mm.hbm_channels_per_pe,
        mm.interleave_bytes,
        mm.hbm_access_latency_ns,
    )


def remote_latency(lk) -> float:
    return lk.pe_noc_latency_ns + lk.noc_router_latency_ns + lk.router_hbm_latency_ns


def local_latency(lk) -> float:
    return lk.dma_router_latency_ns + lk.router_hbm_latency_ns


def run(cfg):
    return simulate.run(cfg).metrics


@pytest.mark.parametrize("one_to_one", [False, True])
def test_hotspot_shares_one_pes_hbm_at_its_channel_bandwidth(one_to_one):
    """8 PEs of cube 0 read PE 0's memory, one access in flight each. The PEs book in
    order at 0; PE 0's first read is ready first, at 6 out + 40 = 46 ns, and from then
    PE 0's HBM is never idle: 8n accesses, each holding it h = A / (N x ch) = 256 ns
    (n:1: the aggregate resource; 1:1: each channel for its A/N share, the same h),
    since a PE's next read is ready 52 ns after its last is done, long before the
    other 7 PEs' turns (7h) have passed. The last access is PE 7's (remote), and t
    counts from 46. n:1: it starts at (8n-1)h and drains at PE 7's 128 GB/s NOC->PE
    link: 46 + 127 x 256 + 512 + 12 back = 33082 (was 33076, from 0 and with the
    access after). 1:1: its 8 channel requests cross PE 7's 128 GB/s link 128/32 = 4
    per h, so channel 7's starts (7 mod 4) x h/4 after channel 0's, which ends the run
    at 8n x h; it drains at 32: 46 + 127 x 256 + 192 + 256 + 12 = 33018 (was 33012)."""
    n, size = 16, 65536
    cfg = pattern_cfg("hotspot", one_to_one, access_bytes=size, bytes_per_pe=n * size,
                      active_pes=CUBE, outstanding=1)  # fmt: skip
    lk, ch, N, _, hbm = figures(cfg)
    h = size / (N * ch)
    if one_to_one:
        per_link = lk.pe_noc_bw_gbs / ch  # channel requests per h on PE 7's link
        t = (CUBE * n - 1) * h + ((N - 1) % per_link) * h / per_link + (size / N) / ch
    else:
        t = (CUBE * n - 1) * h + size / lk.pe_noc_bw_gbs
    m = run(cfg)
    assert m["sim_time_ns"] == local_latency(lk) + hbm + t + remote_latency(lk)
    assert m["sim_time_ns"] == (33018 if one_to_one else 33082)
    assert m["aggregate_bw_gbs"] == CUBE * n * size / m["sim_time_ns"]
    assert m["aggregate_bw_gbs"] == pytest.approx(N * ch, rel=0.02)  # 256 GB/s
    # PE 7 finishes last, at the run's end: its share is n A / t, 32 GB/s (8 share 256)
    assert m["min_pe_bw_gbs"] == n * size / m["sim_time_ns"]
    assert m["min_pe_bw_gbs"] == pytest.approx(N * ch / CUBE, rel=0.02)
    assert m["peak_aggregate_bw_gbs"] == N * ch  # one PE's memory is the target
    router = "ch_r0" if one_to_one else "agg_router"  # 1:1: 8 channels alike, the first
    assert m["busiest_link"] == f"sip0.cube0.pe0.{router}<->sip0.cube0.hbm_ctrl"


@pytest.mark.parametrize("one_to_one", [False, True])
def test_neighbor_is_bound_by_the_noc_to_pe_link_and_the_owners_routers(one_to_one):
    """Every PE reads the next PE's memory; nobody shares a link. The bytes come back
    on each PE's 128 GB/s NOC->PE link (no longer PE->NOC, which a read's payload-free
    request only crosses), never idle from the first read's ready time, 12 out + 40 =
    52 ns: n accesses of A take n x A/128. The last request then drains at its
    narrowest link: n:1 the same 128 GB/s link (A/128 from its start, which is
    n x A/128 - A/128); 1:1 the owner's 32 GB/s channel, holding A/N, started when the
    PE link has A/N/128 left. Then 12 ns back: 52 + 8192 + 12 = 8256 n:1 (was 8244),
    52 + 8192 - 64 + 256 + 12 = 8448 1:1 (was 8436)."""
    n, size = 16, 65536
    cfg = pattern_cfg("neighbor", one_to_one, access_bytes=size, bytes_per_pe=n * size,
                      active_pes="all", outstanding=4)  # fmt: skip
    lk, ch, N, _, hbm = figures(cfg)
    pe_link = n * size / lk.pe_noc_bw_gbs
    last = size / N if one_to_one else size
    router_bw = ch if one_to_one else N * ch
    t = pe_link - last / lk.pe_noc_bw_gbs + last / min(lk.pe_noc_bw_gbs, router_bw)
    m = run(cfg)
    assert m["sim_time_ns"] == remote_latency(lk) + hbm + t + remote_latency(lk)
    assert m["sim_time_ns"] == (8448 if one_to_one else 8256)
    assert m["min_pe_bw_gbs"] == m["max_pe_bw_gbs"] == n * size / m["sim_time_ns"]
    assert m["busiest_link"] == "sip0.cube0.noc->sip0.cube0.pe0.dma"  # 16 alike: the first
    assert m["busiest_link_utilization"] == pe_link / m["sim_time_ns"]


@pytest.mark.parametrize("one_to_one", [False, True])
def test_cross_cube_pes_share_one_noc_to_noc_link(one_to_one):
    """The 8 PEs of cube 0 read cube 1: every byte comes back over the one 64 GB/s
    cube 1 NOC -> cube 0 NOC link, never idle from the first read's ready time
    (32 out + 40 = 72 ns), so 8 GB/s each. The last request drains at its narrowest
    link (n:1: that link, from 8nA/64 - A/64; 1:1: the 32 GB/s channel, A/N of it),
    then 32 ns back: 72 + 32768 + 32 = 32872 n:1 (was 32840), 72 + 32768 - 8 + 16 + 32
    = 32880 1:1 (was 32848)."""
    n, size = 64, 4096
    cfg = pattern_cfg("cross_cube", one_to_one, access_bytes=size, bytes_per_pe=n * size,
                      active_pes=CUBE, outstanding=4)  # fmt: skip
    lk, ch, N, _, hbm = figures(cfg)
    noc = CUBE * n * size / lk.noc_noc_bw_gbs
    last = size / N if one_to_one else size
    router_bw = ch if one_to_one else N * ch
    t = noc - last / lk.noc_noc_bw_gbs + last / min(lk.noc_noc_bw_gbs, router_bw)
    path = remote_latency(lk) + lk.noc_noc_latency_ns
    m = run(cfg)
    assert m["sim_time_ns"] == path + hbm + t + path
    assert m["sim_time_ns"] == (32880 if one_to_one else 32872)
    assert m["aggregate_bw_gbs"] == pytest.approx(lk.noc_noc_bw_gbs, rel=0.01)
    # the PE that finishes last gets exactly its share of the run; 8 GB/s
    assert m["min_pe_bw_gbs"] == n * size / m["sim_time_ns"]
    assert m["min_pe_bw_gbs"] == pytest.approx(lk.noc_noc_bw_gbs / CUBE, rel=0.01)
    assert m["busiest_link"] == "sip0.cube1.noc->sip0.cube0.noc"
    assert m["busiest_link_utilization"] == noc / m["sim_time_ns"]


def test_cross_cube_from_a_sips_last_cube_crosses_pcie():
    """2 SIPs x 1 cube x 2 PEs, PA (fair fabric; alone, the same as booked): PE 0's
    next cube is SIP 1's, over PCIe: PE->NOC 5, NOC->PCIe endpoint 20, endpoint->host
    500, host->SIP 1's endpoint 500, endpoint->NOC 20, NOC->router 3, router->HBM 4:
    1052 ns out; the access, 40; the same links back, 1052; one 4 KiB read drains at
    PCIe's 32 GB/s, 128 ns: 2272 (was 1052 + 128 + 40 = 1220). Its bytes come back
    over SIP 1's endpoint->host and host->SIP 0's endpoint, both 32 GB/s, equally busy:
    the tie goes to the lower id, host->sip0.pcie_ep (was sip0.pcie_ep->host, which
    the read's payload-free request only crosses)."""
    cfg = make_cfg(access_bytes=4096, bytes_per_pe=4096, active_pes=1,
                   pattern=StreamPattern.cross_cube)  # fmt: skip
    cfg.topology = dataclasses.replace(cfg.topology, n_sips=2, cubes_per_sip=1, pes_per_cube=2)
    cfg.topology.cube.memory_map.hbm_pseudo_channels = 16
    cfg.topology.cube.memory_map.hbm_channels_per_pe = None
    cfg.address = AddressConfig(AddressModel.pa)
    cfg = validate(cfg)
    lk, _, _, _, hbm = figures(cfg)
    path = remote_latency(lk) + 2 * lk.noc_noc_latency_ns + 2 * lk.pcie_latency_ns
    m = run(cfg)
    assert m["sim_time_ns"] == path + hbm + path + 4096 / lk.pcie_bw_gbs == 2272
    assert m["busiest_link"] == "host->sip0.pcie_ep"


def test_hotspot_one_granule_off_shows_1to1_channel_queueing():
    """Each of the 8 PEs reads one access of N+1 granules from the start of PE 0's
    shard, booked in PE order, from PE 0's ready time, 6 out + 40 = 46 ns: under 1:1
    channel 0 holds granules 0 and N of every access, 2g at 32 GB/s, 8 PEs back to
    back (the last, PE 7, remote, drains that 2g at 32, then 12 ns back):
    46 + 8 x 16 + 12 = 186 (was 180); under n:1 the aggregate resource holds each
    access for (N+1)g / 256 = 9 ns, the last draining at PE 7's 128:
    46 + 7 x 9 + 18 + 12 = 139 (was 133). Both moved by the same 6 ns (PE 0's way out
    and the access before, 46, against the last's way back and access after, 52), so
    the difference is still the channel queueing's 47 ns."""
    cfgs = {
        oto: pattern_cfg(
            "hotspot",
            oto,
            access_bytes=9 * 256,
            bytes_per_pe=9 * 256,
            active_pes=CUBE,
            outstanding=1,
        )  # fmt: skip
        for oto in (False, True)
    }
    lk, ch, N, g, hbm = figures(cfgs[True])
    assert cfgs[True].workload.access_bytes == (N + 1) * g
    size = (N + 1) * g
    ready = local_latency(lk) + hbm  # PE 0's read, the first booked
    back = remote_latency(lk)  # PE 7's, the last
    one_to_one = ready + CUBE * (2 * g / ch) + back
    n_to_one = ready + (CUBE - 1) * size / (N * ch) + size / lk.pe_noc_bw_gbs + back
    times = {oto: run(cfg)["sim_time_ns"] for oto, cfg in cfgs.items()}
    assert times == {True: one_to_one, False: n_to_one} == {True: 186, False: 139}
    assert one_to_one - n_to_one == 47  # 186 - 139 ns: channel 0 carries 2/9 at 1/8


def test_uniform_same_seed_same_results_another_seed_another_op_log():
    def go(seed):
        cfg = pattern_cfg("uniform", access_bytes=4096, bytes_per_pe=64 * 1024, seed=seed)
        cfg.sim = dataclasses.replace(cfg.sim, oplog=True)
        return simulate.run(cfg)

    a, b, c = go(7), go(7), go(8)
    assert a.oplog and a.oplog == b.oplog and a.metrics == b.metrics
    assert c.oplog != a.oplog
    assert c.metrics["bytes_moved"] == a.metrics["bytes_moved"] == 16 * 64 * 1024


def test_uniform_traffic_reaches_every_pe_of_the_topology():
    cfg = pattern_cfg("uniform", access_bytes=4096, bytes_per_pe=256 * 4096, active_pes=2)
    system, _ = make_system(cfg)
    m = stream.run(system, cfg.workload)
    carried, graph = system.fabric.bytes_carried, system.graph
    # A read's bytes leave HBM on the twin of the router's link into it (DESIGN §13.1)
    out_of_hbm = {r: carried[graph.twin[lk.id]] for r, lk in graph.hbm_link.items()}
    assert all(carried[lk.id] == 0 for lk in graph.hbm_link.values())  # nothing written
    # 512 draws over 16 PEs: every PE's HBM carried some, and only whole accesses
    assert all(out_of_hbm[pe.agg_router] > 0 for pe in graph.pes)
    assert all(b % 4096 == 0 for b in out_of_hbm.values())
    assert sum(out_of_hbm.values()) == m["bytes_moved"] == 2 * 256 * 4096
    assert m["peak_aggregate_bw_gbs"] == 16 * 256


def test_each_pattern_targets_the_pe_it_names():
    """Owners on the default topology (2 cubes x 8 PEs, global order)."""
    cfg = pattern_cfg("local")
    topo, pes = cfg.topology, make_system(cfg)[0].graph.pes

    def owners(pattern, **kw):
        w = dataclasses.replace(cfg.workload, pattern=StreamPattern(pattern), **kw)
        return patterns.owners(w, topo, pes, 1)

    assert owners("local") == list(range(16))
    assert owners("neighbor") == [1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8]
    assert owners("cross_cube") == [*range(8, 16), *range(8)]
    assert owners("hotspot", hotspot_pe=5) == [5] * 16
    assert patterns.holders(owners("hotspot", hotspot_pe=5)[:1], 1) == 6


def test_copy_reads_and_writes_the_targets_memory():
    """PE 0 copies 1 MiB of PE 1's memory (64 KiB, 4 buffers). It moves 2 x bytes
    through PE 1's HBM, one half-duplex resource: 2 MiB / 256 GB/s = 8192 ns busy.
    (It no longer moves them all through PE 0's PE->NOC link: the loads' bytes come
    back on NOC->PE 0, the stores' go out on PE 0->NOC, 1 MiB / 128 = 8192 ns each, so
    three resources tie and HBM, first in the order of ties, is named.)
    Booked: the DMA issues in order and a store waits for its load, so load k+1 issues
    with store k when load k is done, at D. Store k is ready at D and holds PE 1's HBM
    over [D, D + 256); load k+1, ready at D + 12 + 40, starts at D + 256 when the
    resource is free and is done 12 + 65536 / 128 later: D + 780. Load 0 is done at
    52 + 524 = 576, load 15 at 576 + 15 x 780 = 12276, and store 15 then takes
    12 + 512 + 40: 12840 ns (fair sharing, which does not hold HBM for a write's bytes
    still on their way, gives 9780: tests/test_round_trips.py)."""
    cfg = pattern_cfg("neighbor", access_bytes=65536, bytes_per_pe=1 << 20, active_pes=1,
                      op="copy")  # fmt: skip
    lk, ch, N, _, hbm = figures(cfg)
    m = run(cfg)
    assert m["bytes_moved"] == 2 << 20
    assert m["busiest_link"] == "sip0.cube0.pe1.agg_router<->sip0.cube0.hbm_ctrl"
    assert m["busiest_link_utilization"] == (2 << 20) / (N * ch) / m["sim_time_ns"]
    way, drain, held = remote_latency(lk), 65536 / lk.pe_noc_bw_gbs, 65536 / (N * ch)
    load0 = way + hbm + way + drain
    step = held + way + drain
    assert m["sim_time_ns"] == load0 + 15 * step + way + drain + hbm == 12840


def test_bytes_moved_is_what_reached_memory_not_the_config(monkeypatch):
    """A kernel that skips its last access: the row must say the bytes that moved."""
    full = stream.stream_kernel

    def short(src, dst, op, access, total, *rest):
        full(src, dst, op, access, total - access, *rest)

    monkeypatch.setattr(stream, "stream_kernel", short)
    cfg = pattern_cfg("local", access_bytes=4096, bytes_per_pe=8 * 4096, active_pes=3)
    m = run(cfg)
    assert m["bytes_moved"] == 3 * 7 * 4096
    assert m["accesses"] == 3 * 7
    assert m["aggregate_bw_gbs"] == 3 * 7 * 4096 / m["sim_time_ns"]
    # identical PEs on their own paths end together: each moved 7 accesses in that time
    assert m["min_pe_bw_gbs"] == m["max_pe_bw_gbs"] == 7 * 4096 / m["sim_time_ns"]


@pytest.mark.parametrize(
    ("changes", "key", "text"),
    [
        ({"hotspot_pe": 16}, "workload.hotspot_pe", "16 is not a PE index in 0..15"),
        ({"hotspot_pe": -1}, "workload.hotspot_pe", "-1 is not a PE index in 0..15"),
        ({"seed": -3}, "workload.seed", "-3 is not >= 0"),
    ],
)
def test_bad_pattern_keys_name_the_key_and_the_limit(changes, key, text):
    cfg = make_cfg()
    cfg.workload = dataclasses.replace(cfg.workload, **changes)
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    assert info.value.key == key and text in str(info.value)


@pytest.mark.parametrize(
    ("pattern", "topo", "text"),
    [
        ("neighbor", {"pes_per_cube": 1}, "neighbor needs topology.pes_per_cube >= 2"),
        ("cross_cube", {"cubes_per_sip": 1}, "cross_cube needs 2 or more cubes"),
    ],
)
def test_a_pattern_without_a_target_is_an_error(pattern, topo, text):
    cfg = make_cfg()
    cfg.workload = dataclasses.replace(cfg.workload, pattern=StreamPattern(pattern))
    cfg.topology = dataclasses.replace(cfg.topology, **topo)
    cfg.topology.cube.memory_map.hbm_channels_per_pe = None
    cfg.topology.cube.memory_map.hbm_pseudo_channels = 8
    with pytest.raises(ConfigError, match=text) as info:
        validate(cfg)
    assert info.value.key == "workload.pattern"


def test_unknown_pattern_is_a_composition_error_listing_the_patterns(compose_cfg):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg("workload.pattern=ring")
    message = f"{info.value} {info.value.__cause__ or ''}"
    assert "workload.pattern" in message
    assert "local, neighbor, hotspot, cross_cube, uniform" in message

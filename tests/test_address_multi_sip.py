"""ADR-0011 D-VA3 on two SIPs: ``target_sips`` routing of install messages, sharded and
replicated, under VA and LA (issue 12, defect 1).

Every figure is computed here from the topology's link latencies and the control
components' processing times; the control values are set apart from each other so
that a hop counted twice or dropped shows. The default topology doubled: 2 SIPs x 2
cubes x 8 PEs = 32 PEs, PE index = 16 * sip + 8 * cube + pe.
"""

from __future__ import annotations

import pytest

from kernbench import simulate
from kernbench.config.validate import validate
from kernbench.errors import AddressFault
from kernbench.runtime import DPPolicy
from tests.address_support import (
    KIB4,
    launch_reads,
    model_cfg,
    one_message_ns,
)
from tests.support import make_cfg, make_system

ENDPOINT = {"va": "mmu", "la": "dma"}
M_CPUS = [f"sip{s}.cube{c}.m_cpu" for s in (0, 1) for c in (0, 1)]


def two_sip_cfg(model: str, **stream: object):
    cfg = model_cfg(model, **stream)
    cfg.topology.n_sips = 2
    ctl = cfg.topology.control
    ctl.pcie_ep_processing_ns, ctl.io_cpu_processing_ns = 41.0, 203.0
    ctl.m_cpu_processing_ns, ctl.mmu_processing_ns, ctl.dma_processing_ns = 107.0, 11.0, 13.0
    return validate(cfg)


@pytest.mark.parametrize("model", ["va", "la"])
def test_sharded_install_on_both_sips_lands_once_on_every_pe(model):
    cfg = two_sip_cfg(model)
    system, ctx = make_system(cfg)
    t = ctx.deploy(32 * KIB4, DPPolicy("column_wise", "all"))
    (msg,) = system.control.log
    assert msg.target_sips == (0, 1) and msg.target_cubes is None
    assert [system.control.landed(pe.index) for pe in system.graph.pes] == [1] * 32
    assert [system.control.handled(m_cpu) for m_cpu in M_CPUS] == [1, 1, 1, 1]
    # each SIP's copy goes host -> its own PCIE_EP -> IO_CPU -> its own cubes, in
    # parallel; 32 one-page shards: 32 PTEs (VA) or 32 segments (LA)
    one = one_message_ns(cfg, ENDPOINT[model], 32)
    assert t.install_latency_ns == msg.latency_ns == one
    # every PE reaches every shard, in its own SIP and in the other one
    first, last = system.graph.pes[0], system.graph.pes[31]
    for pe, shard in ((first, 31), (last, 0), (last, 17)):
        reqs, _ = system.address.resolve(pe, t.shard_ptr(shard), 64)
        assert reqs == system.physical.resolve(t.shards[shard].pa, 64)


@pytest.mark.parametrize("model", ["va", "la"])
def test_sharded_install_on_one_sip_reaches_only_that_sip(model):
    cfg = two_sip_cfg(model)
    system, ctx = make_system(cfg)
    t = ctx.deploy(16 * KIB4, DPPolicy("column_wise", 16))  # the 16 PEs of SIP 0
    (msg,) = system.control.log
    assert msg.target_sips == (0,)
    handled = [system.control.landed(pe.index) for pe in system.graph.pes]
    assert handled == [1] * 16 + [0] * 16
    assert [system.control.handled(m_cpu) for m_cpu in M_CPUS] == [1, 1, 0, 0]
    assert t.install_latency_ns == one_message_ns(cfg, ENDPOINT[model], 16)  # 16 shards
    # a SIP 1 PE has no mapping: its pointer is no PA either (4 GiB into pe0's HBM)
    with pytest.raises(AddressFault, match="sip1.cube0.pe0"):
        system.address.resolve(system.graph.pes[16], t.shard_ptr(0), 64)


@pytest.mark.parametrize("model", ["va", "la"])
def test_replicate_on_two_sips_installs_per_cube_and_each_sip_queues_its_own(model):
    cfg = two_sip_cfg(model)
    system, ctx = make_system(cfg)
    t = ctx.deploy(1 << 20, DPPolicy("replicate"))
    msgs = system.control.log
    assert [(m.target_sips, sorted(m.target_cubes)) for m in msgs] == [
        ((0,), [(0, 0)]),
        ((0,), [(0, 1)]),
        ((1,), [(1, 0)]),
        ((1,), [(1, 1)]),
    ]
    # each cube's copy: 8 shards of 128 KiB, 8 x 32 = 256 pages (VA) or 8 segments (LA)
    one = one_message_ns(cfg, ENDPOINT[model], 256 if model == "va" else 8)
    ctl = cfg.topology.control
    # per SIP: both cube messages reach PCIE_EP together; PCIE_EP (41 ns) hands the
    # second to IO_CPU while IO_CPU (203 ns) still serves the first, so the second
    # lands one IO_CPU time later. The SIPs' components are their own: no cross-SIP wait.
    assert ctl.io_cpu_processing_ns >= ctl.pcie_ep_processing_ns
    second = one + ctl.io_cpu_processing_ns
    assert [m.latency_ns for m in msgs] == [one, second, one, second]
    assert t.install_latency_ns == second
    assert [system.control.landed(pe.index) for pe in system.graph.pes] == [1] * 32
    # local copies only: the same pointer is each cube's own PA
    for pe in (0, 8, 16, 24):
        reqs, _ = system.address.resolve(system.graph.pes[pe], t.base, 64)
        assert reqs == system.physical.resolve(t.shards[pe].pa, 64)


@pytest.mark.parametrize("model", ["va", "la"])
def test_cross_sip_read_takes_the_pcie_route_through_the_host(model):
    cfg = two_sip_cfg(model)
    system, ctx = make_system(cfg)
    t = ctx.deploy(32 * KIB4, DPPolicy("column_wise", "all"))
    lk, mm = cfg.topology.links, cfg.topology.cube.memory_map
    # A round trip (DESIGN §13.1): the request goes out pe0.dma -> noc -> sip0.pcie_ep
    # -> host -> sip1.pcie_ep -> sip1.cube0.noc -> router -> HBM (5 + 20 + 500 + 500 +
    # 20 + 3 + 4 = 1052 ns) with no payload, the HBM access (40), then the bytes come
    # back over the same links reversed (1052 ns), drained at the narrowest, PCIe
    # (4096 / 32 = 128 ns): 2272 ns (2274 under VA, its TLB first; was 1220 / 1222,
    # when the way back was not paid and the access came after the bytes)
    hops = lk.pe_noc_latency_ns + 2 * lk.noc_noc_latency_ns + 2 * lk.pcie_latency_ns
    hops += lk.noc_router_latency_ns + lk.router_hbm_latency_ns
    tlb = cfg.topology.pe_mmu.tlb_overhead_ns if model == "va" else 0.0
    expect = tlb + hops + mm.hbm_access_latency_ns + hops + KIB4 / lk.pcie_bw_gbs
    assert expect == 2272 + tlb
    assert launch_reads(system, ctx, [0], {0: [t.shard_ptr(16)]}, KIB4) == {0: expect}


@pytest.mark.parametrize("model", ["va", "la"])
@pytest.mark.parametrize("active", ["all", 16])
def test_stream_runs_on_two_sips(model, active):
    cfg = two_sip_cfg(model, access_bytes=KIB4, bytes_per_pe=16 * KIB4, active_pes=active)
    metrics = simulate.run(cfg).metrics
    assert metrics["active_pe_count"] == (32 if active == "all" else 16)
    # the tensor: a 16-page shard on each active PE, one segment each under LA
    pes = metrics["active_pe_count"]
    entries = 16 * pes if model == "va" else pes
    assert metrics["install_latency_ns"] == one_message_ns(cfg, ENDPOINT[model], entries)
    # Each PE reads its own shard, 16 accesses of 4 KiB, 4 in flight (the default), each
    # a round trip (DESIGN §13.1): TLB (VA: 2 ns, paid by every access before it leaves)
    # + 6 out + 40 access + 6 back + 16 drain at 256 GB/s = R = 68 ns (70 under VA).
    # R exceeds the 4 x 16 = 64 ns the PE's HBM needs for 4 accesses' bytes, so the
    # in-order queue, not the link, paces the stream: access 4g + j is issued when
    # access 4(g - 1) + j completes, its group's first byte comes back R - 16 after its
    # issue, after the previous group's last, and it completes at (g + 1) R + 16 j. The
    # last, 4 x 3 + 3, at 4 R + 3 x 16 = 320 ns (328 under VA). No PE waits for
    # another, in either SIP. (Before reads were round trips the 4 accesses covered the
    # 6 ns way out and the stream was HBM-bound: TLB + 16 x 16 + 46 = 302 / 304.)
    lk, mm = cfg.topology.links, cfg.topology.cube.memory_map
    drain = KIB4 / (mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs)
    way = lk.dma_router_latency_ns + lk.router_hbm_latency_ns
    tlb = cfg.topology.pe_mmu.tlb_overhead_ns if model == "va" else 0.0
    trip = tlb + way + mm.hbm_access_latency_ns + way + drain
    depth, groups = cfg.workload.outstanding, 16 // cfg.workload.outstanding
    assert depth == groups == 4 and trip > depth * drain  # latency-bound, not HBM-bound
    assert metrics["sim_time_ns"] == groups * trip + (depth - 1) * drain == 320 + 4 * tlb


@pytest.mark.parametrize("model", ["va", "la"])
def test_kernbench_runs_two_sips(run_app, model):
    run = run_app("topology.n_sips=2", f"address={model}", "workload.bytes_per_pe=65536")
    assert run.returncode == 0, run.stderr
    [row] = run.ok_rows()
    assert row["topology.n_sips"] == 2 and row["active_pe_count"] == 32
    # the default topology's links and components; a 16-page shard on each of the 32
    # PEs: 512 PTEs, 1005 + (16 + 512 x 16) x 53/128 = 4403.625 ns; 32 segments,
    # 1005 + (16 + 32 x 32) x 53/128 = 1435.625 ns
    entries = 512 if model == "va" else 32
    assert row["install_latency_ns"] == one_message_ns(make_cfg(), ENDPOINT[model], entries)
    assert row["install_latency_ns"] == (4403.625 if model == "va" else 1435.625)

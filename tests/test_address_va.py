"""ADR-0011 VA test requirements (regression), with exact times computed by hand.

Default topology: a 4 KiB read on the n:1 path is a round trip (DESIGN §13.1): its
request goes out 2 (dma->router) + 4 (router->hbm) ns carrying no payload, the HBM
pays its 40 ns access, the bytes come back 4 (hbm->router) + 2 (router->dma) ns and
drain 16 ns at 256 GB/s: 6 + 40 + 6 + 16 = 68 ns, nothing after the last byte. A
remote read goes out PE->NOC 5 + NOC->router 3 + router->HBM 4 = 12 ns (32 with the
NOC->NOC hop to another cube) and comes back the same links reversed.
tlb_overhead_ns = 2 per access (the default tlb_charge=per_access), paid before the
request leaves.
"""

from __future__ import annotations

import gc

import pytest

from kernbench.address.pa import pe_base
from kernbench.address.va import VA_BASE, PeMMU, VirtualAllocator
from kernbench.config.schema import TlbCharge
from kernbench.errors import AddressFault, AllocationError
from kernbench.runtime import DPPolicy, RuntimeContext
from kernbench.sim.control import MmuMapMsg, MmuUnmapMsg
from kernbench.sim.system import System
from tests.address_support import (
    KIB4,
    deploy_all,
    launch_reads,
    model_cfg,
    one_message_ns,
)
from tests.support import make_system


def test_cross_pe_and_cross_cube_dma_follow_installed_mappings():
    system, ctx, src = deploy_all("va")
    # PE0 reads shard 1 (sip0.cube0.pe1) and, on its own, shard 8 (sip0.cube1.pe0): out,
    # the owner's HBM access, back, and the drain at the narrowest link of the way back
    # (NOC->PE 128 GB/s; NOC->NOC 64 GB/s)
    remote, cross_cube = 5 + 3 + 4, 5 + 20 + 3 + 4
    for shard, expect in (
        (1, remote + 40 + remote + KIB4 / 128),
        (8, cross_cube + 40 + cross_cube + KIB4 / 64),
    ):
        ptr = src.shard_ptr(shard)
        assert ptr == src.va_base + src.shards[shard].offset_bytes
        assert system.address.mmus[0].translate(ptr) == src.shards[shard].pa
        ends = launch_reads(system, ctx, [0], {0: [ptr]}, KIB4)
        assert ends == {0: 2 + expect}  # TLB 2 ns, then the PA round trip: 96 ns and 168 ns


def test_mmu_map_and_unmap_traverse_the_fabric_with_their_measured_latency():
    system, ctx, src = deploy_all("va")
    (msg,) = system.control.log
    assert isinstance(msg, MmuMapMsg) and msg.target_sips == (0,)
    # one PTE per page: 1 MiB / 4 KiB = 256 pages; 16 + 256 x 16 = 4112 B, over links at
    # 32, 8, 8, 8 and 128 GB/s: 4112 x 53/128 = 1702.625 ns beside the 1005 ns of
    # latencies and processing
    one = one_message_ns(system.cfg, "mmu", (1 << 20) // KIB4)
    assert msg.entries == 256 and src.install_bytes == msg.sent_bytes == 4112
    assert src.install_latency_ns == msg.latency_ns == one == 1005 + 1702.625
    assert system.env.now == one
    # every MMU of both cubes received it (sharded: broadcast to every cube)
    assert all(system.control.landed(pe.index) == 1 for pe in system.graph.pes)
    assert system.address.mmus[15].mapped_pages == (1 << 20) // KIB4
    del src
    gc.collect()
    unmap = system.control.log[-1]
    # the unmap names the same 256 pages: the same size, the same time
    assert isinstance(unmap, MmuUnmapMsg) and unmap.latency_ns == one
    assert unmap.entries == 256 and unmap.sent_bytes == 4112
    assert system.env.now == 2 * one
    assert all(not mmu.mapped_pages for mmu in system.address.mmus.values())
    assert system.address.va.space.free_blocks == [(VA_BASE, system.address.va.space.size)]


def test_replicate_installs_one_message_per_cube_and_the_components_serialise_them():
    system, ctx = make_system(model_cfg("va"))
    t = ctx.deploy(1 << 20, DPPolicy("replicate"))
    a, b = system.control.log
    assert a.target_cubes == frozenset({(0, 0)}) and b.target_cubes == frozenset({(0, 1)})
    # Each cube's copy: 8 shards of 128 KiB = 8 x 32 = 256 pages, 16 + 256 x 16 = 4112 B.
    # A link costs its latency + 4112 B / its bandwidth: PCIe 500 + 128.5 = 628.5,
    # a control link 50 + 514 = 564, M_CPU -> NOC -> MMU 564 + 5 + 32.125 = 601.125.
    # Both reach PCIE_EP at 628.5; it serves them one at a time: a 628.5-668.5, b
    # 668.5-708.5; IO_CPU: a 1232.5-1432.5, b (arrived 1272.5) 1432.5-1632.5; a: m_cpu0
    # 1996.5-2096.5, mmu 2697.625-2707.625; b: m_cpu1 2196.5-2296.5, mmu 2897.625-2907.625
    assert a.sent_bytes == b.sent_bytes == 4112
    assert a.latency_ns == 2707.625 and b.latency_ns == 2907.625
    assert t.install_latency_ns == 2907.625
    assert t.install_bytes == 2 * 4112  # both messages, each counted once
    # local mappings only: the same VA is cube0's PA on PE0 and cube1's PA on PE8
    mmus = system.address.mmus
    assert mmus[0].translate(t.va_base) == t.shards[0].pa
    assert mmus[8].translate(t.va_base) == t.shards[8].pa
    assert mmus[0].translate(t.shard_ptr(8)) == t.shards[0].pa  # program 8's pointer


def _local_read_ns(cfg, nbytes):
    """A local read on the n:1 path with no translation, a round trip: the request's
    way out, the HBM access, the bytes' way back (the same latencies), the drain at the
    PE's aggregate bandwidth; nothing after the last byte."""
    topo, mm = cfg.topology, cfg.topology.cube.memory_map
    bw = mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs
    lat = topo.links.dma_router_latency_ns + topo.links.router_hbm_latency_ns
    return lat + mm.hbm_access_latency_ns + lat + nbytes / bw


@pytest.mark.parametrize("charge", ["per_access", "per_page"])
def test_a_64k_access_pays_the_tlb_once_per_access_or_once_per_page(charge):
    cfg = model_cfg("va")
    cfg.topology.pe_mmu.tlb_charge = TlbCharge(charge)
    cfg.topology.pe_mmu.tlb_overhead_ns = 7.0
    system, ctx = make_system(cfg)
    t = ctx.deploy(1 << 20)
    pages = (1 << 16) // cfg.topology.pe_mmu.page_size  # 16: split into 16 requests
    tlb = 7.0 * (pages if charge == "per_page" else 1)
    # the 16 page-sized requests are all out and served together; their bytes queue on
    # the one aggregate HBM resource: together they drain like one 64 KiB
    end = launch_reads(system, ctx, [0], {0: [t.shard_ptr(0)]}, 1 << 16)
    # 7 + 6 + 40 + 6 + 256 = 315 ns, or 16 x 7 + 308 = 420 ns per page
    assert end == {0: tlb + _local_read_ns(cfg, 1 << 16)}


def test_tlb_overhead_is_paid_once_for_an_access_crossing_a_page_boundary():
    system, ctx, src = deploy_all("va")
    base = src.shard_ptr(0)
    assert launch_reads(system, ctx, [0], {0: [base]}, KIB4) == {0: 2 + 68}
    # 4 KiB from mid-page: two 2 KiB requests, one TLB charge, both out and served at
    # 2 + 6 + 40; their bytes share the aggregate resource, the second's after the
    # first's 8 ns: 2 + 8 + (52 + 8) = 70, as one 4 KiB request (two charges: 72)
    assert launch_reads(system, ctx, [0], {0: [base + 2048 + KIB4]}, KIB4) == {0: 2 + 8 + 60}


def test_page_fault_falls_back_to_pa_and_keeps_pa_only_behaviour():
    system, ctx, src = deploy_all("va")
    pa = src.shards[1].pa  # a PA, not a VA: no mapping, so PE_DMA uses it as a PA
    assert system.address.mmus[0].translate(pa) is None
    # PE 1's memory, no TLB time: 12 out + 40 + 12 back + 4096 / 128 = 96 ns
    assert launch_reads(system, ctx, [0], {0: [pa]}, KIB4) == {0: 96}
    pa_system, pa_ctx, pa_src = deploy_all("pa")
    assert launch_reads(pa_system, pa_ctx, [0], {0: [pa_src.shards[1].pa]}, KIB4) == {0: 96}


def test_scope_exit_unmaps_and_returns_va_and_pa_space():
    system = System(model_cfg("va"))
    hbm_free = system.memory[0].hbm.free_bytes
    with RuntimeContext(system) as ctx:
        kept = [ctx.deploy(1 << 20), ctx.deploy(1 << 16)]  # alive until the scope ends
        assert system.memory[0].hbm.free_bytes < hbm_free
    kinds = [m.kind for m in system.control.log]
    assert kinds == ["MmuMapMsg", "MmuMapMsg", "MmuUnmapMsg", "MmuUnmapMsg"]
    assert all(not mmu.mapped_pages for mmu in system.address.mmus.values())
    assert system.memory[0].hbm.free_bytes == hbm_free
    assert len(system.address.va.space.free_blocks) == 1
    assert all(t.freed for t in kept)


def test_access_past_the_tensor_end_is_a_fault_naming_the_va():
    system, ctx, src = deploy_all("va", nbytes=16 * KIB4)
    last = src.shard_ptr(15)  # one page per shard; the range ends one page later
    with pytest.raises(AddressFault, match=rf"sip0.cube1.pe7.mmu: VA {last + KIB4:#x} is not"):
        launch_reads(system, ctx, [15], {15: [last]}, 2 * KIB4)


def test_unmapped_va_that_is_no_pa_either_names_the_pe_and_the_limit():
    system, ctx, src = deploy_all("va")
    bogus = src.va_base + (1 << 30)
    with pytest.raises(
        AddressFault, match=rf"pe0.mmu: VA {bogus:#x}\+4096 has no mapping.*capacity"
    ):
        launch_reads(system, ctx, [0], {0: [bogus]}, KIB4)


def test_mmu_split_at_page_boundaries_and_alignment_is_checked():
    mmu = PeMMU("m", 4096, 2.0)
    mmu.map(0x10000, 0x800000, 2 * 4096)
    assert mmu.translate_range(0x10000 + 100, 5000) == [(0x800000 + 100, 3996), (0x801000, 1004)]
    with pytest.raises(AddressFault, match="not aligned to the page size 4096"):
        mmu.map(0x10000 + 8, 0x800000, 4096)
    with pytest.raises(AddressFault, match=r"m: map 0x11000\+8192 overlaps a mapped page"):
        mmu.map(0x11000, 0x900000, 2 * 4096)


def test_va_space_exhaustion_names_the_space_and_its_capacity():
    va = VirtualAllocator(4096, size=1 << 20)
    va.alloc(1 << 19)
    with pytest.raises(
        AllocationError, match=r"device VA space: cannot allocate .*\(capacity 1048576\)"
    ):
        va.alloc(1 << 20)


@pytest.mark.parametrize(("model", "mapping"), [("va", "n_to_one"), ("la", "one_to_one")])
def test_a_channel_count_that_is_not_a_power_of_two_runs(model, mapping):
    """Found by the override fuzz: 34 pseudo-channels over 2 PEs (17 per PE) put each
    HBM allocation on a 17 x 256 B stripe, not a page: VA mapping failed ("not aligned
    to the page size"). Allocations now align to both (their least common multiple)."""
    from kernbench import simulate
    from kernbench.address.pa_model import hbm_alignment
    from kernbench.config.schema import (
        AddressModel,
        HbmMappingMode,
        KernBenchConfig,
        StreamWorkloadConfig,
    )

    cfg = KernBenchConfig(workload=StreamWorkloadConfig(bytes_per_pe=8192, access_bytes=1024))
    cfg.topology.pes_per_cube = 2
    cfg.topology.cube.memory_map.hbm_pseudo_channels = 34
    cfg.topology.cube.memory_map.hbm_mapping_mode = HbmMappingMode(mapping)
    cfg.address.model = AddressModel(model)
    result = simulate.run(cfg)
    assert result.metrics["bytes_moved"] == 4 * 8192
    align = hbm_alignment(System(simulate.validate(cfg)).graph)
    assert align % 4096 == 0 and align % (17 * 256) == 0


def test_a_tensor_freed_by_the_collector_after_a_failure_raises_nothing(monkeypatch):
    """A failed run's tensors are freed by ``Tensor.__del__``; a free that fails then
    (the run's error already reported) printed a second traceback ("Exception ignored").
    The failed state here is real: the tensor's HBM block was returned behind its back,
    so its own free finds it not allocated (AddressFault)."""
    system, ctx = make_system()
    tensor = ctx.deploy(4096)
    for s in tensor.shards:
        system.memory[s.pe.index].hbm.free(s.pa - pe_base(s.pe.sip, s.pe.cube, s.pe.pe))
    seen = []
    monkeypatch.setattr("sys.unraisablehook", seen.append)
    del tensor
    gc.collect()
    assert seen == []

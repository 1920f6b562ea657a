"""ADR-0011 LA test requirements, with exact times computed by hand.

Default topology, one PE: 8 channels x 32 GB/s (1:1) or one 256 GB/s aggregate link
(n:1), each one half-duplex HBM resource. A read is a round trip (DESIGN §13.1): its
request goes out with no payload, 2 (dma->router) + 4 (router->hbm) ns, the HBM pays
its 40 ns access, then the bytes come back over the twin links, 4 (hbm->router) + 2
(router->dma) ns, and drain: a local read costs 6 + 40 + 6 + drain = 52 + drain ns,
nothing after its last byte. A remote one goes out PE->NOC 5 + NOC->router 3 +
router->HBM 4 = 12 ns (plus 20 over NOC<->NOC to another cube) and back the same.
Interleave granule g = 256 B: LA offset o lives on channel (o // 256) % 8.
"""

from __future__ import annotations

import dataclasses
import gc

import pytest

from kernbench import simulate
from kernbench.address.la import LA_BASE, LA_SIZE
from kernbench.address.pa import pe_base
from kernbench.config.schema import AddressConfig, AddressModel, HbmMappingMode
from kernbench.config.validate import validate
from kernbench.errors import AddressFault, AllocationError, ConfigError
from kernbench.sim.control import BaawSegmentInstallMsg, BaawSegmentUninstallMsg
from tests.address_support import KIB4, deploy_all, launch_reads, model_cfg, one_message_ns
from tests.support import make_cfg, make_system

OUT = BACK = 2 + 4  # dma->router->hbm, and hbm->router->dma on the twin links
ACCESS = 40
PATH_NS = OUT + ACCESS + BACK  # 52 ns before a local read's first byte drains
REMOTE = 5 + 3 + 4  # pe->noc->router->hbm, the same back: 12 ns each way
CROSS_CUBE = 5 + 20 + 3 + 4  # with the NOC->NOC hop: 32 ns each way


def test_one_to_one_one_logical_access_becomes_n_per_channel_requests():
    system, _, src = deploy_all("la", one_to_one=True)
    reqs, delay = system.address.resolve(system.graph.pes[0], src.shard_ptr(0), KIB4)
    a = src.shards[0].pa  # the shard's HBM range starts on channel 0 (stripe-aligned)
    assert delay == 0
    assert reqs == [(f"sip0.cube0.pe0.ch_r{c}", a + c * 256, 512, c) for c in range(8)]


@pytest.mark.parametrize(("channels", "pes", "expect"), [(64, 8, 8), (32, 8, 4), (64, 4, 16)])
def test_one_to_one_request_count_is_channels_per_pe(channels, pes, expect):
    cfg = make_cfg(one_to_one=True)
    cfg.topology.pes_per_cube, cfg.topology.cube.memory_map.hbm_pseudo_channels = pes, channels
    cfg.topology.cube.memory_map.hbm_channels_per_pe = None
    cfg = validate(cfg)
    cfg.address = AddressConfig(AddressModel.la)
    system, ctx = make_system(cfg)
    t = ctx.deploy(1 << 20)
    g_n = 256 * expect  # one full stripe: one granule per channel
    reqs, _ = system.address.resolve(system.graph.pes[1], t.shard_ptr(1), g_n)
    assert [r[3] for r in reqs] == [expect + c for c in range(expect)]  # PE1's channel ids
    assert {r[2] for r in reqs} == {256}


def test_n_to_one_one_logical_access_becomes_one_aggregate_request():
    system, _, src = deploy_all("la")
    reqs, _ = system.address.resolve(system.graph.pes[0], src.shard_ptr(1) + 100, KIB4)
    assert reqs == [("sip0.cube0.pe1.agg_router", src.shards[1].pa + 100, KIB4, -1)]


def test_4k_aligned_read_drains_in_16ns_under_both_mappings():
    for one_to_one in (True, False):
        system, ctx, src = deploy_all("la", one_to_one)
        # 1:1: 8 x 512 B at 32 GB/s = 16 ns each, in parallel; n:1: 4096 B at 256 GB/s = 16 ns
        assert launch_reads(system, ctx, [0], {0: [src.shard_ptr(0)]}, KIB4) == {0: PATH_NS + 16}


def test_17_granules_put_3_on_one_channel_under_1to1_against_17ns_under_n_to_1():
    nbytes = 17 * 256  # granules 0..16: channel 0 holds 0, 8 and 16
    system, ctx, src = deploy_all("la", one_to_one=True)
    assert launch_reads(system, ctx, [0], {0: [src.shard_ptr(0)]}, nbytes) == {0: PATH_NS + 24}
    system, ctx, src = deploy_all("la")
    assert launch_reads(system, ctx, [0], {0: [src.shard_ptr(0)]}, nbytes) == {0: PATH_NS + 17}


def test_bandwidth_equivalence_of_both_modes_on_the_same_workload():
    rows = {}
    for one_to_one in (True, False):
        cfg = model_cfg("la", one_to_one, access_bytes=65536, bytes_per_pe=1 << 20, active_pes=2)
        rows[one_to_one] = simulate.run(cfg).metrics
    # the busiest resource is each mapping's own: PE 0's first channel, or its aggregate
    # link, each one half-duplex HBM resource that the reads' bytes leave HBM on
    assert rows[True].pop("busiest_link") == "sip0.cube0.pe0.ch_r0<->sip0.cube0.hbm_ctrl"
    assert rows[False].pop("busiest_link") == "sip0.cube0.pe0.agg_router<->sip0.cube0.hbm_ctrl"
    # ... busy enough to bound the stream: the bottleneck names it
    assert rows[True].pop("bottleneck") == "sip0.cube0.pe0.ch_r0<->sip0.cube0.hbm_ctrl"
    assert rows[False].pop("bottleneck") == "sip0.cube0.pe0.agg_router<->sip0.cube0.hbm_ctrl"
    assert rows[True] == rows[False]
    # two PEs hold the tensor: one message of 2 segments, 16 + 2 x 32 = 80 B, in either
    # mode: 1005 + 80 x 53/128 = 1038.125 ns
    assert rows[True]["install_latency_ns"] == one_message_ns(cfg, "dma", 2) == 1038.125
    assert rows[True]["install_bytes"] == 80


def test_one_to_one_per_channel_contention_is_modelled():
    system, ctx, src = deploy_all("la", one_to_one=True)
    base = src.shard_ptr(0)
    # offsets 0 and 2048 are both on channel 0: both requests are out and served at
    # 6 + 40 = 46 ns, the channel carries their 256 B back one after the other (8 ns
    # each at 32 GB/s), so the second's bytes wait 8 ns: 8 + 52 + 8
    same = launch_reads(system, ctx, [0], {0: [base, base + 2048]}, 256)
    assert same == {0: 8 + PATH_NS + 8}
    # offsets 0 and 256 are channels 0 and 1: no waiting, 52 + 8
    system, ctx, src = deploy_all("la", one_to_one=True)
    base = src.shard_ptr(0)
    assert launch_reads(system, ctx, [0], {0: [base, base + 256]}, 256) == {0: PATH_NS + 8}


def test_n_to_one_aggregate_bandwidth_is_reflected():
    system, ctx, src = deploy_all("la")
    base = src.shard_ptr(0)
    ptrs = [base + i * KIB4 for i in range(8)]
    # eight 4 KiB reads, all served at 46 ns, come back to back over the 256 GB/s
    # aggregate resource (16 ns each): the last one's bytes wait 7 x 16
    assert launch_reads(system, ctx, [0], {0: ptrs}, KIB4) == {0: 7 * 16 + PATH_NS + 16}
    # two 256 B reads to "one channel's" offsets do not serialise per channel: 1 ns each
    system, ctx, src = deploy_all("la")
    base = src.shard_ptr(0)
    assert launch_reads(system, ctx, [0], {0: [base, base + 2048]}, 256) == {0: 1 + PATH_NS + 1}


def test_cross_pe_and_cross_cube_la_dma_go_to_the_owners_routers():
    # n:1: one 4 KiB request out (12 ns; 32 to another cube), the owner's HBM access
    # (40), the bytes back the same way reversed, drained at the narrowest link
    # (NOC->PE 128, NOC->NOC 64 GB/s)
    system, ctx, src = deploy_all("la")
    to_pe1 = launch_reads(system, ctx, [0], {0: [src.shard_ptr(1)]}, KIB4)
    assert to_pe1 == {0: REMOTE + ACCESS + REMOTE + KIB4 / 128}  # 96 ns, as under PA
    to_cube1 = launch_reads(system, ctx, [0], {0: [src.shard_ptr(8)]}, KIB4)
    assert to_cube1 == {0: CROSS_CUBE + ACCESS + CROSS_CUBE + KIB4 / 64}  # 168 ns
    # 1:1: eight 512 B requests to the owner's ch_r routers, their bytes each capped by
    # its 32 GB/s channel: oldest first, 4 fill the 128 GB/s NOC->PE link side by side
    # (16 ns), then the other 4: as fast as n:1
    system, ctx, src = deploy_all("la", one_to_one=True)
    to_pe1 = launch_reads(system, ctx, [0], {0: [src.shard_ptr(1)]}, KIB4)
    assert to_pe1 == {0: REMOTE + ACCESS + REMOTE + 2 * 512 / 32}  # 96 ns
    # cross-cube the 64 GB/s NOC->NOC link takes 2 at a time: 4 x 16 ns
    to_cube1 = launch_reads(system, ctx, [0], {0: [src.shard_ptr(8)]}, KIB4)
    assert to_cube1 == {0: CROSS_CUBE + ACCESS + CROSS_CUBE + 4 * 512 / 32}  # 168 ns
    # The reservation model: all 8 are out and served at the same time (12 + 40), and
    # their bytes queue on the shared noc->pe0.dma link (4 ns each at 128 GB/s): the
    # last leaves its channel 7 x 4 later and drains 512 B at the 32 GB/s channel.
    system, ctx, src = deploy_all("la", one_to_one=True, fabric="reservation")
    to_pe1 = launch_reads(system, ctx, [0], {0: [src.shard_ptr(1)]}, KIB4)
    assert to_pe1 == {0: REMOTE + ACCESS + 7 * 4 + REMOTE + 16}  # 108 ns
    # cross-cube the NOC->NOC link (8 ns per 512 B at 64 GB/s) paces them instead
    to_cube1 = launch_reads(system, ctx, [0], {0: [src.shard_ptr(8)]}, KIB4)
    assert to_cube1 == {0: CROSS_CUBE + ACCESS + 7 * 8 + CROSS_CUBE + 16}  # 176 ns


def test_kernel_code_is_unchanged_across_models_and_modes():
    times = {}
    for model in ("pa", "va", "la"):
        for one_to_one in (True, False):
            system, ctx, src = deploy_all(model, one_to_one)
            ptrs = {0: [src.shard_ptr(0) + 4 * KIB4, src.shard_ptr(1)]}
            times[model, one_to_one] = launch_reads(system, ctx, [0], ptrs, KIB4)[0]
    for one_to_one in (True, False):
        assert times["la", one_to_one] == times["pa", one_to_one]
        assert times["va", one_to_one] == times["pa", one_to_one] + 2  # TLB, once per access
    # local (52 + 16 = 68 ns) and remote (12 + 40 + 12 + 32 = 96 ns) overlap: the
    # remote one ends last
    assert PATH_NS + 16 < times["pa", False] == REMOTE + ACCESS + REMOTE + KIB4 / 128 == 96


def test_baaw_segment_install_and_uninstall():
    system, ctx, src = deploy_all("la", one_to_one=True)
    (msg,) = system.control.log
    # one segment per shard: 16 + 16 x 32 = 528 B, 1005 + 528 x 53/128 = 1223.625 ns
    one = one_message_ns(system.cfg, "dma", 16)
    assert isinstance(msg, BaawSegmentInstallMsg) and msg.latency_ns == one == 1223.625
    assert msg.entries == 16 and src.install_bytes == msg.sent_bytes == 528
    assert src.la_base == LA_BASE and src.va_base is None
    chunk = (1 << 20) // 16  # 64 KiB shards, already stripe- and page-aligned
    for pe in (0, 15):
        segs = system.address.baaws[pe].segments
        assert [(s.la_base, s.la_size) for s in segs] == [
            (LA_BASE + i * chunk, chunk) for i in range(16)
        ]
    seg = system.address.baaws[3].segments[9]  # PE3's view of PE9's (sip0.cube1.pe1) shard
    assert seg.channel_ids == tuple(range(8, 16)) and seg.channel_size == chunk // 8
    assert seg.routers[0] == "sip0.cube1.pe1.ch_r8"
    assert seg.pa_bases == tuple(src.shards[9].pa + c * 256 for c in range(8))
    ptr = src.shard_ptr(2)
    del src
    gc.collect()
    assert isinstance(system.control.log[-1], BaawSegmentUninstallMsg)
    assert system.control.log[-1].latency_ns == one  # the same 16 segments
    assert all(not b.segments for b in system.address.baaws.values())
    assert system.address.la_spaces[0].free_blocks == [(LA_BASE, LA_SIZE)]
    with pytest.raises(AddressFault, match=rf"sip0.cube0.pe0.dma.baaw: LA {ptr:#x} is outside"):
        system.address.resolve(system.graph.pes[0], ptr, 64)


def test_tensors_in_distinct_segments_never_collide():
    system, ctx, a = deploy_all("la", one_to_one=True)
    b = ctx.deploy(1 << 20, name="b")
    assert b.la_base >= a.la_base + (1 << 20)  # distinct LA ranges on every PE
    pe0 = system.graph.pes[0]

    def pas(t):
        reqs, _ = system.address.resolve(pe0, t.shard_ptr(0), 1 << 16)
        return {(r[1], r[2]) for r in reqs}

    assert sum(n for _, n in pas(a)) == sum(n for _, n in pas(b)) == 1 << 16
    lo_a, lo_b = min(p for p, _ in pas(a)), min(p for p, _ in pas(b))
    assert lo_a == a.shards[0].pa and lo_b == b.shards[0].pa and lo_b >= lo_a + (1 << 16)
    assert len(system.address.baaws[0].segments) == 32


def test_replicate_installs_only_local_segments_per_cube():
    system, ctx = make_system(model_cfg("la"))
    from kernbench.runtime import DPPolicy

    t = ctx.deploy(1 << 20, DPPolicy("replicate"))
    baaws = system.address.baaws
    assert len(baaws[0].segments) == len(baaws[8].segments) == 8
    assert baaws[0].lookup(t.la_base).agg_node_id == "sip0.cube0.pe0.agg_router"
    assert baaws[8].lookup(t.la_base).agg_node_id == "sip0.cube1.pe0.agg_router"


def test_access_past_the_tensor_end_names_the_pe_and_the_la():
    system, ctx, src = deploy_all("la", nbytes=16 * KIB4)
    end = src.la_base + 16 * KIB4
    with pytest.raises(AddressFault, match=rf"sip0.cube1.pe7.dma.baaw: LA {end:#x} is outside"):
        launch_reads(system, ctx, [15], {15: [src.shard_ptr(15)]}, 2 * KIB4)


def test_allocation_beyond_free_memory_names_the_allocator_and_the_limit():
    system, ctx = make_system(model_cfg("la"))
    with pytest.raises(AllocationError, match=r"sip0.cube0.pe0 HBM: cannot allocate .*2147483648"):
        ctx.deploy(17 * 2**31)  # 16 shards of just over one PE's 2 GiB
    assert system.memory[0].hbm.free_bytes == 2**31  # nothing left behind


@pytest.mark.parametrize(
    ("edit", "key", "limit"),
    [
        (("hbm_channels_per_pe", 4), "memory_map.hbm_channels_per_pe", "64 / 8 = 8"),
        (("hbm_channel_bytes", 1000), "memory_map.hbm_channel_bytes", "interleave_bytes = 256"),
    ],
)
def test_inconsistent_memory_map_is_a_config_error(edit, key, limit):
    cfg = make_cfg()
    mm = cfg.topology.cube.memory_map
    cfg.topology.cube.memory_map = dataclasses.replace(mm, **{edit[0]: edit[1]})
    with pytest.raises(ConfigError, match=key) as err:
        validate(cfg)
    assert limit in str(err.value)


def test_page_size_not_a_power_of_two_is_a_config_error():
    cfg = make_cfg()
    cfg.topology.pe_mmu.page_size = 3000
    with pytest.raises(ConfigError, match="topology.pe_mmu.page_size: 3000 is not a power of two"):
        validate(cfg)


def test_hbm_mapping_mode_reaches_the_segments():
    system, _, src = deploy_all("la")
    assert system.cfg.topology.cube.memory_map.hbm_mapping_mode is HbmMappingMode.n_to_one
    assert not system.address.baaws[0].lookup(src.la_base).one_to_one
    assert pe_base(0, 0, 0) <= src.shards[0].pa

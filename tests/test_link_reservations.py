"""Link holding on the fabric: fractional times (issue 12; one booking at a time on a
link is a property in tests/test_properties.py).

Default topology, PA, dispatch free: a local read on the aggregate (n:1) path holds the
PE's DMA->router link for ``bytes / (8 x 32 GB/s)``, then pays 2 + 4 ns of links and
40 ns of HBM access. 100 B take 0.390625 ns: a hold time truncated to whole
nanoseconds would let the second of two reads start at once.
"""

from __future__ import annotations

from tests.address_support import launch_reads
from tests.support import make_cfg, make_system


def test_two_100_byte_reads_back_to_back_end_at_a_fractional_time():
    cfg = make_cfg()
    system, ctx = make_system(cfg)
    t = ctx.deploy(1 << 20)
    lk, mm = cfg.topology.links, cfg.topology.cube.memory_map
    hold = 100 / (mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs)  # 0.390625 ns
    one = lk.dma_router_latency_ns + lk.router_hbm_latency_ns + hold + mm.hbm_access_latency_ns
    ptr = t.shard_ptr(0)
    ends = launch_reads(system, ctx, [0], {0: [ptr, ptr + 100]}, 100)
    assert ends == {0: hold + one} == {0: 46.78125}

"""Link holding on the fabric: fractional times (issue 12; one booking at a time on a
link is a property in tests/test_properties.py).

Default topology, PA, dispatch free: a local read on the aggregate (n:1) path is a
round trip (DESIGN §13.1): its request goes out over 2 + 4 ns of links, the HBM access
takes 40 ns, the bytes come back over the same 4 + 2 ns, holding the PE's HBM and its
router->DMA link for ``bytes / (8 x 32 GB/s)``, and the read is done at its last byte.
100 B take 0.390625 ns: a hold time truncated to whole nanoseconds would let the
second of two reads start at once.
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
    way = lk.dma_router_latency_ns + lk.router_hbm_latency_ns  # 6 ns, each way
    one = way + mm.hbm_access_latency_ns + way + hold  # 52.390625 ns (was 6 + hold + 40)
    ptr = t.shard_ptr(0)
    # both issue at 0 and their bytes are ready together; the second's leave after the
    # first's: 52.78125 (was 46.78125)
    ends = launch_reads(system, ctx, [0], {0: [ptr, ptr + 100]}, 100)
    assert ends == {0: hold + one} == {0: 52.78125}

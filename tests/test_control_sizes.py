"""Control messages cost their size (DESIGN §13.1), with figures derived by hand.

A message weighs ``msg_header_bytes`` (16) plus one entry per page it maps (VA,
``pte_bytes`` 16) or per segment it installs (LA, ``baaw_segment_bytes`` 32). Each of
the 5 links it crosses costs latency + size / that link's bandwidth, each of the 4
components its processing time. On the default topology:

- latencies: PCIe 500, three control links 3 x 50, NOC -> endpoint 5 = 655 ns;
  processing: PCIE_EP 40, IO_CPU 200, M_CPU 100, PE_MMU or PE_DMA 10 = 350 ns;
  together 1005 ns, the figure before sizes counted;
- per byte: 1/32 (PCIe, 32 GB/s) + 3/8 (control links, 8 GB/s) + 1/128 (PE-NOC link,
  128 GB/s) = (4 + 48 + 1) / 128 = 53/128 ns.

So one message of S bytes, alone, lands after 1005 + 53 S / 128 ns: a VA message of P
pages (S = 16 + 16 P) after 1011.625 + 6.625 P, an LA message of K segments
(S = 16 + 32 K) after 1011.625 + 13.25 K. A sharded tensor is one message whatever
its size (D-VA3), so these are its install latencies.
"""

from __future__ import annotations

import pytest

from kernbench import simulate
from kernbench.runtime import DPPolicy
from tests.address_support import model_cfg
from tests.support import make_system

KIB4 = 4096
MIB = 1 << 20
BASE_NS = 1005.0  # latencies 655 + processing 350
PER_BYTE_NS = 53 / 128  # 1/32 + 3/8 + 1/128


def install(model: str, nbytes: int, pes: int | str = "all", cfg=None):
    """Deploy one sharded tensor of ``nbytes`` over ``pes``; its one message and tensor."""
    system, ctx = make_system(cfg or model_cfg(model))
    t = ctx.deploy(nbytes, DPPolicy("column_wise", pes))
    (msg,) = system.control.log
    return msg, t


@pytest.mark.parametrize(
    ("nbytes", "pages", "expect_ns"),
    [
        # 16 shards of one page: 16 PTEs, S = 16 + 256 = 272, 1005 + 272 x 53/128
        (16 * KIB4, 16, 1117.625),
        # 16 shards of 64 KiB = 16 pages: 256 PTEs, S = 4112, 1005 + 1702.625
        (MIB, 256, 2707.625),
        # 16 shards of 1 MiB: 4096 PTEs, S = 65552, 1005 + 27142.625
        (16 * MIB, 4096, 28147.625),
        # 16 shards of 4097 B: two pages each (the last byte takes a page): 32 PTEs,
        # S = 528, 1005 + 218.625
        (16 * (KIB4 + 1), 32, 1223.625),
        # 8 B over 16 PEs: 8 shards of 1 B (a page each) and 8 empty ones (no entry),
        # S = 16 + 128 = 144, 1005 + 59.625
        (8, 8, 1064.625),
    ],
)
def test_va_install_grows_with_pages(nbytes, pages, expect_ns):
    msg, t = install("va", nbytes)
    assert msg.entries == pages
    assert t.install_bytes == msg.sent_bytes == 16 + 16 * pages
    assert t.install_latency_ns == msg.latency_ns == expect_ns
    assert expect_ns == BASE_NS + (16 + 16 * pages) * PER_BYTE_NS


def test_va_install_latency_per_page_is_the_pte_over_every_link():
    """From 16 to 4096 pages the latency grows by exactly 4080 x 16 B over the five
    links: 4080 x 16 x 53/128 = 510 x 53 = 27030 ns (6.625 ns a page)."""
    few, _ = install("va", 16 * KIB4)
    many, _ = install("va", 16 * MIB)
    assert many.latency_ns - few.latency_ns == (4096 - 16) * 16 * PER_BYTE_NS == 27030


@pytest.mark.parametrize(
    ("pes", "expect_ns"),
    [
        (1, 1024.875),  # S = 16 + 32 = 48: 1005 + 19.875
        (2, 1038.125),  # S = 80: 1005 + 33.125
        (8, 1117.625),  # S = 272: 1005 + 112.625
        (16, 1223.625),  # S = 528: 1005 + 218.625
    ],
)
def test_la_install_grows_with_segments_not_bytes(pes, expect_ns):
    """One segment per shard, whatever its size: 64 KiB and 64 MiB over the same PEs
    install in the same time; each segment adds 32 x 53/128 = 13.25 ns."""
    for nbytes in (64 * 1024, 64 * MIB):
        msg, t = install("la", nbytes, pes)
        assert msg.entries == pes
        assert t.install_bytes == msg.sent_bytes == 16 + 32 * pes
        assert t.install_latency_ns == expect_ns == BASE_NS + (16 + 32 * pes) * PER_BYTE_NS


def test_la_segments_for_a_tensor_smaller_than_its_pes():
    """8 B over 16 PEs: 8 shards of 1 B get a segment each, the 8 empty ones none:
    S = 16 + 8 x 32 = 272, 1005 + 112.625 = 1117.625 ns."""
    msg, t = install("la", 8)
    assert msg.entries == 8 and t.install_bytes == 272
    assert t.install_latency_ns == 1117.625


def test_stream_row_va_installs_slower_than_la_on_the_default_topology():
    """The stream's source over 16 PEs, 1 MiB each. VA: 16 x 256 = 4096 PTEs, 65552 B,
    1005 + 65552 x 53/128 = 1005 + 512.125 x 53 = 28147.625 ns. LA: 16 segments, 528 B,
    1005 + 218.625 = 1223.625 ns: 23 times faster, 124 times fewer bytes (ADR-0011's
    case for LA)."""
    rows = {}
    for model in ("va", "la", "pa"):
        cfg = model_cfg(model, access_bytes=64 * 1024, bytes_per_pe=MIB)
        rows[model] = simulate.run(cfg).metrics
    assert rows["va"]["install_bytes"] == 65552
    assert rows["va"]["install_latency_ns"] == 28147.625
    assert rows["la"]["install_bytes"] == 528
    assert rows["la"]["install_latency_ns"] == 1223.625
    assert rows["pa"]["install_bytes"] == 0 and rows["pa"]["install_latency_ns"] == 0


def test_ctrl_bw_changes_the_install_and_doubling_it_halves_its_size_term():
    """VA, 1 MiB over 16 PEs: S = 4112 B. At 8 GB/s the three control links carry it in
    3 x 4112 / 8 = 1542 ns of the 2707.625; at 16 GB/s in 771 ns: 1936.625. At 4 GB/s
    in 3084 ns: 4249.625."""
    figures = {}
    for bw in (4.0, 8.0, 16.0):
        cfg = model_cfg("va")
        cfg.topology.links.ctrl_bw_gbs = bw
        msg, _ = install("va", MIB, cfg=cfg)
        figures[bw] = msg.latency_ns
    assert figures == {4.0: 4249.625, 8.0: 2707.625, 16.0: 1936.625}
    rest = 2707.625 - 1542  # latencies, processing, and the PCIe and PE-NOC links' share
    assert figures[16.0] - rest == 1542 / 2 and figures[4.0] - rest == 1542 * 2


def test_doubling_every_link_of_the_path_halves_the_whole_size_term():
    """PCIe 64, control 16, PE-NOC 256 GB/s: 4112 x 53/256 = 851.3125 ns, half of
    1702.625: 1005 + 851.3125 = 1856.3125 ns."""
    cfg = model_cfg("va")
    lk = cfg.topology.links
    lk.pcie_bw_gbs, lk.ctrl_bw_gbs, lk.pe_noc_bw_gbs = 64.0, 16.0, 256.0
    msg, _ = install("va", MIB, cfg=cfg)
    assert msg.latency_ns == 1856.3125 == BASE_NS + 1702.625 / 2


@pytest.mark.parametrize(
    ("key", "bw", "expect_ns"),
    [
        # Host -> PCIE_EP crosses the PCIe link: 4112 / 16 = 257 ns instead of 128.5
        ("pcie_bw_gbs", 16.0, 2707.625 + 128.5),
        # NOC -> PE_MMU crosses the PE-NOC link: 4112 / 64 = 64.25 ns instead of 32.125
        ("pe_noc_bw_gbs", 64.0, 2707.625 + 32.125),
    ],
)
def test_the_end_hops_take_their_own_links_bandwidth(key, bw, expect_ns):
    cfg = model_cfg("va")
    setattr(cfg.topology.links, key, bw)
    msg, _ = install("va", MIB, cfg=cfg)
    assert msg.latency_ns == expect_ns


def test_sizes_are_config_keys():
    """pte_bytes 8 halves VA's entries: S = 16 + 256 x 8 = 2064, 1005 + 854.625;
    a 64 B segment and a 32 B header: LA S = 32 + 16 x 64 = 1056, 1005 + 437.25."""
    cfg = model_cfg("va")
    cfg.topology.control.pte_bytes = 8
    msg, t = install("va", MIB, cfg=cfg)
    assert t.install_bytes == 2064 and msg.latency_ns == 1859.625
    cfg = model_cfg("la")
    cfg.topology.control.baaw_segment_bytes = 64
    cfg.topology.control.msg_header_bytes = 32
    msg, t = install("la", MIB, cfg=cfg)
    assert t.install_bytes == 1056 and msg.latency_ns == 1442.25


def test_install_bytes_counts_each_message_once_at_its_send():
    """Replicate: one message per cube, 8 shards of 128 KiB = 256 PTEs each, 4112 B:
    8224 B for the tensor. Sharded over two SIPs: one message, 32 one-page shards,
    16 + 32 x 16 = 528 B, counted once though the host sends it down both PCIe links."""
    system, ctx = make_system(model_cfg("va"))
    t = ctx.deploy(MIB, DPPolicy("replicate"))
    assert [m.sent_bytes for m in system.control.log] == [4112, 4112]
    assert t.install_bytes == 8224
    cfg = model_cfg("va")
    cfg.topology.n_sips = 2
    system, ctx = make_system(cfg)
    t = ctx.deploy(32 * KIB4, DPPolicy("column_wise", "all"))
    (msg,) = system.control.log
    assert msg.target_sips == (0, 1) and t.install_bytes == msg.sent_bytes == 528

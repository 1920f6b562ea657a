"""``bw_efficiency`` against the peak the pattern can reach (issue 22): hand-derived.

``peak_pattern_bw_gbs`` is the bytes the active PEs move over the time their busiest
link needs to carry its share (``bytes on the link / its bandwidth``, each access's
bytes split evenly over the target's routers), and ``bw_efficiency`` is
``aggregate_bw_gbs / peak_pattern_bw_gbs``: at most 1 by construction.

It used to be ``effective_bw_gbs / peak_bw_per_pe_gbs`` (one PE's own HBM), which read
1.10 for ``uniform`` from one PE with 4 channels per PE: that PE reaches its own HBM
(128 GB/s) and, at the same time, the other PEs' over its 128 GB/s link to the NOC,
so it can move more than its own HBM's bandwidth.

Default topology (conf/topology/default.yaml), dispatch free, LA, fair fabric. Its
links: a PE's HBM is N = 8 channels x 32 GB/s = 256 GB/s (the DMA -> router, NOC ->
router and router -> HBM links of n:1; 8 links of 32 GB/s each under 1:1); PE <-> NOC
128 GB/s; NOC <-> NOC 64 GB/s. Route latencies: local 2 + 4 = 6 ns, remote
5 + 3 + 4 = 12 ns, from the other cube 20 ns more; then 40 ns of HBM access.
"""

from __future__ import annotations

import pytest

from kernbench import simulate
from kernbench.config.schema import AddressConfig, AddressModel, StreamPattern
from kernbench.config.validate import validate
from kernbench.workloads import patterns
from tests.support import make_cfg

KIB, MIB = 1024, 1 << 20
LINKS = make_cfg().topology.links
MM = make_cfg().topology.cube.memory_map
HBM_PE = MM.hbm_channels_per_pe * MM.hbm_channel_bw_gbs  # 8 x 32 = 256 GB/s
PE_NOC, NOC_NOC = LINKS.pe_noc_bw_gbs, LINKS.noc_noc_bw_gbs  # 128, 64 GB/s


def stream(pattern: str, one_to_one: bool = False, channels: int | None = None, **kw) -> dict:
    cfg = make_cfg(one_to_one=one_to_one, pattern=StreamPattern(pattern), **kw)
    cfg.address = AddressConfig(AddressModel.la)
    if channels is not None:  # pseudo-channels per cube (8 PEs): N = channels / 8
        cfg.topology.cube.memory_map.hbm_pseudo_channels = channels
        cfg.topology.cube.memory_map.hbm_channels_per_pe = None
    return simulate.run(validate(cfg)).metrics


def test_figures_read_from_the_default_topology():
    assert (HBM_PE, PE_NOC, NOC_NOC) == (256, 128, 64)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_local_on_every_pe_peaks_at_every_pes_hbm(one_to_one):
    """16 PEs, each on its own HBM only (no shared link): each link into a PE's HBM
    carries B = 1 MiB, busy B / 256 = 4096 ns; peak 16 B / 4096 ns = 16 x 256 =
    4096 GB/s. The run ends 6 + 40 ns after that (n:1): efficiency 4096 / 4142."""
    m = stream("local", one_to_one, active_pes="all", access_bytes=64 * KIB,
               bytes_per_pe=MIB, outstanding=4)  # fmt: skip
    busy = MIB / HBM_PE
    assert busy == 4096
    assert m["peak_pattern_bw_gbs"] == 16 * MIB / busy == 4096
    assert m["bw_efficiency"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    if not one_to_one:
        assert m["sim_time_ns"] == busy + 6 + 40
    assert 0.98 < m["bw_efficiency"] <= 1


@pytest.mark.parametrize(("channels", "old_efficiency"), [(64, 141.394 / 256), (32, 141.394 / 128)])
def test_uniform_from_one_pe_peaks_at_its_busiest_link_not_its_own_hbm(channels, old_efficiency):
    """PE 0 alone, 8 accesses of A = 64 KiB to PEs drawn with seed 0:
    13, 10, 8, 4, 4, 0, 1, 0: 2 to itself, 3 to its cube (4, 4, 1), 3 to cube 1.

    - PE 0 DMA -> its router: 2A at N x 32 (256 or 128): 2A/256 or 2A/128;
    - PE 0 -> NOC: the 6 remote accesses, 6A / 128;
    - NOC0 -> NOC1: the 3 to cube 1, 3A / 64 = 6A / 128;
    - PE 4's HBM: 2A / 256 or 2A / 128.

    Busiest: 6A / 128 = 3072 ns (PE -> NOC and NOC -> NOC tie), so the peak is
    8A / 3072 ns = 170.67 GB/s with N = 8 or 4 alike. The old figure, against one
    PE's HBM, was 141.39 / 256 = 0.55 with N = 8 and 141.39 / 128 = 1.10 with N = 4
    (the issue): above 1 because local and remote accesses run side by side."""
    a = 64 * KIB
    [draws] = patterns.owners(
        make_cfg(pattern=StreamPattern.uniform).workload, make_cfg().topology, [None], 8
    )
    assert draws == [13, 10, 8, 4, 4, 0, 1, 0]
    busy = max(2 * a / (channels // 8 * 32), 6 * a / PE_NOC, 3 * a / NOC_NOC)
    assert busy == 3072
    m = stream("uniform", channels=channels, active_pes="1", access_bytes=a,
               bytes_per_pe=8 * a, outstanding=4)  # fmt: skip
    assert m["peak_pattern_bw_gbs"] == pytest.approx(8 * a / busy, rel=1e-12)
    assert m["peak_pattern_bw_gbs"] == pytest.approx(170.667, abs=1e-3)
    assert m["bw_efficiency"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    assert m["bw_efficiency"] <= 1
    assert m["effective_bw_gbs"] / m["peak_bw_per_pe_gbs"] == pytest.approx(
        old_efficiency, abs=1e-4
    )


@pytest.mark.parametrize("one_to_one", [False, True])
def test_hotspot_peaks_at_the_noc_to_noc_link(one_to_one):
    """All 16 PEs read PE 0's memory, B = 1 MiB each. PE 0's HBM carries 16 B at 256:
    B/16; NOC -> PE 0's router 15 B at 256; each PE -> NOC B at 128; NOC1 -> NOC0 the
    8 B of cube 1 at 64: 8 B / 64 = 131072 ns, the busiest. Peak 16 B / 131072 ns =
    128 GB/s: 8 GB/s a PE, not the 256 GB/s of PE 0's HBM. The run ends at 32 + 131072
    + 40 = 131144 ns (n:1, tests/test_fair_fabric.py), efficiency 0.99945."""
    m = stream("hotspot", one_to_one, active_pes="all", access_bytes=64 * KIB,
               bytes_per_pe=MIB, outstanding=4)  # fmt: skip
    busy = max(16 * MIB / HBM_PE, 15 * MIB / HBM_PE, MIB / PE_NOC, 8 * MIB / NOC_NOC)
    assert busy == 131072
    assert m["peak_pattern_bw_gbs"] == 16 * MIB / busy == 128
    assert m["bw_efficiency"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    if not one_to_one:
        assert m["bw_efficiency"] == pytest.approx(131072 / 131144, rel=1e-12)
    assert 0.999 < m["bw_efficiency"] <= 1

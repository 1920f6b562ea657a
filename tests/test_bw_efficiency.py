"""``bw_efficiency`` against the peak the pattern can reach (issue 22): hand-derived.

``peak_pattern_bw_gbs`` is the bytes the active PEs move over the time their busiest
link resource needs to carry its share (``bytes on it / its bandwidth``, each access's
bytes split evenly over the target's routers; a read's bytes load its way back, from
the target's HBM to the reader's DMA, DESIGN §13.1), and ``bw_efficiency`` is
``aggregate_bw_gbs / peak_pattern_bw_gbs``: at most 1 by construction.

It used to be ``mean_pe_bw_gbs / peak_bw_per_pe_gbs`` (one PE's own HBM), which read
1.10 for ``uniform`` from one PE with 4 channels per PE: that PE reaches its own HBM
(128 GB/s) and, at the same time, the other PEs' over its 128 GB/s link to the NOC,
so it can move more than its own HBM's bandwidth.

Default topology (conf/topology/default.yaml), dispatch free, LA, fair fabric. Its
links: a PE's HBM is N = 8 channels x 32 GB/s = 256 GB/s (the router <-> DMA,
router <-> NOC links and the half-duplex router <-> HBM resource of n:1; 8 of each at
32 GB/s under 1:1); PE <-> NOC 128 GB/s and NOC <-> NOC 64 GB/s each way. Route
latencies, each way: local 2 + 4 = 6 ns, remote 5 + 3 + 4 = 12 ns, from the other
cube 20 ns more. Every run here reads: the request goes out (no payload), 40 ns of
HBM access, then the bytes come back over the same links reversed, and the read is
done at its last byte: its bytes join the way back 6 + 40 + 6 = 52 ns after issue
(local), 64 (remote), 104 (other cube).
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
    """16 PEs, each on its own HBM only (no shared link): each PE's HBM resource
    carries B = 1 MiB, busy B / 256 = 4096 ns; peak 16 B / 4096 ns = 16 x 256 =
    4096 GB/s. The first bytes start back at 6 + 40 + 6 = 52 ns, the HBM never idles
    after (the next reads' 52 ns leads hide behind 3 queued accesses), and nothing
    follows the last byte: the run ends at 4148 with either mapping (1:1: each
    access's 8 channel requests of 8 KiB drain side by side at 32 GB/s, as one at
    256): efficiency 4096 / 4148 (was 4096 / 4142, n:1: 6 out, the bytes, 40)."""
    m = stream("local", one_to_one, active_pes="all", access_bytes=64 * KIB,
               bytes_per_pe=MIB, outstanding=4)  # fmt: skip
    busy = MIB / HBM_PE
    assert busy == 4096
    assert m["peak_pattern_bw_gbs"] == 16 * MIB / busy == 4096
    assert m["bw_efficiency"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    assert m["sim_time_ns"] == 6 + 40 + 6 + busy == 4148
    assert 0.98 < m["bw_efficiency"] <= 1


@pytest.mark.parametrize("channels", [64, 32])
def test_uniform_from_one_pe_peaks_at_its_busiest_link_not_its_own_hbm(channels):
    """PE 0 alone, 8 accesses of A = 64 KiB to PEs drawn with seed 0:
    13, 10, 8, 4, 4, 0, 1, 0: 2 to itself, 3 to its cube (4, 4, 1), 3 to cube 1. The
    bytes of a read load its way back:

    - PE 0's HBM and its router -> DMA: 2A at N x 32 (256 or 128): 2A/256 or 2A/128;
    - NOC -> PE 0: the 6 remote accesses, 6A / 128;
    - NOC1 -> NOC0: the 3 from cube 1, 3A / 64 = 6A / 128;
    - PE 4's HBM: 2A / 256 or 2A / 128.

    Busiest: 6A / 128 = 3072 ns (NOC -> PE and NOC -> NOC tie), so the peak is
    8A / 3072 ns = 170.67 GB/s with N = 8 or 4 alike.

    The run, by hand (4 in flight: access k+4 issues when access k, whose buffer it
    reuses, is done, and the DMA issues in order): the 3 cube-1 reads (accesses 0-2)
    start back at 104 ns and come back one at a time over NOC1 -> NOC0 at its 64 GB/s,
    oldest first, 1024 ns each: that link never idles until 104 + 3 x 1024 = 3176,
    while the cube-0 remote reads take the rest of NOC -> PE 0's 128 GB/s (3 from
    64 ns, alone at 128 until 104, then 64: done at 1048; 4, issued when 0 is done,
    from 1128 + 64 at 64: done at 2216) and the local 5 (issued when 1 is done, from
    2152 + 52) drains alone at N x 32, done by 2716 at most. Access 2's end issues 6 (to
    PE 1) and then 7 (local): 6 is done at 3176 + 12 + 40 + 12 + 65536 / 128 = 3752,
    the run's end (7 at 3176 + 52 + 256 or 512, before). Efficiency 3072 / 3752; the
    run moved 8A / 3752 = 139.74 GB/s (was 141.39, ending at 3708: 32 out, 3 x 1024
    over the link, 40, then 12 + 512 + 40).

    The old figure, against one PE's HBM, is 139.74 / 256 = 0.546 with N = 8 and
    139.74 / 128 = 1.092 with N = 4 (it was 0.552 and 1.105: the issue): still above
    1 with N = 4, because local and remote accesses run side by side."""
    a = 64 * KIB
    [draws] = patterns.owners(
        make_cfg(pattern=StreamPattern.uniform).workload, make_cfg().topology, [None], 8
    )
    assert draws == [13, 10, 8, 4, 4, 0, 1, 0]
    hbm = channels // 8 * 32  # N x 32 GB/s
    busy = max(2 * a / hbm, 6 * a / PE_NOC, 3 * a / NOC_NOC)
    assert busy == 3072
    m = stream("uniform", channels=channels, active_pes="1", access_bytes=a,
               bytes_per_pe=8 * a, outstanding=4)  # fmt: skip
    assert m["peak_pattern_bw_gbs"] == pytest.approx(8 * a / busy, rel=1e-12)
    assert m["peak_pattern_bw_gbs"] == pytest.approx(170.667, abs=1e-3)
    far = 12 + 20  # the other cube, each way
    cube1 = far + 40 + far + 3 * a / NOC_NOC  # the last cube-1 read is done
    assert m["sim_time_ns"] == cube1 + 12 + 40 + 12 + a / PE_NOC == 3752
    assert m["bw_efficiency"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    assert m["bw_efficiency"] <= 1
    moved = 8 * a / m["sim_time_ns"]
    assert m["mean_pe_bw_gbs"] == pytest.approx(moved, rel=1e-12)
    old_efficiency = m["mean_pe_bw_gbs"] / m["peak_bw_per_pe_gbs"]
    assert old_efficiency == pytest.approx(moved / hbm, rel=1e-12)
    assert old_efficiency == pytest.approx(0.546 if hbm == 256 else 1.092, abs=1e-3)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_hotspot_peaks_at_the_noc_to_noc_link(one_to_one):
    """All 16 PEs read PE 0's memory, B = 1 MiB each; the bytes come back. PE 0's HBM
    carries 16 B at 256: 65536 ns; PE 0's router -> NOC 15 B at 256; NOC -> each PE
    B at 128; NOC0 -> NOC1 the 8 B of cube 1 at 64: 8 B / 64 = 131072 ns, the busiest.
    Peak 16 B / 131072 ns = 128 GB/s: 8 GB/s a PE, not the 256 GB/s of PE 0's HBM. The
    run ends at 104 + 131072 = 131176 ns (n:1, tests/test_fair_fabric.py; was
    32 + 131072 + 40 = 131144), efficiency 131072 / 131176 = 0.99921 (was 0.99945)."""
    m = stream("hotspot", one_to_one, active_pes="all", access_bytes=64 * KIB,
               bytes_per_pe=MIB, outstanding=4)  # fmt: skip
    busy = max(16 * MIB / HBM_PE, 15 * MIB / HBM_PE, MIB / PE_NOC, 8 * MIB / NOC_NOC)
    assert busy == 131072
    assert m["peak_pattern_bw_gbs"] == 16 * MIB / busy == 128
    assert m["bw_efficiency"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    if not one_to_one:
        assert m["bw_efficiency"] == pytest.approx(131072 / 131176, rel=1e-12)
    assert m["busiest_link"] == "sip0.cube0.noc->sip0.cube1.noc"
    assert 0.999 < m["bw_efficiency"] <= 1

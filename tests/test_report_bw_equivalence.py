"""The bandwidth-equivalence report on small synthetic sweep tables with known answers."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from kernbench.report import bw_equivalence as bw
from kernbench.results import make_row

MM = "topology.cube.memory_map."
HBM0 = "sip0.cube0.pe0.agg_router->sip0.cube0.hbm_ctrl"
CH0 = "sip0.cube0.pe0.ch_r0->sip0.cube0.hbm_ctrl"
NOC = "sip0.cube1.noc->sip0.cube0.noc"


def figure(pattern: str, mapping: str, access: int, pes: int) -> tuple[float, str]:
    """(per-PE bandwidth, busiest link). local: equal when aligned, 1:1 10% low on the
    rest, the same for 4 and 8 PEs (no sharing); hotspot: 256 GB/s shared by the PEs,
    1:1 20% low when misaligned, bounded by the NOC link."""
    if pattern == "local":
        bw_ = 250.0 if mapping == "n_to_one" or access == 65536 else 225.0
        return bw_, HBM0 if mapping == "n_to_one" else CH0
    bw_ = 256.0 / pes if mapping == "n_to_one" or access == 65536 else 0.8 * 256.0 / pes
    return bw_, NOC


def rows(patterns=("local", "hotspot"), sizes=(512, 65536, 65792)) -> pd.DataFrame:
    out = []
    for pattern, mapping, access, pes in itertools.product(
        patterns, ("n_to_one", "one_to_one"), sizes, (4, 8)
    ):
        bw_, link = figure(pattern, mapping, access, pes)
        flat = {
            MM + "hbm_mapping_mode": mapping,
            MM + "hbm_channels_per_pe": 8,
            MM + "interleave_bytes": 256,
            "topology.pes_per_cube": pes,
            "workload.name": "stream",
            "workload.pattern": pattern,
            "workload.active_pes": "all",
            "workload.access_bytes": access,
            "workload.align_offset_bytes": 0,
        }
        metrics = {"effective_bw_gbs": bw_, "busiest_link": link}
        out.append(make_row(flat, status="ok", metrics=metrics))
    out.append(make_row({**flat, "workload.access_bytes": 3}, status="error", error="boom"))
    return pd.DataFrame(out)


def test_table_pairs_the_mappings_and_classes_each_access():
    table = bw.table(rows())
    assert len(table) == 2 * 3 * 2  # pattern x size x PEs; the error row is left out
    classes = table.groupby("workload.access_bytes")["access_class"].unique().to_dict()
    assert classes == {512: ["< stripe"], 65536: ["aligned"], 65792: ["misaligned"]}
    local = table[table["workload.pattern"] == "local"].set_index("workload.access_bytes")
    assert local.loc[65792, bw.RATIO].tolist() == [0.9, 0.9]
    # n:1 names PE 0's aggregate link, 1:1 its first channel's: both "HBM pe0"
    assert set(local[bw.BOTTLENECK]) == {"HBM pe0"}
    hot = table[table["workload.pattern"] == "hotspot"]
    assert set(hot[bw.BOTTLENECK]) == {"NOC->NOC"}


def test_claims_count_distinct_configurations_and_say_where_they_part():
    adr, bound, *per_pattern = bw.check(bw.table(rows()))
    assert adr.holds is True
    # local reads on 4 and 8 PEs with N = 8 give the same figures: one configuration
    assert "1 distinct configurations" in adr.detail
    assert bound.holds is True
    verdicts = {c.text.split(":")[0]: c for c in per_pattern}
    assert verdicts["hotspot, aligned"].holds is True
    misaligned = verdicts["hotspot, misaligned or small"]
    assert misaligned.holds is False
    # 2 sizes x 2 PE counts, all with different figures
    assert "4 distinct configurations; worst |1:1/n:1 - 1| = 20.00%" in misaligned.detail
    assert "bottleneck: NOC->NOC (4)" in misaligned.detail
    assert "local, misaligned or small" in verdicts
    assert "2 distinct configurations" in verdicts["local, misaligned or small"].detail


def test_a_claim_with_no_row_is_not_tested_never_does_not_hold():
    adr, bound, aligned, misaligned = bw.check(bw.table(rows(("local",), sizes=(512, 65792))))
    assert (adr.holds, aligned.holds) == (None, None)
    assert adr.line().startswith("[NOT TESTED]")
    assert misaligned.holds is False


def test_the_adr_claim_fails_when_local_aligned_points_differ():
    df = rows()
    bad = (df[MM + "hbm_mapping_mode"] == "one_to_one") & (df["workload.access_bytes"] == 65536)
    df.loc[bad & (df["workload.pattern"] == "local"), "effective_bw_gbs"] = 200.0
    adr, *_ = bw.check(bw.table(df))
    assert adr.holds is False
    assert "worst |1:1/n:1 - 1| = 20.00%" in adr.detail


def test_an_aligned_size_at_a_misaligned_offset_is_misaligned():
    df = rows(("local",), sizes=(65536,))
    df["workload.align_offset_bytes"] = 128
    assert set(bw.table(df)["access_class"]) == {"misaligned"}


def test_rows_before_traffic_patterns_are_local():
    df = rows(("local",)).drop(columns=["workload.pattern", "busiest_link"])
    table = bw.table(df)
    assert set(table["workload.pattern"]) == {"local"}
    assert bw.check(table)[0].holds is True


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (HBM0, "HBM pe0"),
        ("sip0.cube1.pe3.ch_r27->sip0.cube1.hbm_ctrl", "HBM pe3"),
        ("sip0.cube0.pe0.dma->sip0.cube0.noc", "PE->NOC"),
        (NOC, "NOC->NOC"),
        ("sip0.cube0.noc->sip0.cube0.pe1.agg_router", "NOC->router"),
        ("sip0.cube0.noc->sip0.pcie_ep", "PCIe"),
    ],
)
def test_link_class(name, kind):
    assert bw.link_class(name) == kind


def test_plots_are_written(tmp_path):
    paths = bw.plot(bw.table(rows()), tmp_path)
    assert [p.name for p in paths] == ["bw_equivalence_bandwidth.png", "bw_equivalence_ratio.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)

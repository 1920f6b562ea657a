"""The bandwidth-equivalence report on small synthetic sweep tables with known answers."""

from __future__ import annotations

import itertools
from pathlib import Path

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


def rows(
    patterns=("local", "hotspot"),
    sizes=(512, 65536, 65792),
    fabric: str | None = None,
    fig=figure,
    fairness=None,
) -> pd.DataFrame:
    """One row per pattern x mapping x size x PE count; ``fabric`` adds ``sim.fabric``
    (None: a table from before the column), ``fairness(pattern, mapping, access, pes)``
    a ``bw_fairness`` figure (None: none)."""
    out = []
    for pattern, mapping, access, pes in itertools.product(
        patterns, ("n_to_one", "one_to_one"), sizes, (4, 8)
    ):
        bw_, link = fig(pattern, mapping, access, pes)
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
        if fabric is not None:
            flat["sim.fabric"] = fabric
        metrics = {"mean_pe_bw_gbs": bw_, "busiest_link": link}
        if fairness is not None:
            metrics["bw_fairness"] = fairness(pattern, mapping, access, pes)
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
    df.loc[bad & (df["workload.pattern"] == "local"), "mean_pe_bw_gbs"] = 200.0
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
        ("sip0.cube1.pe3.ch_r27<->sip0.cube1.hbm_ctrl", "HBM pe3"),  # both ways
        ("sip0.cube0.pe2.agg_router<->sip0.cube0.hbm_ctrl", "HBM pe2"),
        ("sip0.cube0.pe0.dma->sip0.cube0.noc", "PE->NOC"),
        ("sip0.cube0.noc->sip0.cube0.pe0.dma", "NOC->PE"),  # a read's data back
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


# --- the fabric model as an axis (sim.fabric: fair, reservation) ----------------------


def booked(pattern: str, mapping: str, access: int, pes: int) -> tuple[float, str]:
    """The reservation model's figures beside :func:`figure`'s (the fair model's). local:
    the same (each PE on its own links). hotspot: n:1 25% higher (320 / PEs), 1:1 equal
    to it when aligned, else at 0.6 of it, and 0.4 at 65792 B on 8 PEs: 1:1/n:1 moves
    from 0.8 to 0.6 (change 0.2), and there from 0.8 to 0.4 (0.4, the largest); 1:1
    itself moves at most by 0.4 x 320 / (0.8 x 256) - 1 = -37.5%."""
    if pattern == "local":
        return figure(pattern, mapping, access, pes)
    top = 320.0 / pes
    if mapping == "n_to_one" or access == 65536:
        return top, NOC
    return (0.4 if (access, pes) == (65792, 8) else 0.6) * top, NOC


def fairness(model: str):
    """bw_fairness: 1.0 on local; hotspot 0.9 under fair, 0.7 under reservation with
    one row at 0.5 (n:1, 512 B, 8 PEs)."""

    def jain(pattern: str, mapping: str, access: int, pes: int) -> float:
        if pattern == "local":
            return 1.0
        if model == "fair":
            return 0.9
        return 0.5 if (mapping, access, pes) == ("n_to_one", 512, 8) else 0.7

    return jain


def both(fair=figure, reservation=booked, jain=True, **kw) -> pd.DataFrame:
    """One sweep under both fabric models (the error row of each kept)."""
    parts = [
        rows(fabric=m, fig=f, fairness=fairness(m) if jain else None, **kw)
        for m, f in (("fair", fair), ("reservation", reservation))
    ]
    return pd.concat(parts, ignore_index=True)


def claims_by_text(claims) -> dict[str, object]:
    return {c.text.split(":")[0]: c for c in claims}


def test_pairing_stays_within_one_fabric_model_and_sorts_it_last():
    table = bw.table(both())
    assert len(table) == 2 * 2 * 3 * 2  # fabric x pattern x size x PEs
    assert "sim.fabric" in table.columns
    hot = table[table["workload.pattern"] == "hotspot"]
    for model, n1 in (("fair", 256.0), ("reservation", 320.0)):
        rows_ = hot[hot["sim.fabric"] == model]
        # a fair n:1 never meets a reservation 1:1: n:1 is the model's own figure
        assert (rows_[bw.N1] * rows_["topology.pes_per_cube"] == n1).all()
    ratios = hot.set_index(["sim.fabric", "workload.access_bytes", "topology.pes_per_cube"])
    assert ratios.loc[("fair", 65792, 8), bw.RATIO] == pytest.approx(0.8)
    assert ratios.loc[("reservation", 65792, 8), bw.RATIO] == pytest.approx(0.4)
    assert ratios.loc[("reservation", 65792, 4), bw.RATIO] == pytest.approx(0.6)
    # one configuration's two models sit side by side, fair first
    assert table["sim.fabric"].tolist() == ["fair", "reservation"] * 12
    assert set(table[bw.FAIRNESS_MIN]) == {1.0, 0.9, 0.7, 0.5}


def test_the_two_models_of_a_configuration_sit_side_by_side_with_another_swept_key():
    """A further swept key (here after sim.fabric in the rows, as the pivot sees it) is
    part of the configuration: the order is its value, then the model."""
    df = both()
    deeper = pd.concat([df.assign(**{"workload.outstanding": n}) for n in (2, 4)])
    table = bw.table(deeper.reset_index(drop=True))
    assert len(table) == 48
    pairs = table[["workload.outstanding", "sim.fabric"]].itertuples(index=False)
    assert [tuple(p) for p in pairs][:4] == [
        (2, "fair"),
        (2, "reservation"),
        (4, "fair"),
        (4, "reservation"),
    ]


def test_rows_without_the_column_beside_new_ones_read_as_reservation():
    old = rows(fig=booked)  # written before sim.fabric: the reservation model made it
    table = bw.table(pd.concat([rows(fabric="fair"), old], ignore_index=True))
    assert len(table) == 24
    res = table[(table["sim.fabric"] == "reservation") & (table["workload.pattern"] == "hotspot")]
    assert (res[bw.N1] * res["topology.pes_per_cube"] == 320.0).all()
    assert bw.FAIRNESS_MIN not in table  # neither part has bw_fairness
    # new rows with bw_fairness beside old ones without: only the fair figure is known
    new = rows(fabric="fair", fairness=fairness("fair"))
    claims = bw.check(bw.table(pd.concat([new, old], ignore_index=True)))
    assert claims[-2].detail.endswith("; lowest bw_fairness: fair 0.900")  # hotspot


def test_without_the_fabric_column_the_claims_are_todays():
    """No sim.fabric (older tables), or one model only: the claims as before the axis,
    with no booking-order claim and no model named in the figures."""
    today = bw.check(bw.table(rows()))
    assert [c.text.split(":")[0] for c in today] == [
        "ADR-0011",
        "n",
        "hotspot, aligned",
        "hotspot, misaligned or small",
        "local, aligned",
        "local, misaligned or small",
    ]
    assert not any("booking-order" in c.text or "fair model" in c.detail for c in today)
    assert bw.check(bw.table(rows(fabric="fair"))) == today
    assert "sim.fabric" not in bw.table(rows(fabric="reservation")).columns


def test_the_mapping_claims_stand_on_the_fair_rows():
    """Reservation rows that break ADR-0011 and the n:1 bound leave the fair verdicts
    standing; and the reverse: fair rows that break them fail whatever reservation
    says."""

    def broken(pattern, mapping, access, pes):
        bw_, link = figure(pattern, mapping, access, pes)
        if mapping == "one_to_one" and pattern == "local" and access == 65536:
            return 200.0, link  # 1:1 20% below n:1 on local aligned reads
        if mapping == "one_to_one" and pattern == "hotspot" and access == 65536:
            return 1.5 * bw_, link  # 1:1 50% above n:1: the bound broken
        return bw_, link

    adr, bound, *_ = bw.check(bw.table(both(figure, broken)))
    assert (adr.holds, bound.holds) == (True, True)
    assert adr.detail.startswith("fair model: 1 distinct configurations; worst")
    assert bound.detail.startswith("fair model: largest ratio 1.0000")
    adr, bound, *_ = bw.check(bw.table(both(broken, figure)))
    assert (adr.holds, bound.holds) == (False, False)
    assert "worst |1:1/n:1 - 1| = 20.00%" in adr.detail
    assert "largest ratio 1.5000" in bound.detail


def test_the_booking_order_claim_per_pattern_and_its_figures():
    claims = bw.check(bw.table(both()))
    assert len(claims) == 6 + 2  # today's six on fair rows, one per pattern after
    booking = claims_by_text(claims[6:])
    assert set(booking) == {"hotspot", "local"}
    local = booking["local"]
    assert local.text == (
        "local: the booking-order model (reservation) changes 1:1/n:1 by at most 1%"
    )
    assert local.holds is True
    assert local.detail.startswith("3 distinct configurations under both models;")
    assert "largest change of per-PE bandwidth, reservation vs fair: n:1 +0.00%, 1:1 +0.00%" in (
        local.detail
    )
    hot = booking["hotspot"]
    assert hot.holds is False  # reservation lowers 1:1/n:1 by 0.2 and 0.4
    assert hot.detail == (
        "6 distinct configurations under both models;"
        " worst |1:1/n:1 - 1|: fair 20.00%, reservation 60.00%;"
        " largest change of 1:1/n:1: 0.4000, from 0.8000 (fair) to 0.4000 (reservation)"
        " at pes_per_cube=8, hbm_channels_per_pe=8, pattern=hotspot, active_pes=all,"
        " access_bytes=65792;"
        " largest change of per-PE bandwidth, reservation vs fair: n:1 +25.00%, 1:1 -37.50%;"
        " lowest bw_fairness: fair 0.900, reservation 0.500"
    )
    # without bw_fairness (older rows) that figure is left out, the rest stays
    plain = claims_by_text(bw.check(bw.table(both(jain=False)))[6:])["hotspot"]
    assert plain.detail == hot.detail.rsplit(";", 1)[0]


def test_a_change_of_exactly_the_tolerance_holds():
    """1:1/n:1 = 1/100 under fair and 2/100 under reservation: the change is exactly
    0.01 in binary (0.02 is 2 x 0.01), so the claim holds; a hair more does not."""

    def ratio(one: float):
        def fig(pattern, mapping, access, pes):
            return (100.0 if mapping == "n_to_one" else one), HBM0

        return fig

    def booking(one: float):
        table = bw.table(both(ratio(1.0), ratio(one), patterns=("local",), sizes=(65536,)))
        return bw.check(table)[-1]

    assert booking(2.0).holds is True
    assert "largest change of 1:1/n:1: 0.0100" in booking(2.0).detail
    assert booking(2.0001).holds is False


def test_a_pattern_under_one_model_only_is_not_tested():
    fair = rows(fabric="fair")
    res = rows(patterns=("local",), fabric="reservation", fig=booked)
    claims = claims_by_text(bw.check(bw.table(pd.concat([fair, res], ignore_index=True)))[6:])
    assert claims["hotspot"].holds is None
    assert claims["local"].holds is True


def test_plots_with_both_models_draw_the_fair_rows(tmp_path, monkeypatch):
    """Each point and cell is one fair configuration, and the titles say so."""
    import matplotlib.figure

    drawn = {}

    def keep(fig, path, **kw):
        drawn[Path(path).name] = fig
        original(fig, path, **kw)

    original = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    paths = bw.plot(bw.table(both()), tmp_path)
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)
    scatter = drawn["bw_equivalence_bandwidth.png"]
    assert "(fair fabric model)" in scatter._suptitle.get_text()
    points = sum(len(c.get_offsets()) for ax in scatter.axes for c in ax.collections)
    assert points == 12  # the fair half of the 24 rows
    heat_figure = drawn["bw_equivalence_ratio.png"]
    heat = heat_figure.axes[0]
    assert "(fair fabric model)" in heat_figure._suptitle.get_text()
    assert {t.get_text() for t in heat.texts} == {"1.0000", "0.9000", "0.8000"}

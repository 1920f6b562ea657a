"""The bandwidth-equivalence report across address models (issue 54) and other keys it
does not know: each claim is checked per value and names it, the values' agreement is a
claim of its own, and the plots are drawn per value instead of failing.

The synthetic tables have known answers: PA and LA give the same 1:1/n:1 everywhere but
at one configuration (0.005 apart, within the 1% tolerance); VA's bandwidths are 1% lower
under both mappings (a TLB's cost: the ratio unchanged) and its 1:1/n:1 differs at two
configurations: 0.95 against 1.0 on hotspot aligned reads on 8 PEs (the worst), and 0.90
against 0.92 on local misaligned reads on 4 PEs. One end-to-end test runs a real
3-address sweep and the report on it.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import matplotlib.figure
import pandas as pd
import pytest
from matplotlib.figure import Figure

from kernbench.report import bw_equivalence as bw
from kernbench.report.facets import ADDRESS, NAMED
from kernbench.report.study import STUDIES, Section, study_section
from tests import report_rows

HBM = "sip0.cube0.pe0.agg_router<->sip0.cube0.hbm_ctrl"
NOC = "sip0.cube1.noc->sip0.cube0.noc"
MODELS = ("pa", "va", "la")
# Where the models part, by how much (1:1/n:1 under each model).
WORST = {"pa": 1.0, "va": 0.95, "la": 1.0}  # hotspot, 65536 B, 8 PEs
SECOND = {"pa": 0.92, "va": 0.90, "la": 0.92}  # local, 65792 B, 4 PEs
WITHIN = {"pa": 0.90, "va": 0.90, "la": 0.905}  # local, 512 B, 8 PEs: within 1%
WORST_AT = (
    "pes_per_cube=8, hbm_channels_per_pe=8, pattern=hotspot, active_pes=all, access_bytes=65536"
)
SECOND_AT = (
    "pes_per_cube=4, hbm_channels_per_pe=16, pattern=local, active_pes=all, access_bytes=65792"
)


def ratio(address: str, pattern: str, access: int, pes: int) -> float:
    """1:1/n:1 of a configuration: 1.0 aligned, 0.8 hotspot misaligned, 0.96 hotspot
    below a stripe, 0.92 local misaligned, 0.9 local below a stripe; but where
    :data:`WORST`, :data:`SECOND` and :data:`WITHIN` say otherwise."""
    special = {("hotspot", 65536, 8): WORST, ("local", 65792, 4): SECOND, ("local", 512, 8): WITHIN}
    if (pattern, access, pes) in special:
        return special[pattern, access, pes][address]
    if access == 65536:
        return 1.0
    return {"hotspot": {65792: 0.8, 512: 0.96}, "local": {65792: 0.92, 512: 0.9}}[pattern][access]


def n_to_one(address: str, pattern: str, access: int, pes: int) -> float:
    """n:1 per-PE GB/s, of the magnitudes a default-topology sweep gives: local 250 at
    64 KiB (38 at 512 B), hotspot 256 shared by the PEs; VA 1% lower."""
    local = 250.0 if access > 512 else 38.0
    figure = local if pattern == "local" else 256.0 / pes * (1.0 if access > 512 else 0.4)
    return figure * (0.99 if address == "va" else 1.0)


def sweep(models=MODELS, fabrics=(None,), extra=None, aligns=(0,), ratio=ratio) -> pd.DataFrame:
    """Stream rows: address x fabric x ``extra`` (a key swept by hand: {key: values},
    passed to ``ratio`` as its value's keyword) x align x mapping x pattern x size x
    PEs (64 pseudo-channels: N = 16 on 4 PEs, 8 on 8)."""
    key, values = next(iter((extra or {None: (None,)}).items()))
    rows = []
    grid = itertools.product(models, fabrics, values, aligns, ("n_to_one", "one_to_one"),
                             ("local", "hotspot"), (512, 65536, 65792), (4, 8))  # fmt: skip
    for address, fabric, value, align, mapping, pattern, access, pes in grid:
        kw = {key.rsplit(".", 1)[-1]: value} if key else {}
        n1 = n_to_one(address, pattern, access, pes)
        bw_ = n1 if mapping == "n_to_one" else n1 * ratio(address, pattern, access, pes, **kw)
        metrics = {"mean_pe_bw_gbs": bw_, "busiest_link": HBM if pattern == "local" else NOC}
        rows.append(report_rows.stream_row(
            mapping, access, metrics, pes=pes, interleave=256, align=align, active="all",
            pattern=pattern, op="read", fabric=fabric, address=address,
            extra={key: value} if key else None,
        ))  # fmt: skip
    return pd.DataFrame(rows)


def claims_of(df: pd.DataFrame) -> dict[str, object]:
    """The claims by text (each text says which rows it stands on, so none repeat)."""
    claims = bw.check(bw.table(df))
    by_text = {c.text: c for c in claims}
    assert len(by_text) == len(claims), [c.text for c in claims]
    return by_text


def section_and_figures(df: pd.DataFrame, out_dir: Path) -> tuple[Section, dict[str, Figure]]:
    """The study's section for ``df`` and the figures its plots saved, by PNG name."""
    saved = {}
    original = matplotlib.figure.Figure.savefig

    def keep(fig, path, **kw):
        saved[Path(path).name] = fig
        original(fig, path, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", keep)
        section = study_section(STUDIES[0], df, out_dir)
    return section, {name: fig for name, fig in saved.items() if name.endswith(".png")}


def titles(figures: dict[str, Figure]) -> dict[str, str]:
    return {name: fig._suptitle.get_text() for name, fig in figures.items()}


AGREE = "1:1 and n:1 per-PE bandwidth agree within 1%"
TODAY = (  # the claims of one model, as a table without the address column has them
    f"ADR-0011: local aligned accesses: {AGREE}",
    "n:1 (one aggregate link) is an upper bound: 1:1 / n:1 <= 1 + 1%",
    f"hotspot, aligned: {AGREE}",
    f"hotspot, misaligned or small: {AGREE}",
    f"local, aligned: {AGREE}",
    f"local, misaligned or small: {AGREE}",
)
ACROSS = "PA, VA and LA agree on the 1:1/n:1 ratio within 1%"


def test_each_address_model_gets_its_own_claims_each_naming_it():
    """Every claim is checked on one model's rows and says which: VA's hotspot aligned
    reads part (5% at 8 PEs) while PA's and LA's agree; pooled, one verdict would
    stand for all three."""
    claims = bw.check(bw.table(sweep()))
    texts = [c.text for c in claims]
    assert texts == [f"{m}: {t}" for m in ("PA", "VA", "LA") for t in TODAY] + [ACROSS]
    by_text = {c.text: c for c in claims}
    hot = {m: by_text[f"{m}: hotspot, aligned: {AGREE}"] for m in ("PA", "VA", "LA")}
    assert [hot[m].holds for m in ("PA", "VA", "LA")] == [True, False, True]
    assert "2 distinct configurations; worst |1:1/n:1 - 1| = 5.00%" in hot["VA"].detail
    assert f"at {WORST_AT}: n:1 31.68, 1:1 30.1 GB/s" in hot["VA"].detail  # VA's own figures
    assert "worst |1:1/n:1 - 1| = 0.00%" in hot["PA"].detail
    for model in ("PA", "VA", "LA"):
        assert by_text[f"{model}: {TODAY[0]}"].holds is True  # ADR-0011 holds under each
        assert by_text[f"{model}: local, misaligned or small: {AGREE}"].holds is False
    # each model's local misaligned worst is its own: 10% (512 B) under all three
    la_local = by_text[f"LA: local, misaligned or small: {AGREE}"].detail
    assert "worst |1:1/n:1 - 1| = 10.00%" in la_local and "n:1 38, 1:1 34.2" in la_local


def test_the_models_agree_claim_names_the_worst_configuration_and_its_two_ratios():
    """The largest difference is VA's 0.95 against 1.0 at hotspot 64 KiB on 8 PEs;
    the two configurations past 1% are named; LA's 0.005 from PA is within it."""
    across = claims_of(sweep())[ACROSS]
    assert across.holds is False
    assert across.detail == (
        "12 distinct configurations under more than one of them;"
        f" largest difference of 1:1/n:1: 0.0500, PA 1.0000 against VA 0.9500 at {WORST_AT};"
        f" they differ by more than 1% at 2 configurations: {SECOND_AT}; {WORST_AT};"
        f" why they differ: {NAMED[ADDRESS].why}"
    )
    assert "tlb_overhead_ns" in NAMED[ADDRESS].why  # what the report says VA adds


def test_models_that_agree_hold_and_differing_bandwidths_alone_do_not_part_them():
    """VA 1% slower under both mappings, PA and LA 0.005 apart: the ratios agree."""

    def same(address, pattern, access, pes):
        return ratio("la" if address == "va" else address, pattern, access, pes)

    across = claims_of(sweep(ratio=same))[ACROSS]
    assert across.holds is True
    assert "; no configuration where they differ by more than 1%; why" in across.detail
    assert "largest difference of 1:1/n:1: 0.0050, PA 0.9000 against LA 0.9050" in across.detail


def test_a_model_that_misses_a_configuration_is_compared_where_it_has_one():
    """Two models present, one configuration under one only: compared where both
    are; with none in common the claim is NOT TESTED, never DOES NOT HOLD."""
    df = sweep(models=("pa", "va"))
    gone = (df["address.model"] == "va") & (df["workload.access_bytes"] == 65536)
    across = claims_of(df[~gone])["PA and VA agree on the 1:1/n:1 ratio within 1%"]
    assert across.detail.startswith("8 distinct configurations under more than one of them")
    assert f"differ by more than 1% at 1 configurations: {SECOND_AT}" in across.detail
    apart = df[(df["address.model"] == "pa") | (df["workload.pattern"] == "local")]
    apart = apart[(apart["address.model"] == "va") | (apart["workload.pattern"] == "hotspot")]
    untested = claims_of(apart)["PA and VA agree on the 1:1/n:1 ratio within 1%"]
    assert untested.holds is None


def test_one_model_is_named_once_and_its_claims_read_as_before(tmp_path):
    """LA alone: the claims are those of the same rows without the column, word for
    word; the section names the model above them, and the plots in their titles."""
    la = sweep(models=("la",))
    claims = bw.check(bw.table(la))
    assert claims == bw.check(bw.table(la.drop(columns="address.model")))
    assert [c.text for c in claims] == list(TODAY)
    section, figures = section_and_figures(la, tmp_path)
    assert section.lines == ["address model: LA, in every row", WRAPPED_TOLERANCE, WRAPPED_LONGER]
    assert [p.name for p in section.plots] == [
        "bw_equivalence_bandwidth.png",
        "bw_equivalence_ratio.png",
    ]
    assert all("(LA)" in t for t in titles(figures).values()), titles(figures)


def test_one_heat_map_and_one_scatter_per_model_and_no_plot_error(tmp_path):
    """The plots that failed ("3 configurations in one heat-map cell") are drawn once
    per model, each of that model's rows, its name in the title."""
    section, figures = section_and_figures(sweep(), tmp_path)
    assert section.notes == []
    assert [p.name for p in section.plots] == [
        f"bw_equivalence_{kind}_{m}.png" for m in MODELS for kind in ("bandwidth", "ratio")
    ]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in section.plots)
    assert section.lines == [
        "address model: PA, VA, LA; claims and plots per address model",
        WRAPPED_TOLERANCE,
        WRAPPED_LONGER,
    ]
    cells = {m: {t.get_text() for t in figures[f"bw_equivalence_ratio_{m}.png"].axes[0].texts}
             for m in MODELS}  # fmt: skip
    assert cells["pa"] == {"1.0000", "0.8000", "0.9600", "0.9200", "0.9000"}
    assert cells["va"] == cells["pa"] | {"0.9500"}  # the worst case, VA's alone
    assert cells["la"] == cells["pa"] | {"0.9050"}
    for m in MODELS:
        for kind in ("bandwidth", "ratio"):
            assert (
                f"({m.upper()})" in figures[f"bw_equivalence_{kind}_{m}.png"]._suptitle.get_text()
            )
        scatter = figures[f"bw_equivalence_bandwidth_{m}.png"]
        assert sum(len(c.get_offsets()) for ax in scatter.axes for c in ax.collections) == 12


def test_the_models_heat_maps_share_one_colour_scale(tmp_path):
    """Aligned hotspot reads: PA's ratios are all 1.0, VA's down to 0.95. Each map
    fitted alone would colour PA's 1.0 on a scale of 0.99 to 1.01 and VA's on 0.95 to
    1.01; on one scale a colour means one ratio in every map."""
    df = sweep(models=("pa", "va"))
    df = df[(df["workload.pattern"] == "hotspot") & (df["workload.access_bytes"] == 65536)]
    _, figures = section_and_figures(df, tmp_path)
    maps = [figures[f"bw_equivalence_ratio_{m}.png"].axes[0].images[0] for m in ("pa", "va")]
    assert [(im.norm.vmin, im.norm.vmax) for im in maps] == [pytest.approx((0.95, 1.01))] * 2


def test_a_key_swept_by_hand_is_a_facet_not_pooled(tmp_path):
    """workload.outstanding swept by hand beside the three models: claims per model and
    value, each naming both; one claim per key on whether its values agree, the other
    key's value in its locations; plots per value (here of LA alone: fewer to draw)."""

    def deeper(address, pattern, access, pes, outstanding):
        if (pattern, access, pes, outstanding) == ("hotspot", 65536, 4, 2):
            return 0.97  # two outstanding accesses: 1:1 3% short on 4 PEs, every model
        return ratio(address, pattern, access, pes)

    df = sweep(extra={"workload.outstanding": (2, 4)}, ratio=deeper)
    claims = bw.check(bw.table(df))
    assert len(claims) == 3 * 2 * len(TODAY) + 2
    by_text = {c.text: c for c in claims}
    assert by_text[f"PA, outstanding=2: hotspot, aligned: {AGREE}"].holds is False
    assert by_text[f"PA, outstanding=4: hotspot, aligned: {AGREE}"].holds is True
    models = by_text[ACROSS]
    assert models.holds is False
    assert "0.0500, PA 1.0000 against VA 0.9500 at " + WORST_AT + ", outstanding=2" in models.detail
    outstanding = by_text["outstanding=2 and outstanding=4 agree on the 1:1/n:1 ratio within 1%"]
    assert outstanding.holds is False
    at = SECOND_AT.replace("local", "hotspot").replace("65792", "65536")
    assert outstanding.detail == (
        "36 distinct configurations under more than one of them;"
        " largest difference of 1:1/n:1: 0.0300, outstanding=2 0.9700 against outstanding=4"
        f" 1.0000 at {at}, PA; they differ by more than 1% at 3 configurations:"
        f" {at}, PA; {at}, VA; {at}, LA"
    )
    assert bw.lines(bw.table(df)) == [
        "address model: PA, VA, LA; claims and plots per address model",
        "workload.outstanding varies: claims and plots per value (outstanding=2, outstanding=4)",
        WRAPPED_TOLERANCE,
        WRAPPED_LONGER,
    ]
    la = df[df["address.model"] == "la"]
    section, figures = section_and_figures(la, tmp_path)
    assert section.notes == []
    assert [p.name for p in section.plots] == [
        f"bw_equivalence_{kind}_outstanding_{n}.png"
        for n in (2, 4)
        for kind in ("bandwidth", "ratio")
    ]
    assert "(outstanding=2, LA)" in titles(figures)["bw_equivalence_ratio_outstanding_2.png"]
    cells = figures["bw_equivalence_ratio_outstanding_2.png"].axes[0].texts
    assert "0.9700" in {t.get_text() for t in cells}


def test_a_key_the_heat_map_cannot_place_gets_plots_per_value_not_claims(tmp_path):
    """The alignment offset is a key the claims know (it sets the access class) but
    the heat map has no place for: the claims stay as they are, the plots are drawn
    per offset."""
    df = sweep(models=("la",), aligns=(0, 128))
    claims = bw.check(bw.table(df))
    assert [c.text for c in claims] == list(TODAY)
    section, _ = section_and_figures(df, tmp_path)
    assert section.notes == []
    assert [p.name for p in section.plots] == [
        f"bw_equivalence_{kind}_align_offset_bytes_{a}.png"
        for a in (0, 128)
        for kind in ("bandwidth", "ratio")
    ]
    assert section.lines[1] == (
        "workload.align_offset_bytes varies: plots per value"
        " (align_offset_bytes=0, align_offset_bytes=128)"
    )


def booked(address, pattern, access, pes):
    """The reservation model's ratios: VA 0.5 on hotspot misaligned (far from PA and LA,
    but only under reservation)."""
    if address == "va" and pattern == "hotspot" and access == 65792:
        return 0.5
    return ratio(address, pattern, access, pes)


def test_with_both_fabric_models_each_model_keeps_its_booking_order_claims():
    """Per address model: the mapping claims on its fair rows, then its booking-order
    claims; the models' agreement is judged on the fair rows too."""
    fair = sweep(fabrics=("fair",))
    res = sweep(fabrics=("reservation",), ratio=booked)
    claims = claims_of(pd.concat([fair, res], ignore_index=True))
    va_hot = claims[
        "VA: hotspot: the booking-order model (reservation) changes 1:1/n:1 by at most 1%"
    ]
    assert va_hot.holds is False
    assert "largest change of 1:1/n:1: 0.3000, from 0.8000 (fair) to 0.5000" in va_hot.detail
    pa_hot = claims[
        "PA: hotspot: the booking-order model (reservation) changes 1:1/n:1 by at most 1%"
    ]
    assert pa_hot.holds is True
    assert claims[f"VA: hotspot, aligned: {AGREE}"].detail.startswith("fair model: 2 distinct")
    across = claims[ACROSS]
    assert across.detail.startswith("fair model: 12 distinct configurations")
    assert "largest difference of 1:1/n:1: 0.0500, PA 1.0000 against VA 0.9500" in across.detail
    assert len(claims) == 3 * (len(TODAY) + 2) + 1


def test_with_both_fabric_models_the_plots_are_per_model_and_fair(tmp_path):
    both = pd.concat([sweep(fabrics=("fair",)), sweep(fabrics=("reservation",), ratio=booked)])
    section, figures = section_and_figures(both.reset_index(drop=True), tmp_path)
    assert section.notes == [] and len(figures) == 6
    assert "(VA, fair fabric model)" in titles(figures)["bw_equivalence_ratio_va.png"]
    scatter = figures["bw_equivalence_bandwidth_va.png"]
    assert sum(len(c.get_offsets()) for ax in scatter.axes for c in ax.collections) == 12


def test_a_three_address_sweep_reports_per_model(tmp_path):
    """The companion preset (``+experiment=bw_equivalence_models``: bw_equivalence's
    grid under PA, VA and LA, fair only), its grid narrowed on the command line to 24
    points of the small topology, then kernbench-report: no error, every claim names
    its model, the agreement claim, one heat map per model."""
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    sweep_dir = tmp_path / "sweep"
    narrowed = {
        "traffic": "local,hotspot",
        "workload.access_bytes": "512,65536",
        "topology.pes_per_cube": "2",
        "topology.cube.memory_map.hbm_pseudo_channels": "16",
    }
    argv = [
        sys.executable, "-m", "kernbench.app", "-m", "+experiment=bw_equivalence_models",
        "topology=small", *(f"hydra.sweeper.params.{k}={v}" for k, v in narrowed.items()),
        "workload.bytes_per_pe=131072", "cache=false", f"hydra.sweep.dir={sweep_dir}",
    ]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=300, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    rows = pd.read_parquet(sweep_dir / "results.parquet")
    assert len(rows) == 24 and set(rows["status"]) == {"ok"}
    assert sorted(set(rows["address.model"])) == ["la", "pa", "va"]
    assert set(rows["sim.fabric"]) == {"fair"}
    report = subprocess.run(
        [sys.executable, "-c", "from kernbench.report.cli import entry; entry()", str(sweep_dir)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert (report.returncode, report.stderr) == (0, "")
    text = (sweep_dir / "report.txt").read_text()  # the terminal has the summaries alone
    section = text[text.index("== bandwidth equivalence") : text.index("== all points")]
    assert "plots not drawn" not in section and "not reported" not in section
    assert "address model: PA, VA, LA; claims and plots per address model" in section
    verdicts = [line for line in section.splitlines() if line.startswith("[")]
    assert len(verdicts) == 3 * len(TODAY) + 1
    for n, model in enumerate(("PA", "VA", "LA")):
        claims = verdicts[n * len(TODAY) : (n + 1) * len(TODAY)]
        assert [c.split("] ", 1)[1] for c in claims] == [f"{model}: {t}" for t in TODAY]
    assert verdicts[-1].endswith(f"] {ACROSS}")
    for m in MODELS:
        assert (sweep_dir / f"bw_equivalence_ratio_{m}.png").is_file()
    assert not (sweep_dir / "bw_equivalence_ratio.png").exists()


# The tolerance's reason and the stream-length rerun as the section prints them:
# wrapped at 100 columns.
WRAPPED_TOLERANCE = textwrap.fill(bw.TOLERANCE_WHY, 100, subsequent_indent="    ")
WRAPPED_LONGER = textwrap.fill(bw.LONGER_WHY, 100, subsequent_indent="    ")


def test_the_claims_yardstick_is_said_before_them():
    """Issue 55: the tolerance is explained beside the claims, and with both fabric
    models one paragraph says why the claims are judged on fair and what reservation
    is for; with fair alone there is no comparison to explain."""
    both = bw.lines(
        bw.table(
            pd.concat([sweep(fabrics=("fair",)), sweep(fabrics=("reservation",), ratio=booked)])
        )
    )
    assert [" ".join(line.split()) for line in both[-3:]] == [
        bw.TOLERANCE_WHY,
        bw.LONGER_WHY,
        bw.FAIR_WHY,
    ]
    assert max(len(row) for line in both for row in line.splitlines()) <= 100
    assert f"within {bw.BW_EQUAL_TOL:.0%}" in bw.TOLERANCE_WHY
    assert "reservation books every link" in bw.FAIR_WHY
    assert bw.lines(bw.table(sweep(fabrics=("fair",))))[-2:] == [WRAPPED_TOLERANCE, WRAPPED_LONGER]

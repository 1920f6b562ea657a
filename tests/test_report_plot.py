"""The general report's plot, read back from the matplotlib figure: one colour per hue
value in every panel and one legend naming them all, short axis labels with the unit
once, x tick labels that never overlap, numbers at their value and crowded or worded
values as bars (never a line joining categories, never a mark moved off its figures),
and a plot (not a refusal) for every study preset's grid."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from kernbench.report.document import PlotChoice, plan_plot
from kernbench.report.general import main_metrics
from kernbench.report.metric_plot import PlotError, metric_figure
from kernbench.results import make_row
from kernbench.units import axis_label
from tests.report_rows import MM, stream_row

COST = "topology.pe.attrs.pe_cost_model."
# traffic= options of the bw_equivalence preset: (pattern, active_pes)
TRAFFIC = (("local", "all"), ("neighbor", "all"), ("hotspot", "all"), ("uniform", "1"),
           ("uniform", "all"))  # fmt: skip
# Each pattern's bandwidth lies in its own band, so a line's figures say its pattern.
BAND = {"hotspot": 100.0, "local": 200.0, "neighbor": 300.0, "uniform": 400.0}
LINK = "sip0.cube0.pe0.agg_router->sip0.cube0.hbm_ctrl"


def bw_preset_rows() -> pd.DataFrame:
    """The grid of ``+experiment=bw_equivalence`` (240 points): mapping x PEs x
    pseudo-channels x traffic x access size x fabric model."""
    rows = []
    grid = itertools.product(("n_to_one", "one_to_one"), (4, 8), (32, 64), TRAFFIC,
                             (512, 65536, 65792), ("fair", "reservation"))  # fmt: skip
    for mapping, pes, pseudo, (pattern, active), access, fabric in grid:
        bw = BAND[pattern] + access / 1000 + pes + (mapping == "n_to_one")
        metrics = {"mean_pe_bw_gbs": bw, "busiest_link": LINK}
        columns = dict(topology=None, interleave=256, align=0, active=active, pattern=pattern,
                       fabric=fabric)  # fmt: skip
        rows.append(stream_row(mapping, access, metrics, pes=pes, pseudo=pseudo, **columns))
    return pd.DataFrame(rows)


def figure_for(df: pd.DataFrame, choice: PlotChoice):
    plan = plan_plot(df, main_metrics(df), choice)
    return plan, metric_figure(plan.data, plan.metric, plan.x, plan.hue, plan.facets)


def pattern_of(ys) -> str:
    """The pattern whose band holds a line's figures."""
    (pattern,) = {p for p, low in BAND.items() for y in ys if low <= y < low + 100}
    return pattern


def bars(ax) -> list:
    """The panel's bars (its Rectangle patches: the axes background is not one)."""
    return list(ax.patches)


def lines_joining(ax) -> list:
    """The panel's lines through more than one point (grid lines are not among them)."""
    return [line for line in ax.get_lines() if len(line.get_xdata()) > 1]


def test_one_colour_per_hue_value_in_every_panel_and_one_legend():
    """``--x access_bytes --hue pattern`` on the bw_equivalence grid (issue 22: the
    legend named one of four lines, and blue was uniform in one panel, hotspot in the
    others). The panel with one active PE holds only uniform: it must still be red."""
    plan, fig = figure_for(bw_preset_rows(), PlotChoice(x="access_bytes", hue="pattern"))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    colours: dict[str, set[str]] = {}
    for ax in panels:  # 512, 65536, 65792 B crowd on a size axis: a bar per size and hue
        assert lines_joining(ax) == []
        for bar in bars(ax):
            colours.setdefault(pattern_of([bar.get_height()]), set()).add(
                to_hex(bar.get_facecolor())
            )
    assert set(colours) == set(BAND)
    assert all(len(c) == 1 for c in colours.values()), colours
    assert len({next(iter(c)) for c in colours.values()}) == 4  # four different colours
    (legend,) = fig.legends
    shown = {
        t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    for pattern, (colour,) in colours.items():
        assert to_hex(shown[pattern].get_facecolor()) == colour
    # a panel with only uniform in it (one active PE) draws it in uniform's colour
    lone = [ax for ax in panels if {pattern_of([b.get_height()]) for b in bars(ax)} == {"uniform"}]
    assert lone
    plt.close(fig)


def test_axis_labels_are_short_with_the_unit_once():
    """``kernel_latency_ns (ns)`` repeated the unit; dotted keys overprinted the panels."""
    rows = [
        make_row({COST + "fixed_per_cmd_cycles": f, COST + "byte_cycles_recip": r,
                  "workload.name": w}, status="ok",
                 metrics={"kernel_latency_ns": 1000.0 + f * r, "bottleneck": "dma"})
        for f, r, w in itertools.product((0, 8, 32), (0.0, 0.25), ("gqa_opt2", "gqa_opt3"))
    ]  # fmt: skip
    plan, fig = figure_for(pd.DataFrame(rows), PlotChoice(x="fixed_per_cmd_cycles"))
    assert fig.get_supylabel() == "kernel latency (ns)"
    assert fig.get_supxlabel() == "fixed per cmd (cycles)"
    assert not [ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()]  # one label, below all
    plt.close(fig)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("kernel_latency_ns", "kernel latency (ns)"),
        ("workload.access_bytes", "access size (B)"),
        ("mean_pe_bw_gbs", "mean per-PE bandwidth (GB/s)"),
        ("hbm_channels_used", "HBM channels used"),
        ("dispatch_cycles_per_tile", "dispatch cost (cycles/tile)"),
        ("topology.cube.memory_map.hbm_mapping_mode", "hbm mapping mode"),
        ("bw_efficiency", "bw efficiency (fraction of peak)"),
        ("workload.name", "workload"),
    ],
)
def test_axis_label(name, label):
    assert axis_label(name) == label


def visible_ticks(ax) -> dict[str, object]:
    renderer = ax.figure.canvas.get_renderer()
    return {
        t.get_text(): t.get_window_extent(renderer)
        for t in ax.get_xticklabels()
        if t.get_visible() and t.get_text()
    }


def overlapping(boxes) -> list[tuple[str, str]]:
    ordered = sorted(boxes.items(), key=lambda kv: kv[1].x0)
    return [(a, b) for (a, p), (b, q) in itertools.pairwise(ordered) if q.x0 < p.x1]


def test_close_sizes_get_tick_labels_that_do_not_overlap():
    """512, 65536, 65792 B: on a log axis 65536 and 65792 printed on top of each other.
    Both are shown, and their boxes (read back through the renderer) are apart."""
    plan, fig = figure_for(bw_preset_rows(), PlotChoice(hue="hbm_mapping_mode"))
    assert plan.x == "workload.access_bytes"
    bottom = [ax for ax in fig.axes if ax.get_visible() and visible_ticks(ax)]
    assert bottom
    for ax in bottom:
        boxes = visible_ticks(ax)
        assert {"65536", "65792"} <= set(boxes)
        assert overlapping(boxes) == []
    plt.close(fig)


def size_rows(sizes, bw=lambda mapping, size: 1.0) -> pd.DataFrame:
    """Stream rows of both mappings at each access size, ``bw(mapping, size)`` GB/s."""
    return pd.DataFrame([
        make_row({"workload.name": "stream", MM + "hbm_mapping_mode": m,
                  "workload.access_bytes": a}, status="ok", metrics={"mean_pe_bw_gbs": bw(m, a)})
        for m, a in itertools.product(("n_to_one", "one_to_one"), sizes)
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("sizes", "scale"),
    [
        ([64 * 2**i for i in range(12)], "log"),  # at their value: 2^6 .. 2^17 B
        ([64 * 2**i for i in range(10)] + [65536, 65792], "linear"),  # crowded: 12 categories
    ],
)
def test_many_numeric_values_never_overlap(sizes, scale):
    """Twelve sizes from 64 B up: doubling, on a log axis at their value; with 65536
    and 65792 among them, 0.4% apart, as twelve categories. Whatever is shown, no two
    labels overlap."""
    plan, fig = figure_for(size_rows(sizes), PlotChoice())
    (ax,) = fig.axes
    assert ax.get_xscale() == scale
    boxes = visible_ticks(ax)
    assert len(boxes) >= 4 and overlapping(boxes) == []
    plt.close(fig)


def test_numbers_sit_at_their_value_joined_and_crowded_ones_are_bars_not_lines():
    """FIXED = 0, 8, 16, 32, 64 cycles: markers at x = 0, 8, 16, 32, 64, not at five
    even steps (which would draw 16 to 32 as long as 0 to 8). Sizes 512, 65536, 65792
    B (65792 is 0.08% of the log axis from 65536: one marker's place): three
    categories, a bar per mapping inside each one's slot, no line joining them."""
    rows = [
        make_row({COST + "fixed_per_cmd_cycles": f, "workload.name": w}, status="ok",
                 metrics={"kernel_latency_ns": 1000.0 + 10 * f + (w == "gqa_opt3")})
        for f, w in itertools.product((0, 8, 16, 32, 64), ("gqa_opt2", "gqa_opt3"))
    ]  # fmt: skip
    _, fig = figure_for(pd.DataFrame(rows), PlotChoice())
    (ax,) = fig.axes
    assert ax.get_xscale() == "linear" and bars(ax) == []
    for line in ax.get_lines():
        assert list(line.get_xdata()) == [0, 8, 16, 32, 64]
    plt.close(fig)

    sizes = (512, 65536, 65792)
    rows = size_rows(sizes, lambda m, a: a / 1000 + (m == "one_to_one"))
    _, fig = figure_for(rows, PlotChoice())
    (ax,) = fig.axes
    assert lines_joining(ax) == []
    ticks = {t.get_text(): t.get_position()[0] for t in ax.get_xticklabels()}
    assert list(ticks) == ["512", "65536", "65792"]
    assert len(bars(ax)) == 6
    for bar in bars(ax):  # its height says its size: inside that size's slot
        (size,) = [a for a in sizes if round(bar.get_height() - a / 1000, 9) in (0, 1)]
        at = ticks[str(size)]
        assert at - 0.5 < bar.get_x() < bar.get_x() + bar.get_width() < at + 0.5
    plt.close(fig)


def test_equal_series_nest_at_their_value_instead_of_moving_apart():
    """1:1 exactly on n:1 at every size: both lines' markers at the figures, drawn by
    the axes' own data transform (nothing shifted), n:1's marker larger and its line
    thicker, so 1:1 shows inside it; the legend's markers are the lines' sizes."""
    sizes = [64 * 2**i for i in range(6)]
    _, fig = figure_for(size_rows(sizes, lambda m, a: 5.0), PlotChoice())
    (ax,) = fig.axes
    first, second = ax.get_lines()
    for line in (first, second):
        assert list(line.get_xdata()) == sizes and set(line.get_ydata()) == {5.0}
        drawn = line.get_transform().transform(line.get_xydata())
        assert np.abs(drawn - ax.transData.transform(line.get_xydata())).max() < 0.01
    assert first.get_markersize() > second.get_markersize() >= 4
    assert first.get_linewidth() > second.get_linewidth()
    (legend,) = fig.legends
    shown = [h.get_markersize() for h in legend.legend_handles if h.get_marker() == "o"]
    assert shown == [first.get_markersize(), second.get_markersize()]
    plt.close(fig)


def test_bw_preset_with_the_mapping_as_hue_is_plotted():
    """Issue 22: ``--hue hbm_mapping_mode`` refused ("20 panels"). 2 x 2 x 5 traffic
    cases x 2 fabric models is 40 panels; the fabric model (two values) becomes the
    line style: 20 panels, each with both mappings under both models."""
    for choice in (PlotChoice(hue="hbm_mapping_mode"), PlotChoice()):
        plan, fig = figure_for(bw_preset_rows(), choice)
        assert plan.hue == MM + "hbm_mapping_mode"
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 12  # the first figure of two: 12 and 8 panels
        # sizes crowd: bars, the fabric model as each bar's hatch
        styles = {(to_hex(b.get_facecolor()), b.get_hatch()) for b in bars(panels[0])}
        assert len(styles) == 4
        (legend,) = fig.legends
        texts = [t.get_text() for t in legend.get_texts()]
        assert texts == ["hbm mapping mode", "n_to_one", "one_to_one", "fabric", "fair",
                         "reservation"]  # fmt: skip
        plt.close(fig)


def test_beyond_the_panel_limit_is_one_clear_line():
    rows = [make_row({"workload.name": "stream", "workload.access_bytes": a,
                      "topology.pes_per_cube": p}, status="ok", metrics={"mean_pe_bw_gbs": 1.0})
            for a, p in itertools.product(range(1, 50), (4, 8))]  # fmt: skip
    df = pd.DataFrame(rows)
    with pytest.raises(PlotError, match="49 panels .one per access_bytes. is more than 48"):
        metric_figure(df, "mean_pe_bw_gbs", "topology.pes_per_cube", None,
                      ["workload.access_bytes"])  # fmt: skip


def test_study_presets_get_a_default_plot():
    """dispatch_ratio: latency against a cost parameter, a line per variant; sim_speed:
    the speed ratio against the work, a line per mapping, a panel per address model."""
    rows = [
        make_row({COST + "fixed_per_cmd_cycles": f, COST + "byte_cycles_recip": r,
                  "workload.name": w}, status="ok",
                 metrics={"kernel_latency_ns": 1000.0 + f * r, "bottleneck": "dma"})
        for f, r, w in itertools.product((0, 8, 16, 32, 64), (0, 0.125, 0.25, 0.5, 1.0),
                                         ("gqa_opt2", "gqa_opt3"))
    ]  # fmt: skip
    plan, fig = figure_for(pd.DataFrame(rows), PlotChoice())
    assert (plan.metric, plan.hue) == ("kernel_latency_ns", "workload.name")
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 5
    plt.close(fig)
    speed = [
        make_row({"address.model": a, MM + "hbm_mapping_mode": m, "workload.name": "stream",
                  "workload.bytes_per_pe": w}, status="ok",
                 metrics={"mean_pe_bw_gbs": 10.0, "speed_ratio": 0.3, "sim_wall_s": 1.0})
        for a, m, w in itertools.product(("pa", "va", "la"), ("n_to_one", "one_to_one"),
                                         (2048000, 20480000, 204800000))
    ]  # fmt: skip
    plan, fig = figure_for(pd.DataFrame(speed), PlotChoice())
    assert (plan.metric, plan.x, plan.hue) == (
        "speed_ratio", "workload.bytes_per_pe", MM + "hbm_mapping_mode",
    )  # fmt: skip
    assert fig.get_supylabel() == "speed ratio (× bare SimPy rate)"
    plt.close(fig)

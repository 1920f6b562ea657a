"""The general report's plot, read back from the matplotlib figure: one colour per hue
value in every panel and one legend naming them all, short axis labels with the unit
once, x tick labels that never overlap, and a plot (not a refusal) for every study
preset's grid."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
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


def test_one_colour_per_hue_value_in_every_panel_and_one_legend():
    """``--x access_bytes --hue pattern`` on the bw_equivalence grid (issue 22: the
    legend named one of four lines, and blue was uniform in one panel, hotspot in the
    others). The panel with one active PE holds only uniform: it must still be red."""
    plan, fig = figure_for(bw_preset_rows(), PlotChoice(x="access_bytes", hue="pattern"))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    colours: dict[str, set[str]] = {}
    for ax in panels:
        for line in ax.get_lines():
            colours.setdefault(pattern_of(line.get_ydata()), set()).add(to_hex(line.get_color()))
    assert set(colours) == set(BAND)
    assert all(len(c) == 1 for c in colours.values()), colours
    assert len({next(iter(c)) for c in colours.values()}) == 4  # four different colours
    (legend,) = fig.legends
    shown = {
        t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
    }
    for pattern, (colour,) in colours.items():
        assert to_hex(shown[pattern].get_color()) == colour
    # a panel with only uniform in it (one active PE) draws it in uniform's colour
    lone = [
        ax for ax in panels if {pattern_of(li.get_ydata()) for li in ax.get_lines()} == {"uniform"}
    ]
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


def test_many_numeric_values_never_overlap():
    """Twelve sizes from 64 B up, 65536 and 65792 among them, on a numeric (log) axis:
    whatever is shown, no two labels overlap."""
    sizes = [64 * 2**i for i in range(10)] + [65536, 65792]
    rows = [make_row({MM + "hbm_mapping_mode": m, "workload.name": "stream",
                      "workload.access_bytes": a}, status="ok", metrics={"mean_pe_bw_gbs": 1.0})
            for m, a in itertools.product(("n_to_one", "one_to_one"), sizes)]  # fmt: skip
    plan, fig = figure_for(pd.DataFrame(rows), PlotChoice())
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    boxes = visible_ticks(ax)
    assert len(boxes) >= 4 and overlapping(boxes) == []
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
        styles = {(to_hex(li.get_color()), li.get_linestyle()) for li in panels[0].get_lines()}
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

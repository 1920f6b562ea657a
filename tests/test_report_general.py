"""The general part of ``kernbench-report``: any sweep or single run, and report.html.

Synthetic tables with known answers; the HTML page is also rendered in headless
Chromium (skipped, with the reason, where no browser is installed).
"""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
import subprocess

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from kernbench.report.cli import main
from kernbench.report.formatting import format_table
from kernbench.report.general import independent_axes, overview, swept_keys
from kernbench.report.metric_plot import choose_axes
from kernbench.results import make_row, write_rows
from tests.report_rows import MM, stream_row


def sweep_row(mapping: str, access: int, pes: int = 8, pseudo: int = 64, bw: float = 100.0):
    metrics = {"mean_pe_bw_gbs": bw, "aggregate_bw_gbs": 16 * bw, "peak_bw_gbs": 256.0}
    return stream_row(mapping, access, metrics, pes=pes, pseudo=pseudo)


def readme_sweep() -> list[dict]:
    """``kernbench -m channel_mapping=one_to_one,n_to_one workload.access_bytes=4096,65536``:
    the ad-hoc sweep whose report used to end in a traceback (issue 14 item 1)."""
    grid = itertools.product(("one_to_one", "n_to_one"), (4096, 65536))
    return [sweep_row(m, a, bw=a / 256) for m, a in grid]


def test_readme_ad_hoc_sweep_is_reported_without_a_traceback(tmp_path, capsys):
    write_rows(readme_sweep(), tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    said, err = capsys.readouterr()
    assert "Traceback" not in said + err
    out = (tmp_path / "report.txt").read_text()  # the terminal has the summaries alone
    assert "swept: topology.cube.memory_map.hbm_mapping_mode (2), workload.access_bytes (2)" in out
    # constants once, above the table: topology name, PEs, the per-PE peak
    constant = out.split("constant: ", 1)[1]
    assert "topology.pes_per_cube=8" in constant and "peak_bw_gbs=256" in constant
    lines = out.splitlines()
    header = next(line for line in lines if "aggregate_bw_gbs" in line)
    assert header.split() == [
        "hbm_mapping_mode",
        "access_bytes",
        "mean_pe_bw_gbs",
        "aggregate_bw_gbs",
    ]
    # before the table: the best and worst rows of the plotted metric (GB/s: highest best)
    at = lines.index("mean_pe_bw_gbs: rank 1 = highest is best; the first and last 2 of 4 ok rows")
    assert [line.split() for line in lines[at + 1 : at + 6]] == [
        ["rank", "hbm_mapping_mode", "access_bytes", "mean_pe_bw_gbs"],
        ["1", "n_to_one", "65536", "256"],
        ["2", "one_to_one", "65536", "256"],
        ["3", "n_to_one", "4096", "16"],
        ["4", "one_to_one", "4096", "16"],
    ]
    assert at < lines.index("plots: report_mean_pe_bw_gbs.png") < lines.index(header)
    assert (tmp_path / "report_mean_pe_bw_gbs.png").read_bytes()[:4] == b"\x89PNG"
    assert out.startswith(str(tmp_path))


def test_single_run_directory_is_reported(tmp_path):
    write_rows([sweep_row("n_to_one", 4096)], tmp_path / "result.parquet")
    assert main([str(tmp_path)]) == 0
    out = (tmp_path / "report.txt").read_text()
    assert f"{tmp_path}: 1 row (1 ok)" in out and "== all points (1 row, 1 ok) ==" in out
    assert "swept: nothing" in out
    assert "no plot: one configuration: nothing varies to plot against" in out
    assert "mean_pe_bw_gbs" in out and "100" in out


def test_empty_and_all_error_tables_say_so_in_one_line(tmp_path, capsys):
    failed = [make_row({"workload.access_bytes": a}, status="error", error="boom") for a in (1, 2)]
    write_rows(failed, tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "kernbench-report: error: all 2 points failed; the first: boom"
    ]
    pd.DataFrame({"status": pd.Series([], dtype=str)}).to_parquet(tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "kernbench-report: error: the table has no rows"
    ]


def test_error_rows_are_counted_and_listed_beside_the_others(tmp_path):
    rows = readme_sweep()
    rows[1] = make_row({**{k: rows[1][k] for k in rows[1] if "." in k}}, status="error",
                       error="workload.access_bytes: boom")  # fmt: skip
    write_rows(rows, tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    out = (tmp_path / "report.txt").read_text()
    assert "(4 rows, 3 ok)" in out
    assert (
        "error: hbm_mapping_mode=one_to_one, access_bytes=65536: workload.access_bytes: boom" in out
    )


def test_one_number_format_per_column():
    """Issue 14 item 6: ``4236`` beside ``1.101e+04``; now one format down a column."""
    table = pd.DataFrame(
        {
            "whole": [4236.0, 11012.0],
            "tenths": [4354.7, 11012.0],
            "small": [0.0, 0.125],
            "huge": [2.5e12, 3.5],
            "word": ["dma", "cpu"],
        }
    )
    shown = format_table(table)
    assert list(shown["whole"]) == ["4236", "11012"]
    assert list(shown["tenths"]) == ["4355", "11012"]  # five significant digits of the top
    assert list(format_table(table.iloc[:1])["tenths"]) == ["4354.7"]
    assert list(shown["small"]) == ["0.000", "0.125"]
    assert list(shown["huge"]) == ["2.5000e+12", "3.5000e+00"]
    assert list(shown["word"]) == ["dma", "cpu"]


def grid_rows() -> list[dict]:
    """2 mappings x 2 sizes x (PEs, pseudo-channels) in {4, 8} x {32, 64}: channels per
    PE (8, 4, 16, 8) follows from the other two."""
    grid = itertools.product(("one_to_one", "n_to_one"), (4096, 65536), (4, 8), (32, 64))
    return [sweep_row(m, a, pes=p, pseudo=c, bw=a / 256 + c / p) for m, a, p, c in grid]


def test_axes_drop_keys_the_others_determine():
    df = pd.DataFrame(grid_rows())
    swept = swept_keys(df)
    assert MM + "hbm_channels_per_pe" in swept
    assert independent_axes(df, swept) == [
        "topology.pes_per_cube",
        MM + "hbm_mapping_mode",
        MM + "hbm_pseudo_channels",
        "workload.access_bytes",
    ]
    ov = overview(df)
    assert list(ov.table.columns[:5]) == [
        "pes_per_cube",
        "hbm_mapping_mode",
        "hbm_pseudo_channels",
        "hbm_channels_per_pe",
        "access_bytes",
    ]


def test_default_axes_x_numeric_hue_a_choice_panels_the_rest():
    df = pd.DataFrame(grid_rows())
    axes = independent_axes(df, swept_keys(df))
    x, hue, facets = choose_axes(df, axes, None, None)  # every numeric axis has 2 values
    assert (x, hue) == ("workload.access_bytes", MM + "hbm_mapping_mode")
    assert facets == ["topology.pes_per_cube", MM + "hbm_pseudo_channels"]
    three_sizes = pd.concat([df, pd.DataFrame([sweep_row("n_to_one", 1024, 8, 32)])])
    x, hue, facets = choose_axes(three_sizes, axes, None, None)
    assert x == "workload.access_bytes"
    x, hue, facets = choose_axes(df, axes, "topology.pes_per_cube", None)
    assert (x, hue) == ("topology.pes_per_cube", MM + "hbm_mapping_mode")
    assert facets == [MM + "hbm_pseudo_channels", "workload.access_bytes"]


def test_metric_x_and_hue_options(tmp_path, capsys):
    write_rows(grid_rows(), tmp_path / "results.parquet")
    assert main([str(tmp_path), "--metric", "aggregate_bw_gbs", "--x", "access_bytes"]) == 0
    assert (tmp_path / "report_aggregate_bw_gbs.png").is_file()
    assert main([str(tmp_path), "--metric", "agregate_bw_gbs"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "kernbench-report: error: --metric agregate_bw_gbs: not a column of these rows;"
        " did you mean aggregate_bw_gbs?"
    ]
    assert main([str(tmp_path), "--hue", "peak_bw_gbs"]) == 1
    assert "not a swept key of these rows" in capsys.readouterr().err


def test_report_html_is_self_contained(tmp_path):
    write_rows(readme_sweep(), tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    # the plot inline as SVG: its references stay inside the page (#ids)
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert sources and all(s.startswith("#") for s in sources), set(sources)
    assert page.count("<svg") == 1 and (tmp_path / "report_mean_pe_bw_gbs.png").is_file()
    assert "<table" in page and "mean_pe_bw_gbs" in page


BROWSERS = ("chromium", "chromium-browser", "google-chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def probe_page(page, script: str, tmp_path, width: int, timeout: float):
    """What ``script`` (injected at the end of a copy of ``page``) measured in headless
    Chromium ``width`` pixels wide: the JSON it left in ``<pre id="measured">``."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", script + "</body>"))
    cmd = [_browser(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
           f"--window-size={width},1000", probe.as_uri()]  # fmt: skip
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_report_html_renders_in_a_browser(tmp_path):
    """Render the page headless; the screenshot shows text and the embedded plot: ink
    on the page, and pixels of the plot's two line colours (matplotlib's blue and
    orange, which nothing else on the page uses), so a blank page or a broken image
    fails."""
    write_rows(readme_sweep(), tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    shot = tmp_path / "shot.png"
    cmd = [_browser(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
           f"--screenshot={shot}", "--window-size=1200,1600",
           (tmp_path / "report.html").as_uri()]  # fmt: skip
    subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    pixels = matplotlib.image.imread(shot)[..., :3]
    ink, blue, orange = screenshot_measures(pixels)
    assert ink > 0.01, f"only {ink:.1%} of the screenshot is not white"
    assert blue > 100 and orange > 100, (blue, orange)


def screenshot_measures(pixels: np.ndarray) -> tuple[float, int, int]:
    """Share of non-white pixels; pixels near tab:blue and near tab:orange."""
    ink = float((pixels < 0.9).any(axis=-1).mean())
    near = [int((np.abs(pixels - np.array(c)).max(axis=-1) < 0.08).sum()) for c in LINES]
    return ink, near[0], near[1]


LINES = ((0x1F / 255, 0x77 / 255, 0xB4 / 255), (0xFF / 255, 0x7F / 255, 0x0E / 255))


def test_blank_page_fails_the_screenshot_measures():
    """The measures above can fail: a blank page has no ink and no plot colours."""
    assert screenshot_measures(np.ones((100, 100, 3))) == (0.0, 0, 0)


def test_report_plot_plan_for_the_bw_grid():
    """The bw grid: x = the size (most numeric values), hue = the mapping (a choice),
    a panel per (PEs, pseudo-channels); hbm_channels_per_pe is never an axis."""
    from kernbench.report.document import PlotChoice, plan_plot
    from kernbench.report.general import main_metrics

    ok = pd.DataFrame(grid_rows())
    plan = plan_plot(ok, main_metrics(ok), PlotChoice())
    assert (plan.metric, plan.x, plan.hue) == (
        "mean_pe_bw_gbs",
        "workload.access_bytes",
        MM + "hbm_mapping_mode",
    )
    assert plan.facets == ["topology.pes_per_cube", MM + "hbm_pseudo_channels"]
    plan = plan_plot(ok, main_metrics(ok), PlotChoice("aggregate_bw_gbs", x="pes_per_cube"))
    assert (plan.x, plan.hue) == ("topology.pes_per_cube", MM + "hbm_mapping_mode")


def test_equal_outcomes_stay_in_the_table(tmp_path):
    """`-m channel_mapping=one_to_one,n_to_one topology=small`: both mappings give the
    same bandwidth; the table still shows it, one row per mapping."""
    write_rows(
        [sweep_row(m, 4096) for m in ("one_to_one", "n_to_one")], tmp_path / "results.parquet"
    )
    assert main([str(tmp_path)]) == 0
    lines = (tmp_path / "report.txt").read_text().splitlines()
    at = lines.index(next(line for line in lines if line.startswith("hbm_mapping_mode")))
    assert lines[at].split() == ["hbm_mapping_mode", "mean_pe_bw_gbs", "aggregate_bw_gbs"]
    assert [line.split() for line in lines[at + 1 : at + 3]] == [
        ["n_to_one", "100", "1600"],
        ["one_to_one", "100", "1600"],
    ]


# Injected into a copy of report.html: where the first verdict, plot, table and
# collapsed section sit, then, with every <details> opened, each table's box
# scrolled to its right end (a rendered table must be reachable there, not cut).
MEASURE = """<script>
const topOf = e => e ? e.getBoundingClientRect().top + window.scrollY : null;
const shown = [...document.querySelectorAll("table")].filter(t => t.getClientRects().length);
const tables = [...document.querySelectorAll("table")];
const out = {
  verdict: topOf(document.querySelector(".claim")),
  plot: topOf(document.querySelector("img, figure.plot")),
  details: topOf(document.querySelector("details")), table: shown.length ? topOf(shown[0]) : null,
  verdictFirst: !!(document.querySelector(".claim").compareDocumentPosition(tables[0])
                   & Node.DOCUMENT_POSITION_FOLLOWING),
};
document.querySelectorAll("details").forEach(d => { d.open = true; });
out.boxes = tables.map(t => {
  const box = t.parentElement;
  box.scrollLeft = box.scrollWidth;
  const last = t.querySelector("tr > :last-child").getBoundingClientRect();
  return { overflowX: getComputedStyle(box).overflowX, scrollWidth: box.scrollWidth,
           clientWidth: box.clientWidth, lastRight: last.right,
           boxRight: box.getBoundingClientRect().right };
});
out.pageWidth = document.documentElement.scrollWidth;
out.viewWidth = window.innerWidth;
const pre = document.createElement("pre");
pre.id = "measured"; pre.textContent = JSON.stringify(out); document.body.append(pre);
</script>"""


def measure_page(page, tmp_path, width: int) -> dict:
    """Render ``page`` in headless Chromium ``width`` pixels wide; MEASURE's figures."""
    return probe_page(page, MEASURE, tmp_path, width, timeout=120)


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_report_html_leads_with_the_verdicts_and_scrolls_wide_tables(tmp_path):
    """Issue 22: report.html opened with a 120-row table; wide tables were cut at the
    page's edge. On a study's sweep the first verdict is above the first plot, which is
    above every table and collapsed section; 700 pixels wide, each wide table scrolls in
    its own box (overflow-x auto, scrollWidth > clientWidth) and scrolled to its end
    shows its last column inside the box, while the page itself does not scroll."""
    from tests.test_report_plot import bw_preset_rows

    write_rows(bw_preset_rows().to_dict("records"), tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    got = measure_page(tmp_path / "report.html", tmp_path, 700)
    assert got["verdictFirst"]
    assert got["verdict"] < got["plot"] < got["details"], got
    assert got["table"] is None or got["plot"] < got["table"], got
    wide = [b for b in got["boxes"] if b["scrollWidth"] > b["clientWidth"]]
    assert wide, got["boxes"]
    assert {b["overflowX"] for b in got["boxes"]} == {"auto"}
    assert all(b["lastRight"] <= b["boxRight"] + 1 for b in got["boxes"]), got["boxes"]
    assert got["pageWidth"] <= got["viewWidth"], got


def test_a_table_from_before_the_rename_reports_under_the_new_names(tmp_path):
    """A results.parquet written when the per-PE mean was ``effective_bw_gbs`` reads as
    ``mean_pe_bw_gbs`` (kernbench.config.columns.RENAMED): its table and plot as now."""
    rows = [
        {("effective_bw_gbs" if k == "mean_pe_bw_gbs" else k): v for k, v in row.items()}
        for row in readme_sweep()
    ]
    write_rows(rows, tmp_path / "results.parquet")
    assert main([str(tmp_path)]) == 0
    out = (tmp_path / "report.txt").read_text()
    assert "mean_pe_bw_gbs" in out and "effective_bw_gbs" not in out


@pytest.mark.slow
def test_a_gqa_pair_sweep_plots_opt3_over_opt2_latency_by_default(tmp_path):
    """``kernbench -m workload=gqa_pair ...fixed_per_cmd_cycles=0,32 topology=small``:
    a pair's row answers whether opt3 beats opt2, so its report plots opt3's latency
    over opt2's unless ``--metric`` says otherwise, and its table leads with it and the
    winner (not sim_time_ns, the fallback: both launches' time summed)."""
    from tests.test_sweep import run_sweep

    fixed = "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles=0,32"
    proc, sweep = run_sweep(tmp_path, "workload=gqa_pair", fixed, "topology=small", jobs=1)
    assert proc.returncode == 0, proc.stderr
    assert main([str(sweep)]) == 0
    lines = (sweep / "report.txt").read_text().splitlines()
    assert "plots: report_opt3_over_opt2_latency.png" in lines
    assert (sweep / "report_opt3_over_opt2_latency.png").read_bytes()[:4] == b"\x89PNG"
    assert any(line.startswith("opt3_over_opt2_latency: rank 1 = ") for line in lines)
    general = ["fixed_per_cmd_cycles", "opt3_over_opt2_latency", "latency_winner"]
    assert any(line.split()[:3] == general for line in lines)

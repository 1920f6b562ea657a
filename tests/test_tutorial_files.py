"""The tutorial's list of what the main job's directory holds is what a sweep and
``kernbench-report`` write (issue 55: it named one plot that was something else and
missed three plots and every ``.svg``).

The list is read from docs/tutorial.md's tree (``├── name[, .svg]  description``; a
``.svg`` after a name is that name's SVG). A real sweep of the main job's preset,
narrowed to 24 points of the small topology, runs in a subprocess and the report after
it; the directory then holds exactly the listed files, but for the general plot's
continued figures (``report_mean_pe_bw_gbs_2.png``, ...): a plot has one figure per 12
panels, and a grid narrowed to run in seconds has fewer panels than the main job's 28.
Those the tutorial lists are checked against the figures :mod:`~kernbench.report.
metric_plot` makes of the main job's whole grid (the rows of
:func:`tests.test_report_legible.main_job_rows`, as many as the preset's points).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from kernbench.report.document import PlotChoice, plan_plot
from kernbench.report.general import main_metrics
from kernbench.report.metric_plot import figure_count
from tests.test_report_legible import main_job_rows

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
PRESET = ROOT / "experiments" / "bw_equivalence.yaml"
TREE = re.compile(r"```text\noutputs/bw_equivalence/<date>_<time>/\n(?P<tree>.*?)```", re.S)
# A name's description starts after two spaces; ``.svg`` alone is the name before's SVG.
ENTRY = re.compile(r"^[├└]── (?P<names>.+?)(?:\s{2,}.*)?$")
CONTINUED = re.compile(r"_\d+\.(png|svg)$")  # a plot's second, third, ... figure
NARROWED = {  # 2 cases x 3 sizes x 2 mappings x 2 fabric models, one shape
    "traffic": "local,hotspot",
    "topology.pes_per_cube": "2",
    "topology.cube.memory_map.hbm_pseudo_channels": "16",
}


def listed(text: str) -> set[str]:
    """The file names the tutorial's tree of the sweep directory gives (a directory
    with its slash)."""
    (tree,) = TREE.findall(text)
    names: set[str] = set()
    for line in tree.splitlines():
        entry = ENTRY.match(line)
        assert entry, f"not a tree entry: {line!r}"
        before = ""
        for name in entry["names"].split(", "):
            if re.fullmatch(r"\.\w+", name):  # a.png, .svg
                name = Path(before).with_suffix(name).name
            names.add(name)
            before = name
    return names


def test_the_tree_parser_reads_names_not_descriptions():
    text = "```text\noutputs/bw_equivalence/<date>_<time>/\n├── a.png, .svg  a plot, b.png\n"
    text += "├── r.txt\n└── m.yaml, .hydra/  records\n```"
    assert listed(text) == {"a.png", "a.svg", "r.txt", "m.yaml", ".hydra/"}


def written(tmp_path: Path) -> set[str]:
    """The names a narrowed sweep of the main job and kernbench-report on it write."""
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    sweep = tmp_path / "sweep"
    argv = [
        sys.executable, "-m", "kernbench.app", "-m", "+experiment=bw_equivalence", "topology=small",
        *(f"hydra.sweeper.params.{k}={v}" for k, v in NARROWED.items()),
        "workload.bytes_per_pe=131072", "cache=false", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    for command in (argv, [sys.executable, "-c", REPORT, str(sweep)]):
        run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env,
                             timeout=300, check=False)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
    return {p.name + "/" * p.is_dir() for p in sweep.iterdir()}


REPORT = "from kernbench.report.cli import entry; entry()"  # kernbench-report


def test_the_tutorial_lists_what_the_sweep_and_report_write(tmp_path):
    """Every file the run writes is in the tutorial's tree and every file there is
    written, the general plot's continued figures aside (test below)."""
    names = listed(TUTORIAL.read_text())
    files = written(tmp_path)
    assert not any(CONTINUED.search(n) for n in files), files  # 4 panels: one figure
    assert files == {n for n in names if not CONTINUED.search(n)}
    assert {"bw_equivalence_bandwidth.svg", "report_mean_pe_bw_gbs.png", ".hydra/"} <= files


def seeded_main_job_rows() -> list[dict]:
    """The main job's rows as its sweep writes them: the uniform patterns at seeds 0, 1
    and 2 (their bandwidths 1% apart), every other pattern once, at seed 0."""
    out = []
    for row in main_job_rows():
        seeds = (0, 1, 2) if str(row["workload.pattern"]).startswith("uniform") else (0,)
        bw = row["mean_pe_bw_gbs"]
        out += [{**row, "workload.seed": s, "mean_pe_bw_gbs": bw * (1 + s / 100)} for s in seeds]
    return out


def test_the_tutorial_lists_the_general_plots_figures_of_the_main_job():
    """The main job's grid (1,008 points: the preset's comma lists multiplied; 624 run,
    each deterministic pattern at one seed) has 28 panels in the general plot, the seeds
    drawn as their mean, 12 to a figure: three figures, the second and third named
    ``_2`` and ``_3``, each a PNG and an SVG, as the tutorial lists them."""
    grid = yaml.safe_load(PRESET.read_text())["hydra"]["sweeper"]["params"]
    rows = pd.DataFrame(seeded_main_job_rows())
    assert math.prod(len(str(v).split(",")) for v in grid.values()) == 1008
    assert len(rows) == 624
    plan = plan_plot(rows, main_metrics(rows), PlotChoice())
    figures = figure_count(plan.data, plan.facets)
    stem = f"report_{plan.metric}"
    continued = {f"{stem}_{k}.{ext}" for k in range(2, figures + 1) for ext in ("png", "svg")}
    assert figures == 3
    assert {n for n in listed(TUTORIAL.read_text()) if CONTINUED.search(n)} == continued

"""The report as text: each study found (its verdicts first), then the general section.

:func:`build` turns a result table into :class:`~kernbench.report.study.Section`
objects (writing the plots as it goes); :func:`render_text` prints them, and
:mod:`kernbench.report.html` renders the same sections as one self-contained page.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kernbench.cli.suggest import did_you_mean
from kernbench.errors import KernBenchError
from kernbench.report.general import (
    Overview,
    constants_text,
    default_metric,
    independent_axes,
    overview,
    ranked,
    swept_keys,
)
from kernbench.report.metric_plot import PlotError, choose_axes, plot_metric
from kernbench.report.study import STUDIES, Section, study_section
from kernbench.results import STATUS_OK


class ReportError(KernBenchError):
    """Nothing to report, or an option that names no column."""


@dataclass(frozen=True)
class PlotChoice:
    """What the general plot shows (``--metric``, ``--x``, ``--hue``); None: default."""

    metric: str | None = None
    x: str | None = None
    hue: str | None = None


def build(df: pd.DataFrame, out_dir: Path, choice: PlotChoice) -> list[Section]:
    """Every section for ``df``, the answer first: each study the rows hold (its
    verdicts lead), then the general one."""
    if df.empty:
        raise ReportError("the table has no rows")
    if not (df["status"] == STATUS_OK).any():
        first = df["error"].dropna().iloc[0] if df["error"].notna().any() else "no message"
        raise ReportError(f"all {len(df)} points failed; the first: {first}")
    general = general_section(df, out_dir, choice)
    found = (study_section(s, df, out_dir) for s in STUDIES)
    return [*(s for s in found if s is not None), general]


def general_section(df: pd.DataFrame, out_dir: Path, choice: PlotChoice) -> Section:
    """The swept axes, the best and worst rows of the metric, the plot, then the
    constants and the table."""
    ov = overview(df)
    ok = df[df["status"] == STATUS_OK]
    swept = ", ".join(f"{k} ({df[k].astype(str).nunique()})" for k in ov.swept) or "nothing"
    rows = f"{ov.rows} row{'s' * (ov.rows != 1)}"
    section = Section(f"all points ({rows}, {ov.ok} ok)", table=ov.table)
    section.lines = [textwrap.fill(f"swept: {swept}", 100, subsequent_indent="  ")]
    section.details = ["constant: " + "\n  ".join(constants_text(ov.constants))]
    section.notes = [f"error: {e}" for e in ov.errors]
    metric = resolve("--metric", choice.metric, list(ok.columns)) or default_metric(ok, ov.metrics)
    best = ranked(ok, metric, [a for a in ov.axes if a in ok]) if metric else None
    if best is not None:
        section.summary_title, section.summary = best
    try:
        section.plots = _general_plot(ok, ov, out_dir, choice)
    except PlotError as exc:
        section.notes.append(f"no plot: {exc}")
    return section


@dataclass(frozen=True)
class PlotPlan:
    """What the general plot draws: ``metric`` of ``data`` against ``x``, a line per
    ``hue`` value, a panel per combination of ``facets``."""

    data: pd.DataFrame
    metric: str
    x: str
    hue: str | None
    facets: list[str]


def plan_plot(ok: pd.DataFrame, metrics: list[str], choice: PlotChoice) -> PlotPlan:
    """Resolve ``--metric``/``--x``/``--hue`` (short names work) and fill in the rest."""
    metric = resolve("--metric", choice.metric, list(ok.columns)) or default_metric(ok, metrics)
    if metric is None:
        raise PlotError("no numeric metric in these rows")
    data = ok[ok[metric].notna()]  # rows of the workloads that have this metric
    swept = swept_keys(data)
    gaps = [k for k in swept if data[k].isna().any()]  # keys another workload lacks
    data = data.astype({k: object for k in gaps}).fillna({k: "none" for k in gaps})
    x = resolve("--x", choice.x, swept, "a swept key")
    hue = resolve("--hue", choice.hue, swept, "a swept key")
    given = [k for k in (x, hue) if k]
    axes = [*given, *(a for a in independent_axes(data, swept) if a not in given)]
    x, hue, facets = choose_axes(data, axes, x, hue)
    if x is None:
        raise PlotError("one configuration: nothing varies to plot against")
    return PlotPlan(data, metric, x, hue, facets)


def _general_plot(ok: pd.DataFrame, ov: Overview, out_dir: Path, choice: PlotChoice) -> list[Path]:
    plan = plan_plot(ok, ov.metrics, choice)
    path = out_dir / f"report_{plan.metric.rsplit('.', 1)[-1]}.png"
    return plot_metric(plan.data, plan.metric, plan.x, plan.hue, plan.facets, path)


def resolve(
    option: str, name: str | None, columns: list[str], what: str = "a column"
) -> str | None:
    """The column ``name`` means: itself, or the one column whose last part it is."""
    if name is None or name in columns:
        return name
    matches = [c for c in columns if c.rsplit(".", 1)[-1] == name]
    if len(matches) == 1:
        return matches[0]
    hint = f" (it could be {' or '.join(matches)})" if matches else did_you_mean(name, columns)
    raise ReportError(f"{option} {name}: not {what} of these rows{hint}")


def render_text(header: str, sections: list[Section]) -> str:
    """The printed report (also ``report.txt``), each section answer first."""
    lines = [header]
    for section in sections:
        lines += ["", f"== {section.title} ==", *section.lines]
        lines += [c.line() for c in section.claims]
        if section.summary is not None:
            lines += [section.summary_title, section.summary.to_string(index=False)]
        lines += section.notes
        if section.plots:
            lines.append("plots: " + ", ".join(p.name for p in section.plots))
        lines += section.details
        if section.table is not None:
            lines.append(section.table.to_string(index=False))
    return "\n".join(lines)

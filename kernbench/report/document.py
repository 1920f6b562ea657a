"""The report as text: the summaries, each study found (its verdicts first), then the
general section; and the short form the terminal gets.

:func:`build` turns a result table into :class:`~kernbench.report.study.Section`
objects (writing the plots as it goes); :func:`render_text` writes them all
(``report.txt``), :mod:`kernbench.report.html` renders the same as one self-contained
page, and :func:`render_terminal` prints the summaries and a line per claim in at most
:data:`TERMINAL_LINES` lines (issue 55: the main job's whole report was 651 lines, its
verdicts scrolled out of sight by the tables).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kernbench.cli.suggest import did_you_mean
from kernbench.config.unread import SEED
from kernbench.errors import KernBenchError
from kernbench.report.claims import Claim
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
from kernbench.report.summary import (
    INDENT,
    WIDTH,
    allot,
    each_verdict,
    fit,
    importance,
    listing,
)
from kernbench.results import STATUS_OK

TERMINAL_LINES = 40  # what kernbench-report prints, at most; report.txt has the rest


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
    section.brief = general_summary(ov, section)
    return section


def general_summary(ov: Overview, section: Section) -> list[str]:
    """The general section's summary: rows, ok rows, how many keys vary, then where its
    plots are (or why there is none) and the first failed point's message."""
    rows = f"{ov.rows} row{'s' * (ov.rows != 1)}"
    keys = f"{len(ov.swept)} swept key{'s' * (len(ov.swept) != 1)}"
    lines = [f"all points: {rows}, {ov.ok} ok, {keys}"]
    if section.plots:
        names = _plot_names(section.plots)
        plots = listing("plots beside report.txt: ", names, WIDTH - len(INDENT), ", ")
        lines.append(plots or f"{len(names)} plots beside report.txt")
    lines += [n for n in section.notes if n.startswith("no plot: ")]
    if ov.errors:
        lines.append(f"{len(ov.errors)} failed; the first: {ov.errors[0]}")
    return [fit(line, WIDTH - len(INDENT) * (n > 0)) for n, line in enumerate(lines)]


def _plot_names(plots: list[Path]) -> list[str]:
    """The plots' file names, a continued figure by what it adds to the first's name
    (``report_mean_pe_bw_gbs.png, _2.png, _3.png``)."""
    stem = plots[0].stem
    return [plots[0].name, *(p.name.removeprefix(stem) for p in plots[1:])]


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
    """Resolve ``--metric``/``--x``/``--hue`` (short names work) and fill in the rest.
    Swept seeds (the bandwidth study's uniform patterns) are replicates of one
    configuration: the plot draws their mean unless ``--x`` or ``--hue`` names the seed
    (a panel per seed would triple the panels and say nothing of the model)."""
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
    if SEED in swept and SEED not in given:  # a seed is a replicate: one mark, the mean
        swept = [k for k in swept if k != SEED]
        data = data.groupby(swept, dropna=False, sort=False)[metric].mean().reset_index()
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
    """``report.txt``: the header, every section's summary, then each section in full,
    answer first."""
    lines = [header, "", "== summary ==", *summaries(sections)]
    for section in sections:
        lines += ["", f"== {section.title} ==", *section.lines]
        lines += [claim_text(c) for c in section.claims]
        if section.summary is not None:
            lines += [section.summary_title, section.summary.to_string(index=False)]
        lines += section.notes
        if section.plots:
            lines.append("plots: " + ", ".join(p.name for p in section.plots))
        lines += section.details
        if section.table is not None:
            lines.append(section.table.to_string(index=False))
    return "\n".join(lines)


def claim_text(claim: Claim) -> str:
    """The verdict and the claim, then its figures wrapped to 100 columns."""
    detail = textwrap.fill(claim.detail, WIDTH, initial_indent="    ", subsequent_indent="    ")
    return f"[{claim.verdict()}] {claim.text}\n{detail}"


def summaries(sections: list[Section]) -> list[str]:
    """Each section's summary, its lines after the first indented."""
    return [line for section in sections for line in _brief(section)]


def _brief(section: Section) -> list[str]:
    return [*section.brief[:1], *(INDENT + line for line in section.brief[1:])]


def render_terminal(
    header: str, sections: list[Section], out_dir: Path, limit: int = TERMINAL_LINES
) -> str:
    """What ``kernbench-report`` prints, in at most ``limit`` lines: the header, each
    section's summary followed by a line per claim (verdict and text, no figures), then
    where the full report is. The claim lines share what the rest leaves of ``limit``
    (:func:`~kernbench.report.summary.allot`); a section short of room names its claims
    that do not hold first and ends with how many more ``report.txt`` has."""
    where = [
        f"full report, every claim's figures and every row: {out_dir / 'report.txt'}",
        f"the same on one page, plots inline: {out_dir / 'report.html'}",
    ]
    head, tail = [header, ""], ["", *where]
    left = limit - len(head) - len(summaries(sections)) - len(tail)
    room = allot([len(s.claims) for s in sections], left)
    lines = head
    for section, lines_for_claims in zip(sections, room, strict=True):
        lines += [*_brief(section), *claim_lines(section.claims, lines_for_claims)]
    return "\n".join([*lines, *tail])


def claim_lines(claims: list[Claim], room: int) -> list[str]:
    """A line per claim (``[VERDICT] text``) in at most ``room`` lines; short of room,
    the most important verdicts (:func:`~kernbench.report.summary.importance`), kept in
    the claims' order, then ``+N more in report.txt`` with their verdicts."""
    if room <= 0:
        return []
    kept = set(range(len(claims)))
    if len(claims) > room:
        ranked = sorted(range(len(claims)), key=lambda i: importance(claims[i].verdict()))
        kept = set(ranked[: room - 1])
    width = WIDTH - len(INDENT)
    lines = [INDENT + fit(f"[{c.verdict()}] {c.text}", width) for c in _at(claims, kept)]
    rest = _at(claims, set(range(len(claims))) - kept)
    if rest:
        lines.append(f"{INDENT}+{len(rest)} more in report.txt: {each_verdict(rest)}")
    return lines


def _at(claims: list[Claim], indices: set[int]) -> list[Claim]:
    return [c for i, c in enumerate(claims) if i in indices]

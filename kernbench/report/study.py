"""A study: a (table, check, plot) triple the report runs on top of the general part.

Each study module exposes ``table(df) -> DataFrame | None`` (None: these rows are not
that study), ``check(table) -> list[Claim]`` and ``plot(table, out_dir) -> list[Path]``,
and may give ``lines(table) -> list[str]``: what its section says before the claims
(bandwidth equivalence: the address model, which the claims then need not repeat), and
``summary(table, claims) -> list[str]``: the findings its summary names, at most four
lines under the verdict counts, which are always counted the same way (default:
:func:`~kernbench.report.summary.findings`, the claims that do not hold).
:data:`STUDIES` lists them; adding a study is one line here. A study that fails on
an unusual grid costs its own section a one-line note, never the rest of the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kernbench.report import bw_equivalence, decoder_layer, dispatch_ratio, pareto, sim_speed
from kernbench.report.claims import Claim
from kernbench.report.formatting import format_table, format_value
from kernbench.report.summary import Findings, findings, fit, section_summary


@dataclass(frozen=True)
class Study:
    title: str
    table: Callable[[pd.DataFrame], pd.DataFrame | None]
    check: Callable[[pd.DataFrame], list[Claim]]
    plot: Callable[[pd.DataFrame, Path], list[Path]]
    lines: Callable[[pd.DataFrame], list[str]] = lambda table: []
    summary: Findings = findings


@dataclass
class Section:
    """One part of the report, rendered as text (:mod:`~kernbench.report.document`)
    and as HTML (:mod:`~kernbench.report.html`) from the same content, answer first:
    ``lines`` (what it is about), ``claims``, a short ``summary`` table, ``notes``,
    ``plots``; then ``details`` (values said once) and the full ``table`` (collapsed
    in HTML). ``brief`` is its summary of at most five lines, which the report and the
    terminal show before every section (:mod:`~kernbench.report.summary`)."""

    title: str
    lines: list[str] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    summary: pd.DataFrame | None = None  # already formatted (strings)
    summary_title: str = ""
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None  # already formatted (strings)
    brief: list[str] = field(default_factory=list)


STUDIES: tuple[Study, ...] = (
    Study(
        "bandwidth equivalence",
        bw_equivalence.table,
        bw_equivalence.check,
        bw_equivalence.plot,
        bw_equivalence.lines,
    ),
    Study("dispatch ratio", dispatch_ratio.table, dispatch_ratio.check, dispatch_ratio.plot),
    Study("simulator speed", sim_speed.table, sim_speed.check, sim_speed.plot),
    Study("Pareto front", pareto.table, pareto.check, pareto.plot),
    Study("decoder layer", decoder_layer.table, decoder_layer.check, decoder_layer.plot),
)


def study_section(study: Study, df: pd.DataFrame, out_dir: Path) -> Section | None:
    """The study's section, or None when the rows are not that study."""
    try:
        table = study.table(df)
        if table is None:
            return None
        section = Section(f"{study.title} ({len(table)} configurations)")
        if "describe" in table.attrs:  # the Pareto front's counts, as the sweep said them
            section.lines = [f"front: {table.attrs['describe']}"]
        section.lines += study.lines(table)
        same = [c for c in table.columns if len(table) > 1 and table[c].astype(str).nunique() == 1]
        if same:
            section.details = [f"same in every row: {_pairs(table, same)}"]
        section.table = format_table(table.drop(columns=same))
        section.claims = study.check(table)
        section.brief = section_summary(study.title, table, section.claims, study.summary)
    except Exception as exc:  # a study's own limits must not cost the general report
        note = f"not reported: {type(exc).__name__}: {exc}"
        return Section(study.title, brief=[fit(f"{study.title}: {note}")], notes=[note])
    try:
        section.plots = study.plot(table, out_dir)
    except Exception as exc:
        section.notes.append(f"plots not drawn: {type(exc).__name__}: {exc}")
    return section


def _pairs(table: pd.DataFrame, columns: list[str]) -> str:
    return ", ".join(f"{c.rsplit('.', 1)[-1]}={format_value(table[c].iloc[0])}" for c in columns)

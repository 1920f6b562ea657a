"""The general report: any sweep or single run, whatever it swept (DESIGN §6).

It reads the axes off the data: the *swept keys* are the config columns (dotted
names) whose value varies among the rows; of those, the *axes* are the ones no other
swept key determines (``hbm_channels_per_pe`` follows from pseudo-channels and PEs per
cube, ``pes_per_cube`` from ``topology.name`` when the sweep chose topologies), so a
plot never spends a dimension on a key that only repeats another. Every constant config
value and every constant metric other than the main ones is said once, above the
table; the main metrics (the outcomes) stay in the table even when equal.
:func:`ranked` picks the best and worst rows of a metric, what a reader looks for
before the table. The studies
(:mod:`kernbench.report.study`) add their claims and plots on top of this; this module
knows no study.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from kernbench.config.columns import group_names
from kernbench.report.formatting import format_table, format_value, natural_order
from kernbench.results import STATUS_OK
from kernbench.results.identity import IDENTITY_COLUMNS
from kernbench.units import unit_of

# Columns that say who ran what and how long it took: never a swept key or a metric.
IDENTITY = frozenset({*IDENTITY_COLUMNS, "status", "error"})
TIMINGS = frozenset(
    {"cached", "sim_wall_s", "wall_s", "sim_accesses", "accesses_per_s", "bare_simpy_events_per_s"}
)
# The metrics a table shows per workload; the first is the default plot metric.
MAIN_METRICS: dict[str, tuple[str, ...]] = {
    "stream": ("mean_pe_bw_gbs", "aggregate_bw_gbs", "bw_efficiency", "bottleneck", "sim_time_ns"),
    "gqa_opt2": (
        "kernel_latency_ns",
        "bottleneck",
        "dispatch_cycles_per_tile",
        "commands_per_tile",
        "logical_bytes_per_tile",
    ),
}
MAIN_METRICS["gqa_opt3"] = MAIN_METRICS["gqa_opt2"]
# A pair's row answers "does opt3 beat opt2 here?" (issue 55): the latency ratio (the
# plot: below 1 opt3 is faster) and the winner lead, then what the ratio divides and
# what bounds each variant. sim_time_ns, the fallback, is both launches summed: no answer.
MAIN_METRICS["gqa_pair"] = (
    "opt3_over_opt2_latency",
    "latency_winner",
    "opt2_kernel_latency_ns",
    "opt3_kernel_latency_ns",
    "opt2_bottleneck",
    "opt3_bottleneck",
)
FALLBACK_METRICS = ("sim_time_ns",)
# Rows that time the simulator (``sim.measure_speed``) lead with its speed.
SPEED_METRIC = "speed_ratio"
WORKLOAD = "workload.name"


@dataclass
class Overview:
    """What a table of rows holds, read off the data."""

    rows: int
    ok: int
    swept: list[str]
    axes: list[str]
    metrics: list[str]
    constants: dict[str, Any]
    table: pd.DataFrame
    errors: list[str] = field(default_factory=list)


def config_keys(df: pd.DataFrame) -> list[str]:
    """Config columns (dotted names) and the group options the rows were composed
    from (``channel_mapping``, ``traffic``: what the user typed), in table order."""
    groups = group_names()
    return [c for c in df.columns if "." in c or c in groups]


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Every metric column (neither config, identity nor wall-clock timing)."""
    skip = IDENTITY | TIMINGS | set(group_names())
    return [c for c in df.columns if "." not in c and c not in skip]


def swept_keys(df: pd.DataFrame) -> list[str]:
    """Config columns that take more than one value (failed points count: their
    config was asked for)."""
    return [c for c in config_keys(df) if df[c].astype(str).nunique() > 1]


def independent_axes(df: pd.DataFrame, swept: list[str]) -> list[str]:
    """The swept keys left when each key the others determine is dropped, last first."""
    axes = list(swept)
    for key in reversed(swept):
        others = [k for k in axes if k != key]
        if others and _determined(df, key, others):
            axes.remove(key)
    return axes


def _determined(df: pd.DataFrame, key: str, others: list[str]) -> bool:
    text = df[[key, *others]].astype(str)
    return bool(text.groupby(others)[key].nunique().max() <= 1)


def main_metrics(ok: pd.DataFrame) -> list[str]:
    """The metrics worth a column for these rows' workloads, in a stable order."""
    names = ok[WORKLOAD].dropna().unique() if WORKLOAD in ok else []
    wanted = [m for n in names for m in MAIN_METRICS.get(str(n), FALLBACK_METRICS)]
    wanted = wanted or list(FALLBACK_METRICS)
    timed = [SPEED_METRIC] if SPEED_METRIC in ok else []
    present = [m for m in dict.fromkeys([*timed, *wanted]) if m in ok and ok[m].notna().any()]
    return present or [m for m in metric_columns(ok) if ok[m].notna().any()][:4]


def default_metric(ok: pd.DataFrame, metrics: list[str]) -> str | None:
    """The first numeric main metric: what the plot shows unless ``--metric`` says."""
    return next((m for m in metrics if pd.api.types.is_numeric_dtype(ok[m])), None)


def overview(df: pd.DataFrame) -> Overview:
    """Swept keys, axes, constants and the compact table of ``df``."""
    ok = df[df["status"] == STATUS_OK]
    swept = swept_keys(df)
    metrics = main_metrics(ok)
    # a group left empty in every row (no traffic= case, no preset) says nothing
    constants = {
        c: df[c].iloc[0] for c in config_keys(df) if c not in swept and df[c].notna().any()
    }
    shown = metrics  # the outcomes stay in the table even when equal in every row
    steady = [m for m in metric_columns(ok) if m not in shown and ok[m].notna().any()]
    constants |= {m: ok[m].dropna().iloc[0] for m in steady if ok[m].astype(str).nunique() == 1}
    columns = [*swept, *(["status"] if len(ok) < len(df) else []), *shown]
    table = df[columns].sort_values(swept, key=natural_order) if swept else df[columns]
    errors = [_error_line(row, swept) for _, row in df[df["status"] != STATUS_OK].iterrows()]
    return Overview(
        len(df), len(ok), swept, independent_axes(df, swept), metrics, constants,
        format_table(table.reset_index(drop=True)), errors,
    )  # fmt: skip


def _error_line(row: pd.Series, swept: list[str]) -> str:
    where = ", ".join(f"{k.rsplit('.', 1)[-1]}={format_value(row[k])}" for k in swept)
    return f"{where or 'the run'}: {row['error']}"


def constants_text(constants: dict[str, Any], width: int = 100) -> list[str]:
    """``key=value`` pairs wrapped to ``width`` characters, in table order."""
    lines, line = [], ""
    for key, value in constants.items():
        item = f"{key}={format_value(value)}"
        if line and len(line) + 2 + len(item) > width:
            lines.append(line)
            line = ""
        line = f"{line}, {item}" if line else item
    return [*lines, line] if line else lines


# Which end of a metric is the good one, read off its unit (None: not known).
LOWER_IS_BETTER = frozenset({"ns", "s", "µs", "cycles", "cycles/tile"})
HIGHER_IS_BETTER = frozenset({"GB/s", "fraction of peak", "1/s", "× bare SimPy rate"})
RANKED = 3  # rows shown at each end


def ranked(ok: pd.DataFrame, metric: str, keys: list[str]) -> tuple[str, pd.DataFrame] | None:
    """``(title, table)``: the best and the worst :data:`RANKED` ok rows by ``metric``
    (``rank`` 1 is the best; the highest when the unit says nothing), with ``keys``;
    None for fewer than two rows or a metric that is not a number."""
    rows = ok[ok[metric].notna()] if metric in ok else ok.iloc[:0]
    if len(rows) < 2 or not pd.api.types.is_numeric_dtype(rows[metric]):
        return None
    lower = unit_of(metric) in LOWER_IS_BETTER
    known = lower or unit_of(metric) in HIGHER_IS_BETTER
    order = rows.sort_values(keys, key=natural_order) if keys else rows
    order = order.sort_values(metric, ascending=lower, kind="stable").reset_index(drop=True)
    n = min(RANKED, len(order) // 2)
    ends = pd.concat([order.iloc[:n], order.iloc[len(order) - n :]])
    table = pd.DataFrame({"rank": ends.index + 1})
    table = pd.concat([table, ends[[*keys, metric]].reset_index(drop=True)], axis=1)
    best = ("lowest" if lower else "highest") + (" is best" if known else " first")
    title = f"{metric}: rank 1 = {best}; the first and last {n} of {len(order)} ok rows"
    return title, format_table(table)

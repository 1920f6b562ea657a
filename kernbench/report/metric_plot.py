"""``--metric`` against the swept keys: x, hue, and small multiples for the rest.

The general report's plot. ``x`` is the axis with the most numeric values (a size,
a count, a cycle figure) unless given; ``hue`` a remaining choice-like axis (the
channel mapping, the workload) unless given; every other axis gets its own panel,
so nothing is averaged away. Axis labels carry the unit the name carries
(:func:`kernbench.units.with_unit`).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from kernbench.errors import KernBenchError  # noqa: E402
from kernbench.report.formatting import format_value, natural_order  # noqa: E402
from kernbench.units import with_unit  # noqa: E402

MAX_PANELS = 16
# A numeric x spanning this factor or more is drawn on a log scale.
LOG_SPAN = 64


class PlotError(KernBenchError):
    """The plot asked for cannot be drawn (one line: what and what would do)."""


def choose_axes(ok: pd.DataFrame, axes: list[str], x: str | None, hue: str | None):  # noqa: ANN201
    """(x, hue, facets): the given ones, else x = the numeric axis with the most values
    (the later one on a tie) and hue = a choice-like axis with the fewest values, else
    the next axis."""
    rest = [a for a in axes if a not in (x, hue)]
    if x is None and rest:
        numeric = [a for a in rest if _numeric(ok[a])]
        # ties go to the later key: workload keys (what a study varies) come last
        x = max(reversed(numeric or rest), key=lambda a: ok[a].astype(str).nunique())
        rest.remove(x)
    if hue is None and rest:
        choices = [a for a in rest if not _numeric(ok[a])] or rest
        hue = min(choices, key=lambda a: ok[a].astype(str).nunique())
        rest.remove(hue)
    return x, hue, rest


def plot_metric(
    ok: pd.DataFrame, metric: str, x: str, hue: str | None, facets: list[str], path: Path
) -> Path:
    """``metric`` against ``x``, one line per ``hue`` value, one panel per facet combo."""
    if not pd.api.types.is_numeric_dtype(ok[metric]):
        raise PlotError(f"--metric {metric} is not a number (values: {_values(ok[metric])})")
    panels = _combos(ok, facets)
    if len(panels) > MAX_PANELS:
        raise PlotError(
            f"{len(panels)} panels (one per {', '.join(facets)}) is more than {MAX_PANELS};"
            " choose --x and --hue among them"
        )
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    legend_w = 1.8 if hue else 0.0  # inches kept on the right for the legend
    width = 3.8 * cols + legend_w
    fig, axs = plt.subplots(rows, cols, figsize=(width, 3.2 * rows + 0.8), sharey=True,
                            squeeze=False)  # fmt: skip
    for ax, combo in zip(axs.flat, panels, strict=False):
        _panel(ax, _select(ok, facets, combo), metric, x, hue)
        ax.set_title(_title(facets, combo), fontsize=7)
    for ax in axs.flat[len(panels) :]:
        ax.set_visible(False)
    for ax in axs[:, 0]:
        ax.set_ylabel(with_unit(metric))
    for ax in axs[-1, :]:
        ax.set_xlabel(with_unit(x))
    if hue is not None:
        handles, labels = axs.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, title=hue.rsplit(".", 1)[-1], loc="center right", fontsize=8)
    fig.suptitle(f"{metric} against {x.rsplit('.', 1)[-1]}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - legend_w / width, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _panel(ax, part: pd.DataFrame, metric: str, x: str, hue: str | None) -> None:  # noqa: ANN001
    numeric = _numeric(part[x])
    order = _ordered(part[x])
    groups = _combos(part, [hue]) if hue else [()]
    for combo in groups:
        line = _select(part, [hue], combo) if hue else part
        means = line.groupby(line[x].astype(str))[metric].mean()  # repeats of a point
        xs = [v for v in order if str(v) in means.index]
        pos = xs if numeric else [order.index(v) for v in xs]
        label = format_value(combo[0]) if hue else None
        ax.plot(pos, [means[str(v)] for v in xs], marker="o", label=label)
    if numeric:
        values = [float(v) for v in order]
        if min(values) > 0 and max(values) / min(values) >= LOG_SPAN:
            ax.set_xscale("log", base=2 if all(_power_of_two(v) for v in values) else 10)
        ax.set_xticks(values, [format_value(v) for v in order], fontsize=7)
        ax.minorticks_off()
    else:
        ax.set_xticks(range(len(order)), [format_value(v) for v in order], fontsize=7)
    ax.grid(alpha=0.3)


def _numeric(values: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values))


def _power_of_two(v: float) -> bool:
    return v.is_integer() and int(v) > 0 and int(v) & (int(v) - 1) == 0


def _ordered(values: pd.Series) -> list:
    unique = pd.Series(values.dropna().unique())
    return list(unique.sort_values(key=natural_order))


def _combos(df: pd.DataFrame, keys: list[str]) -> list[tuple]:
    """The value combinations of ``keys`` that occur, in natural order."""
    if not keys:
        return [()]
    present = set(df[keys].astype(str).itertuples(index=False, name=None))
    grid = itertools.product(*(_ordered(df[k]) for k in keys))
    return [c for c in grid if tuple(map(str, c)) in present]


def _select(df: pd.DataFrame, keys: list[str], combo: tuple) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for key, value in zip(keys, combo, strict=True):
        mask &= (df[key] == value).to_numpy()
    return df[mask]


def _title(keys: list[str], combo: tuple) -> str:
    """``a=1, b=2`` two pairs to a line, so a panel's title fits above it."""
    pairs = [f"{k.rsplit('.', 1)[-1]}={format_value(v)}" for k, v in zip(keys, combo, strict=True)]
    return "\n".join(", ".join(pairs[i : i + 2]) for i in range(0, len(pairs), 2))


def _values(values: pd.Series) -> str:
    return ", ".join(map(str, values.dropna().unique()[:4]))

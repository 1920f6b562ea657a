"""``--metric`` against the swept keys: x, hue, and small multiples for the rest.

The general report's plot. ``x`` is the axis with the most numeric values (a size,
a count, a cycle figure) unless given; ``hue`` a remaining choice-like axis (the
channel mapping, the workload) unless given; every other axis gets its own panel,
so nothing is averaged away (past :data:`MAX_PANELS` panels, the facet key with the
fewest values becomes the line style). Colours, line styles and x positions are
fixed once from every row: a hue value has one colour in every panel, and the one
legend names every value. Axis labels are short, with the unit once
(:func:`kernbench.units.axis_label`); x tick labels never overlap.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from kernbench.errors import KernBenchError  # noqa: E402
from kernbench.report.formatting import format_value, natural_order  # noqa: E402
from kernbench.units import axis_label  # noqa: E402

MAX_PANELS = 24
LINE_STYLES = ("-", "--", ":", "-.")
# A numeric x with at most this many values is drawn equally spaced, in order.
EVEN_UP_TO = 8
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
    """Draw :func:`metric_figure` to ``path`` (PNG)."""
    fig = metric_figure(ok, metric, x, hue, facets)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def metric_figure(
    ok: pd.DataFrame, metric: str, x: str, hue: str | None, facets: list[str]
) -> Figure:
    """``metric`` against ``x``, one line per ``hue`` value, one panel per facet combo
    (a facet key may become the line style, :func:`fit_panels`). Colours, line styles
    and x ticks are fixed once from every row, so a value looks the same in every
    panel and the one legend names them all."""
    if not pd.api.types.is_numeric_dtype(ok[metric]):
        raise PlotError(f"--metric {metric} is not a number (values: {_values(ok[metric])})")
    facets, style = fit_panels(ok, facets)
    panels = _combos(ok, facets)
    if len(panels) > MAX_PANELS:
        also = f", {_short(style)} as the line style" if style else ""
        raise PlotError(
            f"{len(panels)} panels (one per {', '.join(map(_short, facets))}{also}) is more"
            f" than {MAX_PANELS}; choose --x and --hue among them"
        )
    look = Look(XAxis.of(ok[x]), hue, palette(ok, hue), style, _styles(ok, style))
    cols = min(4 if len(panels) <= 16 else 5, len(panels))
    rows = -(-len(panels) // cols)
    size = (3.4 * cols + 2.0, 2.6 * rows + 1.0)
    fig, axs = plt.subplots(
        rows, cols, figsize=size, sharex=True, sharey=True, squeeze=False, layout="constrained"
    )
    for ax, combo in zip(axs.flat, panels, strict=False):
        _panel(ax, _select(ok, facets, combo), metric, x, look)
        ax.set_title(_title(facets, combo), fontsize=7)
    _hide_unused(axs, len(panels))
    fig.supxlabel(axis_label(x), fontsize=9)
    fig.supylabel(axis_label(metric), fontsize=9)
    if hue or style:
        handles = _legend(look)
        legend = fig.legend(handles=handles, loc="outside right upper", fontsize=8)
        for handle, text in zip(handles, legend.get_texts(), strict=True):
            if handle.get_linestyle() == "None":  # a key's name, heading its values
                text.set_fontweight("bold")
    fig.suptitle(f"{_short(metric)} against {_short(x)}", fontsize=10)
    untangle_ticks(fig, [ax for ax in axs.flat if ax.get_visible()])
    return fig


@dataclass(frozen=True)
class XAxis:
    """Where each x value sits: numeric values at their value (a log scale when they
    span :data:`LOG_SPAN` or more), unless there are at most :data:`EVEN_UP_TO` of
    them: then, like words, equally spaced in order, so close values (65536, 65792)
    never share a spot."""

    values: list
    positions: dict[str, float]
    scale: str  # "linear", "log2" or "log10"

    @classmethod
    def of(cls, column: pd.Series) -> XAxis:
        values = _ordered(column)
        if not _numeric(column) or len(values) <= EVEN_UP_TO:
            return cls(values, {str(v): float(i) for i, v in enumerate(values)}, "linear")
        numbers = [float(v) for v in values]
        scale = "linear"
        if min(numbers) > 0 and max(numbers) / min(numbers) >= LOG_SPAN:
            scale = "log2" if all(_power_of_two(v) for v in numbers) else "log10"
        return cls(values, {str(v): n for v, n in zip(values, numbers, strict=True)}, scale)

    def apply(self, ax) -> None:  # noqa: ANN001
        if self.scale != "linear":
            ax.set_xscale("log", base=2 if self.scale == "log2" else 10)
        ticks = [self.positions[str(v)] for v in self.values]
        ax.set_xticks(ticks, [format_value(v) for v in self.values], fontsize=7)
        ax.minorticks_off()


@dataclass(frozen=True)
class Look:
    """How every panel draws: the x axis, a colour per hue value, a line style per
    style value (all fixed once from every row)."""

    x: XAxis
    hue: str | None
    colours: dict[str, Any]
    style: str | None
    styles: dict[str, str]


def fit_panels(ok: pd.DataFrame, facets: list[str]) -> tuple[list[str], str | None]:
    """``(facets, style)``: when one panel per facet combination would be more than
    :data:`MAX_PANELS`, the facet key with the fewest values (at most one per line
    style) is drawn as the line style instead; ties go to the key that leaves the
    fewest panels, then to a choice-like key."""
    if len(_combos(ok, facets)) <= MAX_PANELS:
        return facets, None
    fits = [k for k in facets if ok[k].astype(str).nunique() <= len(LINE_STYLES)]
    if not fits:
        return facets, None

    def cost(key: str) -> tuple[int, int, bool]:
        rest = [f for f in facets if f != key]
        return ok[key].astype(str).nunique(), len(_combos(ok, rest)), _numeric(ok[key])

    style = min(fits, key=cost)
    return [f for f in facets if f != style], style


def palette(ok: pd.DataFrame, hue: str | None) -> dict[str, Any]:
    """One colour per hue value (by its text), in natural order, built from every row."""
    if hue is None:
        return {}
    values = _ordered(ok[hue])
    cmap = plt.get_cmap("tab10" if len(values) <= 10 else "tab20")
    return {str(v): cmap(i % cmap.N) for i, v in enumerate(values)}


def _styles(ok: pd.DataFrame, style: str | None) -> dict[str, str]:
    if style is None:
        return {}
    return {str(v): s for v, s in zip(_ordered(ok[style]), LINE_STYLES, strict=False)}


def _panel(ax, part: pd.DataFrame, metric: str, x: str, look: Look) -> None:  # noqa: ANN001
    for hue_value, style_value in itertools.product(
        _present(part, look.hue, look.colours), _present(part, look.style, look.styles)
    ):
        line = part
        if look.hue:
            line = line[line[look.hue].astype(str) == hue_value]
        if look.style:
            line = line[line[look.style].astype(str) == style_value]
        means = line.groupby(line[x].astype(str))[metric].mean()  # repeats of a point
        xs = [str(v) for v in look.x.values if str(v) in means.index]
        if not xs:
            continue
        ax.plot([look.x.positions[v] for v in xs], [means[v] for v in xs], marker="o",
                color=look.colours.get(hue_value, "C0"),
                linestyle=look.styles.get(style_value, "-"))  # fmt: skip
    look.x.apply(ax)
    ax.grid(alpha=0.3)


def _present(part: pd.DataFrame, key: str | None, fixed: dict[str, Any]) -> list[str]:
    """The values of ``key`` this panel holds, in the fixed order ([""] without a key)."""
    if key is None:
        return [""]
    here = set(part[key].astype(str))
    return [v for v in fixed if v in here]


def _legend(look: Look) -> list[Line2D]:
    """Every hue value with its colour, then every style value with its line style."""
    handles = [Line2D([], [], linestyle="none", label=axis_label(look.hue))] if look.hue else []
    handles += [Line2D([], [], color=c, marker="o", label=v) for v, c in look.colours.items()]
    if look.style:
        handles.append(Line2D([], [], linestyle="none", label=axis_label(look.style)))
        handles += [Line2D([], [], color="0.3", linestyle=s, label=v)
                    for v, s in look.styles.items()]  # fmt: skip
    return handles


def _hide_unused(axs: np.ndarray, used: int) -> None:
    """Hide the empty grid cells; the panel above one shows its own x tick labels."""
    cols = axs.shape[1]
    for i in range(used, axs.size):
        axs.flat[i].set_visible(False)
        if i - cols >= 0:
            axs.flat[i - cols].xaxis.set_tick_params(labelbottom=True)


def untangle_ticks(fig: Figure, axes: list) -> None:
    """No two x tick labels overlap: if any do, every panel's labels are turned 45°;
    a label still overlapping the one before it is left out."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if any(_overlapping(ax, renderer) for ax in axes):
        for ax in axes:
            plt.setp(ax.get_xticklabels(), rotation=45, ha="right", rotation_mode="anchor")
        fig.canvas.draw()
    for ax in axes:
        for label in _overlapping(ax, renderer):
            label.set_visible(False)


def _overlapping(ax, renderer) -> list:  # noqa: ANN001
    """The x tick labels of ``ax`` that overlap the last kept one to their left."""
    shown = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    boxes = sorted(((t.get_window_extent(renderer), t) for t in shown), key=lambda b: b[0].x0)
    clash, last = [], None
    for box, text in boxes:
        if last is not None and box.x0 < last.x1:
            clash.append(text)
        else:
            last = box
    return clash


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


def _short(name: str | None) -> str:
    return str(name).rsplit(".", 1)[-1]


def _values(values: pd.Series) -> str:
    return ", ".join(map(str, values.dropna().unique()[:4]))

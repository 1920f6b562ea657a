"""``--metric`` against the swept keys: x, hue, and small multiples for the rest.

The general report's plot. ``x`` is the axis with the most numeric values (a size,
a count, a cycle figure) unless given; ``hue`` a remaining choice-like axis (the
channel mapping, the workload) unless given; every other axis gets its own panel,
so nothing is averaged away (past :data:`MAX_PANELS` panels, the facet key with the
fewest values becomes the line style). Colours, line styles and x positions are
fixed once from every row: a hue value has one colour in every panel, and the one
legend names every value. Axis labels are short, with the unit once
(:func:`kernbench.units.axis_label`); x tick labels never overlap.

What a reader compares must stay visible: series that coincide (1:1 drawn exactly on
n:1) are drawn side by side, each hue value's markers shifted a few points
(:func:`dodge`); panels whose values differ by more than :data:`SHARED_Y_SPAN` times
get a y scale each (a hotspot panel at 20 GB/s is not a flat line under a local one's
500); and more panels than :data:`PER_FIGURE` are split over several figures, so each
panel stays large enough to read at a page's width.
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
from matplotlib.transforms import ScaledTranslation  # noqa: E402

from kernbench.errors import KernBenchError  # noqa: E402
from kernbench.report.formatting import format_value, natural_order  # noqa: E402
from kernbench.report.plots import save_figure, wrapped  # noqa: E402
from kernbench.units import axis_label  # noqa: E402

MAX_PANELS = 24
# Panels per figure, in at most COLUMNS columns: a figure a page's width wide keeps
# its titles and ticks near their size in points. More than MAX_FIGURES figures is
# refused: choose --x and --hue.
PER_FIGURE = 12
COLUMNS = 3
MAX_FIGURES = 4
# Panels share a y scale unless their largest values differ by more than this factor.
SHARED_Y_SPAN = 4.0
# Neighbouring hue values' markers sit this many points apart (a marker is 6 wide).
DODGE_PT = 2.5
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
) -> list[Path]:
    """Draw :func:`metric_figures` to ``path`` (PNG, and its SVG), and to ``path`` with
    ``_2``, ``_3``, ... for the figures after the first."""
    paths = []
    for i, fig in enumerate(metric_figures(ok, metric, x, hue, facets)):
        at = path if i == 0 else path.with_name(f"{path.stem}_{i + 1}{path.suffix}")
        paths.append(save_figure(fig, at))
    return paths


def metric_figure(
    ok: pd.DataFrame, metric: str, x: str, hue: str | None, facets: list[str]
) -> Figure:
    """The first of :func:`metric_figures` (the only one up to :data:`PER_FIGURE`
    panels)."""
    figures = metric_figures(ok, metric, x, hue, facets)
    for fig in figures[1:]:
        plt.close(fig)
    return figures[0]


def metric_figures(
    ok: pd.DataFrame, metric: str, x: str, hue: str | None, facets: list[str]
) -> list[Figure]:
    """``metric`` against ``x``, one line per ``hue`` value, one panel per facet combo
    (a facet key may become the line style, :func:`fit_panels`), :data:`PER_FIGURE`
    panels to a figure. Colours, line styles and x ticks are fixed once from every
    row, so a value looks the same in every panel and each legend names them all."""
    if not pd.api.types.is_numeric_dtype(ok[metric]):
        raise PlotError(f"--metric {metric} is not a number (values: {_values(ok[metric])})")
    facets, style = fit_panels(ok, facets)
    panels = _combos(ok, facets)
    if len(panels) > MAX_FIGURES * PER_FIGURE:
        also = f", {_short(style)} as the line style" if style else ""
        raise PlotError(
            f"{len(panels)} panels (one per {', '.join(map(_short, facets))}{also}) is more"
            f" than {MAX_FIGURES * PER_FIGURE} ({MAX_FIGURES} figures of {PER_FIGURE});"
            " choose --x and --hue among them"
        )
    look = Look(XAxis.of(ok[x]), hue, palette(ok, hue), style, _styles(ok, style))
    parts = [_select(ok, facets, combo) for combo in panels]
    shared = shared_y(parts, metric)
    pages = -(-len(panels) // PER_FIGURE)
    figures = []
    for page in range(pages):
        at = slice(page * PER_FIGURE, (page + 1) * PER_FIGURE)
        title = f"{axis_label(metric)} against {axis_label(x)}"
        title += f" ({page + 1} of {pages})" if pages > 1 else ""
        figures.append(_figure(parts[at], panels[at], facets, metric, x, look, shared, title))
    return figures


def shared_y(parts: list[pd.DataFrame], metric: str) -> bool:
    """Whether the panels share one y scale: their largest values lie within
    :data:`SHARED_Y_SPAN` of each other (else each panel gets its own)."""
    tops = [float(p[metric].abs().max()) for p in parts if p[metric].notna().any()]
    tops = [t for t in tops if t > 0]
    return not tops or max(tops) <= SHARED_Y_SPAN * min(tops)


def _figure(
    parts: list[pd.DataFrame],
    panels: list[tuple],
    facets: list[str],
    metric: str,
    x: str,
    look: Look,
    shared: bool,
    title: str,
) -> Figure:
    cols = min(COLUMNS, len(panels))
    rows = -(-len(panels) // cols)
    size = (3.6 * cols + 2.2, 2.7 * rows + 1.2)
    fig, axs = plt.subplots(
        rows, cols, figsize=size, sharex=True, sharey=shared, squeeze=False, layout="constrained"
    )
    for n, (ax, part, combo) in enumerate(zip(axs.flat, parts, panels, strict=False)):
        _panel(ax, part, metric, x, look, n)
        ax.set_title(_title(facets, combo), fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
    _hide_unused(axs, len(panels))
    fig.supxlabel(axis_label(x), fontsize=10)
    ylabel = axis_label(metric) + ("" if shared else ", each panel its own scale")
    fig.supylabel(wrapped(ylabel, fig.get_figheight(), 10), fontsize=10)
    if look.hue or look.style:
        handles = _legend(look)
        # centred on the right: at the top it would meet the figure's title
        legend = fig.legend(handles=handles, loc="outside right center", fontsize=9)
        for handle, text in zip(handles, legend.get_texts(), strict=True):
            if handle.get_linestyle() == "None":  # a key's name, heading its values
                text.set_fontweight("bold")
    fig.suptitle(wrapped(title, fig.get_figwidth(), 11), fontsize=11)
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


def _panel(ax, part: pd.DataFrame, metric: str, x: str, look: Look, n: int = 0) -> None:  # noqa: ANN001
    series = list(itertools.product(
        _present(part, look.hue, look.colours), _present(part, look.style, look.styles)
    ))  # fmt: skip
    for i, (hue_value, style_value) in enumerate(series):
        line = part
        if look.hue:
            line = line[line[look.hue].astype(str) == hue_value]
        if look.style:
            line = line[line[look.style].astype(str) == style_value]
        means = line.groupby(line[x].astype(str))[metric].mean()  # repeats of a point
        xs = [str(v) for v in look.x.values if str(v) in means.index]
        if not xs:
            continue
        (drawn,) = ax.plot([look.x.positions[v] for v in xs], [means[v] for v in xs],
                           marker="o", markersize=6, color=look.colours.get(hue_value, "C0"),
                           linestyle=look.styles.get(style_value, "-"))  # fmt: skip
        drawn.set_transform(dodge(ax, i, len(series)))  # after autoscaling on the data
        drawn.set_gid(f"series-{n}-{i}")
    look.x.apply(ax)
    ax.grid(alpha=0.3)


def dodge(ax, i: int, count: int):  # noqa: ANN001, ANN201
    """The data transform of series ``i`` of ``count`` in a panel, shifted sideways
    :data:`DODGE_PT` points from its neighbours and centred on the true x, so series
    with equal values are drawn side by side, never one exactly under another."""
    shift = (i - (count - 1) / 2) * DODGE_PT / 72
    return ax.transData + ScaledTranslation(shift, 0, ax.figure.dpi_scale_trans)


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
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    if any(_overlapping(ax, renderer) for ax in axes):
        for ax in axes:
            plt.setp(ax.get_xticklabels(), rotation=45, ha="right", rotation_mode="anchor")
        fig.draw_without_rendering()
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

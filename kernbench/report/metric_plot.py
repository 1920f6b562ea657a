"""``--metric`` against the swept keys: x, hue, and small multiples for the rest.

The general report's plot. ``x`` is the axis with the most numeric values (a size,
a count, a cycle figure) unless given; ``hue`` a remaining choice-like axis (the
channel mapping, the workload) unless given; every other axis gets its own panel,
so nothing is averaged away (past :data:`MAX_PANELS` panels, the facet key with the
fewest values becomes the line style). Colours, line styles, marker sizes and x
positions are fixed once from every row: a hue value has one colour in every panel,
and the one legend names every value. Axis labels are short, with the unit once
(:func:`kernbench.units.axis_label`); x tick labels never overlap.

Every mark sits where its figures say (:class:`XAxis`): numbers at their value,
joined by lines; words, or numbers too close to tell apart at their value (65536 and
65792 among 512..65792), as categories, one group of bars each, never joined. Nothing
is moved to stay visible: series that coincide (1:1 exactly on n:1) are told apart by
their marks instead, each later series drawn smaller and thinner (:func:`marker_sizes`),
so an equal one shows inside the one before it. Panels whose values differ by more
than :data:`SHARED_Y_SPAN` times get a y scale each (a hotspot panel at 20 GB/s is not
a flat line under a local one's 500); and more panels than :data:`PER_FIGURE` are
split over several figures, :data:`~kernbench.report.plots.COLUMNS` to a row, so each
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
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from kernbench.errors import KernBenchError  # noqa: E402
from kernbench.report.formatting import format_value, natural_order  # noqa: E402
from kernbench.report.plots import grid_of, save_figure, wrapped  # noqa: E402
from kernbench.units import axis_label  # noqa: E402

MAX_PANELS = 24
# Panels per figure (in rows of plots.COLUMNS): a figure a page's width wide keeps its
# titles and ticks near their size in points. More than MAX_FIGURES figures is
# refused: choose --x and --hue.
PER_FIGURE = 12
MAX_FIGURES = 4
# Panels share a y scale unless their largest values differ by more than this factor.
SHARED_Y_SPAN = 4.0
LINE_STYLES = ("-", "--", ":", "-.")
# Bars of a style value (the style key on a categorical x), in the order of LINE_STYLES.
HATCHES = ("", "//", "..", "xx")
# A numeric x spanning this factor or more is drawn on a log scale.
LOG_SPAN = 64
# Two x values closer than this fraction of the axis (a marker's width in a panel about
# 250 points wide) cannot be told apart at their value: the values become categories.
CROWDED = 0.03
# Marker diameters (points) of the first and the last series: each series in between a
# step smaller, so a series equal to an earlier one shows as a disc inside it.
MARKER_PT = (10.0, 4.0)
# The share of a category's slot its bars fill (the rest keeps groups apart).
BAR_GROUP = 0.8


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
    pages = _pages(len(panels))
    figures = []
    for page in range(pages):
        at = slice(page * PER_FIGURE, (page + 1) * PER_FIGURE)
        title = f"{axis_label(metric)} against {axis_label(x)}"
        title += f" ({page + 1} of {pages})" if pages > 1 else ""
        figures.append(_figure(parts[at], panels[at], facets, metric, x, look, shared, title))
    return figures


def figure_count(ok: pd.DataFrame, facets: list[str]) -> int:
    """How many figures :func:`metric_figures` draws for ``facets`` (the general plot's
    files: ``report_<metric>.png``, then ``_2``, ``_3``, ...), without drawing them."""
    return _pages(len(_combos(ok, fit_panels(ok, facets)[0])))


def _pages(panels: int) -> int:
    return -(-panels // PER_FIGURE)


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
    rows, cols = grid_of(len(panels))
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
    """Where each x value sits. Numbers at their value (a log scale when they span
    :data:`LOG_SPAN` or more), so the distance between two is what it says; words, or
    numbers of which two would crowd (closer than :data:`CROWDED` of the axis: 65536
    and 65792 among 512..65792), are categories: equally spaced in order, each its own
    group of bars, never joined by a line (an even spacing would claim a distance the
    values do not have)."""

    values: list
    positions: dict[str, float]
    scale: str  # "linear", "log2", "log10", or "category"

    @classmethod
    def of(cls, column: pd.Series) -> XAxis:
        values = _ordered(column)
        if _numeric(column):
            numbers = [float(v) for v in values]
            scale = _scale(numbers)
            if not _crowded(numbers, scale):
                return cls(values, {str(v): n for v, n in zip(values, numbers, strict=True)}, scale)
        return cls(values, {str(v): float(i) for i, v in enumerate(values)}, "category")

    @property
    def categorical(self) -> bool:
        return self.scale == "category"

    def apply(self, ax) -> None:  # noqa: ANN001
        if self.scale.startswith("log"):
            ax.set_xscale("log", base=2 if self.scale == "log2" else 10)
        if self.categorical:
            ax.set_xlim(-0.5, len(self.values) - 0.5)
        ticks = [self.positions[str(v)] for v in self.values]
        ax.set_xticks(ticks, [format_value(v) for v in self.values], fontsize=7)
        ax.minorticks_off()


def _scale(numbers: list[float]) -> str:
    """``log2`` (all powers of two) or ``log10`` when positive values span
    :data:`LOG_SPAN` or more, else ``linear``."""
    if min(numbers) > 0 and max(numbers) / min(numbers) >= LOG_SPAN:
        return "log2" if all(_power_of_two(v) for v in numbers) else "log10"
    return "linear"


def _crowded(numbers: list[float], scale: str) -> bool:
    """Whether two neighbouring values lie closer than :data:`CROWDED` of the axis's
    span (on its scale), too close for their markers and tick labels to part."""
    at = np.log(numbers) if scale != "linear" else np.asarray(numbers)
    span = float(at.max() - at.min()) if len(at) else 0.0
    return span > 0 and float(np.diff(np.sort(at)).min()) < CROWDED * span


@dataclass(frozen=True)
class Look:
    """How every panel draws: the x axis, a colour per hue value, a line style (or
    hatch) per style value, and from those the series, each with its marker size
    and bar slot (all fixed once from every row)."""

    x: XAxis
    hue: str | None
    colours: dict[str, Any]
    style: str | None
    styles: dict[str, str]

    @property
    def series(self) -> list[tuple[str, str]]:
        """Every (hue value, style value), hue first; ``""`` for a key not drawn."""
        return list(itertools.product(list(self.colours) or [""], list(self.styles) or [""]))

    def hatch(self, style_value: str) -> str:
        return HATCHES[list(self.styles).index(style_value)] if style_value else ""


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
    """One panel: each series at its figures, as a line over numbers or as bars over
    categories (:class:`XAxis`)."""
    series = look.series
    sizes = marker_sizes(len(series))
    for i, (hue_value, style_value) in enumerate(series):
        means = _means(part, metric, x, look, hue_value, style_value)
        if means.empty:
            continue
        xs = [look.x.positions[v] for v in means.index]
        colour = look.colours.get(hue_value, "C0")
        if look.x.categorical:
            _bars(ax, xs, means, i, len(series), colour, look.hatch(style_value))
            continue
        (drawn,) = ax.plot(xs, means.to_numpy(), marker="o", markersize=sizes[i],
                           linewidth=sizes[i] / 5, color=colour,
                           linestyle=look.styles.get(style_value, "-"))  # fmt: skip
        drawn.set_gid(f"series-{n}-{i}")  # its markers, for the legibility test
    look.x.apply(ax)
    ax.grid(alpha=0.3, axis="y" if look.x.categorical else "both")


def _means(
    part: pd.DataFrame, metric: str, x: str, look: Look, hue_value: str, style_value: str
) -> pd.Series:
    """One series' mean ``metric`` per x value (repeats of a point averaged), indexed
    by the value's text, in the axis's order."""
    rows = part
    if look.hue:
        rows = rows[rows[look.hue].astype(str) == hue_value]
    if look.style:
        rows = rows[rows[look.style].astype(str) == style_value]
    means = rows.groupby(rows[x].astype(str))[metric].mean()
    return means.reindex([str(v) for v in look.x.values if str(v) in means.index])


def marker_sizes(count: int) -> list[float]:
    """Marker diameters (points) of ``count`` series, from :data:`MARKER_PT`'s first to
    its last: where series coincide, each shows as a ring round the next instead of
    being moved off its figures (one series: the middle size)."""
    big, small = MARKER_PT
    return [(big + small) / 2] if count == 1 else [float(d) for d in np.linspace(big, small, count)]


def _bars(ax, xs: list[float], means: pd.Series, i: int, count: int, colour, hatch: str) -> None:  # noqa: ANN001
    """Series ``i`` of ``count`` as bars, each in slot ``i`` of its category's group:
    the group spans :data:`BAR_GROUP` of the category's unit slot around its tick, so
    every bar stays inside its category."""
    width = BAR_GROUP / count
    left = [x - BAR_GROUP / 2 + i * width for x in xs]
    ax.bar(left, means.to_numpy(), width=width, align="edge", color=colour, hatch=hatch,
           edgecolor="white", linewidth=0.5)  # fmt: skip


def _legend(look: Look) -> list[Artist]:
    """Every hue value with its colour (and marker size), then every style value with
    its line style, or its hatch where the x values are categories (bars)."""
    sizes = dict(zip(look.series, marker_sizes(len(look.series)), strict=True))
    bars = look.x.categorical
    handles: list[Artist] = []
    if look.hue:
        handles.append(Line2D([], [], linestyle="none", label=axis_label(look.hue)))
        first = next(iter(look.styles), "")
        handles += [Patch(color=c, label=v) if bars else
                    Line2D([], [], color=c, marker="o", markersize=sizes[v, first], label=v)
                    for v, c in look.colours.items()]  # fmt: skip
    if look.style:
        handles.append(Line2D([], [], linestyle="none", label=axis_label(look.style)))
        handles += [Patch(facecolor="0.55", edgecolor="white", hatch=look.hatch(v), label=v)
                    if bars else Line2D([], [], color="0.3", linestyle=s, label=v)
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

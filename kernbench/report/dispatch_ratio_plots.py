"""The dispatch-ratio study's plots (drawn by ``plot`` of :mod:`.dispatch_ratio`).

- ``dispatch_ratio_heatmap.png``: opt3 / opt2 dispatch over FIXED x R, the ADR's 2.4x
  drawn as a contour, the default calibration boxed, and the FIXED = R = 0 cell marked
  "0 / 0" (both variants dispatch free there, so there is no ratio).
- ``dispatch_ratio_cycles.png``: dispatch cycles per tile against FIXED, one panel per R.
- ``dispatch_ratio_latency.png``: kernel latency against FIXED, one panel per R, each
  point marked by its bottleneck (the outcome that matters: is the kernel CPU-bound?).
- ``dispatch_ratio_crossover.png``: where opt3 stops beating opt2 in latency, over FIXED
  x R at their real values: each calibration a marker at its (R, FIXED), its shape the
  faster variant, its colour opt3 / opt2 latency (log scale, white at 1), the ratio
  written beside it on a grid of up to :data:`LABELLED` points; at each R a bar from
  the last FIXED opt3 wins at to the first opt2 wins at (:class:`Crossing`), where the
  winner changes; the default calibration ringed.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

from kernbench.report.facets import Facet  # noqa: E402
from kernbench.report.plots import save_figure  # noqa: E402
from kernbench.report.tables import FIXED, RECIP  # noqa: E402

VARIANTS = ("opt2", "opt3")
MARKERS = {"cpu": "o", "dma": "s", "gemm": "^", "math": "D"}
# The crossover map: a marker per faster variant, and up to how many points it writes
# each one's ratio beside its marker (more would cover the map).
WINNER_MARKERS = {"opt3": "^", "opt2": "v", "tie": "o"}
LABELLED = 60
MARKER_PT = 10.0  # the crossover map's marker side at most, in points
# Colour-bar ticks of the ratio (a log scale symmetric about 1), those inside its range.
RATIO_TICKS = (0.125, 0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0, 8.0)
RATIO_CMAP = "RdBu_r"  # blue: opt3 faster, red: opt2 faster


class Crossing(NamedTuple):
    """Where the winner changes at one R, as far as the grid says: between the largest
    FIXED opt3 is faster at and the smallest opt2 is."""

    recip: float
    last_opt3: float
    first_opt2: float


def draw(
    table: pd.DataFrame,
    out_dir: Path,
    adr_ratio: float,
    default: tuple[float, float],
    facet: Facet | None = None,
    crossings: list[Crossing] | None = None,
) -> list[Path]:
    """Write the four plots, marking the ADR's ratio and the default (FIXED, R)
    calibration (both stated once, in :mod:`kernbench.report.dispatch_ratio`, which also
    finds the ``crossings``); for a named ``facet`` (``VA``), in its files
    (``dispatch_ratio_heatmap_va.png``) and titles."""
    label = facet.label if facet is not None else ""
    suffix = f"_{facet.slug}" if label else ""
    note = f" ({label})" if label else ""
    crossover = out_dir / f"dispatch_ratio_crossover{suffix}.png"
    return [
        _heat(table, out_dir / f"dispatch_ratio_heatmap{suffix}.png", adr_ratio, default, note),
        _cycles(table, out_dir / f"dispatch_ratio_cycles{suffix}.png", note),
        _latency(table, out_dir / f"dispatch_ratio_latency{suffix}.png", note),
        _crossover(table, crossover, default, crossings or [], note),
    ]


def _heat(
    table: pd.DataFrame,
    path: Path,
    adr_ratio: float,
    default: tuple[float, float],
    note: str = "",
) -> Path:
    grid = table.pivot_table(index=FIXED, columns=RECIP, values="ratio_opt3_opt2",
                             dropna=False)  # fmt: skip
    grid = grid.reindex(index=sorted(set(table[FIXED])), columns=sorted(set(table[RECIP])))
    values = grid.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(1.1 * values.shape[1] + 3.5, 0.7 * values.shape[0] + 2))
    image = ax.imshow(values, cmap="viridis", origin="lower", aspect="auto")
    fig.colorbar(image, ax=ax).set_label("opt3 / opt2 dispatch cycles per tile")
    middle = np.nanmean([np.nanmin(values), np.nanmax(values)])
    for (i, j), v in np.ndenumerate(values):
        text, color = (f"{v:.2f}", "black" if v > middle else "white") if np.isfinite(v) else (
            "0 / 0", "grey")  # fmt: skip
        ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    _adr_contour(ax, values, adr_ratio)
    _box_default(ax, list(grid.index), list(grid.columns), default)
    ax.set_xticks(range(len(grid.columns)), [f"{v:g}" for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [f"{v:g}" for v in grid.index])
    ax.set(xlabel="byte_cycles_recip R (cycles/B)", ylabel="fixed_per_cmd_cycles FIXED (cycles)")
    ax.set_title(f"opt3 / opt2 dispatch per KV tile{note}\n(0 / 0: both free at FIXED = R = 0)",
                 fontsize=10)  # fmt: skip
    return _save(fig, path)


def _adr_contour(ax, values: np.ndarray, adr_ratio: float) -> None:  # noqa: ANN001
    """The ADR's 2.4x as a dashed line, where the grid crosses it."""
    finite = values[np.isfinite(values)]
    if finite.size and finite.min() < adr_ratio < finite.max() and min(values.shape) > 1:
        ax.contour(np.ma.masked_invalid(values), levels=[adr_ratio], colors="red",
                   linestyles="dashed", linewidths=1.5)  # fmt: skip
    ax.plot([], [], color="red", linestyle="dashed", label=f"ADR ≈ {adr_ratio}x")
    ax.plot([], [], color="red", marker="s", fillstyle="none", linestyle="none",
            label="default calibration")  # fmt: skip
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.18), ncol=2, fontsize=8, frameon=False)


def _box_default(ax, fixed: list[float], recip: list[float], default) -> None:  # noqa: ANN001
    if default[0] in fixed and default[1] in recip:
        i, j = fixed.index(default[0]), recip.index(default[1])
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))


def _panels(table: pd.DataFrame, ylabel: str):  # noqa: ANN202
    recips = sorted(set(table[RECIP]))
    fig, axes = plt.subplots(1, len(recips), figsize=(2.9 * len(recips) + 0.6, 3.4),
                             sharey=True, squeeze=False)  # fmt: skip
    for ax, recip in zip(axes[0], recips, strict=True):
        ax.set_title(f"R = {recip:g} cycles/B", fontsize=9)
        ax.set_xlabel("FIXED (cycles)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    return fig, list(zip(axes[0], recips, strict=True))


def _cycles(table: pd.DataFrame, path: Path, note: str = "") -> Path:
    fig, panels = _panels(table, "dispatch cycles per KV tile")
    if note:
        fig.suptitle(f"dispatch cycles per KV tile{note}", fontsize=10)
    for ax, recip in panels:
        part = table[table[RECIP] == recip].sort_values(FIXED)
        x = np.arange(len(part))
        for k, variant in enumerate(VARIANTS):
            ys = part[f"cycles_{variant}"]
            ax.bar(x + (k - 0.5) * 0.4, ys, width=0.4, label=variant)
        ax.set_xticks(x, [f"{v:g}" for v in part[FIXED]])
    panels[0][0].legend(fontsize=8)
    return _save(fig, path)


def _latency(table: pd.DataFrame, path: Path, note: str = "") -> Path:
    fig, panels = _panels(table, "kernel latency (ns)")
    colors = dict(zip(VARIANTS, ("tab:blue", "tab:orange"), strict=True))
    for ax, recip in panels:
        part = table[table[RECIP] == recip].sort_values(FIXED)
        for variant in VARIANTS:
            xs, ys = part[FIXED], part[f"latency_ns_{variant}"]
            ax.plot(xs, ys, color=colors[variant], lw=1)
            for x, y, b in zip(xs, ys, part[f"bound_{variant}"], strict=True):
                ax.scatter(x, y, color=colors[variant], marker=MARKERS.get(b, "x"), zorder=3)
    handles = [Line2D([], [], color=c, label=v) for v, c in colors.items()]
    seen = sorted(set(table["bound_opt2"]) | set(table["bound_opt3"]))
    handles += [Line2D([], [], color="black", marker=MARKERS.get(b, "x"), linestyle="none",
                       label=f"{b}-bound") for b in seen]  # fmt: skip
    fig.legend(handles=handles, loc="upper right", fontsize=8)
    fig.suptitle(f"GQA kernel latency and its bottleneck (busiest unit){note}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.86, 0.93))
    return _save(fig, path, tight=False)


def _crossover(
    table: pd.DataFrame,
    path: Path,
    default: tuple[float, float],
    crossings: list[Crossing],
    note: str = "",
) -> Path:
    """The winner and opt3 / opt2 latency at each calibration, at its real (R, FIXED)."""
    fig, ax = plt.subplots(figsize=(7.4, 5.6))
    size = _marker_area(ax, table)
    ratio = table["opt3_over_opt2_latency"].to_numpy(dtype=float)
    span = float(np.exp(max(np.abs(np.log(ratio)).max(), 0.01)))
    norm = LogNorm(vmin=1 / span, vmax=span)  # symmetric about 1, which is white
    _winners(ax, table, norm, size)
    if len(table) <= LABELLED:
        for r, f, v in zip(table[RECIP], table[FIXED], ratio, strict=True):
            ax.annotate(f"{v:.3f}", (r, f), xytext=(0, 11), textcoords="offset points",
                        ha="center", fontsize=7)  # fmt: skip
    _crossings(ax, crossings)
    if ((table[FIXED] == default[0]) & (table[RECIP] == default[1])).any():
        ax.scatter([default[1]], [default[0]], marker="o", s=3.6 * size, facecolors="none",
                   edgecolors="black", linewidths=1.6, zorder=4,
                   label="default calibration (ADR-0064)")  # fmt: skip
    _ratio_bar(fig, ax, norm, span)
    ax.set(xlabel="byte_cycles_recip R (cycles/B)", ylabel="fixed_per_cmd_cycles FIXED (cycles)")
    ax.set_title(f"where opt3 stops beating opt2 in latency{note}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.12), ncol=2, fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    ax.margins(x=0.06, y=0.1)  # room for the top row's ratios inside the axes
    return _save(fig, path)


def _winners(ax, table: pd.DataFrame, norm: LogNorm, size: float) -> None:  # noqa: ANN001
    """One marker per calibration at its (R, FIXED): the shape says which variant is
    faster, the colour opt3 / opt2 latency."""
    for winner, marker in WINNER_MARKERS.items():
        part = table[table["latency_winner"] == winner]
        if len(part):
            label = f"{winner} faster" if winner != "tie" else "tie"
            ax.scatter(part[RECIP], part[FIXED], c=part["opt3_over_opt2_latency"], cmap=RATIO_CMAP,
                       norm=norm, marker=marker, s=size, edgecolors="black", linewidths=0.6,
                       zorder=3, label=label)  # fmt: skip


def _ratio_bar(fig: plt.Figure, ax, norm: LogNorm, span: float) -> None:  # noqa: ANN001
    """The colour bar of the ratio, its ticks plain numbers (three at least)."""
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=RATIO_CMAP), ax=ax)
    ticks = [t for t in RATIO_TICKS if 1 / span <= t <= span]
    ticks = ticks if len(ticks) >= 3 else [round(1 / span, 3), 1.0, round(span, 3)]
    bar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks], minor=False)
    bar.ax.yaxis.set_minor_locator(NullLocator())
    bar.set_label("opt3 / opt2 kernel latency (log scale; below 1: opt3 faster)")


def _marker_area(ax, table: pd.DataFrame) -> float:  # noqa: ANN001
    """Markers (area in pt²) of side :data:`MARKER_PT`, or less where two values of an
    axis are closer: at most 0.6 of their distance (the axes' margins make a value's
    span a little shorter than the axes)."""
    box = ax.get_window_extent()
    per_pt = 72 / ax.figure.dpi
    sides = []
    for column, length in ((RECIP, box.width), (FIXED, box.height)):
        values = np.unique(table[column].to_numpy(dtype=float))
        if len(values) > 1:
            span = values[-1] - values[0]
            sides.append(0.6 * np.diff(values).min() / span * length * per_pt)
    return float(min([MARKER_PT, *sides]) ** 2)


def _crossings(ax, crossings: list[Crossing]) -> None:  # noqa: ANN001
    """A bar at each R from the last FIXED opt3 wins at to the first opt2 wins at: the
    winner changes somewhere on it (the grid says no more)."""
    for k, c in enumerate(crossings):
        ax.plot([c.recip, c.recip], [c.last_opt3, c.first_opt2], color="grey", lw=7,
                alpha=0.45, solid_capstyle="butt", zorder=1,
                label="the winner changes on this bar" if k == 0 else None)  # fmt: skip


def _save(fig: plt.Figure, path: Path, tight: bool = True) -> Path:
    if tight:
        fig.tight_layout()
    return save_figure(fig, path)

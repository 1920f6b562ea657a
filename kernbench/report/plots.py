"""Plots of the study tables (matplotlib, Agg backend: no display needed).

Bandwidth equivalence (:mod:`kernbench.report.bw_equivalence`), dispatch ratio and
simulator speed have their own modules; this one holds the helpers they share, among
them the layout of small multiples, a few to a row (:func:`grid_of`). Each function
returns the paths it wrote. Every figure is saved by :func:`save_figure`: a
PNG to look at beside the table, and an SVG sibling whose text stays text, which
report.html inlines (:mod:`kernbench.report.html`), so a browser lays the words out and
a test can measure where each one lands.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

from kernbench.files import refuse_link

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Panels to a row: a figure of small multiples stays about a page's width (under
# 1,500 px as saved), so a fine grid's panels wrap into rows instead of one long strip.
COLUMNS = 3


def grid_of(panels: int) -> tuple[int, int]:
    """``(rows, columns)`` for ``panels`` small multiples, at most :data:`COLUMNS` a row."""
    cols = max(1, min(COLUMNS, panels))
    return -(-panels // cols), cols


def _label(row: pd.Series, keys: list[str]) -> str:
    return " ".join(f"{k.rsplit('.', 1)[-1]}={row[k]}" for k in keys)


def _config_keys(table: pd.DataFrame, skip: tuple[str, ...] = ()) -> list[str]:
    return [c for c in table.columns if "." in c and c not in skip]


def _heat(values, rows, cols, title, xlabel, ylabel, path: Path, fmt: str) -> Path:  # noqa: ANN001
    fig, ax = plt.subplots(figsize=(1.1 * len(cols) + 5, 0.4 * len(rows) + 1.8))
    image = ax.imshow(values, cmap="viridis", aspect="auto")
    middle = np.nanmean([np.nanmin(values), np.nanmax(values)])
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=7)
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            color = "black" if v > middle else "white"
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=6, color=color)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    fig.colorbar(image, ax=ax)
    return _save(fig, path)


def _save(fig: plt.Figure, path: Path) -> Path:
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    return save_figure(fig, path, dpi=120)


def save_figure(fig: plt.Figure, path: Path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` (PNG) and to ``path`` with ``.svg`` (text as text, in
    the font matplotlib measured it with; ids salted with the file's name, so several
    figures inlined in one page never share one), close it, return ``path``."""
    refuse_link(path)  # never through a link planted where the plot goes
    fig.savefig(path, dpi=dpi)
    engine = fig.get_layout_engine()
    if engine is not None and engine.colorbar_gridspec is False:  # constrained: laid out
        fig.set_layout_engine("none")  # once is enough; the SVG keeps the PNG's layout
    refuse_link(path.with_suffix(".svg"))
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": path.stem}):
        fig.savefig(path.with_suffix(".svg"))
    plt.close(fig)
    return path


def wrapped(text: str, width_in: float, fontsize: float) -> str:
    """``text`` broken at spaces into lines that fit ``width_in`` inches at
    ``fontsize`` points (DejaVu Sans: about 0.6 em a character on average), so a title
    never runs past its figure's edge."""
    per_line = max(12, int(width_in * 72 / (fontsize * 0.6)))
    return "\n".join(textwrap.wrap(text, per_line)) or text

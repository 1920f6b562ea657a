"""PNG plots of the study tables (matplotlib, Agg backend: no display needed).

Bandwidth equivalence has its own module (:mod:`kernbench.report.bw_equivalence`).
Dispatch ratio: a heat map of opt3 / opt2 over FIXED x R, and bars of
dispatch cycles per tile against FIXED at each variant. Each function returns the
paths it wrote.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from kernbench.report.tables import FIXED, RECIP  # noqa: E402


def _label(row: pd.Series, keys: list[str]) -> str:
    return " ".join(f"{k.rsplit('.', 1)[-1]}={row[k]}" for k in keys)


def _config_keys(table: pd.DataFrame, skip: tuple[str, ...] = ()) -> list[str]:
    return [c for c in table.columns if "." in c and c not in skip]


def plot_dispatch_ratio(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``dispatch_ratio_heatmap.png`` and ``dispatch_ratio_cycles.png``."""
    grid = table.pivot_table(index=FIXED, columns=RECIP, values="dispatch_ratio_opt3_opt2")
    heat = _heat(
        grid.to_numpy(),
        [f"{v:g}" for v in grid.index],
        [f"{v:g}" for v in grid.columns],
        "opt3 / opt2 dispatch cycles per tile",
        "byte_cycles_recip (R)",
        "fixed_per_cmd_cycles (FIXED)",
        out_dir / "dispatch_ratio_heatmap.png",
        fmt="{:.2f}",
    )
    return [heat, _dispatch_bars(table, out_dir / "dispatch_ratio_cycles.png")]


def _dispatch_bars(table: pd.DataFrame, path: Path) -> Path:
    recips = sorted(set(table[RECIP]))
    fig, axes = plt.subplots(1, len(recips), figsize=(3 * len(recips), 3.5), sharey=True)
    for ax, recip in zip(np.atleast_1d(axes), recips, strict=True):
        part = table[table[RECIP] == recip].sort_values(FIXED)
        x = np.arange(len(part))
        ax.bar(x - 0.2, part["dispatch_cycles_per_tile_opt2"], width=0.4, label="opt2")
        ax.bar(x + 0.2, part["dispatch_cycles_per_tile_opt3"], width=0.4, label="opt3")
        ax.set_xticks(x, [f"{v:g}" for v in part[FIXED]])
        ax.set_title(f"R = {recip:g}")
        ax.set_xlabel("FIXED (cycles)")
    np.atleast_1d(axes)[0].set_ylabel("dispatch cycles per tile")
    np.atleast_1d(axes)[0].legend()
    return _save(fig, path)


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
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sim_speed(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``sim_speed.png``: wall time against accesses (log-log) and the speed ratio,
    one line per configuration."""
    keys = _config_keys(table)
    fig, (wall, ratio) = plt.subplots(1, 2, figsize=(11, 4))
    for label, group in table.groupby(keys, sort=True) if keys else [("", table)]:
        name = _label(pd.Series(np.atleast_1d(label), index=keys), keys)
        wall.loglog(group["sim_accesses"], group["sim_wall_s"], marker="o", label=name)
        ratio.semilogx(group["sim_accesses"], group["speed_ratio"], marker="o", label=name)
    wall.set(xlabel="DMA accesses simulated", ylabel="simulation wall time (s)")
    ratio.set(xlabel="DMA accesses simulated", ylabel="accesses/s / bare SimPy events/s")
    wall.set_title("Wall time against work")
    ratio.set_title("Speed against SimPy's bare timeout rate")
    ratio.legend(fontsize=6)
    return [_save(fig, out_dir / "sim_speed.png")]

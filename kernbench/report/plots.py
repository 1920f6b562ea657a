"""PNG plots of the study tables (matplotlib, Agg backend: no display needed).

Bandwidth equivalence: a grouped bar chart of both mappings' bandwidth per
configuration, and a heat map of 1:1 / n:1 (configurations down, access size and
offset across), plus the helpers other study plots share. (The dispatch-ratio and
simulator-speed plots live in their study modules.) Each function returns the paths
it wrote.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from kernbench.report.tables import ACCESS, ALIGN  # noqa: E402


def _label(row: pd.Series, keys: list[str]) -> str:
    return " ".join(f"{k.rsplit('.', 1)[-1]}={row[k]}" for k in keys)


def _config_keys(table: pd.DataFrame, skip: tuple[str, ...] = ()) -> list[str]:
    return [c for c in table.columns if "." in c and c not in skip]


def plot_bw_equivalence(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """``bw_equivalence_bandwidth.png`` and ``bw_equivalence_ratio.png``."""
    return [_bw_bars(table, out_dir / "bw_equivalence_bandwidth.png"), _bw_heat(table, out_dir)]


def _bw_bars(table: pd.DataFrame, path: Path) -> Path:
    keys = _config_keys(table)
    labels = [_label(row, keys) for _, row in table.iterrows()]
    y = np.arange(len(table))
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(table) + 1.5))
    ax.barh(y - 0.2, table["bw_n_to_one_gbs"], height=0.4, label="n:1")
    ax.barh(y + 0.2, table["bw_one_to_one_gbs"], height=0.4, label="1:1")
    ax.set_yticks(y, labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("effective bandwidth per active PE (GB/s)")
    ax.set_title("Bandwidth equivalence: n:1 vs 1:1 per configuration")
    ax.legend()
    return _save(fig, path)


def _bw_heat(table: pd.DataFrame, out_dir: Path) -> Path:
    across = [k for k in (ACCESS, ALIGN) if k in table.columns]
    down = _config_keys(table, skip=tuple(across))
    grid = table.pivot_table(index=down, columns=across, values="ratio_1to1_n1")
    rows = [_label(pd.Series(np.atleast_1d(i), index=down), down) for i in grid.index]
    cols = ["/".join(map(str, np.atleast_1d(c))) for c in grid.columns]
    title = "1:1 / n:1 effective bandwidth"
    xlabel = " / ".join(k.rsplit(".", 1)[-1] for k in across)
    path = out_dir / "bw_equivalence_ratio.png"
    return _heat(grid.to_numpy(), rows, cols, title, xlabel, "configuration", path, "{:.3f}")


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

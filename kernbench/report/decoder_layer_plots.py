"""The decoder-layer study's plots (drawn by ``plot`` of :mod:`.decoder_layer`).

- ``decoder_layer_kernels.png``: latency per kernel stacked, one bar per configuration
  at the ADR's calibration (FIXED 32, R 0.25), one panel per batch size: which kernel
  the step's time goes to, and what the mapping, the address model and the PEs move.
- ``decoder_layer_dispatch.png``: the same stacks against FIXED (R = 0.25 and 0), one
  panel per batch, at one mapping, address model and PE count: where dispatch starts
  to grow the step.
- ``decoder_layer_roofline.png``: every launch's simulated latency against its
  roofline bound (log-log), one colour per kernel; the diagonal is the roofline.

Each set is one layer shape's (its name in the titles); a sweep of several shapes gets
a set per shape, the shape's name ending each file's name
(``decoder_layer_kernels_decoder_8b.png``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from kernbench.report.plots import _save, save_figure  # noqa: E402
from kernbench.report.tables import FIXED, MAPPING, RECIP  # noqa: E402

BATCH = "workload.batch"
LATENCY = "kernel_latency_ns"


def draw(
    t: pd.DataFrame,
    launches: pd.DataFrame,
    out_dir: Path,
    default: pd.Series,
    shape: str = "",
    slug: str = "",
) -> list[Path]:
    """One shape's plots: the stacks at the ADR's calibration (``default`` selects
    those launches), the stacks against FIXED when it is swept, and the roofline
    scatter; ``shape`` names it in the titles, ``slug`` (when given) in the files."""
    keys = t.attrs["keys"]
    at, title = launches[default], "at FIXED 32, R 0.25"
    if at.empty:  # the grid does not run the ADR's calibration
        at, title = launches, ""
    title = f"{title} ({shape})" if shape else title
    paths = [_stacks(at, keys, _file(out_dir, "kernels", slug), title)]
    if FIXED in keys:
        paths.append(_by_fixed(launches, keys, _file(out_dir, "dispatch", slug), shape))
    paths.append(_roofline(launches, _file(out_dir, "roofline", slug), shape))
    return paths


def _file(out_dir: Path, plot: str, slug: str) -> Path:
    """``decoder_layer_<plot>.png``, ``decoder_layer_<plot>_<slug>.png`` with a slug."""
    return out_dir / f"decoder_layer_{plot}{'_' + slug if slug else ''}.png"


def _order(launches: pd.DataFrame) -> list[str]:
    """Kernels in launch order."""
    return list(launches.sort_values("launch")["kernel"].drop_duplicates())


def _stacks(launches: pd.DataFrame, keys: list[str], path: Path, title: str) -> Path:
    """One bar per configuration (every key but the batch and the calibration), stacked
    by kernel; one panel per batch."""
    bars = [k for k in keys if k not in (BATCH, FIXED, RECIP)]
    panels = sorted(launches[BATCH].unique()) if BATCH in launches else [None]
    kernels = _order(launches)
    fig, axes = plt.subplots(1, len(panels), figsize=(4 + 3.5 * len(panels), 4.5), squeeze=False)
    for ax, batch in zip(axes[0], panels, strict=True):
        part = launches if batch is None else launches[launches[BATCH] == batch]
        wide = part.pivot_table(
            index=bars or None, columns="kernel", values=LATENCY, aggfunc="first"
        )
        _stack(ax, wide.reindex(columns=kernels) / 1000, _labels(wide.index, bars))
        ax.set(ylabel="latency (us)", title=f"batch {batch}" if batch is not None else "")
    fig.suptitle(f"decode step latency per kernel {title}", fontsize=10)
    _legend(fig, axes[0, -1], kernels)
    return _save_beside_legend(fig, path)


def _by_fixed(launches: pd.DataFrame, keys: list[str], path: Path, shape: str) -> Path:
    """Stacks against FIXED and R at the first value of every other key."""
    fixed = {k: launches[k].iloc[0] for k in keys if k not in (BATCH, FIXED, RECIP)}
    part = launches
    for key, value in fixed.items():
        part = part[part[key] == value]
    panels = sorted(part[BATCH].unique()) if BATCH in part else [None]
    kernels = _order(part)
    fig, axes = plt.subplots(1, len(panels), figsize=(4 + 3.5 * len(panels), 4), squeeze=False)
    for ax, batch in zip(axes[0], panels, strict=True):
        sub = part if batch is None else part[part[BATCH] == batch]
        idx = [k for k in (RECIP, FIXED) if k in keys]
        wide = sub.pivot_table(index=idx, columns="kernel", values=LATENCY, aggfunc="first")
        _stack(ax, wide.reindex(columns=kernels) / 1000, _labels(wide.index, idx))
        ax.set(ylabel="latency (us)", title=f"batch {batch}")
    where = " ".join(_short(k, v) for k, v in fixed.items()) + (f" ({shape})" if shape else "")
    fig.suptitle(f"latency per kernel against (R, FIXED); {where}", fontsize=10)
    _legend(fig, axes[0, -1], kernels)
    return _save_beside_legend(fig, path)


def _roofline(launches: pd.DataFrame, path: Path, shape: str) -> Path:
    fig, ax = plt.subplots(figsize=(7, 6))
    if shape:
        ax.set_title(f"latency against the roofline bound ({shape})", fontsize=10)
    colors = plt.get_cmap("tab20").colors
    for i, kernel in enumerate(_order(launches)):
        part = launches[launches["kernel"] == kernel]
        ax.scatter(
            part["roofline_bound_ns"], part[LATENCY], s=10, alpha=0.7, label=kernel,
            color=colors[i % len(colors)],
        )  # fmt: skip
    low = max(launches["roofline_bound_ns"].min(), 1e-3)
    high = launches[LATENCY].max()
    ax.plot([low, high], [low, high], color="black", linewidth=1, label="latency = bound")
    ax.set(
        xscale="log", yscale="log", xlabel="roofline bound (ns)", ylabel="simulated latency (ns)"
    )
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path)


def _stack(ax: plt.Axes, wide: pd.DataFrame, labels: list[str]) -> None:
    bottom = pd.Series(0.0, index=wide.index)
    x = range(len(wide))
    colors = plt.get_cmap("tab20").colors
    for i, kernel in enumerate(wide.columns):
        values = wide[kernel].fillna(0)
        ax.bar(x, values, bottom=bottom, width=0.8, color=colors[i % len(colors)], label=kernel)
        bottom = bottom + values
    ax.set_xticks(list(x), labels, rotation=60, ha="right", fontsize=7)


def _legend(fig: plt.Figure, ax: plt.Axes, kernels: list[str]) -> None:
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], fontsize=7, loc="center right", title="kernel")


def _save_beside_legend(fig: plt.Figure, path: Path) -> Path:
    """Save with room on the right for the figure's legend and at the top for its title."""
    fig.tight_layout(rect=(0, 0, 0.86, 0.94))
    return save_figure(fig, path, dpi=120)


SHORT = {"topology.pes_per_cube": "pes", "address.model": "", MAPPING: "", FIXED: "F", RECIP: "R"}
VALUES = {"n_to_one": "n:1", "one_to_one": "1:1"}


def _short(key: str, value: object) -> str:
    name = SHORT.get(key, key.rsplit(".", 1)[-1])
    shown = VALUES.get(str(value), f"{value:g}" if isinstance(value, float) else str(value))
    return f"{name}={shown}" if name else shown


def _labels(index: pd.Index, keys: list[str]) -> list[str]:
    if not keys:
        return [""]
    rows = index if isinstance(index, pd.MultiIndex) else [(v,) for v in index]
    return [" ".join(_short(k, v) for k, v in zip(keys, row, strict=True)) for row in rows]

"""The Pareto front of a sweep run with a list ``objective`` (``+experiment=design_search``).

A row is on the front when no other ok row is at least as good in every objective and
better in one (every objective minimised, as ``design_search``'s directions are). The
study (:mod:`~kernbench.report.study`) lists the configurations on it: the objective
values and the config keys that vary among the rows, one row per distinct
configuration (a search may try one twice), sorted by the objectives; rows tied on
every objective are all on the front. The plot shows every ok row and the front.

Which columns are the objective is not in the rows (``objective`` is a run option, not
a result column, :mod:`kernbench.config.objective`): :func:`recorded_objective` reads
it from the sweep's recorded config, and ``kernbench-report`` hands it over in
``df.attrs["objective"]``. A sweep without a list of two or more is not this study.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from kernbench.config.objective import names  # noqa: E402
from kernbench.report.claims import Claim  # noqa: E402
from kernbench.report.plots import _save  # noqa: E402
from kernbench.report.tables import varying_config  # noqa: E402
from kernbench.results import STATUS_OK  # noqa: E402

__all__ = ["check", "dominates", "front", "plot", "recorded_objective", "table"]

ATTR = "objective"  # the DataFrame.attrs key kernbench-report sets
_ALL = "all_points"


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """``a`` is at least as good as ``b`` in every objective and better in one (all
    minimised)."""
    pairs = list(zip(a, b, strict=True))
    return all(x <= y for x, y in pairs) and any(x < y for x, y in pairs)


def front(df: pd.DataFrame, objective: Sequence[str]) -> pd.DataFrame:
    """The ok rows of ``df`` that no other ok row dominates, sorted by the objectives
    (rows with a null objective value are left out)."""
    cols = list(objective)
    ok = df[(df["status"] == STATUS_OK) & df[cols].notna().all(axis=1)]
    values = ok[cols].astype(float).to_numpy()
    keep = [
        i
        for i in range(len(values))
        if not any(dominates(values[j], values[i]) for j in range(len(values)) if j != i)
    ]
    return ok.iloc[keep].sort_values(cols, kind="stable")


def recorded_objective(where: Path) -> list[str] | None:
    """The ``objective`` a sweep (or run) directory was made with, from its recorded
    config: ``multirun.yaml`` (kernbench's and the basic sweeper), else a job's
    ``.hydra/config.yaml`` (the optuna sweeper writes no multirun.yaml); None if none."""
    candidates = [where / "multirun.yaml", where / ".hydra" / "config.yaml"]
    candidates += sorted(where.glob("*/.hydra/config.yaml"))[:1]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            value = OmegaConf.to_container(OmegaConf.load(path)).get(ATTR)
            return names(value) or None
        except Exception:  # an unreadable record: no objective, no study
            return None
    return None


def _objective(df: pd.DataFrame) -> list[str] | None:
    wanted = df.attrs.get(ATTR)
    if not wanted or len(wanted) < 2 or any(c not in df for c in wanted):
        return None
    return list(wanted)


def table(df: pd.DataFrame) -> pd.DataFrame | None:
    """The configurations on the front: objective values, then the config keys that
    vary among the ok rows. None unless the sweep had a list objective."""
    wanted = _objective(df)
    if wanted is None:
        return None
    on_front = front(df, wanted)
    if on_front.empty:
        return None
    ok = df[df["status"] == STATUS_OK]
    keys = [k for k in varying_config(ok) if k not in wanted]
    out = on_front[[*wanted, *keys]].drop_duplicates().reset_index(drop=True)
    out.attrs[ATTR] = wanted
    # For the plot: every ok row's first two objectives (plain values: pandas compares
    # attrs when it combines frames).
    out.attrs[_ALL] = [tuple(map(float, v)) for v in ok[wanted[:2]].dropna().to_numpy()]
    return out


def check(_table: pd.DataFrame) -> list[Claim]:
    """No claim: the front is a finding, not a statement to test."""
    return []


def plot(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The first two objectives of every ok row, the front joined as a staircase."""
    wanted, every = t.attrs.get(ATTR), t.attrs.get(_ALL)
    if not wanted or not every:
        return []
    x, y = wanted[0], wanted[1]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    xs, ys = zip(*every, strict=True)
    ax.scatter(xs, ys, s=18, color="0.7", label=f"every ok row ({len(every)})")
    points = t[[x, y]].drop_duplicates().sort_values([x, y])
    ax.step(points[x], points[y], where="post", color="C3", lw=1)
    ax.scatter(points[x], points[y], s=30, color="C3", label=f"front ({len(points)} points)")
    ax.set(xlabel=x, ylabel=y, title="Pareto front (both minimised)")
    ax.legend(fontsize=8)
    return [_save(fig, out_dir / "report_pareto.png")]

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

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from kernbench.config.objective import names  # noqa: E402
from kernbench.records import RecordError, read_record  # noqa: E402
from kernbench.report.claims import Claim  # noqa: E402
from kernbench.report.general import independent_axes, swept_keys  # noqa: E402
from kernbench.report.plots import _save, wrapped  # noqa: E402
from kernbench.results import STATUS_OK  # noqa: E402
from kernbench.results.pareto import (  # noqa: E402
    MAXIMIZE,
    MINIMIZE,
    describe,
    directions_of,
    dominates,
    front,
)
from kernbench.units import axis_label  # noqa: E402

__all__ = [
    "MAXIMIZE",
    "MINIMIZE",
    "check",
    "directions_of",
    "dominates",
    "front",
    "plot",
    "recorded_directions",
    "recorded_objective",
    "table",
]

ATTR = "objective"  # the DataFrame.attrs key kernbench-report sets
DIRECTIONS = "directions"  # ... and the objectives' directions (the sweeper's)
_ALL = "all_points"


def recorded_objective(where: Path) -> list[str] | None:
    """The ``objective`` a sweep (or run) directory was made with, from its recorded
    config: ``multirun.yaml`` (kernbench's and the basic sweeper), else a job's
    ``.hydra/config.yaml`` (the optuna sweeper writes no multirun.yaml); None if none.
    A record that does not read in bounded time (:func:`kernbench.records.read_record`)
    is one note on stderr: the report goes on without the front."""
    candidates = [where / "multirun.yaml", where / ".hydra" / "config.yaml"]
    candidates += sorted(where.glob("*/.hydra/config.yaml"))[:1]
    for path in candidates:
        if not path.is_file():
            continue
        try:
            return names(read_record(path).get(ATTR)) or None
        except RecordError as exc:
            _note(exc, "the report has no Pareto front")
            return None
        except Exception:  # not a mapping, or no list of names: no objective, no study
            return None
    return None


def recorded_directions(where: Path, n: int) -> list[str]:
    """The directions a sweeper was given (``hydra.sweeper.direction`` in the sweep's
    ``multirun.yaml``, kernbench's sweeper, else in a job's ``.hydra/hydra.yaml``, the
    optuna sweeper), one per objective; every one minimised when none is recorded, or
    when there is no objective to direct (``n`` = 0: nothing is read)."""
    if not n:  # no objective: nothing to read (its record may be the one not read)
        return []
    candidates = [where / "multirun.yaml", *sorted(where.glob("*/.hydra/hydra.yaml"))[:1]]
    for path in (p for p in candidates if p.is_file()):
        try:
            sweeper = read_record(path)["hydra"]["sweeper"]
            return directions_of(sweeper.get("direction"), n)
        except RecordError as exc:
            _note(exc, "every objective is taken as minimised")
            break
        except Exception:  # an unreadable record: the default
            break
    return directions_of(None, n)


def _note(exc: RecordError, meaning: str) -> None:
    """One line on stderr for a record the report does not read, and what that means."""
    print(f"kernbench-report: note: {exc}; {meaning}", file=sys.stderr)


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
    directions = df.attrs.get(DIRECTIONS) or directions_of(None, len(wanted))
    on_front = front(df, wanted, directions)
    if on_front.empty:
        return None
    ok = df[df["status"] == STATUS_OK]
    # the keys as the user chose them (address=la, not address.model=la): group
    # options first, each key the others determine left out
    keys = independent_axes(ok, [k for k in swept_keys(ok) if k not in wanted])
    out = on_front[[*wanted, *keys]].drop_duplicates().reset_index(drop=True)
    out.attrs[ATTR] = wanted
    out.attrs[DIRECTIONS] = list(directions)
    out.attrs["describe"] = describe(on_front, wanted, keys, len(ok))
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
    directions = t.attrs.get(DIRECTIONS) or directions_of(None, 2)
    fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
    xs, ys = zip(*every, strict=True)
    ax.scatter(xs, ys, s=18, color="0.7", label=f"every ok row ({len(every)})")
    points = t[[x, y]].drop_duplicates().sort_values([x, y])
    ax.step(points[x], points[y], where="post", color="C3", lw=1)
    ax.scatter(points[x], points[y], s=30, color="C3", label=f"front: {t.attrs['describe']}")
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    goals = ", ".join(f"{axis_label(n).split(' (')[0]} {d[:3]}imised"
                      for n, d in zip(wanted, directions, strict=False))  # fmt: skip
    ax.set_title(wrapped(f"Pareto front ({goals})", 6.4, 10), fontsize=10)
    ax.legend(fontsize=8)
    return [_save(fig, out_dir / "report_pareto.png")]

"""The Pareto front of a table of rows: one definition for the sweep's last line, the
report's section and its plot (issue 38: Optuna said 25, the report 15, the plot 6).

A *point* is a distinct tuple of objective values. The front is the points no ok row
dominates (at least as good in every objective, better in one; each objective
minimised or maximised as its direction says, minimised by default). Several
configurations may reach one point, and a search may try one configuration in several
trials: :func:`describe` names all three counts, in one sentence, so no reader meets a
count without knowing what it counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from kernbench.results.table import STATUS_OK

MINIMIZE, MAXIMIZE = "minimize", "maximize"
DIRECTION_WORDS = (MINIMIZE, MAXIMIZE)


def directions_of(recorded: object, n: int) -> list[str]:
    """``n`` directions from a sweeper's ``direction`` setting (one word, a list, or
    None: every objective minimised)."""
    if recorded is None:
        return [MINIMIZE] * n
    words = [recorded] if isinstance(recorded, str) else list(recorded)  # type: ignore[call-overload]
    words = [str(w).lower().removeprefix("studydirection.") for w in words]
    return (words * n)[:n] if len(words) == 1 else words


def dominates(a: Sequence[float], b: Sequence[float], directions: Sequence[str] = ()) -> bool:
    """``a`` is at least as good as ``b`` in every objective and better in one."""
    signs = [-1.0 if d == MAXIMIZE else 1.0 for d in directions] or [1.0] * len(a)
    pairs = [(s * x, s * y) for s, x, y in zip(signs, a, b, strict=True)]
    return all(x <= y for x, y in pairs) and any(x < y for x, y in pairs)


def front(
    df: pd.DataFrame, objective: Sequence[str], directions: Sequence[str] = ()
) -> pd.DataFrame:
    """The ok rows of ``df`` that no other ok row dominates, sorted by the objectives
    (rows with a null objective value are left out)."""
    cols = list(objective)
    ok = df[(df["status"] == STATUS_OK) & df[cols].notna().all(axis=1)]
    values = ok[cols].astype(float).to_numpy()
    points = {tuple(v) for v in values}
    kept = {p for p in points if not any(dominates(q, p, directions) for q in points)}
    on = [tuple(v) in kept for v in values]
    return ok[on].sort_values(cols, kind="stable")


def describe(
    on_front: pd.DataFrame, objective: Sequence[str], keys: Sequence[str], rows: int
) -> str:
    """``6 points, reached by 15 configurations in 25 of 40 rows``: the front's
    distinct objective values, the distinct configurations (``keys``) on it, and its
    rows out of ``rows``."""
    points = len(on_front[list(objective)].drop_duplicates())
    configs = len(on_front[[*objective, *keys]].drop_duplicates()) if keys else points
    return (
        f"{points} point{'s' * (points != 1)}, reached by {configs}"
        f" configuration{'s' * (configs != 1)} in {len(on_front)} of {rows} rows"
    )


def of_table(path: Path, objective: object, direction: object) -> str:
    """:func:`describe` for a merged table and the sweep's ``objective`` and sweeper
    ``direction`` settings; "" unless the objective is a list of two or more."""
    wanted = [objective] if isinstance(objective, str) else list(objective or [])  # type: ignore[call-overload]
    if len(wanted) < 2 or not path.is_file():
        return ""
    df = pd.read_parquet(path)
    if any(c not in df for c in wanted):
        return ""
    on_front = front(df, wanted, directions_of(direction, len(wanted)))
    ok = df[df["status"] == STATUS_OK]
    keys = [
        c for c in ok.columns if "." in c and c not in wanted and ok[c].nunique(dropna=False) > 1
    ]
    return describe(on_front, wanted, keys, len(ok))

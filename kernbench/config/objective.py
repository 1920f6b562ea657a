"""``objective``: the result column(s) a run hands back to Hydra's optimizing sweepers.

``objective`` (a top-level key, default null) names a number column of the run's row,
or a list of them. A run's task function then returns that column's value (a float;
a tuple of floats for two or more names) instead of its status, so
``hydra/sweeper=optuna`` (or nevergrad) can minimise it; a single run prints it
(``objective: kernel_latency_ns = 4364.6875``). It is not a result column itself and not
part of the point cache's key: what is optimised does not change what is simulated.

A point that ends in an error row, or whose objective column is null, returns None:
Optuna's sweeper makes that a failed trial (``TrialState.FAIL``, "Return value must be
float-castable") and goes on with the study. Raising instead would end the study at
the first failure (its ``max_failure_rate`` is 0 by default), and NaN ends it too
(hydra-optuna-sweeper 1.3.0 passes the NaN on when it marks the trial failed, which
Optuna refuses). docs/how-to/search.md says the same for users.

This module owns the check (:func:`check`, a validation rule; the command line's
pre-check calls :func:`check_names` with what it knows before composing) and the value
(:func:`value`). The columns a row has come from the config and from
:mod:`kernbench.config.columns`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.cli.suggest import did_you_mean
from kernbench.config.columns import NUMBER, TEXT, metric_columns
from kernbench.errors import ConfigError

KEY = "objective"
# Config keys that are not result columns (kernbench.results.table: config_columns).
_NOT_COLUMNS = ("paths.", "cache", KEY)

Value = float | tuple[float, ...] | None


def names(objective: Any) -> list[str]:
    """The column names ``objective`` gives ([] for null): one name or a list."""
    if objective is None:
        return []
    if isinstance(objective, str):
        items: list[Any] = [objective]
    elif isinstance(objective, Sequence):
        items = list(objective)
    else:
        raise ConfigError(KEY, f"{objective!r} is not a column name or a list of column names")
    if not items:
        raise ConfigError(KEY, "an empty list: name a number column of the row, or leave it null")
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(KEY, f"{item!r} is not a column name")
    repeated = sorted({n for n in items if items.count(n) > 1})
    if repeated:
        raise ConfigError(KEY, f"{', '.join(repeated)} is named twice")
    return items


def check(cfg: Any) -> None:
    """Validation rule: every name ``cfg.objective`` gives is a number column of the
    rows ``cfg`` makes (a metric of its workload, a timing, or a number config key)."""
    wanted = names(getattr(cfg, KEY, None))
    if not wanted:
        return
    from kernbench.config.flatten import flatten

    columns = {k: _kind(v) for k, v in flatten(cfg).items() if not k.startswith(_NOT_COLUMNS)}
    measure = bool(getattr(getattr(cfg, "sim", None), "measure_speed", False))
    metrics = metric_columns(cfg.workload, measure)
    check_names(wanted, columns | metrics, metrics, f"workload {cfg.workload.name}")


def check_names(
    wanted: list[str], columns: Mapping[str, str], metrics: Mapping[str, str], label: str
) -> None:
    """Raise one ConfigError for the first name that is not a number column of
    ``columns`` (everything a row of ``label`` holds), listing ``metrics``'s."""
    for name in wanted:
        kind = columns.get(name)
        if kind is None:
            numbers = [m for m, k in metrics.items() if k == NUMBER]
            hint = did_you_mean(name, metrics) or did_you_mean(name, columns)
            raise ConfigError(
                KEY,
                f"{name} is not a column of {label}'s rows (its number columns:"
                f" {', '.join(numbers)}, and every number config key such as"
                f" topology.pes_per_cube){hint}",
            )
        if kind == TEXT:
            raise ConfigError(
                KEY,
                f"{name} is a text column of {label}'s rows, not a number: an objective"
                " is a number to minimise or maximise",
            )


def value(row: Mapping[str, Any], objective: Any) -> Value:
    """The objective of one result row: a float for one name, a tuple for more; None
    when the row is an error row or a named column is null (a failed trial)."""
    wanted = names(objective)
    if not wanted or row.get("status") != "ok":
        return None
    values = []
    for name in wanted:
        v = row.get(name)
        if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
            return None
        values.append(float(v))
    return values[0] if len(values) == 1 else tuple(values)


def describe(objective: Any, result: Value) -> str:
    """``objective: kernel_latency_ns = 4364.6875, hbm_channels_used = 16.0``, or
    ``objective: none (...)`` for a failed point."""
    wanted = names(objective)
    if result is None:
        return f"objective: none ({', '.join(wanted)}: the point failed or has no value)"
    values = result if isinstance(result, tuple) else (result,)
    return "objective: " + ", ".join(f"{n} = {v!r}" for n, v in zip(wanted, values, strict=True))


def _kind(value: Any) -> str:
    """A config column's kind by its value (a null one may hold a number)."""
    if isinstance(value, bool | str):
        return TEXT
    return NUMBER

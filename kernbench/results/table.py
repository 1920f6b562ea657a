"""Result rows -> Arrow table -> Parquet file, written atomically.

DESIGN §6: a job's rows land in ``result.parquet`` in its output directory; a reader
never sees half a file, because the table is written to a temporary file in the same
directory and renamed over the target. Column order is fixed here, in one place:
flattened config, identity, ``status``, ``error``, metrics, then how this row was
obtained: ``cached`` (served from the point cache, :mod:`kernbench.sweep.cache`) and the
wall-clock timings (``sim_wall_s``, the simulation alone, and ``wall_s``, the whole job).
Those last three are the only columns that may differ between two runs of one point.
:func:`rows_to_table` is the single place that decides column types, so merging rows
from many jobs (a sweep) is ``rows_to_table(all_rows)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kernbench.errors import printable
from kernbench.files import replaced
from kernbench.results.identity import identity
from kernbench.units import INT64_MAX, INT64_MIN

RESULT_FILE = "result.parquet"
STATUS_OK = "ok"
STATUS_ERROR = "error"

# Columns whose type does not depend on the values (they may be null in every row).
FIXED_TYPES: dict[str, pa.DataType] = {
    "sweep_id": pa.string(),
    "job_num": pa.int64(),
    "config_hash": pa.string(),
    "kernbench_version": pa.string(),
    "git_commit": pa.string(),
    "build": pa.string(),
    "status": pa.string(),
    "error": pa.string(),
    "cached": pa.bool_(),
    "sim_wall_s": pa.float64(),
    "wall_s": pa.float64(),
}


# Config subtrees that say where outputs go, not what was simulated (conf/paths/).
LOCATION_PREFIXES: tuple[str, ...] = ("paths.",)
# Top-level keys that say how the app runs, not what was simulated (``cache=false``,
# ``objective``: what an optimizing sweeper is told, kernbench.config.objective).
RUN_OPTIONS: frozenset[str] = frozenset({"cache", "objective"})


def config_columns(flat_config: Mapping[str, Any]) -> dict[str, Any]:
    """The flattened config without its output locations and run options: those are
    not model inputs, and a run directory's timestamp would make identical runs' rows
    differ (and the point cache's key is built from these columns)."""
    return {
        k: v
        for k, v in flat_config.items()
        if not k.startswith(LOCATION_PREFIXES) and k not in RUN_OPTIONS
    }


def make_row(
    flat_config: Mapping[str, Any],
    *,
    status: str,
    error: str | None = None,
    metrics: Mapping[str, Any] | None = None,
    wall_s: float | None = None,
    timings: Mapping[str, float | None] | None = None,
    sweep_id: str | None = None,
    job_num: int | None = None,
    cached: bool = False,
    groups: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """One result row with its columns in table order (``sweep_id`` and ``job_num``
    only inside a sweep; ``cached`` when the metrics came from the point cache).
    ``groups`` (the options the user composed it from,
    :func:`kernbench.config.columns.group_columns`) lead it, outside the config hash."""
    if status not in (STATUS_OK, STATUS_ERROR):
        raise ValueError(f"status must be {STATUS_OK!r} or {STATUS_ERROR!r}, got {status!r}")
    row: dict[str, Any] = dict(groups or {})
    row.update(flat_config)
    row.update(identity(flat_config, sweep_id=sweep_id, job_num=job_num))
    row.update(status=status, error=error)
    row.update(metrics or {})
    row["cached"] = cached
    row.update(timings or {})
    row["wall_s"] = wall_s
    return row


def rows_to_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Build the table: columns in first-seen order, each with one type for all rows.

    A row without a column gets null there. A column holding both numbers and strings
    (``workload.active_pes`` is a count or ``"all"``) becomes a string column, so rows
    from different jobs always fit one schema. A value Arrow cannot store (text that is
    not UTF-8, as a command line's undecodable bytes arrive) makes its row an error row
    naming the column (:func:`_unrepresentable_to_errors`): one row never costs the
    table its other rows.
    """
    try:
        return _build(rows)
    except (pa.ArrowException, UnicodeError, OverflowError, TypeError, ValueError):
        return _build(_unrepresentable_to_errors(rows))


def _build(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    names = list(dict.fromkeys(name for row in rows for name in row))
    arrays = []
    for name in names:
        values = [row.get(name) for row in rows]
        dtype = FIXED_TYPES.get(name) or infer_type(values)
        if pa.types.is_string(dtype):
            values = [None if v is None else str(v) for v in values]
        arrays.append(pa.array(values, type=dtype))
    return pa.Table.from_arrays(arrays, names=names)


def _unrepresentable_to_errors(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows with every value Arrow cannot store replaced (text with its bad bytes
    escaped, anything else null) and its row made an error row that names the column
    and the value: the row still says which point it was, and the point is not ok."""
    out = [dict(row) for row in rows]
    names = list(dict.fromkeys(name for row in rows for name in row))
    for name in names:
        values = [row.get(name) for row in out]
        dtype = FIXED_TYPES.get(name) or infer_type(values)
        text = pa.types.is_string(dtype)
        for row in out:
            value = row.get(name)
            if value is None:
                continue
            try:
                pa.array([str(value) if text else value], type=dtype)
            except (pa.ArrowException, UnicodeError, OverflowError, TypeError, ValueError):
                shown = printable(str(value))
                row[name] = shown if text else None
                row["status"] = STATUS_ERROR
                row["error"] = (
                    f"column {name}: the value '{shown}' cannot be stored as"
                    f" {dtype} in the results table"
                )
    return out


def infer_type(values: Iterable[Any]) -> pa.DataType:
    """Arrow type for one column: bool, int64, float64, string, or null if all null
    (a column with an integer beyond int64 is string)."""
    kinds = {_kind(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds == {"bool"}:
        return pa.bool_()
    if kinds == {"int"}:
        return pa.int64()
    if kinds <= {"int", "float"}:
        return pa.float64()
    return pa.string()


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        # Beyond int64 (an error row records what was asked for, however large): text,
        # so one row never stops the table's other rows from being written.
        return "int" if INT64_MIN <= value <= INT64_MAX else "str"
    if isinstance(value, float):
        return "float"
    return "str"


def write_table_atomic(table: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write ``table`` as Parquet at ``path`` whole, by rename (:mod:`kernbench.files`)."""
    with replaced(path) as tmp:
        pq.write_table(table, tmp)
    return Path(path)


def write_rows(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Build the table from ``rows`` and write it atomically to ``path``."""
    return write_table_atomic(rows_to_table(rows), path)

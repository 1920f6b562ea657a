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

A table also says, in its schema's metadata (:data:`ROW_DIGESTS`), the digest of each of
its ok rows' columns other than the config (:func:`row_digests`): resume keeps a row of
``results.parquet`` only if the table still holds it as it was written
(:mod:`kernbench.sweep.claim`). Its config columns are vouched for by ``config_hash``,
which is in the digest and which resume checks them against; so two rows' metrics
swapped, or one edited, drop both rows, where a row's config alone could not tell.
"""

from __future__ import annotations

import hashlib
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


# The schema metadata key of a table's row digests (row_digests: DIGEST_DIGITS hex digits
# each, one after another, for its ok rows).
ROW_DIGESTS = b"kernbench.row_digests"
DIGEST_DIGITS = 16


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
    table = pa.Table.from_arrays(arrays, names=names)
    digests = "".join(d for d in row_digests(table) if d is not None)
    return table.replace_schema_metadata({ROW_DIGESTS: digests})


def row_digests(table: pa.Table) -> list[str | None]:
    """Per row, :data:`DIGEST_DIGITS` hex digits of sha256 over the names and values,
    as the table holds them, of its columns other than the config (no dot in the name:
    groups, identity with ``config_hash``, status, metrics, timings); None for a row
    that is not ok (resume keeps none). Values are taken from the table, not the rows
    it was built from, so the writer and a reader see the same ints and floats."""
    names = [name for name in table.column_names if "." not in name]
    if "status" not in names:
        return [None] * table.num_rows
    columns = [table.column(name).to_pylist() for name in names]
    head = hashlib.sha256(repr(names).encode())
    status = names.index("status")
    digests: list[str | None] = []
    for values in zip(*columns, strict=True):
        if values[status] != STATUS_OK:
            digests.append(None)
            continue
        digest = head.copy()
        digest.update(repr(values).encode())
        digests.append(digest.hexdigest()[:DIGEST_DIGITS])
    return digests


def stored_digests(table: pa.Table) -> set[str]:
    """The row digests a table was written with (:data:`ROW_DIGESTS`); none for a table
    another program wrote."""
    held = (table.schema.metadata or {}).get(ROW_DIGESTS, b"").decode("ascii", "replace")
    return {held[i : i + DIGEST_DIGITS] for i in range(0, len(held), DIGEST_DIGITS)}


def stored_value(value: Any, dtype: pa.DataType) -> Any:
    """``value`` as a column of ``dtype`` gives it back (:func:`_build`'s conversions:
    text in a string column, a float in a double column): what a row read from a table
    holds where its point's config held ``value``."""
    if value is None:
        return None
    if pa.types.is_string(dtype):
        return str(value)
    if pa.types.is_floating(dtype):
        return float(value)
    return value


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

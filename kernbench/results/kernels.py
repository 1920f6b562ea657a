"""The per-launch table, ``kernels.parquet``: one row per kernel launch of a point.

DESIGN §13.2. A workload that launches several kernels (``decoder_layer``) returns
:class:`WithKernels`: its metrics row and one row per launch. A job writes the launch
rows beside its result, keyed by the point's identity (``sweep_id``, ``job_num``,
``config_hash``: join them to ``results.parquet`` on ``job_num`` and ``config_hash``);
a sweep's merge gathers its points' tables into one ``kernels.parquet`` in the sweep
directory (:func:`merge_kernel_tables`). This module owns that file; it must not touch
the simulator or Hydra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kernbench.results.table import STATUS_OK, rows_to_table, write_table_atomic

KERNELS_FILE = "kernels.parquet"
KEY_COLUMNS = ("sweep_id", "job_num", "config_hash")


@dataclass
class WithKernels:
    """A workload's metrics row and its per-launch rows, in launch order."""

    metrics: dict[str, Any]
    kernels: list[dict[str, Any]] = field(default_factory=list)


def keyed(ident: Mapping[str, Any], kernel_rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The launch rows with the point's identity columns first."""
    key = {name: ident.get(name) for name in KEY_COLUMNS}
    return [key | dict(row) for row in kernel_rows]


def write_kernel_rows(
    ident: Mapping[str, Any], kernel_rows: Sequence[Mapping[str, Any]], out_dir: Path
) -> Path:
    """Write a point's launch rows to ``out_dir/kernels.parquet``, atomically."""
    return write_table_atomic(rows_to_table(keyed(ident, kernel_rows)), out_dir / KERNELS_FILE)


def merge_kernel_tables(sweep_dir: Path, results: Sequence[Mapping[str, Any]]) -> Path | None:
    """Gather the points' ``<job>/kernels.parquet`` into ``sweep_dir/kernels.parquet``,
    keeping the rows of points that are ok rows of ``results`` (the merged table) with
    the same ``config_hash``: a table left by an earlier sweep into the same directory,
    or by a point that later failed, is not this sweep's. Ordered by job, then launch.
    None (nothing written) when no point wrote launch rows."""
    wanted = {
        (r.get("job_num"), r.get("config_hash")) for r in results if r.get("status") == STATUS_OK
    }
    rows: list[dict[str, Any]] = []
    for path in sorted(sweep_dir.glob(f"*/{KERNELS_FILE}")):
        try:
            found = pq.read_table(path).to_pylist()
        except Exception:  # a truncated or foreign file is not a point's table
            continue
        rows += [r for r in found if (r.get("job_num"), r.get("config_hash")) in wanted]
    if not rows:
        return None
    rows.sort(key=lambda r: (r.get("job_num") or 0, r.get("launch") or 0))
    return write_table_atomic(rows_to_table(rows), sweep_dir / KERNELS_FILE)

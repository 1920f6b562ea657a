"""Gather every job's ``result.parquet`` of a sweep into ``results.parquet`` (DESIGN §6).

This module owns the merged table of a sweep directory. It reads only files: a
callback's state in the launcher's workers is not visible here, and a sweep directory
left by an earlier run can be merged again by hand (:func:`merge_sweep`). Column types
are decided by :func:`kernbench.results.rows_to_table`, the same as for one job.

One bad point never loses the others: a job directory whose ``result.parquet`` is
missing or unreadable (the job was killed, or crashed outside ``run_job``) still gets a
row, ``status = "error"``, built from the config Hydra saved for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from omegaconf import OmegaConf

from kernbench.config import flatten
from kernbench.errors import ConfigError, printable
from kernbench.records import RecordError, read_record
from kernbench.results import (
    RESULT_FILE,
    STATUS_ERROR,
    config_columns,
    make_row,
    rows_to_table,
    write_table_atomic,
)
from kernbench.results.kernels import merge_kernel_tables

MERGED_FILE = "results.parquet"
_HYDRA_DIR = ".hydra"


@dataclass(frozen=True)
class MergeOutcome:
    """What a merge wrote: where, how many points ended ok or in error, and how many
    of them were served from the point cache."""

    path: Path
    n_rows: int
    n_errors: int
    n_cached: int = 0
    front: str = ""  # a list objective's Pareto front (kernbench.results.pareto.describe)

    @property
    def failed(self) -> bool:
        return self.n_errors > 0

    def summary(self) -> str:
        ok = self.n_rows - self.n_errors
        points = f"{self.n_rows} point" + ("" if self.n_rows == 1 else "s")
        counts = f"{points}, {ok} ok, {self.n_errors} error, {self.n_cached} cached"
        front = f"\nPareto front: {self.front} (kernbench-report lists them)" if self.front else ""
        return f"sweep: {counts} -> {self.path}{front}"


def merge_sweep(sweep_dir: str | Path) -> MergeOutcome:
    """Merge every job of ``sweep_dir`` into ``sweep_dir/results.parquet``, atomically.

    Rows are ordered by ``job_num`` (then by directory name), so the merged table
    reads in the order the sweep listed its points.
    """
    sweep_dir = Path(sweep_dir)
    rows = [row for job in job_dirs(sweep_dir) for row in job_rows(job, sweep_dir)]
    rows.sort(key=_order)
    path = write_table_atomic(rows_to_table(rows), sweep_dir / MERGED_FILE)
    merge_kernel_tables(sweep_dir, rows)  # the points' launch rows, if any
    n_errors = sum(row.get("status") == STATUS_ERROR for row in rows)
    n_cached = sum(bool(row.get("cached")) for row in rows)
    return MergeOutcome(path, len(rows), n_errors, n_cached)


def check_merged_path(sweep_dir: Path, key: str) -> None:
    """Raise :class:`ConfigError` (naming ``key``) if ``results.parquet`` could not be
    written into ``sweep_dir``: it is written by rename after the last point, so a
    directory (or anything but a file) in its place would fail only then, every point
    run. Called before the first point."""
    path = sweep_dir / MERGED_FILE
    if (path.exists() or path.is_symlink()) and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise ConfigError(
            key,
            f"{printable(str(path))} is {kind}, where the sweep writes its table; move it"
            " away or choose another directory",
        )


def job_dirs(sweep_dir: Path) -> list[Path]:
    """Every job directory under ``sweep_dir``: those Hydra saved a config into, plus
    any holding a result (a job that never got as far as Hydra's files)."""
    marked = {p.parent.parent for p in sweep_dir.rglob(f"{_HYDRA_DIR}/config.yaml")}
    written = {p.parent for p in sweep_dir.rglob(RESULT_FILE)}
    return sorted((marked | written) - {sweep_dir}, key=lambda p: p.relative_to(sweep_dir).parts)


def job_rows(job_dir: Path, sweep_dir: Path) -> Iterator[dict[str, Any]]:
    """The rows a job wrote, or one error row saying it wrote none."""
    path = job_dir / RESULT_FILE
    try:
        yield from pq.read_table(path).to_pylist()
        return
    except FileNotFoundError:
        why = f"job wrote no {RESULT_FILE} (killed, or crashed before writing)"
    except Exception as exc:  # a truncated or foreign file: record it, keep merging
        why = f"unreadable {RESULT_FILE}: {type(exc).__name__}: {exc}"
    yield _missing_row(job_dir, sweep_dir, " ".join(why.split()))


def _missing_row(job_dir: Path, sweep_dir: Path, why: str) -> dict[str, Any]:
    """The error row of a job that wrote none, with the config and job number its
    saved records hold; a record that does not read in bounded time
    (:mod:`kernbench.records`) is left out and said in the row's error."""
    saved = job_dir / _HYDRA_DIR
    flat: dict[str, Any] = {}
    job_num = None
    try:
        if (saved / "config.yaml").is_file():
            saved_cfg = OmegaConf.create(read_record(saved / "config.yaml"))
            flat = config_columns(flatten(saved_cfg))
        if (saved / "hydra.yaml").is_file():
            job_num = read_record(saved / "hydra.yaml")["hydra"]["job"].get("num")
    except RecordError as exc:
        why = f"{why}; {exc}"
    return make_row(flat, status=STATUS_ERROR, error=why, sweep_id=str(sweep_dir), job_num=job_num)


def _order(row: dict[str, Any]) -> tuple[bool, int]:
    num = row.get("job_num")
    return (num is None, num if isinstance(num, int) else 0)

"""One job: validate a composed config, simulate it (or serve it from the point cache),
and make its row: ``status="ok"`` with the metrics or ``status="error"`` with the
message, so a failure never looks like a success (DESIGN §7).

The command-line entry point (:mod:`kernbench.app`, a single run or Hydra's stock
sweep) and the fast sweep's workers (:mod:`kernbench.sweep.points`) both run their
points through :func:`run_job`; this module sits beneath both and imports neither. It
holds no Hydra state: importing it changes nothing in Hydra (``kernbench.app``'s
``@hydra.main`` sets the process's version base, so the sweep plugins, which run
other people's Hydra apps too, must never import that module).

Bad input prints one line to stderr (``kernbench: error: <key>: <value and limit>``)
and no traceback; an unexpected exception (a bug) prints its traceback.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from kernbench import simulate
from kernbench.cli import estimate
from kernbench.config import flatten
from kernbench.config.columns import KERNEL_COLUMNS, METRICS
from kernbench.config.schema import KernBenchConfig
from kernbench.config.validate import validate_and_flatten
from kernbench.errors import KernBenchError
from kernbench.results import (
    RESULT_FILE,
    STATUS_ERROR,
    STATUS_OK,
    config_columns,
    make_row,
    write_rows,
)
from kernbench.results.identity import identity
from kernbench.results.kernels import write_kernel_rows
from kernbench.sweep.cache import Hit, PointCache, point_key

if TYPE_CHECKING:
    from kernbench.sweep.progress import RunBar


@dataclass(frozen=True)
class JobId:
    """Where a job sits in a sweep (both None for a single run), and the group options
    it was composed from (:func:`kernbench.config.columns.group_columns`; its row's
    first columns)."""

    sweep_id: str | None = None
    job_num: int | None = None
    groups: Mapping[str, str | None] = field(default_factory=dict)


def run_job(
    cfg: DictConfig | KernBenchConfig,
    out_dir: Path,
    job: JobId | None = None,
    cache: PointCache | None = None,
    bar: RunBar | None = None,
    rows: list[dict[str, Any]] | None = None,
    prepared: Prepared | None = None,
    deferred: list[Callable[[], None]] | None = None,
) -> str:
    """Run one composed config, write its row to ``out_dir``, return the status.
    ``cfg`` may also be the typed object already (the fast sweep's typed path,
    :mod:`kernbench.sweep.typed`), handed over: it is validated in place; or, with
    ``prepared``, validated already (a sweep worker prepares a few points ahead).

    With ``rows`` the row is appended there instead of written (the fast sweep,
    :mod:`kernbench.sweep.points`, gathers a chunk's rows and its parent writes the
    merged table; ``out_dir`` then only receives a trace). With ``deferred``, a point
    simulated ok gets its row, and its metrics printed, from a function appended there,
    for the caller to call when it chooses (a sweep worker, once it has run a few
    points' simulations in a row; the row's ``wall_s`` does not count the wait).
    With a ``cache``, a point found there is not simulated (unless it asks for more
    than its metrics: :func:`must_simulate`), and a point simulated ok is stored.
    ``bar`` watches the simulation. Kept free of Hydra state so tests can call it on a
    config from ``compose``; the cache is explicit so they never share one by accident.
    """
    job = job or JobId()
    start = time.perf_counter() - (prepared.seconds if prepared else 0.0)
    typed: Any = cfg
    columns, key = None, None
    try:
        typed, columns = (prepared.config, prepared.columns) if prepared else prepare(cfg)
        if cache is not None and not must_simulate(typed):
            key = point_key(columns)
            kinds = type(typed.workload)
            hit = cache.load(key, METRICS.get(kinds), KERNEL_COLUMNS.get(kinds))
            if hit is not None:
                return _served(out_dir, job, columns, hit, time.perf_counter() - start, rows)
        trace_path = out_dir / "trace.parquet" if typed.sim.trace else None
        estimate.check(typed)  # time and memory: a point served from the cache takes neither
        result = simulate.run_validated(typed, trace_path=trace_path, observer=bar)
    except Exception as exc:  # every failure becomes an error row, never a lost job
        message = error_message(exc)
        wall_s = time.perf_counter() - start
        if columns is None:  # the config itself failed: record what was asked for
            columns = config_columns(flatten(typed))
        _write(out_dir, job, columns, STATUS_ERROR, message, None, wall_s, rows=rows)
        if not isinstance(exc, KernBenchError | OmegaConfBaseException):
            traceback.print_exc()
        print(f"kernbench: error: {message}", file=sys.stderr)
        return STATUS_ERROR
    if cache is not None and key is not None:
        cache.store(key, result.metrics, result.kernels)
    wall_s = time.perf_counter() - start

    def finish() -> None:
        if result.kernels:  # beside the row: kernels.parquet, keyed by the point
            ident = identity(columns, sweep_id=job.sweep_id, job_num=job.job_num)
            write_kernel_rows(ident, result.kernels, out_dir)
        path = _write(
            out_dir,
            job,
            columns,
            STATUS_OK,
            None,
            result.metrics,
            wall_s,
            result.timings,
            rows=rows,
        )
        print(result.summary())
        if path is not None:
            print(f"result: {path}")

    if deferred is None:
        finish()
    else:
        deferred.append(finish)
    return STATUS_OK


@dataclass
class Prepared:
    """A config :func:`prepare` has validated, its columns, and the seconds that took
    (the job's ``wall_s`` counts them)."""

    config: KernBenchConfig
    columns: dict[str, Any]
    seconds: float


def prepare(cfg: DictConfig | KernBenchConfig) -> tuple[KernBenchConfig, dict[str, Any]]:
    """The validated config (derived values filled in) and its row's config columns.
    A typed ``cfg`` is the run's own object (kernbench.sweep.typed built it), and
    ``to_object`` makes a new one: either way it is validated in place."""
    typed, flat = validate_and_flatten(cfg if is_dataclass(cfg) else OmegaConf.to_object(cfg))
    return typed, config_columns(flat)


def must_simulate(cfg: Any) -> bool:
    """A point whose output is more than its metrics row and launch rows is never
    served from the cache: ``sim.trace`` (the trace file) and ``sim.measure_speed``
    (the run's speed); nor one running a user's Triton kernel
    (``workload.kernel=pkg.module:fn``), whose source is not part of the cache key."""
    workload = getattr(cfg, "workload", None)
    user_kernel = ":" in str(getattr(workload, "kernel", ""))
    return bool(cfg.sim.trace or getattr(cfg.sim, "measure_speed", False) or user_kernel)


def _served(
    out_dir: Path,
    job: JobId,
    columns: dict[str, Any],
    hit: Hit,
    wall_s: float,
    rows: list[dict[str, Any]] | None = None,
) -> str:
    """Write the row (and launch rows) of a point found in the cache: no simulation,
    so no sim_wall_s."""
    if hit.launches:
        ident = identity(columns, sweep_id=job.sweep_id, job_num=job.job_num)
        write_kernel_rows(ident, hit.launches, out_dir)
    timings = {"sim_wall_s": None}
    metrics = hit.metrics
    path = _write(out_dir, job, columns, STATUS_OK, None, metrics, wall_s, timings, True, rows)
    print(simulate.RunResult(metrics).summary())
    print(f"result: {path} (from the point cache)" if path else "(from the point cache)")
    return STATUS_OK


def error_message(exc: BaseException) -> str:
    """One line naming the key and the limit (OmegaConf's own messages span lines)."""
    if isinstance(exc, OmegaConfBaseException):
        key = getattr(exc, "full_key", None)
        text = (str(exc).splitlines() or [type(exc).__name__])[0]  # the rest repeats the key
        text = f"{key}: {text}" if key else text
    elif isinstance(exc, KernBenchError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def _write(
    out_dir: Path,
    job: JobId,
    columns: dict[str, Any],
    status: str,
    error: str | None,
    metrics: dict[str, Any] | None,
    wall_s: float,
    timings: dict[str, float | None] | None = None,
    cached: bool = False,
    rows: list[dict[str, Any]] | None = None,
) -> Path | None:
    row = make_row(
        columns,
        status=status,
        error=error,
        metrics=metrics,
        wall_s=wall_s,
        timings=timings,
        sweep_id=job.sweep_id,
        job_num=job.job_num,
        cached=cached,
        groups=job.groups,
    )
    if rows is not None:
        rows.append(row)
        return None
    return write_rows([row], out_dir / RESULT_FILE)

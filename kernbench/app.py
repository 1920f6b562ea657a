"""The ``kernbench`` command: compose a config with Hydra, run it, write ``result.parquet``.

This module is the thin entry point of DESIGN §1: Hydra composes ``conf/`` (and
rejects unknown keys, wrong types and unknown group options itself, exiting 1); the
composed config is converted once into typed objects, validated, and handed to
:func:`kernbench.simulate.run`. Every job writes exactly one row to ``result.parquet``
in its Hydra output directory, ``status="ok"`` with the metrics or ``status="error"``
with the message, so a failure never looks like a success (DESIGN §7).

Bad input prints one line to stderr (``kernbench: error: <key>: <value and limit>``)
and no traceback. An unexpected exception (a bug) prints its traceback. Either way a
single run exits 1; inside a multirun the job returns its status instead, so one bad
point does not stop the sweep, and when the sweep ends (its rows merged into
``results.parquet`` by :class:`kernbench.sweep.callbacks.MergeResults`) the command
exits 1 if any point failed.
"""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from kernbench import simulate
from kernbench.config import flatten, validate
from kernbench.config.store import conf_dir, register_configs
from kernbench.errors import KernBenchError
from kernbench.results import (
    RESULT_FILE,
    STATUS_ERROR,
    STATUS_OK,
    config_columns,
    make_row,
    write_rows,
)
from kernbench.sweep import callbacks

register_configs()


@dataclass(frozen=True)
class JobId:
    """Where a job sits in a sweep (both None for a single run)."""

    sweep_id: str | None = None
    job_num: int | None = None


def run_job(cfg: DictConfig, out_dir: Path, job: JobId | None = None) -> str:
    """Run one composed config, write its row to ``out_dir``, return the status.

    Kept free of Hydra state so tests can call it on a config from ``compose``.
    """
    job = job or JobId()
    start = time.perf_counter()
    typed: Any = cfg
    try:
        typed = OmegaConf.to_object(cfg)
        typed = validate(typed)
        result = simulate.run(typed, *([out_dir / "trace.parquet"] if typed.sim.trace else []))
    except Exception as exc:  # every failure becomes an error row, never a lost job
        message = error_message(exc)
        _write(out_dir, job, typed, STATUS_ERROR, message, None, time.perf_counter() - start)
        if not isinstance(exc, KernBenchError | OmegaConfBaseException):
            traceback.print_exc()
        print(f"kernbench: error: {message}", file=sys.stderr)
        return STATUS_ERROR
    wall_s = time.perf_counter() - start
    path = _write(out_dir, job, typed, STATUS_OK, None, result.metrics, wall_s, result.timings)
    print(result.summary())
    print(f"result: {path}")
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
    cfg: Any,
    status: str,
    error: str | None,
    metrics: dict[str, Any] | None,
    wall_s: float,
    timings: dict[str, float] | None = None,
) -> Path:
    row = make_row(
        config_columns(flatten(cfg)),
        status=status,
        error=error,
        metrics=metrics,
        wall_s=wall_s,
        timings=timings,
        sweep_id=job.sweep_id,
        job_num=job.job_num,
    )
    return write_rows([row], out_dir / RESULT_FILE)


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def _hydra_task(cfg: DictConfig) -> str:
    hydra_cfg = HydraConfig.get()
    job = JobId()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        job = JobId(sweep_id=str(hydra_cfg.sweep.dir), job_num=int(hydra_cfg.job.num))
    status = run_job(cfg, Path(hydra_cfg.runtime.output_dir), job)
    if status != STATUS_OK and hydra_cfg.mode == RunMode.RUN:
        raise SystemExit(1)
    return status


def main() -> None:
    """Console-script entry point (``kernbench``); Hydra reads ``sys.argv``.

    After a sweep, says where the merged table is and exits 1 if any point failed.
    """
    _hydra_task()
    outcome = callbacks.pop_outcome()
    if outcome is None:
        return
    print(outcome.summary())
    if outcome.failed:
        print(
            f"kernbench: error: {outcome.n_errors} of {outcome.n_rows} sweep points failed;"
            f" see the status and error columns of {outcome.path}",
            file=sys.stderr,
        )
        raise SystemExit(1)


if __name__ == "__main__":
    main()

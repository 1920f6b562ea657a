"""The ``kernbench`` command: compose a config with Hydra, run it, write ``result.parquet``.

This module is the thin entry point of DESIGN §1: Hydra composes ``conf/`` (and
rejects unknown keys, wrong types and unknown group options itself, exiting 1); the
composed config is converted once into typed objects, validated, and handed to
:func:`kernbench.simulate.run`. Every job writes exactly one row to ``result.parquet``
in its Hydra output directory, ``status="ok"`` with the metrics or ``status="error"``
with the message, so a failure never looks like a success (DESIGN §7).

Each job runs through :func:`kernbench.job.run_job` (the fast sweep's workers call it
too, without this module: its ``@hydra.main`` sets Hydra's version base for the whole
process). Bad input prints one line to stderr and no traceback; an unexpected
exception (a bug) prints its traceback. Either way a single run exits 1; inside a
multirun the job returns its status instead, so one bad point does not stop the
sweep, and when the sweep ends (its rows merged into ``results.parquet`` by
:class:`kernbench.sweep.callbacks.MergeResults`) the command exits 1 if any point
failed.

A point whose config (and code) was simulated before is served from the point cache
(:mod:`kernbench.sweep.cache`, in ``paths.cache_dir``; ``cache=false`` turns it off): its
row is the stored metrics with ``cached = True``. A single run on a terminal shows a
progress bar (:class:`kernbench.sweep.progress.RunBar`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

import hydra
import pyarrow.parquet as pq
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from kernbench.cli import entry
from kernbench.config import objective
from kernbench.config.columns import group_columns
from kernbench.config.store import conf_dir, register_configs
from kernbench.job import JobId, run_job
from kernbench.results import RESULT_FILE, STATUS_OK
from kernbench.sweep import callbacks, outputs, stop
from kernbench.sweep.cache import PointCache
from kernbench.sweep.points import point_task
from kernbench.sweep.progress import RunBar

register_configs()


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
@point_task  # the fast sweep runs its points through run_job (kernbench.sweep.points)
def _hydra_task(cfg: DictConfig) -> str | objective.Value:
    stop.checkpoint()  # a Ctrl-C lost while Hydra wrote .hydra/ (kernbench.sweep.stop)
    hydra_cfg = HydraConfig.get()
    groups = group_columns(hydra_cfg.runtime.choices)
    job = JobId(groups=groups)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        job = JobId(str(hydra_cfg.sweep.dir), int(hydra_cfg.job.num), groups)
    cache = point_cache(cfg, Path(hydra_cfg.runtime.cwd))
    out_dir = Path(hydra_cfg.runtime.output_dir)
    # A sweep reports per point (SweepProgress); a bar is for one run on a terminal.
    single = hydra_cfg.mode == RunMode.RUN
    written = outputs.reported(out_dir) if single else contextlib.nullcontext()
    with written, RunBar(enabled=None if single else False) as bar:
        status = run_job(cfg, out_dir, job, cache, bar)
    if status != STATUS_OK and hydra_cfg.mode == RunMode.RUN:
        raise SystemExit(1)
    wanted = cfg.get(objective.KEY)
    if wanted is None:
        return status
    return objective_of_run(
        out_dir, OmegaConf.to_container(wanted) if OmegaConf.is_config(wanted) else wanted
    )


def objective_of_run(out_dir: Path, wanted: Any) -> objective.Value:
    """The ``objective`` of the row a job wrote (read back, so it is exactly what
    ``results.parquet`` will hold), printed; None for an error row (a failed trial)."""
    rows = pq.read_table(out_dir / RESULT_FILE).to_pylist()
    result = objective.value(rows[0], wanted) if rows else None
    print(objective.describe(wanted, result))
    return result


def point_cache(cfg: DictConfig, launch_dir: Path) -> PointCache | None:
    """The point cache ``cfg`` asks for, or None with ``cache=false``. A relative
    ``paths.cache_dir`` is taken from the directory ``kernbench`` was started in, which
    Hydra records for every job, wherever a launcher runs it."""
    if not cfg.get("cache", True):
        return None
    return PointCache(launch_dir / str(cfg.paths.cache_dir))


def main() -> None:
    """Console-script entry point (``kernbench``); Hydra reads ``sys.argv``.

    After a sweep, says where the merged table is and exits 1 if any point failed.
    ``--help``, ``--keys``, ``--cfg job`` and overrides that cannot be right are
    answered before Hydra runs (:mod:`kernbench.cli`).
    """
    sys.argv[1:] = entry.before_hydra(sys.argv[1:])  # what Hydra's main reads
    run()


def run() -> None:
    """Run the Hydra app on ``sys.argv`` as :func:`kernbench.cli.entry.before_hydra`
    left it (the console script, :mod:`kernbench.cli.command`, calls that first).

    Ctrl-C is recorded as well as raised (:func:`kernbench.sweep.stop.handled`), so
    one whose exception is lost where it lands (inside ``int()`` in OmegaConf's YAML
    dumper while Hydra writes ``.hydra/``, or in a finalizer) still stops the run at
    the next checkpoint; a second one leaves at once. A sweep's sweeper handles its
    own stop inside."""
    with stop.handled((signal.SIGINT,)):
        try:
            _hydra_task()
        except KeyboardInterrupt:
            stop.run_interrupted()
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

"""The Hydra callbacks of a sweep: progress as points finish, the merge at the end;
and of a run: its output directory checked before anything is written there.

``conf/config.yaml`` lists :class:`MergeResults` under ``hydra.callbacks``. Hydra runs
``on_multirun_end`` in the main process after every job has returned, so the merge
reads the job directories from disk (job events run inside the launcher's workers,
whose state never reaches this process). The outcome is kept in this module for
:func:`kernbench.app.main`, which turns a failed point into a non-zero exit status:
Hydra's multirun itself returns normally when jobs report errors.

:class:`SweepProgress` logs each finished point with the count done, the total and the
time left; its state lives in the sweep directory (:mod:`kernbench.sweep.progress`).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf

from kernbench.errors import ConfigError
from kernbench.results import pareto
from kernbench.sweep import outputs, progress
from kernbench.sweep.merge import MergeOutcome, check_merged_path, merge_sweep

_outcomes: list[MergeOutcome] = []
_merged_dirs: set[str] = set()  # sweeps the fast sweeper merged itself


class MergeResults(Callback):
    """Write ``results.parquet`` in the sweep directory at the end of a multirun."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        if str(sweep_dir.resolve()) in _merged_dirs:
            return  # the fast sweeper (kernbench.sweep.sweeper) wrote the table itself
        with outputs.reported(sweep_dir):
            outcome = merge_sweep(sweep_dir)
        _outcomes.append(with_front(outcome, config))


class OutputsWritable(Callback):
    """A single run's output directory made and written to before Hydra writes its
    records there: a read-only, foreign or full location is one line and exit 1
    (:mod:`kernbench.sweep.outputs`). A stock sweep's ``results.parquet`` path is
    checked before its first job (the fast sweeper checks its directory itself)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        outputs.check_writable(str(config.hydra.run.dir), outputs.location_key(config, "run"))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not progress.is_stock_sweep(config):
            return
        try:
            check_merged_path(Path(str(config.hydra.sweep.dir)), "hydra.sweep.dir")
        except ConfigError as exc:
            print(f"kernbench: error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None


class SweepProgress(Callback):
    """``point 3/8 done (job 5), 4.1 s elapsed, ~6.8 s left`` as each job of Hydra's
    stock sweeper ends (the fast sweeper has its own :class:`progress.SweepBar`)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not progress.is_stock_sweep(config):
            return  # the fast sweeper reports progress itself (progress.SweepBar)
        sweep_dir = Path(str(config.hydra.sweep.dir))
        progress.start_sweep(sweep_dir, progress.sweep_size(config))

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        mode = config.hydra.get("mode")
        if getattr(mode, "name", mode) != "MULTIRUN" or not progress.is_stock_sweep(config):
            return  # a single run, or a fast sweep's chunk job
        num = int(config.hydra.job.num)
        progress.log.info(progress.finish_point(Path(str(config.hydra.sweep.dir)), num))


def nothing_to_merge(sweep_dir: Path) -> None:
    """A dry run: no table is written at the end of the multirun (the directory may
    hold another sweep's)."""
    _merged_dirs.add(str(sweep_dir.resolve()))


def with_front(outcome: MergeOutcome, config: DictConfig) -> MergeOutcome:
    """``outcome`` with the Pareto front of its table when ``config``'s ``objective``
    is a list (its directions: ``hydra.sweeper.direction``, Optuna's and kernbench's
    sweepers' key), for the sweep's last line."""
    objective = OmegaConf.select(config, "objective")
    direction = OmegaConf.select(config, "hydra.sweeper.direction")
    if isinstance(objective, ListConfig):
        objective = list(objective)
    if isinstance(direction, ListConfig):
        direction = list(direction)
    return dataclasses.replace(outcome, front=pareto.of_table(outcome.path, objective, direction))


def record_outcome(outcome: MergeOutcome, sweep_dir: Path) -> None:
    """The fast sweeper's merge: reported by :func:`kernbench.app.main` like ours, and
    not merged again from job files at the end of the multirun."""
    _merged_dirs.add(str(sweep_dir.resolve()))
    _outcomes.append(outcome)


def pop_outcome() -> MergeOutcome | None:
    """The last merge's outcome in this process, cleared so it is reported once."""
    outcome = _outcomes[-1] if _outcomes else None
    _outcomes.clear()
    return outcome

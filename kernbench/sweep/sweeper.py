"""The fast multirun: Hydra's sweeper and launcher plugins named ``kernbench`` (DESIGN §9).

``hydra_plugins/kernbench_sweep/`` registers these classes (thin subclasses there, since
Hydra only instantiates plugins from the ``hydra_plugins`` package):

- :class:`FastSweeper` (``hydra/sweeper=kernbench``, the default): expands the grid as
  Hydra's basic sweeper does (command line and ``hydra.sweeper.params``, in the same
  order), composes once per shape (:mod:`kernbench.sweep.plan`), refuses a bad key or
  type before anything runs, and for kernbench's own task runs the points in chunks and
  writes ``results.parquet`` itself (:mod:`kernbench.sweep.run`). ``dry_run=true``
  composes and validates every point and runs nothing. Any other task function is
  launched batch by batch, as the basic sweeper does.
- :class:`FastLauncher` (``hydra/launcher=kernbench``, the default): ``n_jobs`` forked
  worker processes. The sweeper hands it chunks; Hydra's ``launch`` API (used by the
  basic sweeper and by Hydra's plugin test suites) composes per shape too and runs each
  job with Hydra's ``run_job`` in the workers.

With another launcher (``basic``, ``joblib``, ``submitit_*``, ``ray``) the sweeper
sends it chunks as jobs (:mod:`kernbench.sweep.remote`): one task per
``hydra.sweeper.chunk_size`` points.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from kernbench.errors import ConfigError, one_line
from kernbench.files import write_atomic
from kernbench.results import pareto
from kernbench.sweep import callbacks, claim, outputs, pool, stop
from kernbench.sweep.plan import Plan, Planner, screen, value_errors, without_hydra
from kernbench.sweep.points import TIMEOUT_KEY, Chunk, PointResult, is_point_task, point_rows
from kernbench.sweep.repeats import drop_repeats
from kernbench.sweep.run import (
    CLUSTER_CHUNK,
    POINTS_LOG,
    PointsLog,
    fixed_sizes,
    guided_sizes,
    make_chunks,
    run_plan,
    write_records,
)
from kernbench.sweep.settings import MAX_TIMEOUT_S

log = logging.getLogger("kernbench.sweep")

# The sweeping process holds every point (its overrides, its plan entry, its row):
# ~16 KB a point measured (a 10,000-point sweep peaks at 262 MB:
# docs/explanation/speed.md). A grid past MAX_POINTS is refused before it is
# enumerated, which alone would take minutes.
POINT_KB = 16
MAX_POINTS = 1_000_000


def count_points(overrides: Sequence[Any], limit: int) -> int:
    """The grid's size without enumerating it: the product of each key's sweep length,
    counted up to ``limit + 1``. A key given twice (in a preset's grid and on the
    command line) is one axis, its last value's, as Hydra's basic sweeper takes it
    (``split_arguments``): counting both made 480 points of 160."""
    lengths = {o.get_key_element(): _sweep_length(o, limit) for o in overrides}
    total = 1
    for length in lengths.values():
        total = min(total * length, limit + 1)
    return total


def _sweep_length(override: Any, limit: int) -> int:
    """How many values ``override`` sets (1 unless it sweeps), counted up to ``limit
    + 1`` (a range of integers is measured, not walked)."""
    from hydra.core.override_parser.types import RangeSweep

    if not override.is_sweep_override():
        return 1
    value = override.value()
    ints = isinstance(value, RangeSweep) and all(
        isinstance(v, int) for v in (value.start, value.stop, value.step)
    )
    if ints:
        return len(range(value.start, value.stop, value.step))
    return sum(1 for _ in itertools.islice(override.sweep_string_iterator(), limit + 1))


class FastLauncher(Launcher):
    """Runs jobs, or a sweeper's chunks, on ``n_jobs`` local worker processes."""

    def __init__(self, n_jobs: int = -1) -> None:
        self.n_jobs = n_jobs
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None
        self.pool: pool.LocalPool | None = None  # started early by the sweeper
        self.points_log: PointsLog | None = None  # under another sweeper (optuna)

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.task_function = task_function
        self.hydra_context = hydra_context
        if not str(config.hydra.sweeper.get("_target_", "")).startswith("hydra_plugins.kernbench"):
            self.points_log = quiet_optimizer(Path(str(config.hydra.sweep.dir)))

    @property
    def workers(self) -> int:
        return pool.worker_count(self.n_jobs)

    def start_workers(
        self,
        points: int,
        warm: DictConfig | None = None,
        request: stop.StopRequest | None = None,
    ) -> None:
        """Fork the workers now (no more than there are ``points``), for the chunks
        :meth:`run_chunks` will be given; each warms up on the ``warm`` task config.
        They stop in order when ``request`` fires (:mod:`kernbench.sweep.stop`)."""
        if self.pool is None:
            workers = max(1, min(self.workers, points))
            self.pool = pool.LocalPool(
                workers, self.task_function, self.hydra_context, warm, request
            )
        self.pool.start()

    def stop_workers(self) -> None:
        """Shut down workers started by :meth:`start_workers` and never used."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def run_chunks(self, chunks: Iterable[Chunk], on_result: Any) -> None:
        """Run a sweeper's chunks, on the workers :meth:`start_workers` forked if any;
        ``on_result`` sees each point as its chunk ends."""
        if self.pool is None:
            pool.run_chunks(chunks, self.workers, on_result, self.task_function, self.hydra_context)
            return
        started, self.pool = self.pool, None
        started.run(chunks, on_result)

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        """Hydra's launcher API: every job as Hydra's ``run_job`` runs it."""
        assert self.config is not None and self.hydra_context is not None
        plan = Planner(self.hydra_context.config_loader, self.config).plan(
            job_overrides, initial_job_idx
        )
        base = {"sweep_dir": str(self.config.hydra.sweep.dir), "kernbench": False}
        chunks = list(make_chunks(plan, guided_sizes(self.workers), base))
        log.info(f"Launching {len(plan.points)} jobs on {self.workers} local workers")
        results: dict[int, PointResult] = {}
        self.run_chunks(chunks, lambda r: results.__setitem__(r.num, r))
        if self.points_log is not None:  # each trial's block, in job order
            for p in plan.points:
                self.points_log.write(results[p.num].log)
        return [_job_return(results[p.num]) for p in plan.points]


# Loggers of an optimizing sweeper and its library: their set-up lines and per-study
# report (Optuna's 25-line "Number of Pareto solutions") go to points.log; the front
# the terminal shows is kernbench's (kernbench.report.pareto, printed at the end).
OPTIMIZER_LOGGERS = ("hydra_plugins.hydra_optuna_sweeper", "optuna", "alembic")


def quiet_optimizer(sweep_dir: Path) -> PointsLog:
    """Send :data:`OPTIMIZER_LOGGERS` to ``<sweep>/points.log`` (plain text, no colour
    codes) instead of the terminal, and return the log the trials' blocks go to."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(sweep_dir / POINTS_LOG, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s] %(message)s"))
    for name in OPTIMIZER_LOGGERS:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):  # optuna's own (coloured) stderr handler
            if isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
                logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
    return PointsLog(sweep_dir / POINTS_LOG)


def _job_return(result: PointResult) -> JobReturn:
    if result.job_return is not None:
        return result.job_return
    from hydra.core.utils import JobStatus

    return JobReturn(status=JobStatus.FAILED, _return_value=RuntimeError(result.error))


class FastSweeper(Sweeper):
    """Expands the grid, composes per shape, runs kernbench's points in chunks."""

    def __init__(
        self,
        max_batch_size: int | None = None,
        params: dict[str, str] | None = None,
        dry_run: bool = False,
        chunk_size: int | str | None = None,
        point_timeout_s: float | None = None,
        resume: bool = False,
        direction: Any = None,
    ) -> None:
        self.max_batch_size = max_batch_size
        self.params = params or {}
        self.dry_run = dry_run
        self.chunk_size = chunk_size
        self.point_timeout_s = point_timeout_s
        self.resume = resume
        self.direction = direction
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from hydra.core.plugins import Plugins

        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def batches(self, arguments: list[str]) -> list[list[list[str]]]:
        """The points, in batches, exactly as Hydra's basic sweeper lists them; a sweep
        that selects nothing (``glob(*)`` on a value key) is one error line, exit 1."""
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

        lines = [f"{k}={v}" for k, v in self.params.items()] + list(arguments)
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides(lines)
        for override in overrides:
            if (
                override.is_sweep_override()
                and next(override.sweep_string_iterator(), None) is None
            ):
                _refuse(override.input_line or override.key_or_group, "selects no value")
        count = count_points(overrides, MAX_POINTS)
        if self.dry_run:
            shown = f"{count:,}" if count <= MAX_POINTS else f"more than {MAX_POINTS:,}"
            outputs.say(f"dry run: {shown} points; composing and checking each")
        if count > MAX_POINTS:
            _refuse(
                "hydra.sweeper.params",
                f"the grid has more than {MAX_POINTS:,} points, the most one sweep holds"
                f" (~{POINT_KB} KB of memory each in the sweeping process): split it",
            )
        return BasicSweeper.split_arguments(overrides, self.max_batch_size)

    def sweep(self, arguments: list[str]) -> Any:
        assert self.config is not None and self.hydra_context is not None
        self.check_settings()
        batches = self.batches(arguments)
        jobs = [job for batch in batches for job in batch]
        with stop.handled() as request:
            try:
                return self._sweep(batches, jobs, request)
            except ConfigError as exc:
                _refuse(exc.key, str(exc).removeprefix(f"{exc.key}: "))
            except BaseException as exc:
                if not request.requested:
                    raise
                if not isinstance(exc, SystemExit):  # told to stop before any point ran
                    stop.report(request, 0, len(jobs), self.cache_dir() is not None)
                # Stopped, in order (run_points has said so if points ran): out now,
                # with the stop handlers still in place, so a Ctrl-C pressed again on
                # the way out still leaves in one line (stop.leave).
                stop.leave(request.exit_status)

    def check_settings(self) -> None:
        """The sweeper's own keys, and the local launcher's worker count, each refused
        in one line before anything runs."""
        if isinstance(self.launcher, FastLauncher):
            problem = pool.n_jobs_problem(self.launcher.n_jobs)
            if problem is not None:
                _refuse("hydra.launcher.n_jobs", problem)
        size = self.chunk_size
        if size == "auto":
            self.chunk_size = size = None
        if size is not None and (type(size) is not int or size < 1):
            _refuse(
                "hydra.sweeper.chunk_size",
                f"{size!r} is not an integer >= 1 or auto (points per chunk; auto or unset"
                " sizes chunks automatically)",
            )
        batch = self.max_batch_size
        if batch is not None and batch < 1:
            _refuse(
                "hydra.sweeper.max_batch_size",
                f"{batch} is not >= 1 (points per launcher batch; leave it unset for one batch)",
            )
        words = [self.direction] if isinstance(self.direction, str) else self.direction or []
        wrong = [w for w in words if str(w).lower() not in pareto.DIRECTION_WORDS]
        if wrong:
            _refuse(
                "hydra.sweeper.direction",
                f"{wrong[0]} is not minimize or maximize (one word for every objective,"
                " or a list of one per objective)",
            )
        timeout = self.point_timeout_s
        if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_S:
            _refuse(
                TIMEOUT_KEY,
                f"{timeout} is not a number of seconds in (0, {MAX_TIMEOUT_S:g}] (leave it"
                " unset for no limit)",
            )

    def _sweep(
        self, batches: list[list[list[str]]], jobs: list[list[str]], request: stop.StopRequest
    ) -> Any:
        local = isinstance(self.launcher, FastLauncher) and is_point_task(self.task_function)
        try:
            if local and not self.dry_run:  # workers start while the points are composed
                self.launcher.start_workers(len(jobs), without_hydra(self.config), request)
            plan = Planner(self.hydra_context.config_loader, self.config).plan(jobs)
            sweep_dir = Path(str(self.config.hydra.sweep.dir))
            if self.dry_run:  # writes nothing: the directory may hold another sweep
                callbacks.nothing_to_merge(sweep_dir)
                return dry_run(plan, is_point_task(self.task_function))
            screen(plan)  # every point's values, the ones dropped below included
            if is_point_task(self.task_function):  # kernbench's own points: their keys known
                plan, dropped = drop_repeats(plan)
                if dropped.count:
                    outputs.say(dropped.describe(len(jobs)))
                    jobs = [p.overrides for p in plan.points]
            outputs.check_writable(sweep_dir, outputs.location_key(self.config, "sweep"))
            with outputs.reported(sweep_dir), claim.claimed(sweep_dir, jobs, self.resume):
                write_atomic(sweep_dir / "multirun.yaml", OmegaConf.to_yaml(self.config))
                if not is_point_task(self.task_function):
                    return self.launch_batches(batches)
                return self.run_points(plan, sweep_dir, request)
        finally:
            if local:
                self.launcher.stop_workers()

    def launch_batches(self, batches: list[list[list[str]]]) -> list[Sequence[JobReturn]]:
        """Any task function: batch by batch through the launcher, as the basic sweeper."""
        assert self.launcher is not None
        returns, start = [], 0
        for batch in batches:
            if not isinstance(self.launcher, FastLauncher):
                self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=start)
            for r in results:
                _ = r.return_value  # raises if the job failed, as the basic sweeper does
            start += len(batch)
            returns.append(results)
        return returns

    def run_points(self, plan: Plan, sweep_dir: Path, request: stop.StopRequest) -> list[str]:
        """kernbench's task: every point in chunks, then ``results.parquet``. Told to
        stop meanwhile, it merges the points done, says so in one line and exits with
        the signal's status (:mod:`kernbench.sweep.stop`)."""
        assert self.config is not None and self.launcher is not None
        write_records(plan, self.config, sweep_dir)
        base = {
            "sweep_dir": str(sweep_dir),
            "cache_dir": self.cache_dir(),
            "parent": parent(),
            "point_timeout_s": self.point_timeout_s,
        }
        resumed = claim.kept_rows(sweep_dir, point_rows(plan)) if self.resume else None
        kept = resumed.rows if resumed is not None else {}
        todo = Plan([p for p in plan.points if p.num not in kept], plan.shapes)
        # Per-shape work, done before the points start, on the plan the chunks are cut
        # from (which keeps it): made while cutting, it held back the first chunk of
        # each shape by ~2.7 ms, with the workers idle.
        for shape in range(len(todo.shapes)):
            todo.typed_base(shape)
        if isinstance(self.launcher, FastLauncher):
            sizes = guided_sizes(self.launcher.workers)
            runner = self.launcher.run_chunks
        else:
            from kernbench.sweep.remote import ChunkJobs

            sizes = fixed_sizes(CLUSTER_CHUNK)
            runner = ChunkJobs(self.launcher, self.config, self.hydra_context, sweep_dir)
        if self.chunk_size:
            sizes = fixed_sizes(self.chunk_size)
        chunks = make_chunks(todo, sizes, base)
        local = isinstance(self.launcher, FastLauncher)
        if resumed is not None and (kept or resumed.dropped):
            log.info(
                f"Resuming: {len(kept)} of {len(plan.points)} points kept from {sweep_dir}"
                + resumed.summary()
            )
        gather = run_plan(todo, chunks, sweep_dir, runner, request, polled=local)
        gather.rows.extend(kept.values())
        if request.requested:
            if gather.rows:
                gather.merge()
            done = len(gather.results) + len(kept)
            stop.report(request, done, len(plan.points), bool(base["cache_dir"]), sweep_dir)
            raise SystemExit(request.exit_status)  # sweep() leaves once this has unwound
        outcome = callbacks.with_front(gather.merge(), self.config)
        callbacks.record_outcome(outcome, sweep_dir)
        return [gather.results[p.num].status if p.num not in kept else "ok" for p in plan.points]

    def cache_dir(self) -> str | None:
        """The point cache's absolute path, or None with ``cache=false``."""
        cfg = self.config
        if not cfg.get("cache", True):
            return None
        return str(Path(str(cfg.hydra.runtime.cwd)) / str(cfg.paths.cache_dir))


def parent() -> tuple[str, int]:
    """This machine and process, for chunk jobs to watch (:mod:`kernbench.sweep.stop`)."""
    return socket.gethostname(), os.getpid()


def _refuse(key: str, message: str) -> NoReturn:
    """One line and exit 1, before anything is written (a SystemExit passes through
    Hydra's error report, which would add lines of its own)."""
    print(f"kernbench: error: {one_line(str(ConfigError(key, message)))}", file=sys.stderr)
    raise SystemExit(1)


def dry_run(plan: Plan, kernbench: bool) -> list[str]:
    """Compose (and for kernbench validate) every point; print what would run."""
    errors = {p.num: check_point(plan, p, kernbench) for p in plan.points}
    invalid = {num: e for num, e in errors.items() if e is not None}
    _print_dry_run(plan, invalid)
    if invalid:
        print(
            f"kernbench: error: {len(invalid)} of {len(plan.points)} sweep points are invalid",
            file=sys.stderr,
        )
        raise SystemExit(1)
    return []


def _print_dry_run(plan: Plan, invalid: dict[int, str]) -> None:
    outputs.say(
        f"dry run: {len(plan.points)} points in {len(plan.shapes)} shapes,"
        f" {len(invalid)} invalid; nothing was run"
    )
    for n, shape in enumerate(plan.shapes):
        count = sum(p.shape == n for p in plan.points)
        outputs.say(f"  shape {n} ({count} points): {shape.describe()}")
    for point in plan.points:
        if point.num in invalid:
            overrides = " ".join(point.overrides)
            outputs.say(f"  invalid #{point.num} ({overrides}): {invalid[point.num]}")


def check_point(plan: Plan, point: Any, kernbench: bool) -> str | None:
    """The point's one-line error, or None if it composes (and validates)."""
    from kernbench import job

    try:
        if not kernbench:
            plan.job_config(point)
            return None
        refused = value_errors(plan, point)
        if refused is not None:
            return refused
        job.prepare(plan.task_config(point))
    except Exception as exc:
        return job.error_message(exc.__cause__ if exc.__cause__ is not None else exc)
    return None

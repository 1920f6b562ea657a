"""Running a chunk of sweep points inside one worker (a pool process, a SLURM or Ray task).

A chunk is one shape's composed config and some of its points (:mod:`kernbench.sweep.plan`).
The worker builds each point's config from the shape instead of Hydra's ~90 ms
composition (:class:`PointConfigs`): the shape's typed object with the point's leaves
set (:mod:`kernbench.sweep.typed`, ~0.05 ms) where that is exact, else a copy of the
shape's DictConfig with the point's value overrides (~2 ms). It runs the point in one
of two ways:

- **kernbench's own task** (marked with :func:`point_task`): through
  :func:`kernbench.job.run_job`, the per-point function of the stock path, so rows,
  cache hits and error rows are the stock path's own; the row comes back to the parent
  instead of a per-point ``result.parquet``, and what the point printed (its metric
  block, a traceback) is kept for the sweep's ``points.log``. Points run in batches,
  each phase of a batch in a row: configs, simulations, rows (:data:`BATCH_SECONDS`).
- **any other task function** (Hydra's plugin test suites run theirs): through Hydra's
  ``run_job`` with the point's full config, so the job keeps Hydra's per-job directory,
  ``.hydra/`` files, log file and ``JobReturn``.

Nothing here decides scheduling or writes the merged table: the parent does
(:mod:`kernbench.sweep.run`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import pickle
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from kernbench import job
from kernbench.config.columns import METRICS
from kernbench.errors import ConfigError
from kernbench.sweep import typed
from kernbench.sweep.plan import Plan, Point, apply_values, point_config

if TYPE_CHECKING:
    from kernbench.job import Prepared

_MARK = "__kernbench_point_task__"
# A worker takes a few points at a time: it builds and validates them, then simulates
# them, then makes their rows, each phase in a row. Python run right after a
# simulation found its caches evicted: validating a dispatch_ratio point took
# 0.35-0.7 ms there, 0.13-0.18 ms after another validation. Parallel efficiency on
# dispatch_ratio, eight alternating runs each: medians 0.838 -> 0.854 (configs ahead)
# -> 0.866 (rows after). That pays only for short points, and a point's row (a cluster
# task's progress mark) waits for its batch: a batch holds about BATCH_SECONDS of the
# worker's recent points, at most POINTS_PER_BATCH (a point of 5 ms: batches of 16; of
# 50 ms: 2; of 0.1 s or more: one point, as before).
BATCH_SECONDS = 0.1
POINTS_PER_BATCH = 16
_recent_point_s: float | None = None  # this worker's last batch, seconds a point


def point_task(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` (kernbench's Hydra task) as one whose points the fast sweep may run
    through :func:`kernbench.app.run_job` directly. A mark rather than an identity test:
    under ``python -m kernbench.app`` the task lives in ``__main__``."""
    setattr(fn, _MARK, True)
    return fn


def is_point_task(fn: Any) -> bool:
    return bool(getattr(fn, _MARK, False))


@dataclass
class Chunk:
    """What one worker task runs: ``config`` is the shape's task config (kernbench
    path) or its full config (generic path)."""

    config: DictConfig | None  # None when every point takes the typed path
    points: list[Point]
    sweep_dir: str
    cache_dir: str | None = None  # absolute; None with cache=false
    kernbench: bool = True
    typed: bytes | None = None  # the shape's typed object, pickled (kernbench.sweep.typed)
    parent: tuple[str, int] | None = None  # the sweeping process: (host name, pid)
    point_timeout_s: float | None = None  # hydra.sweeper.point_timeout_s
    groups: dict[str, str | None] = field(default_factory=dict)  # the shape's group options


@dataclass
class PointResult:
    """One point's outcome, sent back to the parent."""

    num: int
    status: str
    error: str | None = None
    log: str = ""
    wall_s: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)
    job_return: Any = None  # Hydra's JobReturn, generic path only


def warm_up(task: DictConfig | None = None) -> None:
    """Load, before workers are forked, what every point needs once per process (the
    app module, which ``python -m kernbench.app`` has only as ``__main__``; the git
    commit and the source fingerprint the rows and cache keys carry), so each worker
    inherits it instead of paying for it. With a ``task`` config, also take it once
    through what every point does around its simulation (validate, flatten, make its
    row): the caches that fills are inherited too, and each worker's first point
    cost ~1 ms less (2.4-3.0 -> 1.3-2.1 ms outside its simulation). A task config
    that does not validate (its points may fix it) is simply skipped."""
    from kernbench import job
    from kernbench.results import STATUS_OK, make_row
    from kernbench.results.identity import git_commit
    from kernbench.sweep.cache import source_fingerprint

    git_commit()
    source_fingerprint()
    if task is None:
        return
    with contextlib.suppress(Exception):
        typed, columns = job.prepare(task)
        make_row(columns, status=STATUS_OK, sweep_id="", job_num=0)
        job.must_simulate(typed)


def run_chunk(
    chunk: Chunk,
    task: Callable[..., Any] | None = None,
    context: Any = None,
    after: Callable[[PointResult], None] | None = None,
    halted: Callable[[], bool] | None = None,
) -> list:
    """Run every point of ``chunk`` in order; ``task`` and ``context`` (Hydra's task
    function and HydraContext) are needed by the generic path only; ``after`` sees
    each point's result as it ends (a cluster task marks its progress with it). Once
    ``halted()`` is true (the sweep was told to stop) the chunk ends after the point or
    batch running, with the results it has.

    kernbench's points run in batches (:func:`batch_size`): their configs built and
    validated, then their simulations, then their rows made, each phase in a row
    (see :data:`BATCH_SECONDS` for why)."""
    results = []

    def done(result: PointResult) -> None:
        if after is not None:
            after(result)
        results.append(result)

    halted = halted or (lambda: False)
    if not chunk.kernbench:
        for point in chunk.points:
            if halted():
                break
            done(run_hydra_job(chunk, point, task, context))
        return results
    global _recent_point_s
    configs = PointConfigs(chunk)
    first = 0
    while first < len(chunk.points) and not halted():
        points = chunk.points[first : first + batch_size(_recent_point_s)]
        first += len(points)
        ahead = {point.num: configs.prepare(point) for point in points}
        runs = [simulate_point(chunk, point, configs, ahead[point.num]) for point in points]
        batch = [run.finish() for run in runs]
        for result in batch:
            done(result)
        _recent_point_s = sum(r.wall_s for r in batch) / len(batch)
    return results


def batch_size(point_s: float | None) -> int:
    """Points in the next batch, given the seconds a point took in the last (None: the
    worker has run none yet, so one)."""
    if point_s is None:
        return 1
    return max(1, min(POINTS_PER_BATCH, int(BATCH_SECONDS / max(point_s, 1e-9))))


class PointConfigs:
    """Builds the config of each point of a chunk: on the typed path when the point and
    its shape allow it (a dataclass object), else on the shape's DictConfig (a copy
    with the point's value overrides, by Hydra's function)."""

    def __init__(self, chunk: Chunk) -> None:
        self.chunk = chunk
        self._pickled: bytes | None = None  # unpickling copies ~2.5x faster than deepcopy

    def __call__(self, point: Point) -> Any:
        if self.chunk.typed is not None and point.assigned is not None:
            return typed.build(self.chunk.typed, point.assigned)
        if self._pickled is None:
            assert self.chunk.config is not None  # make_chunks keeps it for such points
            self._pickled = pickle.dumps(self.chunk.config)
        return apply_values(self._pickled, point.values)

    def prepare(self, point: Point) -> Ahead:
        """The point's config built and validated ahead of its run, with what that
        printed; on any error, nothing: the point's run builds it again and reports it
        as every failing point is reported (building is deterministic)."""
        start = time.perf_counter()
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                config, columns = job.prepare(self(point))
            except Exception:
                return Ahead(None, out.getvalue())
        return Ahead(job.Prepared(config, columns, _since(start)), out.getvalue())


@dataclass
class Ahead:
    """A point prepared ahead of its run (:meth:`PointConfigs.prepare`)."""

    prepared: Prepared | None  # None if building or validating failed
    log: str


@dataclass
class PointRun:
    """A kernbench point whose simulation has run, its row still to be made
    (:meth:`finish`), or a point that ended before it (``result``)."""

    num: int
    status: str
    out: io.StringIO  # what the point printed, every phase
    seconds: float  # the point's own time so far
    rows: list[dict[str, Any]] = field(default_factory=list)
    deferred: list[Callable[[], None]] = field(default_factory=list)
    result: PointResult | None = None

    def finish(self) -> PointResult:
        """Make the point's row (run_job's deferred part) and its result."""
        if self.result is not None:
            return self.result
        start = time.perf_counter()
        with contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.out):
            for part in self.deferred:
                part()
        error = self.rows[0].get("error") if self.rows else None
        seconds = self.seconds + _since(start)
        return PointResult(self.num, self.status, error, self.out.getvalue(), seconds, self.rows)


def simulate_point(chunk: Chunk, point: Point, configs: PointConfigs, ahead: Ahead) -> PointRun:
    """One point through ``run_job``, its output captured, its row left for
    :meth:`PointRun.finish`; ``ahead`` is what preparing it ahead made (its time
    counts in the point's)."""
    from kernbench.sweep.cache import PointCache

    prepared = ahead.prepared
    start = time.perf_counter() - (prepared.seconds if prepared else 0.0)
    out = io.StringIO(ahead.log)
    out.seek(0, io.SEEK_END)
    run = PointRun(point.num, "error", out, 0.0)
    job_id = job.JobId(sweep_id=chunk.sweep_dir, job_num=point.num, groups=chunk.groups)
    cache = PointCache(chunk.cache_dir) if chunk.cache_dir else None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            cfg = prepared.config if prepared else configs(point)
        except Exception as exc:  # a clash only the whole point shows: its error row
            run.result = _composition_error(chunk, point, exc, start)
            return run
        out_dir = Path(chunk.sweep_dir) / str(point.num)
        if _wants_trace(cfg):
            out_dir.mkdir(parents=True, exist_ok=True)  # only a trace is written there
        try:
            with deadline(chunk.point_timeout_s):
                rows, deferred = run.rows, run.deferred
                run.status = job.run_job(
                    cfg, out_dir, job_id, cache, rows=rows, prepared=prepared, deferred=deferred
                )
        except PointTimeout as exc:  # the limit fell just as run_job returned
            run.result = error_result(chunk, point.num, str(exc))
    run.seconds = _since(start)
    return run


TIMEOUT_KEY = "hydra.sweeper.point_timeout_s"


class PointTimeout(ConfigError):
    """A point ran longer than ``hydra.sweeper.point_timeout_s``: raised inside it (by
    :func:`deadline`), so ``run_job`` makes it the point's error row and the worker
    goes on with the next point."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            TIMEOUT_KEY,
            f"the point ran longer than {seconds:g} s and was stopped (raise the limit,"
            " or leave it unset for none)",
        )


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`PointTimeout` in this thread once ``seconds`` have passed.

    A real-time interval timer (``setitimer``, one system call to arm and one to
    disarm) whose SIGALRM handler raises between two bytecodes, wherever the point is:
    the simulator, a Triton kernel in its interpreter, a loop that never ends. A C call
    that does not return (a single huge allocation) delays it until it does. Workers
    run their points in their main thread, as signals require; elsewhere there is no
    limit. A limit that falls during an import waits for it to finish (checked again
    every :data:`IMPORT_GRACE_S`): a module left half-imported (torch's operator
    registrations, the first Triton point's) fails every later point of the worker
    that imports it again ("duplicate registrations"), not only the stopped one."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = True

    def expire(signum: int, frame: Any) -> None:
        if not armed:
            return
        if importing(frame):
            signal.setitimer(signal.ITIMER_REAL, IMPORT_GRACE_S)
            return
        raise PointTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


IMPORT_GRACE_S = 0.05


def importing(frame: Any) -> bool:
    """Whether ``frame`` or a caller of it is importing a module (a frame of
    importlib's bootstrap, which runs every ``import``)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _wants_trace(cfg: Any) -> bool:
    if dataclasses.is_dataclass(cfg):
        return bool(cfg.sim.trace)
    return bool(OmegaConf.select(cfg, "sim.trace", default=False))


def _composition_error(chunk: Chunk, point: Point, exc: Exception, start: float) -> PointResult:
    result = error_result(chunk, point.num, job.error_message(exc.__cause__ or exc))
    result.wall_s = _since(start)
    return result


def error_result(chunk: Chunk, num: int, message: str) -> PointResult:
    """An error outcome for a point that gave no row of its own (its worker died, its
    chunk job failed, its values clash). On the kernbench path its row holds the
    point's own config where it can be built, else the shape's (the values the point
    could not apply are in the sweep's records, and the message names them)."""
    if not chunk.kernbench:
        return PointResult(num, "error", message)
    from kernbench.config import flatten
    from kernbench.results import STATUS_ERROR, config_columns, make_row

    columns = config_columns(flatten(_config_of(chunk, num)))
    row = make_row(
        columns,
        status=STATUS_ERROR,
        error=message,
        sweep_id=chunk.sweep_dir,
        job_num=num,
        groups=chunk.groups,
    )
    return PointResult(num, STATUS_ERROR, message, rows=[row])


def _config_of(chunk: Chunk, num: int) -> Any:
    """Point ``num``'s config, or its shape's if the point's values do not apply."""
    with contextlib.suppress(Exception):
        [point] = [p for p in chunk.points if p.num == num]
        return PointConfigs(chunk)(point)
    return chunk.config if chunk.config is not None else pickle.loads(chunk.typed)


def run_hydra_job(chunk: Chunk, point: Point, task: Any, context: Any) -> PointResult:
    """One point as Hydra's stock launchers run a job (directory, files, JobReturn)."""
    from hydra.core.utils import JobStatus, run_job

    start = time.perf_counter()
    cfg = point_config(chunk.config, point)
    out = io.StringIO()  # the job's metrics block: for points.log, not the terminal
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        ret = run_job(
            hydra_context=context,
            task_function=task,
            config=cfg,
            job_dir_key="hydra.sweep.dir",
            job_subdir_key="hydra.sweep.subdir",
        )
    failed = ret.status == JobStatus.FAILED
    error = f"{type(ret._return_value).__name__}: {ret._return_value}" if failed else None
    status = "error" if failed else "ok"
    return PointResult(point.num, status, error, out.getvalue(), _since(start), job_return=ret)


def _since(start: float) -> float:
    return time.perf_counter() - start


@dataclass(frozen=True)
class PointRow:
    """What a row of one point holds before its metrics, as the sweep would make it
    now: its config columns (:func:`kernbench.job.prepare`'s) and its workload's
    declared metric columns (:data:`kernbench.config.columns.METRICS`; None for a
    workload that declares none). Resume checks a kept row against it
    (:func:`kernbench.sweep.claim.kept_rows`)."""

    columns: dict[str, Any]
    metrics: dict[str, str] | None


def point_rows(plan: Plan) -> Callable[[int], PointRow | None]:
    """What a row of each point would hold before its metrics (its validated, flattened
    config's columns, and its workload's declared metric columns), by job number; None
    for a point not in ``plan`` or whose config does not build or validate (its run
    reports that). What resume checks a kept row against (:func:`claim.kept_rows`)."""
    points = {p.num: p for p in plan.points}

    def of(num: int) -> PointRow | None:
        point = points.get(num)
        if point is None:
            return None
        quiet = io.StringIO()
        base = plan.typed_base(point.shape)
        try:
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                # the workers' own path (PointConfigs): typed where it can be, ~3x faster
                if base is not None and point.assigned is not None:
                    cfg: Any = typed.build(base, point.assigned)
                else:
                    cfg = plan.task_config(point)
                checked, columns = job.prepare(cfg)
        except Exception:
            return None
        return PointRow(columns, METRICS.get(type(checked.workload)))

    return of

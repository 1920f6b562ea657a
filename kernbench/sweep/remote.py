"""Chunks as jobs of another Hydra launcher (``submitit_slurm``, ``submitit_local``,
``ray``, ``joblib``, ``basic``): one launcher job, one SLURM or Ray task, per chunk.

The fast sweeper hands the launcher one job per chunk, with :class:`ChunkTask` as the
task function instead of kernbench's: each job reads its chunk (the shape's config
and the points, pickled into ``<sweep>/.kernbench/chunks/<n>.pkl``, on the shared
filesystem docs/how-to/cluster.md asks for) and returns the points' results, which the launcher
brings back to this process as the job's return value. Hydra composes each chunk job's
own config once (~90 ms per task, not per point); its ``.hydra/`` files and log go to
``<sweep>/.kernbench/chunks/<n>/``, out of the way of the points' numbering.

Launchers hand back every task's return value at once, when the last task ends. So
that the sweep's bar moves meanwhile, each task marks its points as they end, as the
stock path's jobs do (``<sweep>/.kernbench/done/<job_num>``), and this process counts
the marks every second while it waits (:class:`FinishedWatch`). A mark holds the point's
result: a sweep told to stop (:mod:`kernbench.sweep.stop`) cannot wait for the launcher
to hand results back, so it merges the points its jobs finished from their marks. A
chunk job on the sweeping process's machine ignores Ctrl-C (the sweeper decides) and
ends if that process does.

The sweep directory may be one other users can write into, and unpickling a file runs
whatever code it names. So nothing a sweep reads back from it is unpickled unless the
sweep wrote it: a mark is JSON, data only, and one that is not a well-formed result of
its point is a point not done (:func:`result_from_json`); ``.kernbench``, ``done`` and
``chunks`` are directories only the sweeping user can use
(:func:`kernbench.sweep.progress.state_dir`: a link or another user's is refused in one
line); and a chunk job unpickles its chunk only if the file's SHA-256 is the one this
process recorded when it wrote it, which reaches the job inside its own arguments
(:class:`ChunkTask`), not through the sweep directory.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import pickle
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from kernbench.errors import ConfigError, error_line
from kernbench.files import write_atomic
from kernbench.sweep import progress, ray_jobs, stop, submitit_jobs
from kernbench.sweep.points import Chunk, PointResult, error_result, run_chunk

CHUNKS = "chunks"
CHUNKS_DIR = Path(progress.STATE_DIR) / CHUNKS
WATCH_S = 1.0  # how often the finished points are counted
RESULT_FIELDS = ("num", "status", "error", "log", "wall_s", "rows")  # a mark's, PointResult's


class ChunkJobs:
    """Runs a sweeper's chunks through ``launcher`` (any Hydra launcher)."""

    def __init__(self, launcher: Any, master: DictConfig, context: Any, sweep_dir: Path) -> None:
        self.launcher = launcher
        self.master = master
        self.context = context
        self.sweep_dir = sweep_dir.resolve()
        progress.state_dir(self.sweep_dir)  # a link or another user's: refused before any point

    def __call__(self, chunks: Iterable[Chunk], on_result: Callable[[PointResult], None]) -> None:
        chunks = list(chunks)
        clear_marks(self.sweep_dir)
        task = ChunkTask(write_chunks(self.sweep_dir, chunks))
        self.launcher.setup(
            hydra_context=self.context, task_function=task, config=self.job_config()
        )
        on_count = getattr(on_result, "progress", None)  # Gather's: the bar's
        with FinishedWatch(self.sweep_dir, on_count), _ctrl_c_kept_from_children():
            returns = launch_chunks(self.launcher, len(chunks))
        for chunk, ret in zip(chunks, returns, strict=True):
            for result in _results(chunk, ret, self.sweep_dir):
                on_result(result)

    def job_config(self) -> DictConfig:
        """The master config with the chunk jobs' directories pinned: the sweep dir as
        this process resolved it, and a sub-directory per chunk."""
        cfg = copy.deepcopy(self.master)
        pinned = [
            f"hydra.sweep.dir={self.sweep_dir}",
            f"hydra.sweep.subdir={CHUNKS_DIR.as_posix()}/${{hydra.job.num}}",
        ]
        with read_write(cfg.hydra), open_dict(cfg.hydra):
            cfg.hydra.overrides.hydra = OmegaConf.to_container(cfg.hydra.overrides.hydra) + pinned
        return cfg


def launch_chunks(launcher: Any, count: int) -> Sequence[JobReturn]:
    """Chunk jobs ``0 .. count-1`` through ``launcher``, a JobReturn each. Under Ray
    and submitit they are launched here (:mod:`kernbench.sweep.ray_jobs`,
    :mod:`kernbench.sweep.submitit_jobs`), so that a job the cluster gives up on fails
    alone; any other launcher (basic, joblib: jobs in this process or its pool) launches
    them itself."""
    if ray_jobs.is_ray_launcher(launcher):
        return ray_jobs.launch(launcher, count)
    if submitit_jobs.is_submitit_launcher(launcher):
        return submitit_jobs.launch(launcher, count)
    return launcher.launch([[] for _ in range(count)], initial_job_idx=0)


def clear_marks(sweep_dir: Path) -> None:
    """Remove the marks an earlier run into this directory left (stopped, killed):
    they would count on the bar, and be taken for this run's results if a chunk job
    fails. ``done`` is checked first: a link or another user's directory is refused
    (:func:`progress.done_dir`), neither cleared through nor left in place."""
    shutil.rmtree(progress.done_dir(sweep_dir))
    progress.done_dir(sweep_dir)


def write_chunks(sweep_dir: Path, chunks: Sequence[Chunk]) -> tuple[str, ...]:
    """Each chunk pickled into ``.kernbench/chunks/<n>.pkl`` (a private directory), by
    rename; the SHA-256 of each, for :class:`ChunkTask`."""
    folder = progress.private_subdir(sweep_dir, CHUNKS)
    digests = []
    for n, chunk in enumerate(chunks):
        data = pickle.dumps(chunk)
        write_atomic(folder / f"{n}.pkl", data)
        digests.append(hashlib.sha256(data).hexdigest())
    return tuple(digests)


class ChunkRefused(Exception):
    """A chunk job found its chunk file, or the directory holding it, not as this
    sweep made it: nothing of it is loaded, and the job's points become error rows."""


@dataclass(frozen=True)
class ChunkTask:
    """The chunk jobs' task function: :func:`run_chunk_job` with the SHA-256 of each
    chunk file as this process wrote it. The launcher hands it to each job with the
    job's own arguments (submitit's pickle in its private folder, Ray's object store),
    so a chunk file changed after it was written is refused, not unpickled."""

    digests: tuple[str, ...]

    def __call__(self, cfg: DictConfig) -> list[PointResult]:
        return run_chunk_job(cfg, self.digests)


def run_chunk_job(cfg: DictConfig, digests: Sequence[str]) -> list[PointResult]:
    """Run chunk ``hydra.job.num`` of this sweep (``digests``: every chunk file's
    SHA-256, :class:`ChunkTask`), marking each point done as it ends. On the sweeping
    process's own machine (``submitit_local``, a local Ray cluster, joblib) the job
    ends if that process does: a cluster job (another host) runs on, as the cluster's
    own jobs do."""
    hydra = HydraConfig.get()
    sweep_dir = Path(hydra.sweep.dir)
    chunk = load_chunk(sweep_dir, hydra.job.num, digests[hydra.job.num])
    if chunk.parent is not None and chunk.parent[0] == socket.gethostname():
        stop.watch_parent(stop.process_alive(chunk.parent[1]))
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweeper's to handle
    return run_chunk(chunk, after=lambda result: mark_finished(sweep_dir, result))


def load_chunk(sweep_dir: Path, num: int, digest: str) -> Chunk:
    """Chunk ``num`` as this sweep wrote it: its directory private to this user, its
    file read without following a link, and unpickled only if its SHA-256 is
    ``digest``; else :class:`ChunkRefused`, naming the file."""
    try:
        path = progress.private_subdir(sweep_dir, CHUNKS) / f"{num}.pkl"
    except ConfigError as exc:  # raised in the job, sent back as ChunkRefused
        raise ChunkRefused(str(exc)) from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ChunkRefused(f"{path}: cannot read it ({os.strerror(exc.errno)})") from None
    with open(fd, "rb") as file:
        data = file.read()
    if hashlib.sha256(data).hexdigest() != digest:
        raise ChunkRefused(
            f"{path} is not the chunk this sweep wrote (its SHA-256 differs); not loaded"
        )
    return pickle.loads(data)


def abandon_jobs() -> None:
    """After a stop, end what the launcher left running on this machine: a local Ray
    cluster this process started is shut down, and every process this one started
    that is still alive then (submitit's controllers and jobs, Ray's agents, which
    otherwise outlived their cluster by seconds, what a cluster still starting had
    started) is stopped, then killed (:func:`stop.stopped_tree`)."""
    started = stop.descendants(os.getpid())  # before the shutdown orphans any
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        with contextlib.suppress(Exception):
            ray.shutdown()
    for pid in stop.stopped_tree(os.getpid(), started):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def mark_finished(sweep_dir: Path, result: PointResult) -> None:
    """Mark a point done (the bar's progress) with its result in the mark, so that a
    sweep stopped before the launcher hands results back still merges it
    (:func:`finished`). JSON (:func:`result_json`), written whole, by rename, into
    ``done`` as checked private (:func:`progress.done_dir`)."""
    try:
        progress.done_dir(sweep_dir)
    except ConfigError as exc:  # raised in the job, sent back as ChunkRefused
        raise ChunkRefused(str(exc)) from None
    write_atomic(progress.done_mark(sweep_dir, result.num), result_json(result))


def finished(sweep_dir: Path, nums: set[int]) -> list[PointResult]:
    """The results marked by :func:`mark_finished` for points ``nums``, by job number;
    none if ``done`` is not this user's private directory."""
    try:
        progress.done_dir(sweep_dir)
    except (ConfigError, OSError):
        return []
    results = []
    for num in sorted(nums):
        result = read_mark(progress.done_mark(sweep_dir, num), num)
        if result is not None:
            results.append(result)
    return results


def read_mark(path: Path, num: int) -> PointResult | None:
    """The result the mark at ``path`` holds for point ``num`` (not through a link),
    or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "rb") as file:
            return result_from_json(file.read(), num)
    except OSError:
        return None


def result_json(result: PointResult) -> str:
    """A mark's text: the result's fields as JSON (its rows' values are plain scalars;
    NaN and infinities as JSON's extensions). Hydra's JobReturn is left out: only the
    generic path has one, and its points are never chunk jobs. A result JSON cannot
    hold (a value of a type it does not know) is an empty mark: the point counts on
    the bar, but its result comes back from the launcher only."""
    try:
        return json.dumps({name: getattr(result, name) for name in RESULT_FIELDS})
    except (TypeError, ValueError):
        return ""


def result_from_json(text: bytes | str, num: int) -> PointResult | None:
    """The result a mark of point ``num`` holds, or None for anything that is not
    exactly one: not JSON, another point's, a field missing, unknown or of another
    type, a row that is not a mapping of names to plain scalars. A mark is data to
    check, never code: a point whose mark is not its result is a point not done."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError too
        return None
    if not isinstance(data, dict) or set(data) != set(RESULT_FIELDS) or not _is_result(data, num):
        return None
    return PointResult(**data)


def _is_result(data: dict[str, Any], num: int) -> bool:
    """Each field of the type PointResult gives it (a bool is not a number)."""
    return (
        type(data["num"]) is int
        and data["num"] == num
        and type(data["status"]) is str
        and (data["error"] is None or type(data["error"]) is str)
        and type(data["log"]) is str
        and type(data["wall_s"]) in (int, float)
        and type(data["rows"]) is list
        and all(_is_row(row) for row in data["rows"])
    )


def _is_row(row: Any) -> bool:
    return isinstance(row, dict) and all(
        value is None or type(value) in (bool, int, float, str) for value in row.values()
    )


class FinishedWatch:
    """While the launcher waits on the chunk tasks: every :data:`WATCH_S`, count the
    points they have marked done and hand the count to ``on_count``."""

    def __init__(self, sweep_dir: Path, on_count: Callable[[int], None] | None) -> None:
        self.sweep_dir = sweep_dir
        self.on_count = on_count
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="kernbench-progress", daemon=True)

    def __enter__(self) -> FinishedWatch:
        self.thread.start()  # also the thread that takes Ctrl-C meanwhile (see below)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _watch(self) -> None:
        while not self.stop.wait(WATCH_S):
            if self.on_count is not None:
                self.on_count(progress.count_done(self.sweep_dir))


@contextlib.contextmanager
def _ctrl_c_kept_from_children() -> Iterator[None]:
    """SIGINT blocked in the main thread while the launcher starts its processes
    (submitit's local controllers, a local Ray cluster), which inherit the mask: a
    Ctrl-C to the process group reaches this process alone, through a thread that
    does not block it (:class:`FinishedWatch`'s), and Python runs the sweeper's
    handler in the main thread as for any signal (:mod:`kernbench.sweep.stop`).
    Otherwise each of those processes printed its own KeyboardInterrupt traceback."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _results(chunk: Chunk, ret: JobReturn, sweep_dir: Path) -> list[PointResult]:
    """The chunk's results; if its job failed (its worker killed, Ray's retries used
    up), those its points marked done before (:func:`mark_finished`) and an error
    result for each other point."""
    if ret.status == JobStatus.COMPLETED:
        return list(ret.return_value)
    why = f"its chunk job failed: {error_line(ret._return_value)}"
    done = {r.num: r for r in finished(sweep_dir, {p.num for p in chunk.points})}
    return [done.get(p.num) or error_result(chunk, p.num, why) for p in chunk.points]

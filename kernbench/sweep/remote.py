"""Chunks as jobs of another Hydra launcher (``submitit_slurm``, ``submitit_local``,
``ray``, ``joblib``, ``basic``): one launcher job, one SLURM or Ray task, per chunk.

The fast sweeper hands the launcher one job per chunk, with :func:`run_chunk_job` as
the task function instead of kernbench's: each job reads its chunk (the shape's config
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
"""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
import shutil
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from kernbench.errors import error_line
from kernbench.sweep import progress, ray_jobs, stop, submitit_jobs
from kernbench.sweep.points import Chunk, PointResult, error_result, run_chunk

CHUNKS_DIR = Path(".kernbench") / "chunks"
WATCH_S = 1.0  # how often the finished points are counted


class ChunkJobs:
    """Runs a sweeper's chunks through ``launcher`` (any Hydra launcher)."""

    def __init__(self, launcher: Any, master: DictConfig, context: Any, sweep_dir: Path) -> None:
        self.launcher = launcher
        self.master = master
        self.context = context
        self.sweep_dir = sweep_dir.resolve()

    def __call__(self, chunks: Iterable[Chunk], on_result: Callable[[PointResult], None]) -> None:
        chunks = list(chunks)
        folder = self.sweep_dir / CHUNKS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        # Marks of an earlier run into this directory (stopped, killed) would count on
        # the bar, and be taken for this run's results if a chunk job fails.
        shutil.rmtree(progress.done_mark(self.sweep_dir, 0).parent, ignore_errors=True)
        for n, chunk in enumerate(chunks):
            (folder / f"{n}.pkl").write_bytes(pickle.dumps(chunk))
        self.launcher.setup(
            hydra_context=self.context, task_function=run_chunk_job, config=self.job_config()
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


def run_chunk_job(cfg: DictConfig) -> list[PointResult]:
    """The task function of a chunk job: run chunk ``hydra.job.num`` of this sweep,
    marking each point done as it ends. On the sweeping process's own machine
    (``submitit_local``, a local Ray cluster, joblib) the job ends if that process
    does: a cluster job (another host) runs on, as the cluster's own jobs do."""
    hydra = HydraConfig.get()
    sweep_dir = Path(hydra.sweep.dir)
    chunk: Chunk = pickle.loads((sweep_dir / CHUNKS_DIR / f"{hydra.job.num}.pkl").read_bytes())
    if chunk.parent is not None and chunk.parent[0] == socket.gethostname():
        stop.watch_parent(stop.process_alive(chunk.parent[1]))
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the sweeper's to handle
    return run_chunk(chunk, after=lambda result: mark_finished(sweep_dir, result))


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
    (:func:`finished`). Written whole, by rename."""
    mark = progress.done_mark(sweep_dir, result.num)
    mark.parent.mkdir(parents=True, exist_ok=True)
    partial = mark.with_name(f".{mark.name}.{os.getpid()}")
    partial.write_bytes(pickle.dumps(result))
    os.replace(partial, mark)


def finished(sweep_dir: Path, nums: set[int]) -> list[PointResult]:
    """The results marked by :func:`mark_finished` for points ``nums``, by job number."""
    results = []
    for num in sorted(nums):
        with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError):
            result = pickle.loads(progress.done_mark(sweep_dir, num).read_bytes())
            if isinstance(result, PointResult) and result.num == num:
                results.append(result)
    return results


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

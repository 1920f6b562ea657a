"""Chunks as jobs of another Hydra launcher (``submitit_slurm``, ``submitit_local``,
``ray``, ``joblib``, ``basic``): one launcher job, one SLURM or Ray task, per chunk.

The fast sweeper hands the launcher one job per chunk, with :func:`run_chunk_job` as
the task function instead of kernbench's: each job reads its chunk (the shape's config
and the points, pickled into ``<sweep>/.kernbench/chunks/<n>.pkl``, on the shared
filesystem the README asks for) and returns the points' results, which the launcher
brings back to this process as the job's return value. Hydra composes each chunk job's
own config once (~90 ms per task, not per point); its ``.hydra/`` files and log go to
``<sweep>/.kernbench/chunks/<n>/``, out of the way of the points' numbering.

Launchers hand back every task's return value at once, when the last task ends. So
that the sweep's bar moves meanwhile, each task marks its points as they end, as the
stock path's jobs do (``progress.mark_done``: ``<sweep>/.kernbench/done/<job_num>``),
and this process counts the marks every second while it waits (:class:`FinishedWatch`).
"""

from __future__ import annotations

import copy
import pickle
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from kernbench.sweep import progress
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
        for n, chunk in enumerate(chunks):
            (folder / f"{n}.pkl").write_bytes(pickle.dumps(chunk))
        self.launcher.setup(
            hydra_context=self.context, task_function=run_chunk_job, config=self.job_config()
        )
        on_count = getattr(on_result, "progress", None)  # Gather's: the bar's
        with FinishedWatch(self.sweep_dir, on_count):
            returns = self.launcher.launch([[] for _ in chunks], initial_job_idx=0)
        for chunk, ret in zip(chunks, returns, strict=True):
            for result in _results(chunk, ret):
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


def run_chunk_job(cfg: DictConfig) -> list[PointResult]:
    """The task function of a chunk job: run chunk ``hydra.job.num`` of this sweep,
    marking each point done as it ends."""
    hydra = HydraConfig.get()
    sweep_dir = Path(hydra.sweep.dir)
    chunk: Chunk = pickle.loads((sweep_dir / CHUNKS_DIR / f"{hydra.job.num}.pkl").read_bytes())
    return run_chunk(chunk, after=lambda result: progress.mark_done(sweep_dir, result.num))


class FinishedWatch:
    """While the launcher waits on the chunk tasks: every :data:`WATCH_S`, count the
    points they have marked done and hand the count to ``on_count``."""

    def __init__(self, sweep_dir: Path, on_count: Callable[[int], None] | None) -> None:
        self.sweep_dir = sweep_dir
        self.on_count = on_count
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="kernbench-progress", daemon=True)

    def __enter__(self) -> FinishedWatch:
        if self.on_count is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _watch(self) -> None:
        while not self.stop.wait(WATCH_S):
            self.on_count(progress.count_done(self.sweep_dir))


def _results(chunk: Chunk, ret: Any) -> list[PointResult]:
    """The chunk's results, or an error result per point if its job failed."""
    if ret.status == JobStatus.COMPLETED:
        return list(ret.return_value)
    why = f"its chunk job failed: {type(ret._return_value).__name__}: {ret._return_value}"
    return [error_result(chunk, p.num, why) for p in chunk.points]

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
that the sweep's bar moves meanwhile, each task notes its points as they end in
``<sweep>/.kernbench/finished/<n>`` (a line each), and this process counts those
lines every second while it waits (:class:`FinishedWatch`).
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from kernbench.sweep.points import Chunk, PointResult, error_result, run_chunk

CHUNKS_DIR = Path(".kernbench") / "chunks"
# One file per chunk task, a line per point it has finished: how this process, which
# gets the tasks' rows only when the launcher returns them all, shows progress before.
FINISHED_DIR = Path(".kernbench") / "finished"
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
        (self.sweep_dir / FINISHED_DIR).mkdir(parents=True, exist_ok=True)
        self.launcher.setup(
            hydra_context=self.context, task_function=run_chunk_job, config=self.job_config()
        )
        progress = getattr(on_result, "progress", None)  # Gather's: the bar's
        with FinishedWatch(self.sweep_dir / FINISHED_DIR, progress):
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
    noting each point in ``FINISHED_DIR/<n>`` as it ends."""
    hydra = HydraConfig.get()
    sweep_dir, num = Path(hydra.sweep.dir), hydra.job.num
    chunk: Chunk = pickle.loads((sweep_dir / CHUNKS_DIR / f"{num}.pkl").read_bytes())
    with (sweep_dir / FINISHED_DIR / str(num)).open("a") as finished:

        def note(result: PointResult) -> None:
            finished.write(f"{result.num}\n")
            finished.flush()

        return run_chunk(chunk, after=note)


class FinishedWatch:
    """While the launcher waits on the chunk tasks: every :data:`WATCH_S`, count the
    points they have noted as finished and hand the count to ``progress``."""

    def __init__(self, folder: Path, progress: Callable[[int], None] | None) -> None:
        self.folder = folder
        self.progress = progress
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="kernbench-progress", daemon=True)

    def __enter__(self) -> FinishedWatch:
        if self.progress is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _watch(self) -> None:
        while not self.stop.wait(WATCH_S):
            self.progress(count_finished(self.folder))


def count_finished(folder: Path) -> int:
    """Points noted in ``folder``'s files (a line each; a line being written is not
    counted until its newline is there)."""
    total = 0
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            total += path.read_bytes().count(b"\n")
    return total


def _results(chunk: Chunk, ret: Any) -> list[PointResult]:
    """The chunk's results, or an error result per point if its job failed."""
    if ret.status == JobStatus.COMPLETED:
        return list(ret.return_value)
    why = f"its chunk job failed: {type(ret._return_value).__name__}: {ret._return_value}"
    return [error_result(chunk, p.num, why) for p in chunk.points]

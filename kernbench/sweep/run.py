"""The parent side of a fast sweep: records, chunks, progress, the merged table.

Given a :class:`~kernbench.sweep.plan.Plan`, this module

- writes the sweep's records into ``<sweep>/.hydra/``: ``overrides.yaml`` (the command
  line's task overrides), ``points.yaml`` (every point's overrides, by job number) and
  ``shapes/<n>.yaml`` (the composed config of each shape). With a point's row, which
  holds every resolved value, they are enough to rerun any point or the whole sweep;
  no per-point directory is written (a point with ``sim.trace=true`` gets
  ``<sweep>/<job_num>/trace.parquet``);
- cuts the plan into chunks of one shape each (:func:`make_chunks`), shrinking
  towards the end of the sweep (:func:`guided_sizes`);
- gathers the points' rows as chunks end, reports progress (:class:`~kernbench.sweep.
  progress.SweepBar`), appends each point's own output to ``<sweep>/points.log``, and
- writes ``results.parquet`` once, atomically, ordered by job number: the same table
  :func:`kernbench.sweep.merge.merge_sweep` builds from a stock sweep's job files.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf._utils import get_yaml_loader

from kernbench.config.columns import group_columns
from kernbench.files import open_appending, write_atomic
from kernbench.results import STATUS_ERROR, rows_to_table, write_table_atomic
from kernbench.results.kernels import merge_kernel_tables
from kernbench.sweep import outputs, stop
from kernbench.sweep.claim import POINTS_FILE, RECORDS_DIR, end_line
from kernbench.sweep.merge import MERGED_FILE, MergeOutcome
from kernbench.sweep.plan import Plan, Point
from kernbench.sweep.points import Chunk, PointResult
from kernbench.sweep.progress import SweepBar

POINTS_LOG = "points.log"
AUTO_CHUNK_CAP = 64  # points per local chunk at most: keeps the bar and balance smooth
CLUSTER_CHUNK = 100  # points per SLURM / Ray task by default: 10,000 points = 100 tasks

RunChunks = Callable[[Iterable[Chunk], Callable[[PointResult], None]], None]
ChunkSizes = Callable[[int], int]  # points not yet in a chunk -> the next chunk's size


def guided_sizes(n_workers: int) -> ChunkSizes:
    """Chunk sizes that shrink as the sweep nears its end (guided self-scheduling):
    each chunk takes 1/(2 x workers) of the points not yet in a chunk, at most
    :data:`AUTO_CHUNK_CAP`. The first chunks are long, so their cost (a config sent,
    a round trip) is spread over many points; the last hold a point or two, so no
    worker sits idle while another finishes a long chunk."""
    return lambda remaining: max(1, min(AUTO_CHUNK_CAP, math.ceil(remaining / (2 * n_workers))))


def fixed_sizes(size: int) -> ChunkSizes:
    """Chunks of ``size`` points (``hydra.sweeper.chunk_size``, cluster tasks)."""
    return lambda remaining: size


def make_chunks(plan: Plan, sizes: ChunkSizes, base: dict[str, Any]) -> Iterator[Chunk]:
    """The points of each shape in job order, cut into chunks of one shape each;
    ``sizes`` gives each chunk's size from the number of points not yet in a chunk.
    Chunks run in this order, so the sweep's last chunks are the last shape's.
    ``base`` holds the Chunk fields every chunk shares (sweep dir, cache, path).

    A chunk whose points all take the typed path carries the shape's typed object
    alone (``Plan.typed_base``, made before the points start). The DictConfig with
    its fixed interpolations resolved (~5 ms a shape, ~0.7 ms a chunk to pickle) is
    made only for a chunk with other points, when that chunk is due: a generator, so
    workers run the first chunks while the parent prepares the next shape's."""
    by_shape: dict[int, list[Point]] = {}
    for point in plan.points:
        by_shape.setdefault(point.shape, []).append(point)
    remaining = len(plan.points)
    kernbench = base.get("kernbench", True)
    for shape, points in by_shape.items():
        typed = plan.typed_base(shape) if kernbench else None
        config = None  # the DictConfig, made only if some point needs it
        choices = OmegaConf.select(plan.shapes[shape].config, "hydra.runtime.choices")
        base = {**base, "groups": group_columns(choices)}
        while points:
            size = sizes(remaining)
            these, points = points[:size], points[size:]
            remaining -= len(these)
            if typed is not None and all(p.assigned is not None for p in these):
                yield Chunk(None, these, typed=typed, **base)
                continue
            if config is None:
                config = plan.run_task(shape) if kernbench else plan.shapes[shape].config
            yield Chunk(config, these, typed=typed, **base)


def write_records(plan: Plan, master: DictConfig, sweep_dir: Path) -> None:
    """``.hydra/overrides.yaml``, ``.hydra/points.yaml`` and ``.hydra/shapes/<n>.yaml``."""
    records = sweep_dir / RECORDS_DIR
    (records / "shapes").mkdir(parents=True, exist_ok=True)
    save_config(master.hydra.overrides.task, records / "overrides.yaml")
    points = {p.num: {"shape": p.shape, "overrides": list(p.overrides)} for p in plan.points}
    text = yaml.dump(points, Dumper=_DUMPER, sort_keys=False) + end_line(len(points))
    write_atomic(records / POINTS_FILE, text)
    for n, shape in enumerate(plan.shapes):
        save_config(shape.config, records / "shapes" / f"{n}.yaml")


def save_config(cfg: DictConfig | ListConfig, path: Path) -> None:
    """``OmegaConf.save(cfg, path)`` (unresolved) through YAML's C emitter: the same
    document for ``OmegaConf.load``, in ~1 ms instead of ~7 ms a shape (the records
    are written while the first chunks run, on the cores the workers use)."""
    data = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    text = yaml.dump(data, Dumper=_RecordDumper, sort_keys=False, allow_unicode=True)
    write_atomic(path, text)


class Gather:
    """Collects point results in the parent: rows, progress, the points log."""

    def __init__(self, sweep_dir: Path, total: int, overrides: dict[int, list[str]]) -> None:
        self.sweep_dir = sweep_dir
        self.overrides = overrides
        self.rows: list[dict[str, Any]] = []
        self.results: dict[int, PointResult] = {}
        self.bar = SweepBar(total)
        self.log = PointsLog(sweep_dir / POINTS_LOG)
        self.log.write(f"# sweep of {total} points started {_stamp(self.bar.start)}\n")
        self.last_result = self.bar.start

    def __call__(self, result: PointResult) -> None:
        self.results[result.num] = result
        self.rows.extend(result.rows)
        lines = " ".join(self.overrides.get(result.num, []))
        with outputs.reported(self.log.path):
            self.log.write(f"#{result.num} [{result.status}] {lines}\n{result.log}")
        self.bar.point_done(result, lines)
        self.last_result = time.time()

    def progress(self, finished: int) -> None:
        """Points finished where they ran, their rows not back yet (cluster tasks)."""
        self.bar.progress(finished)

    def close(self) -> None:
        """End the bar and the log; the log's last line says when the last point's
        result came back (its first, when the sweep started running)."""
        self.bar.close()
        done = len(self.results)
        with outputs.reported(self.log.path):
            self.log.write(f"# {done} points done, the last at {_stamp(self.last_result)}\n")
        self.log.close()

    def merge(self) -> MergeOutcome:
        """Write ``results.parquet`` (ordered by job number) atomically."""
        self.rows.sort(key=lambda row: row.get("job_num") or 0)
        target = self.sweep_dir / MERGED_FILE
        with outputs.reported(target):
            path = write_table_atomic(rows_to_table(self.rows), target)
            merge_kernel_tables(self.sweep_dir, self.rows)  # the points' launch rows
        n_errors = sum(row.get("status") == STATUS_ERROR for row in self.rows)
        n_cached = sum(bool(row.get("cached")) for row in self.rows)
        return MergeOutcome(path, len(self.rows), n_errors, n_cached)


class PointsLog:
    """``points.log``, appended one segment (a point's output, a sweep's first or last
    line) at a time, each whole or not at all: one ``write`` call, and a write that
    fails part way (a full disk) is cut back off, so the log never holds half a
    segment that the next one would run into. A sweep killed in the middle of a write
    can still leave one; the next sweep's first line starts on a line of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed = False  # after a write has failed (reported once), none is tried
        self.fd = open_appending(path)  # never through a link planted there
        size = os.lseek(self.fd, 0, os.SEEK_END)
        if size and os.pread(self.fd, 1, size - 1) != b"\n":
            self.write("\n# (the previous sweep's last segment was cut short)\n")

    def write(self, text: str) -> None:
        if self.failed:
            return
        data = text.encode(errors="backslashreplace")
        start = os.lseek(self.fd, 0, os.SEEK_END)
        try:
            written = 0
            while written < len(data):  # a short write's next one says why (disk full, ...)
                written += os.write(self.fd, data[written:])
        except OSError:
            self.failed = True
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)
            raise

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t).isoformat(timespec="microseconds")


def run_plan(
    plan: Plan,
    chunks: Iterable[Chunk],
    sweep_dir: Path,
    run: RunChunks,
    request: stop.StopRequest,
    polled: bool,
) -> Gather:
    """Run every chunk with ``run`` and gather the results (closed on return), until
    ``request`` says stop. ``polled``: ``run`` watches the request itself and returns
    with what is done (local workers); otherwise (another launcher, which waits for all
    its jobs) the signal interrupts it, and the points its jobs finished are read from
    their marks (:func:`kernbench.sweep.remote.finished`). Whatever the launcher raises
    once the request has fired is the stop, not a failure, however C code under it
    handed the handler's exception back: Ray's ``ray.get`` raised a KeyboardInterrupt of
    its own for it, or a SystemError caused by it."""
    overrides = {p.num: p.overrides for p in plan.points}
    gather = Gather(sweep_dir, len(plan.points), overrides)
    try:
        with request.polled() if polled else contextlib.nullcontext():
            run(chunks, gather)
    except BaseException:  # the stop signal, raised inside the launcher's wait
        if not request.requested:
            raise
        from kernbench.sweep.remote import abandon_jobs, finished

        for result in finished(sweep_dir, set(overrides) - set(gather.results)):
            gather(result)
        abandon_jobs()
    finally:
        gather.close()
    return gather


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _RecordDumper(_DUMPER):  # type: ignore[misc,valid-type]
    """YAML's safe dumper, quoting every string OmegaConf's own loader would not read
    back as a string (``1e3`` is a float to it, not to YAML 1.1): it takes that
    loader's implicit resolvers (``omegaconf._utils.get_yaml_loader``, OmegaConf 2.3)."""


_RecordDumper.yaml_implicit_resolvers = get_yaml_loader().yaml_implicit_resolvers

"""Progress: a bar for one long run on a terminal, a log line per finished sweep point.

**One run.** :class:`RunBar` is the :class:`kernbench.sim.system.RunObserver` the app
hands the simulator when stderr is a terminal: a tqdm bar over the commands the PE CPUs
have dispatched, against the number the launched kernels hold (known under the replay
path; the greenlet path shows a count). It appears only after half a second, so quick
runs print nothing extra, and it never touches simulated state.

**A sweep.** Hydra runs ``on_job_end`` inside the launcher's workers (joblib processes,
submitit jobs, Ray tasks), which share nothing but the sweep directory. So the sweep
keeps its progress there, in ``<sweep>/.kernbench/``: the main process writes
``progress.json`` (start time, number of points) when the multirun starts, and each
finished job drops a marker ``done/<job_num>``. A worker counts the markers and logs
``point 3/8 done (job 5), 4.1 s elapsed, ~6.8 s left``: time left is the elapsed time
per finished point times the points still to go, which already reflects however many
workers run at once.

The sweep directory may be one other users can write into, and the sweep's own
processes read back what is in ``.kernbench/`` (a chunk job's marks hold its points'
results, :mod:`kernbench.sweep.remote`). So ``.kernbench`` and ``done`` are directories
only the sweeping user can use (:func:`kernbench.files.private_dir`): made with mode
0700, and refused in one line if either is a symbolic link or another user's.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig
from tqdm import tqdm

from kernbench.errors import ConfigError, one_line
from kernbench.files import UnsafePath, private_dir, write_atomic
from kernbench.sweep import stop

if TYPE_CHECKING:
    from kernbench.sim.system import System

log = logging.getLogger("kernbench.sweep")

STATE_DIR = ".kernbench"
_START_FILE = "progress.json"
_DONE_DIR = "done"
_BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
SWEEP_KEY = "hydra.sweep.dir"


class RunBar:
    """A tqdm bar over dispatched commands; a context manager that closes it.

    ``enabled=None`` shows it only when ``file`` is a terminal; ``delay_s`` hides it
    from runs shorter than that."""

    def __init__(
        self, file: IO[str] | None = None, enabled: bool | None = None, delay_s: float = 0.5
    ) -> None:
        self.file = file or sys.stderr
        self.enabled = _is_terminal(self.file) if enabled is None else enabled
        self.delay_s = delay_s
        self.bar: tqdm | None = None
        self.total: int | None = 0

    def __enter__(self) -> RunBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()

    def launched(self, system: System, sources: Sequence[tuple[Any, Any]]) -> None:
        """A kernel launch: add its commands to the bar's total (None if unknown).

        Only lengths a source already knows are used: counting a long kernel's commands
        would trace it whole and undo replay's batching."""
        counts = [getattr(src, "known_total", None) for _, src in sources]
        if self.total is not None:
            self.total = None if None in counts else self.total + sum(counts)  # type: ignore[arg-type]
        if self.bar is None:
            self.bar = tqdm(
                total=self.total,
                desc="simulating",
                unit="cmd",
                file=self.file,
                disable=not self.enabled,
                delay=self.delay_s,
                leave=False,
                dynamic_ncols=True,
            )
        else:
            self.bar.total = self.total
        self.advanced(system)

    def advanced(self, system: System) -> None:
        """Simulated time went on: show the commands dispatched so far. A
        :func:`kernbench.sweep.stop.checkpoint` too: a Ctrl-C whose exception was lost
        stops the simulation here (every 4,096 events and when each launch ends)."""
        stop.checkpoint()
        if self.bar is None:
            return
        done = dispatched_commands(system)
        self.bar.set_postfix_str(f"sim {system.now:.6g} ns", refresh=False)
        self.bar.update(done - self.bar.n)


def dispatched_commands(system: System) -> int:
    """Commands every PE CPU of ``system`` has dispatched so far."""
    return sum(pe.cpu.commands for pe in system.pes)


def _is_terminal(file: IO[str]) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def is_stock_sweep(config: DictConfig) -> bool:
    """Whether Hydra's basic sweeper runs this multirun (one job per point)."""
    return config.hydra.sweeper.get("_target_") == _BASIC_SWEEPER


def sweep_size(config: DictConfig) -> int | None:
    """How many points Hydra's basic sweeper will launch for ``config`` (the product of
    every comma-separated list, from the command line and ``hydra.sweeper.params``), or
    None for another sweeper or a sweep it cannot count."""
    if not is_stock_sweep(config):
        return None
    params = config.hydra.sweeper.get("params") or {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += list(config.hydra.overrides.get("task") or [])
    try:
        overrides = OverridesParser.create().parse_overrides(arguments)
        return len(BasicSweeper.split_arguments(overrides, None)[0])
    except Exception:  # e.g. a glob() sweep needs the config loader: just no total
        return None


def start_sweep(sweep_dir: Path, total: int | None, now: float | None = None) -> None:
    """Record when the sweep started and how many points it has (main process, a
    Hydra callback: a refused ``.kernbench`` is one line and exit 1 here)."""
    try:
        done_dir(sweep_dir)
    except ConfigError as exc:
        print(f"kernbench: error: {one_line(str(exc))}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    start = time.time() if now is None else now
    write_atomic(state_dir(sweep_dir) / _START_FILE, json.dumps({"start": start, "total": total}))


def state_dir(sweep_dir: Path) -> Path:
    """``<sweep>/.kernbench``, made private to this user if it is not (see the module's
    docstring); a :class:`ConfigError` naming ``hydra.sweep.dir`` and the directory if
    it is a symbolic link or another user's."""
    return _private(Path(sweep_dir) / STATE_DIR)


def done_dir(sweep_dir: Path) -> Path:
    """``<sweep>/.kernbench/done``, checked as :func:`state_dir` is."""
    state = state_dir(sweep_dir)
    return _private(state / _DONE_DIR)


def private_subdir(sweep_dir: Path, name: str) -> Path:
    """``<sweep>/.kernbench/<name>``, checked as :func:`state_dir` is."""
    return _private(state_dir(sweep_dir) / name)


def _private(path: Path) -> Path:
    try:
        return private_dir(path)
    except UnsafePath as exc:
        raise ConfigError(
            SWEEP_KEY,
            f"{exc}; kernbench keeps a sweep's own files only in a directory of the"
            " sweeping user's that no one else can write (remove it, or sweep into"
            " another directory)",
        ) from None


def mark_done(sweep_dir: Path, job_num: int) -> None:
    """Mark point ``job_num`` finished, where it ran (a job, a chunk task): a marker
    file, so a point finished twice (a retried job) still counts once."""
    done_dir(sweep_dir)
    write_atomic(done_mark(sweep_dir, job_num), b"")


def done_mark(sweep_dir: Path, job_num: int) -> Path:
    """The file that marks point ``job_num`` finished."""
    return sweep_dir / STATE_DIR / _DONE_DIR / str(job_num)


def count_done(sweep_dir: Path) -> int:
    """The points marked finished so far (none while ``done`` is not a directory of
    its own: a link is not followed)."""
    done = sweep_dir / STATE_DIR / _DONE_DIR
    if done.is_symlink() or not done.is_dir():
        return 0
    return sum(not mark.name.startswith(".") for mark in done.iterdir())  # . : partial


def finish_point(sweep_dir: Path, job_num: int, now: float | None = None) -> str:
    """Mark ``job_num`` done and return the progress line (worker side)."""
    mark_done(sweep_dir, job_num)
    done = count_done(sweep_dir)
    try:
        info = json.loads((sweep_dir / STATE_DIR / _START_FILE).read_text())
    except (OSError, ValueError):
        info = {}
    return progress_line(done, info.get("total"), job_num, info.get("start"), now)


def progress_line(
    done: int, total: int | None, job_num: int, start: float | None, now: float | None = None
) -> str:
    """``point 3/8 done (job 5), 4.1 s elapsed, ~6.8 s left``; parts left out when the
    total or the start time is unknown."""
    line = f"point {done}/{total} done" if total else f"point {done} done"
    line += f" (job {job_num})"
    if start is not None:
        elapsed = (time.time() if now is None else now) - start
        line += f", {_duration(elapsed)} elapsed"
        if total and done:
            line += f", ~{_time_left(elapsed, done, total)} left"
    return line


def _time_left(elapsed: float, done: int, total: int) -> str:
    """The time the points to go will take at the pace of those done (which already
    counts the workers: their points end in parallel)."""
    return _duration(elapsed / done * max(total - done, 0))


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class SweepBar:
    """Progress of a fast sweep (:mod:`kernbench.sweep.run`), in the parent process.

    On a terminal: one tqdm bar, points done / total, its ETA from the points' own
    times (the bar starts when the first chunk is sent, after composition, so that
    work is not charged to the first point). In a log or a pipe: a line about every
    10% (``sweep: 48/96 points, 1 error, 12.3 s elapsed, ~12.1 s left``). Either way a
    failing point prints its one-line error as it ends. Under a cluster launcher the
    rows come back only when every task has ended, so :meth:`progress` shows the
    points the tasks say they have finished meanwhile.
    """

    def __init__(self, total: int, file: IO[str] | None = None, enabled: bool | None = None):
        self.file = file or sys.stderr
        self.total = total
        self.done = 0  # points whose result came back
        self.finished = 0  # points known to have finished, results back or not
        self.errors = 0
        self.start = time.time()
        self.next_line = 1
        terminal = _is_terminal(self.file) if enabled is None else enabled
        self.bar = (
            tqdm(total=total, desc="sweep", unit="pt", file=self.file, dynamic_ncols=True)
            if terminal
            else None
        )

    def point_done(self, result: Any, overrides: str = "") -> None:
        """Count one finished point; say so if it failed."""
        self.done += 1
        if result.status != "ok":
            self.errors += 1
            self._say(f"kernbench: error: point #{result.num} ({overrides}): {result.error}")
        self._show(max(self.finished, self.done))

    def progress(self, finished: int) -> None:
        """``finished`` points have ended where they ran; their rows are still to come."""
        self._show(max(self.finished, min(finished, self.total)))

    def _show(self, finished: int) -> None:
        """Move the bar, or print a line at each 10% passed and when the last row is
        back (a point counted by :meth:`progress` is not counted again)."""
        grew = finished > self.finished
        self.finished = finished
        if self.bar is not None:
            self.bar.update(finished - self.bar.n)
            return
        last_row = self.done == self.total and finished == self.done
        if (grew and finished >= self.next_line * self.total / 10) or last_row:
            self.next_line = int(finished * 10 / self.total) + 1
            self._say(self.line())

    def line(self, now: float | None = None) -> str:
        elapsed = (time.time() if now is None else now) - self.start
        text = f"sweep: {self.finished}/{self.total} points"
        if self.errors:
            text += f", {self.errors} error" + ("s" if self.errors > 1 else "")
        text += f", {_duration(elapsed)} elapsed"
        if self.finished < self.total:
            text += f", ~{_time_left(elapsed, self.finished, self.total)} left"
        return text

    def _say(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.file)
        else:
            print(text, file=self.file, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

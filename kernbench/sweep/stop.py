"""Stopping a sweep when told (Ctrl-C, SIGTERM), and workers that never outlive it.

The sweeping process handles SIGINT and SIGTERM itself (:func:`handled`); its workers
ignore SIGINT, which a terminal sends to the whole process group, so that one process
decides. The first signal is recorded in a :class:`StopRequest`:

- while the sweep composes its points it raises :class:`Interrupted` there (nothing
  has run; the sweep reports that and exits);
- while points run, the run loop polls it (:data:`POLL_S`): no chunk is handed out
  after it, workers end their chunk after the point they are running, points still
  running after :data:`GRACE_S` are abandoned (their workers killed), and the rows of
  every finished point are merged. The exit status is 128 + the signal's number, as a
  shell reports a process a signal ended: 130 for SIGINT, 143 for SIGTERM.

A second signal leaves at once: the workers are killed and the process exits with the
same status, merging nothing (finished points are in the point cache).

A single run handles SIGINT the same way (:func:`kernbench.app.run`): the first raises
:class:`Interrupted`, a second leaves at once. The first one's exception can be lost
where it is raised, and the run then went on simulating as if no Ctrl-C had come. Seen:
while Hydra writes ``.hydra/``, OmegaConf's YAML dumper tries ``int()`` on every string
it writes (inside ``except ValueError``); a signal handled while such an ``int()`` ran
left no KeyboardInterrupt behind once it raised its ValueError: the handler's exception
was dropped inside ``int()``, never reaching a Python frame (5 of 6,605 moments tried
in that window; a loop of ``int("abc")`` alone loses about 1 Ctrl-C in 100-150).
A finalizer (``__del__``, a weakref callback) run by the garbage collector when the
signal comes loses it too, with an "Exception ignored" report. So the request stays
recorded, such a report of it is not printed (:func:`handled`), and :func:`checkpoint`,
called when the task starts and all along the simulation, raises it again.

However the sweeping process ends, SIGKILL included, its workers end too: each runs a
:func:`watch_parent` thread that exits the worker within :data:`WATCH_S` of its parent
being gone. (A worker blocked writing its result to a parent that no longer reads, or
holding the caller's stdout, would otherwise live forever.)
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NoReturn

from kernbench.sweep.reaper import stat_field

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
POLL_S = 0.05  # how often the run loop looks for a stop request while it waits
GRACE_S = 0.8  # how long points already running may take to end once told to stop
WATCH_S = 0.5  # how often a worker checks that its parent is alive
ORPHAN_EXIT = 70  # a worker's exit status when its parent is gone
MAX_SCANS = 20  # stopped_tree's rounds at most (each finds what the last one's started)

# The requests of the handled() blocks open in this process, innermost last.
_active: list[StopRequest] = []


class Interrupted(KeyboardInterrupt):
    """The first stop signal, raised while the sweep is not running points. A
    KeyboardInterrupt, so no ``except Exception`` swallows it, and C code that takes
    only KeyboardInterrupt from ``PyErr_CheckSignals`` takes it: Ray's ``ray.get``
    checks for signals while it waits (``ray._raylet.check_signals``), turns a
    KeyboardInterrupt into its own, and wrote anything else off as unraisable and
    waited on, so the sweep ran every point to the end before it stopped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopRequest:
    """Whether, and by which signal, the sweep was told to stop."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.raising = True  # raise Interrupted on the first signal (see polled())
        self._on_exit: list[Callable[[], None]] = []

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def exit_status(self) -> int:
        """128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
        assert self.signum is not None
        return 128 + self.signum

    @contextlib.contextmanager
    def polled(self) -> Iterator[None]:
        """While points run, the first signal is only recorded: the run loop polls
        :attr:`requested` and stops in order."""
        self.raising = False
        try:
            yield
        finally:
            self.raising = True

    @contextlib.contextmanager
    def on_exit(self, kill: Callable[[], None]) -> Iterator[None]:
        """Call ``kill`` (end the workers) if a second signal exits the process
        meanwhile."""
        self._on_exit.append(kill)
        try:
            yield
        finally:
            self._on_exit.remove(kill)

    def handle(self, signum: int, frame: object) -> None:
        """The signal handler (main thread)."""
        if self.signum is not None:  # told twice: leave now
            for kill in list(self._on_exit):
                with contextlib.suppress(Exception):
                    kill()
            os.write(2, b"\nkernbench: interrupted again: stopped at once\n")
            os._exit(128 + signum)
        self.signum = signum
        if self.raising:
            raise Interrupted(signum)


@contextlib.contextmanager
def handled(signals: Iterable[int] = STOP_SIGNALS) -> Iterator[StopRequest]:
    """``signals`` (SIGINT and SIGTERM) recorded in the yielded :class:`StopRequest` for
    the block, the previous handlers restored after it; meanwhile a stop the request
    raised, lost in a finalizer, is not reported (:func:`checkpoint` raises it again).
    Outside the main thread (where Python cannot set handlers) the request simply
    never fires."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return
    if _active:  # a stop the enclosing block recorded but lost carries in (a sweep's)
        request.signum = _active[-1].signum
    previous = {signum: signal.signal(signum, request.handle) for signum in signals}
    unraisable = sys.unraisablehook
    sys.unraisablehook = _quiet_lost_stop(unraisable)
    _active.append(request)
    try:
        yield request
    finally:
        _active.remove(request)
        sys.unraisablehook = unraisable
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def checkpoint() -> None:
    """Raise :class:`Interrupted` if the innermost :func:`handled` block was told to stop
    and raises its stops (not while its sweep polls): the first signal's exception may
    have been lost where the handler raised it (module docstring)."""
    request = _active[-1] if _active else None
    if request is not None and request.signum is not None and request.raising:
        raise Interrupted(request.signum)


def _quiet_lost_stop(
    previous: Callable[[sys.UnraisableHookArgs], object],
) -> Callable[[sys.UnraisableHookArgs], object]:
    """An unraisable hook that drops the report of an :class:`Interrupted` (the garbage
    collector ran a finalizer when the signal came) and passes on every other."""

    def hook(unraisable: sys.UnraisableHookArgs) -> object:
        if isinstance(unraisable.exc_value, Interrupted):
            return None
        return previous(unraisable)

    return hook


def run_interrupted() -> NoReturn:
    """How a single run (not a sweep) that Ctrl-C stopped ends: one line, exit 130."""
    print("kernbench: interrupted: the run stopped; no result was written", file=sys.stderr)
    leave(128 + signal.SIGINT)


def report(
    request: StopRequest, done: int, total: int, cached: bool, sweep_dir: object = None
) -> None:
    """The one line an interrupted sweep prints. Without the cache, the points done are
    kept by resuming into the sweep's own directory (its results.parquet holds them; a
    rerun of the same command would start a new, timestamped one)."""
    if cached:
        rerun = "rerun the same command to finish (done points are cached)"
    elif done and sweep_dir is not None:
        rerun = (
            f"cache=false: rerun with hydra.sweeper.resume=true hydra.sweep.dir={sweep_dir}"
            " to keep them and run the rest"
        )
    else:
        rerun = "cache=false, so a rerun runs every point again"
    print(f"kernbench: interrupted: {done} of {total} points done; {rerun}", file=sys.stderr)


def leave(status: int) -> NoReturn:
    """Exit now with ``status``, output flushed, skipping the interpreter's clean-up:
    how a stopped sweep ends, with the stop handlers still in place. Raising SystemExit
    instead gave the handlers back to Python on the way out, and a Ctrl-C pressed again
    meanwhile (a user pressing it until the sweep ends) raised KeyboardInterrupt in the
    interpreter's exit: a traceback, and death by SIGINT instead of the one line and 130
    (once in tests/test_stop.py under load). And a local Ray cluster's client,
    interrupted while it waited on tasks, crashed in that clean-up (SIGSEGV)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (from /proc; none where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stopped_tree(pid: int, known: Iterable[int] = ()) -> set[int]:
    """SIGSTOP ``known`` and every process below ``pid``, scanning again until no new
    one appears, and return them all: stopped, none can start another, so killing them
    then leaves none behind. Killing what one scan found left what those processes had
    started meanwhile alive and orphaned (a private Ray cluster told to stop while it
    started: its dashboard's subprocesses lived 11 s more). A process is rescanned
    only once it has stopped: one stopped inside ``fork`` has its child by then."""
    stopped: set[int] = set()
    todo = set(known) | set(descendants(pid))
    for _ in range(MAX_SCANS):
        if not todo:
            break
        for found in todo:
            with contextlib.suppress(OSError):
                os.kill(found, signal.SIGSTOP)
        _wait_stopped(todo)
        stopped |= todo
        todo = set(descendants(pid)) - stopped
    return stopped


def _wait_stopped(pids: set[int], within: float = 0.5) -> None:
    """Wait (up to ``within`` s) until each of ``pids`` is stopped, a zombie or gone."""
    deadline = time.monotonic() + within
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        waiting = {p for p in waiting if stat_field(p, 0) not in ("T", "t", "Z", "X", None)}
        if waiting:
            time.sleep(0.001)


def watch_parent(alive: Callable[[], bool]) -> None:
    """End this process (``os._exit``) within :data:`WATCH_S` of ``alive()`` turning
    false: a daemon thread, so it needs no cooperation from whatever the process is
    doing (a simulation, a blocked pipe write)."""

    def watch() -> None:
        while alive():
            threading.Event().wait(WATCH_S)
        os._exit(ORPHAN_EXIT)

    threading.Thread(target=watch, name="kernbench-parent-watch", daemon=True).start()


def child_of(parent: int) -> Callable[[], bool]:
    """``alive`` for a worker forked by ``parent``: true while it is still the parent
    (a dead parent's children are handed to another process at once)."""
    return lambda: os.getppid() == parent


def process_alive(pid: int) -> Callable[[], bool]:
    """``alive`` for a process that is not this one's parent (a chunk job started
    through another launcher's own processes): true while ``pid`` exists and has not
    exited (a zombie, not yet reaped, counts as gone)."""

    def alive() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return True  # no /proc (macOS): existence is all we know

    return alive

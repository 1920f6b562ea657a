"""Local worker processes for the fast sweep: chunks in, point results out, as they end.

Workers are forked from the parent (on Linux; spawned elsewhere), so they start in
milliseconds with every module, the task function and Hydra's state already loaded,
and what :func:`~kernbench.sweep.points.warm_up` loads (:meth:`LocalPool.start` runs
it in the parent first); a chunk carries only its shape's typed object (or config)
and its points. The sweeper forks them before it composes the points: forking a
process of this size and delivering its first chunk took 16-22 ms, which then
overlaps the parent's planning instead of delaying the first chunk. Each worker then
runs the same warm-up on its own (:func:`_start_worker`): a forked process shares the
parent's memory until it writes to it, and Python writes to every object it touches
(reference counts), so a worker's first point paid for copying those pages and for
cold caches, 3-8 ms more than the next; paid while the parent plans, on
``dispatch_ratio`` the points' window shrank from 153-193 to 145-168 ms (five runs
each, alternating). Results come back as each batch of points ends (below), in
completion order, to a callback in the parent. The parent's objects are frozen out
of the garbage collector (``gc.freeze``) while workers run, as Python's ``gc`` docs
advise before a fork: a worker's full collection would otherwise walk (and, writing
their headers, copy) every object it inherited, about 40 ms each time here. Measured on
``dispatch_ratio``: its 50 simulations took 0.26-0.30 s in all instead of 0.36-0.43 s.

Each worker sends its points' results to the parent as each batch of a chunk ends
(:class:`_Outbox`, a pipe of the pool's own), not with its chunk: a worker that dies
(the OOM killer's SIGKILL, a crash in native code, any signal) loses no point it
finished. Its death breaks the pool (every worker is ended and every chunk in flight
lost; :class:`_Round`), and a new pool takes over: the dead worker's chunk's unfinished
points are each retried once, alone in a chunk, so one that kills its worker again is
known and gets the one error row (naming the signal); the other chunks in flight run
their unfinished points again, and the sweep goes on. Its last lines name what died
(:class:`_Ledger`).

Chunks are handed out as workers free up (two per worker in flight), so a stop request
(:mod:`kernbench.sweep.stop`) leaves nothing queued: workers end their chunk after the
point they are running (they poll a shared event between batches), points still
running after ``stop.GRACE_S`` are abandoned, and the workers are killed. Workers ignore
Ctrl-C (the sweeping process decides) and exit on their own if it dies.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from multiprocessing.reduction import ForkingPickler
from typing import Any

from kernbench.sweep import stop
from kernbench.sweep.plan import Point
from kernbench.sweep.points import Chunk, PointResult, run_chunk, warm_up

OnResult = Callable[[PointResult], None]
# (task function, HydraContext, the task config each worker warms up on, or None)
_WORKER_STATE: tuple[Any, Any, Any] = (None, None, None)
_HALT: Any = None  # in a worker: the pool's event that says "end your chunk now"
_OUTLET: tuple[Any, Any] = (None, None)  # in a worker: the results pipe's end, its lock
IN_FLIGHT_PER_WORKER = 2  # chunks handed out per worker: one running, one queued
PIPE_BYTES = 1 << 20  # the results pipe's buffer: Linux's most without privileges
# Tests only: the job number of a point whose worker SIGKILLs itself as the point starts
# (each time it runs), as the OOM killer would. Read once as each worker starts.
TEST_KILL_ENV = "KERNBENCH_TEST_KILL_POINT"
_TEST_KILL: int | None = None
# Breaks in a row that cost no point and came after no result: workers that die before
# they run anything (at start-up, say). The sweep then stops forking new ones.
MAX_IDLE_BREAKS = 3
_BEGIN, _RESULTS = "begin", "results"  # what a worker's message says


# Workers past this many per core only share the cores, each holding its own copy of
# the sweep's configs: n_jobs=100000 forked as many workers as the grid had points.
WORKERS_PER_CORE = 4


def n_jobs_problem(n_jobs: object) -> str | None:
    """Why ``n_jobs`` is not a worker count this machine should run, or None: 1 to
    :data:`WORKERS_PER_CORE` per core, or -1 to -cores as joblib counts them (0 was
    taken as 1)."""
    cores = os.cpu_count() or 1
    most = cores * WORKERS_PER_CORE
    if type(n_jobs) is int and (1 <= n_jobs <= most or -cores <= n_jobs <= -1):
        return None
    return (
        f"{n_jobs!r} is not a worker count: 1 to {most} ({WORKERS_PER_CORE} per core on"
        f" {cores} cores), or -1 to -{cores} (cores + 1 + n_jobs: -1 is one per core)"
    )


def worker_count(n_jobs: int | None) -> int:
    """``n_jobs`` as joblib reads it: -1 (or None) is one per core."""
    cores = os.cpu_count() or 1
    if n_jobs is None or n_jobs < 0:
        return max(1, cores + 1 + (n_jobs or -1))
    return max(1, n_jobs)


class LocalPool:
    """``n_workers`` worker processes for one sweep's chunks. :meth:`start` forks them
    ahead of time (the sweeper calls it before composing the points), so they are
    ready, their start-up paid while the parent plans, when the first chunk is cut.
    With a ``warm`` task config, the parent warms up on it before forking (the workers
    inherit what that loads) and each worker again as it starts."""

    def __init__(
        self,
        n_workers: int,
        task: Any,
        context: Any,
        warm: Any = None,
        request: stop.StopRequest | None = None,
    ) -> None:
        self.n_workers = n_workers
        self.task, self.context, self.warm = task, context, warm
        self.request = request or stop.StopRequest()
        self._pool: _Pool | None = None

    def start(self) -> None:
        """Fork the workers now (with ``fork``, the first submit starts every worker)."""
        global _WORKER_STATE
        if self._pool is not None:
            return
        if self.warm is not None:
            warm_up(self.warm)
        _WORKER_STATE = (self.task, self.context, self.warm)  # inherited by forked workers
        gc.freeze()  # see the module's docstring; undone when the chunks have run
        self._pool = _started(self.n_workers)

    def close(self) -> None:
        """Shut down workers that were started but never given chunks."""
        if self._pool is not None:
            _close(self._pool)
            self._pool = None
            gc.unfreeze()

    def run(self, chunks: Iterable[Chunk], on_result: OnResult) -> None:
        """Run ``chunks`` (on the started workers, if any), each sent as soon as the
        iterable yields it; ``on_result`` sees every point once. A pool a dead worker
        broke is replaced until every point has its row (module docstring); the last
        lines say what died. The workers are shut down on return."""
        self.start()
        pool: _Pool | None = self._pool
        self._pool = None
        ledger = _Ledger(on_result)
        queue = _Queue(chunks)
        try:
            while pool is not None:
                wreck = _Round(pool, queue, ledger, self.request).run()
                pool = self._next_pool(wreck, queue, ledger)
        finally:
            gc.unfreeze()
        if not self.request.requested:  # a stopped sweep says one line, its own
            ledger.report()

    def _next_pool(self, wreck: _Wreck | None, queue: _Queue, ledger: _Ledger) -> _Pool | None:
        """After a round: a new pool for what the broken one left, or None (all done,
        stopping, or workers that keep dying before they run a point). The sweep's next
        chunk is cut first, so a stop that comes with it (the launch API's chunks are a
        generator of the caller's) is seen before a pool is forked, as is a sweep with
        nothing left to run."""
        if wreck is None or self.request.requested:
            return None
        ledger.take(wreck, queue)
        queue.cut_next()
        if self.request.requested or not queue:
            return None
        if ledger.idle_breaks >= MAX_IDLE_BREAKS:
            ledger.give_up(queue)
            return None
        return _started(self.n_workers)


def run_chunks(
    chunks: Iterable[Chunk], n_workers: int, on_result: OnResult, task: Any, context: Any
) -> None:
    """Run ``chunks`` on ``n_workers`` new processes; ``on_result`` sees every point."""
    LocalPool(n_workers, task, context).run(chunks, on_result)


class _Queue:
    """The chunks still to run: what a broken pool left (``front``: retries first),
    then the sweep's own, cut as they are due."""

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self.front: deque[Chunk] = deque()
        self.rest = iter(chunks)

    def take(self) -> Chunk | None:
        return self.front.popleft() if self.front else next(self.rest, None)

    def cut_next(self) -> None:
        """Cut the sweep's next chunk now (it runs after ``front``)."""
        chunk = next(self.rest, None)
        if chunk is not None:
            self.front.append(chunk)

    def __bool__(self) -> bool:
        return bool(self.front)

    def drain(self) -> Iterator[Chunk]:
        """Every chunk left, taken."""
        while (chunk := self.take()) is not None:
            yield chunk


@dataclass
class _Flight:
    """A chunk handed to a pool: which worker began it (its pid) and which of its
    points have reported."""

    chunk: Chunk
    future: Future
    worker: int | None = None
    done: set[int] = field(default_factory=set)

    def unfinished(self) -> list[Point]:
        return [p for p in self.chunk.points if p.num not in self.done]


@dataclass
class _Wreck:
    """What a broken pool left: its chunks in flight (their points reported so far)
    and its workers' exit codes (``Process.exitcode``: -N for signal N)."""

    flights: list[_Flight]
    exits: dict[int, int | None]

    @property
    def ended(self) -> dict[int, int]:
        return {pid: code for pid, code in self.exits.items() if code not in (None, 0)}

    @property
    def unsure(self) -> bool:
        """Whether every worker ended by SIGTERM: the pool ends the others with it once
        one has died, so one that died of it too cannot be told from them."""
        return bool(self.ended) and set(self.ended.values()) == {-signal.SIGTERM}

    def deaths(self) -> dict[int, _Death]:
        """The workers that died on their own, by pid. If that cannot be told
        (:attr:`unsure`), every worker ended by SIGTERM, sharing one death."""
        if self.unsure:
            shared = _Death(_how(-signal.SIGTERM), unsure=True)
            return dict.fromkeys(self.ended, shared)
        own = {pid: code for pid, code in self.ended.items() if code != -signal.SIGTERM}
        return {pid: _Death(_how(code)) for pid, code in own.items()}


class _Round:
    """One pool's share of the sweep: chunks handed out as workers free up, until the
    chunks run out (None), the sweep is told to stop (None), or a worker dies and
    breaks the pool (a :class:`_Wreck`). A chunk's last batch comes back with its
    future; its earlier batches, and which worker began it, through the pool's pipe
    (:class:`_Outbox`), read whenever the loop wakes."""

    def __init__(
        self, pool: _Pool, queue: _Queue, on_result: OnResult, request: stop.StopRequest
    ) -> None:
        self.pool, self.queue, self.on_result, self.request = pool, queue, on_result, request
        self.ahead = IN_FLIGHT_PER_WORKER * pool._max_workers
        self.flights: dict[int, _Flight] = {}
        self.sent = 0  # chunks handed out: the next one's key
        self.broken = False
        self.eof = False  # every worker is gone: no message can come

    def run(self) -> _Wreck | None:
        try:
            with self.request.on_exit(lambda: _kill(self.pool)):
                return self._loop()
        except BaseException:  # KeyboardInterrupt where no handler is installed (launch API)
            _kill(self.pool)
            raise
        finally:
            self.pool.reports.close()

    def _loop(self) -> _Wreck | None:
        while True:
            self._fill()
            if self.request.requested:
                self._halt()
                return None
            if not self.broken and not self.flights:
                self.pool.shutdown()
                return None
            if not self.broken:
                done = self._wait(stop.POLL_S)
                self._read()  # a chunk's earlier batches are there before its future ends
                for key in done:
                    self._end(key)
            if self.broken:
                return self._wreck()

    def _fill(self) -> None:
        """Hand out chunks up to ``ahead`` in flight (none once stopping)."""
        while not self.broken and not self.request.requested and len(self.flights) < self.ahead:
            chunk = self.queue.take()
            if chunk is None:
                return
            try:
                future = self.pool.submit(_work, self.sent, chunk)
            except BrokenProcessPool:  # a worker died since the last look
                self.queue.front.appendleft(chunk)
                self.broken = True
                return
            self.flights[self.sent] = _Flight(chunk, future)
            self.sent += 1

    def _wait(self, timeout: float) -> list[int]:
        """Wait up to ``timeout`` for a chunk to end; the keys of those that have."""
        futures = {flight.future: key for key, flight in self.flights.items()}
        done, _ = wait(futures, timeout, FIRST_COMPLETED)
        return [futures[future] for future in done]

    def _read(self) -> None:
        """Take the workers' messages sent so far (never waiting: a worker's send does
        not wake this process, which a two-core machine paid for in its points' time)."""
        reports = self.pool.reports
        while not self.eof and reports.poll():
            try:
                kind, key, payload = ForkingPickler.loads(reports.recv_bytes())
            except (EOFError, OSError):  # OSError: the end of a message its writer died in
                self.eof = True
                return
            self._take(kind, key, payload)

    def _take(self, kind: str, key: int, payload: Any) -> None:
        flight = self.flights.get(key)
        if flight is None:  # its chunk failed as a whole: its points have their rows
            return
        if kind == _BEGIN:
            flight.worker = payload
            return
        self._report(flight, payload)

    def _report(self, flight: _Flight, results: list[PointResult]) -> None:
        for result in results:
            if result.num not in flight.done:
                flight.done.add(result.num)
                self.on_result(result)

    def _end(self, key: int) -> None:
        """Chunk ``key``'s future has ended: its last batch, or error rows for its
        unreported points if it failed as a whole; a pool broken by a dead worker
        keeps the chunk for :meth:`_wreck`."""
        flight = self.flights[key]
        error = flight.future.exception()
        if isinstance(error, BrokenProcessPool):
            self.broken = True
            return
        del self.flights[key]
        if error is None:
            self._report(flight, flight.future.result())
            return
        for point in flight.unfinished():
            self.on_result(_failed(flight.chunk, point.num, error))

    def _halt(self) -> None:
        """Stop in order: chunks not started are dropped, running ones end after their
        current batch (their finished points reach ``on_result``), and whatever still
        runs after ``stop.GRACE_S`` is abandoned with its worker."""
        self.pool.halt.set()
        for key, flight in list(self.flights.items()):
            if flight.future.cancel():
                del self.flights[key]
        deadline = time.monotonic() + stop.GRACE_S
        while self.flights and time.monotonic() < deadline:
            done = self._wait(min(stop.POLL_S, max(0.0, deadline - time.monotonic())))
            self._read()
            for key in done:
                self._end(key)
            if self.broken:  # a worker died meanwhile: what it had not sent is abandoned
                break
        self._read()
        _kill(self.pool)

    def _wreck(self) -> _Wreck | None:
        """The pool broke: wait for it to end its other workers, take every message
        they sent (each finished point keeps its row), and say what was lost. None if
        the sweep is told to stop meanwhile: a SIGTERM to the whole process group
        (a scheduler's) ends the workers too, and that is a stop, not a death."""
        manager = self.pool._executor_manager_thread  # type: ignore[attr-defined]
        if manager is not None:
            manager.join(stop.GRACE_S)  # it ends the other workers and reaps them all
        exits = {pid: process.exitcode for pid, process in self.pool.workers.items()}
        _kill(self.pool)  # any worker left: then no writer remains, and reading ends
        self._read()
        for key, flight in list(self.flights.items()):  # chunks that ended before the death
            if flight.future.done() and not flight.future.exception():
                self._end(key)
        wreck = _Wreck(list(self.flights.values()), exits)
        if wreck.unsure:
            time.sleep(stop.POLL_S)  # the sweep's own SIGTERM may be on its way
        return None if self.request.requested else wreck


@dataclass
class _Death:
    """A worker that died: how, and the points of its chunk it had not finished, each
    retried alone; ``outcomes`` says how each retry ended (ok, error, or killed again).
    ``unsure``: one of several workers that all ended by SIGTERM (:attr:`_Wreck.unsure`),
    their chunks' unfinished points all retried."""

    how: str
    retried: list[int] = field(default_factory=list)
    outcomes: dict[int, str] = field(default_factory=dict)
    unsure: bool = False
    ran: bool = False  # it had begun a chunk, and not all of its points had reported

    def line(self) -> str:
        where = f"a worker process died ({self.how})"
        if self.unsure:
            where = (
                f"a worker process died ({self.how}; which one is not known: the pool ends"
                " the others with it too)"
            )
        if not self.retried:
            return f"{where} while it ran no point"
        n = len(self.retried)
        ok = sum(self.outcomes.get(num) == "ok" for num in self.retried)
        again = [num for num in self.retried if self.outcomes.get(num) == "killed again"]
        errors = sum(self.outcomes.get(num, "ok") != "ok" for num in self.retried)
        chunks = "the workers' chunks" if self.unsure else "its chunk"
        text = (
            f"{where} with {_count(n, 'point')} of {chunks} unfinished ({_nums(self.retried)});"
            f" {'each was' if n > 1 else 'it was'} retried alone: {ok} ok, {errors} error"
            + ("s" if errors != 1 else "")
        )
        if again:
            whose = "its worker" if len(again) == 1 else "their workers"
            text += f" ({_nums(again)} killed {whose} again)"
        return text


class _Ledger:
    """What worker deaths cost across a sweep's pools: the points on their one retry,
    an error row for one that kills its worker again, and the lines that say so. Rounds
    report every result through it (:meth:`__call__`)."""

    def __init__(self, on_result: OnResult) -> None:
        self.on_result = on_result
        self.deaths: list[_Death] = []
        self.retrying: dict[int, _Death] = {}  # point on its retry -> the death that cost it
        self.idle_breaks = 0  # breaks in a row that cost no point, after no result
        self.reported = False  # a result came since the last break

    def __call__(self, result: PointResult) -> None:
        self.reported = True
        death = self.retrying.pop(result.num, None)
        if death is not None:
            death.outcomes[result.num] = "ok" if result.status == "ok" else "error"
        self.on_result(result)

    def take(self, wreck: _Wreck, queue: _Queue) -> None:
        """Put what ``wreck`` left back in ``queue``: the dead workers' unfinished points
        each alone (their retry) first, unless on their retry already (an error row
        then); the other chunks' unfinished points as they were."""
        deaths = wreck.deaths()
        retries: list[Chunk] = []
        reruns: list[Chunk] = []
        for flight in wreck.flights:
            points = flight.unfinished()
            death = deaths.get(flight.worker)
            if death is None:
                reruns += [replace(flight.chunk, points=points)] if points else []
                continue
            death.ran = death.ran or bool(points)
            for point in points:
                if point.num in self.retrying:
                    self._killed_again(flight.chunk, point.num, death.how)
                    continue
                death.retried.append(point.num)
                self.retrying[point.num] = death
                retries.append(replace(flight.chunk, points=[point]))
        for death in {id(d): d for d in deaths.values()}.values():
            if death.retried or not death.ran:  # not a retried point's second death
                self.deaths.append(death)
        queue.front.extendleft(reversed(retries + reruns))
        charged = any(d.ran for d in deaths.values())
        self.idle_breaks = 0 if charged or self.reported else self.idle_breaks + 1
        self.reported = False

    def _killed_again(self, chunk: Chunk, num: int, how: str) -> None:
        """Point ``num`` killed its worker on its retry too: its error row."""
        death = self.retrying.pop(num)
        death.outcomes[num] = "killed again"
        message = (
            f"its worker process died running it ({death.how}) and again on its retry alone ({how})"
        )
        self.on_result(_error(chunk, num, message))

    def give_up(self, queue: _Queue) -> None:
        """Workers keep dying before they run a point: every point left gets an error
        row saying so, and no pool is forked again."""
        how = self.deaths[-1].how if self.deaths else "no exit status"
        message = (
            f"its worker processes kept dying before they ran a point ({MAX_IDLE_BREAKS}"
            f" pools in a row; the last: {how}), so it was not run"
        )
        for chunk in queue.drain():
            for point in chunk.points:
                self(_error(chunk, point.num, message))

    def report(self) -> None:
        """One line per dead worker, on stderr (through tqdm: above a bar still shown)."""
        from tqdm import tqdm

        for death in self.deaths:
            tqdm.write(f"kernbench: warning: {death.line()}", file=sys.stderr)


def _how(code: int | None) -> str:
    """A worker's exit code in words: ``signal 9, SIGKILL`` or ``exit status 3``."""
    if code is None:
        return "no exit status"
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"signal {-code}, {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def _nums(nums: list[int], most: int = 8) -> str:
    shown = ", ".join(f"#{n}" for n in nums[:most])
    return shown + (f", ... ({len(nums)} in all)" if len(nums) > most else "")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("s" if n != 1 else "")


def _kill(pool: ProcessPoolExecutor) -> None:
    """End every worker of ``pool`` now and let its threads go (no waiting on a
    worker: ProcessPoolExecutor keeps its processes in ``_processes``).

    Then this process's end of the pipe the workers write results into is closed
    too (``_result_queue._writer``, which ProcessPoolExecutor keeps open to fork more
    workers): a worker killed halfway through writing a result left the pool's
    manager thread waiting for the rest of it, and Python, exiting, waited for that
    thread forever (a sweep whose points.log hit the file size limit hung at exit
    with "cannot write" already said). With no writer left the wait ends at once
    (end of file), and the thread takes the pool as broken and exits.

    That thread is then waited for (at most ``stop.GRACE_S``): left running, it closed
    its wake-up pipe while Python, exiting, was writing to it (CPython 3.11's
    ``_python_exit`` wakes each pool's thread without its lock), and an exit that had
    said its one error line went on with a traceback ("Bad file descriptor")."""
    processes = list((pool._processes or {}).values())
    results = pool._result_queue  # type: ignore[attr-defined]  # shutdown() drops it
    manager = pool._executor_manager_thread  # type: ignore[attr-defined]  # and this
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(stop.GRACE_S)
    if results is not None:
        with contextlib.suppress(OSError):
            results._writer.close()
    if manager is not None:
        manager.join(stop.GRACE_S)


def _ready() -> None:
    """The no-op task that makes a pool fork its workers."""


def _started(n_workers: int) -> _Pool:
    """A pool with its workers forked (with ``fork``, the first submit forks them all),
    Ctrl-C held back meanwhile: a worker must not take it before :func:`_start_worker`
    ignores it, nor the parent inside the pool's start-up, half done (its manager
    thread then kept the interpreter from exiting). A Ctrl-C pressed meanwhile reaches
    the parent once the pool is whole.

    Its workers send their points' results through a pipe of the pool's own (one lock
    keeps their messages whole). Once they are forked this process closes its writing
    end, so reading meets the end of the pipe when the last worker is gone."""
    context = _context()
    halt = context.Event()
    reports, writer = context.Pipe(duplex=False)
    _widen(reports)
    with _signals_held():
        pool = _Pool(
            n_workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), halt, writer, context.Lock()),
        )
        pool.halt, pool.reports = halt, reports
        pool.submit(_ready)
    pool.workers = dict(pool._processes or {})  # type: ignore[attr-defined]
    if context.get_start_method() == "fork":  # spawn starts workers later: keep it
        writer.close()
    return pool


class _Pool(ProcessPoolExecutor):
    """A process pool with the event that tells its workers to end their chunks, the
    pipe they send results through, and its workers by pid (kept for their exit codes:
    the pool forgets them when it shuts down)."""

    halt: Any = None
    reports: Any = None
    workers: dict[int, Any]  # set by _started


def _widen(pipe: Any) -> None:
    """The pipe's buffer at :data:`PIPE_BYTES` where the system allows it (Linux:
    ``F_SETPIPE_SZ``; its default is 64 KiB), so the workers' messages wait for no
    read (:class:`_Outbox`)."""
    with contextlib.suppress(ImportError, AttributeError, OSError):
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _close(pool: _Pool) -> None:
    pool.shutdown()
    pool.reports.close()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread (and in the threads and processes it
    starts); one that arrives meanwhile is delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: spawned workers, no mask
        yield
        return
    held = set(stop.STOP_SIGNALS)
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _start_worker(parent: int, halt: Any, writer: Any, lock: Any) -> None:
    """Ctrl-C reaches the whole process group; a worker ignores it (the sweeping
    process stops the sweep, :mod:`kernbench.sweep.stop`) and takes SIGTERM's default.
    It starts with both blocked (:func:`_started`): handlers set, then unblocked, a
    SIGINT pressed meanwhile is dropped. It exits if its parent dies
    (:func:`stop.watch_parent`). Then the warm-up (the module's docstring says why)."""
    global _HALT, _OUTLET, _TEST_KILL
    _HALT, _OUTLET = halt, (writer, lock)
    _TEST_KILL = _test_kill_point()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(stop.STOP_SIGNALS))
    stop.watch_parent(stop.child_of(parent))
    warm_up(_WORKER_STATE[2])


def _work(key: int, chunk: Chunk) -> list[PointResult]:
    """Run a chunk in a worker, ending it early (after the batch running) once the
    pool's halt event is set. Which worker began it, and each batch's results but the
    last, go to the parent as they are known (:class:`_Outbox`); the last batch is
    returned."""
    task, context, _ = _WORKER_STATE
    outbox = _Outbox(key)
    outbox.send(_BEGIN, os.getpid())
    try:
        head = _before_test_kill(chunk)
        run_chunk(head, task, context, after=outbox.add, halted=outbox.halted)
    except BaseException:
        outbox.halted()  # what is done is sent: only the failing chunk is lost
        raise
    if head is not chunk and not outbox.halted():
        _test_kill()
    return outbox.take()


class _Outbox:
    """A chunk's results on their way to the parent. ``run_chunk`` asks ``halted()``
    between batches: the moment to send the last batch's results, so a worker that
    dies later has lost none of them (one message a batch, not one a point: a batch
    holds up to 16 short points, :data:`kernbench.sweep.points.BATCH_SECONDS`).

    The pipe is the pool's (:func:`_started`), one lock keeps each message whole, and
    nothing waits on its other end: the parent reads it when a chunk ends or its loop
    wakes (every ``stop.POLL_S``). A parent woken by each message preempted the worker
    that sent it, lock held, on the 2-core development machine: dispatch_ratio's
    parallel efficiency fell from 0.860 to 0.847 (20 alternating pairs of runs, the
    pairs' difference -0.013 +- 0.004); read this way it is the old code's (-0.005 +-
    0.006 and +0.002 +- 0.006 in 16 and 20 pairs; 1,000 tiny points +0.003 +- 0.003).
    So the pipe holds 1 MiB where the system allows (Linux), and a worker whose
    messages fill it waits for the parent's next read."""

    def __init__(self, key: int) -> None:
        self.key = key
        self.results: list[PointResult] = []

    def add(self, result: PointResult) -> None:
        self.results.append(result)

    def halted(self) -> bool:
        if self.results:
            self.send(_RESULTS, self.take())
        return _HALT is not None and _HALT.is_set()

    def take(self) -> list[PointResult]:
        results = self.results
        self.results = []
        return results

    def send(self, kind: str, payload: Any) -> None:
        """One message, pickled before the lock is taken (workers pickle at once)."""
        writer, lock = _OUTLET
        data = ForkingPickler.dumps((kind, self.key, payload))
        with lock:
            writer.send_bytes(data)


def _test_kill_point() -> int | None:
    """TEST_KILL_ENV's job number (tests only), or None: read once per worker, so a
    sweep without it pays one comparison a chunk."""
    value = os.environ.get(TEST_KILL_ENV)
    return int(value) if value else None


def _test_kill() -> None:
    """The worker SIGKILLs itself as TEST_KILL_ENV's point starts, saying so on stderr
    first (a test counts the point's runs)."""
    os.write(2, f"{TEST_KILL_ENV}: point #{_TEST_KILL} kills its worker\n".encode())
    os.kill(os.getpid(), signal.SIGKILL)


def _before_test_kill(chunk: Chunk) -> Chunk:
    """``chunk``, or with TEST_KILL_ENV's point in it, its points before that one (the
    worker then kills itself, as that point starts)."""
    if _TEST_KILL is None:
        return chunk
    nums = [p.num for p in chunk.points]
    if _TEST_KILL not in nums:
        return chunk
    return replace(chunk, points=chunk.points[: nums.index(_TEST_KILL)])


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _failed(chunk: Chunk, num: int, exc: BaseException) -> PointResult:
    """An error result for a point whose chunk failed as a whole."""
    return _error(chunk, num, f"{type(exc).__name__}: {exc}")


def _error(chunk: Chunk, num: int, message: str) -> PointResult:
    """An error result for a point whose worker gave none back; what it says is in
    ``points.log`` too."""
    from kernbench.sweep.points import error_result

    result = error_result(chunk, num, message)
    result.log = f"{message}\n"
    return result

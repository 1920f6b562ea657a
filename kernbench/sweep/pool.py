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
each, alternating). Results come back per chunk,
in completion order, to a callback in the parent. The parent's objects are frozen out
of the garbage collector (``gc.freeze``) while workers run, as Python's ``gc`` docs
advise before a fork: a worker's full collection would otherwise walk (and, writing
their headers, copy) every object it inherited, about 40 ms each time here. Measured on
``dispatch_ratio``: its 50 simulations took 0.26-0.30 s in all instead of 0.36-0.43 s.

A worker that dies (killed, out of memory, a crash in native code) breaks the pool and
every chunk in flight. Those chunks are then rerun one point at a time in a fresh
one-worker pool, so each point either gets its row or, if it is the one that kills its
worker, an error row saying so: one bad point never loses the others' rows.

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
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from typing import Any

from kernbench.sweep import stop
from kernbench.sweep.points import Chunk, PointResult, run_chunk, warm_up

OnResult = Callable[[PointResult], None]
# (task function, HydraContext, the task config each worker warms up on, or None)
_WORKER_STATE: tuple[Any, Any, Any] = (None, None, None)
_HALT: Any = None  # in a worker: the pool's event that says "end your chunk now"
IN_FLIGHT_PER_WORKER = 2  # chunks handed out per worker: one running, one queued


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
            self._pool.shutdown()
            self._pool = None
            gc.unfreeze()

    def run(self, chunks: Iterable[Chunk], on_result: OnResult) -> None:
        """Run ``chunks`` (on the started workers, if any), each sent as soon as the
        iterable yields it; ``on_result`` sees every point. The workers are shut down
        on return."""
        self.start()
        first, self._pool = self._pool, None
        try:
            broken = _round(first, chunks, on_result, self.request)
            singles = [replace(c, points=[p]) for c in broken for p in c.points]
            for chunk in singles:  # one at a time, so a crash names its own point
                if self.request.requested:
                    break
                if _round(_started(1), [chunk], on_result, self.request):
                    on_result(_died(chunk))
        finally:
            gc.unfreeze()


def run_chunks(
    chunks: Iterable[Chunk], n_workers: int, on_result: OnResult, task: Any, context: Any
) -> None:
    """Run ``chunks`` on ``n_workers`` new processes; ``on_result`` sees every point."""
    LocalPool(n_workers, task, context).run(chunks, on_result)


def _round(
    pool: _Pool,
    chunks: Iterable[Chunk],
    on_result: OnResult,
    request: stop.StopRequest,
) -> list[Chunk]:
    """Run ``chunks`` in ``pool`` (shut down on return), handing them out as workers
    free up, until they are done or ``request`` says stop; return those lost to a dead
    worker (none once stopping: they are abandoned, not rerun)."""
    broken: list[Chunk] = []
    todo = iter(chunks)
    pending: dict[Future, Chunk] = {}
    ahead = IN_FLIGHT_PER_WORKER * pool._max_workers
    try:
        with request.on_exit(lambda: _kill(pool)):
            while True:
                while not request.requested and len(pending) < ahead:
                    chunk = next(todo, None)
                    if chunk is None:
                        break
                    pending[pool.submit(_work, chunk)] = chunk
                if not pending:
                    break
                if request.requested:
                    _halt(pool, pending, on_result)
                    return []
                done, _ = wait(pending, timeout=stop.POLL_S, return_when=FIRST_COMPLETED)
                for future in done:
                    chunk = pending.pop(future)
                    try:
                        results = future.result()
                    except BrokenProcessPool:
                        broken.append(chunk)
                        continue
                    except Exception as exc:  # the chunk itself failed (e.g. unpicklable)
                        results = [_failed(chunk, p.num, exc) for p in chunk.points]
                    for result in results:
                        on_result(result)
    except BaseException:  # KeyboardInterrupt where no handler is installed (launch API)
        _kill(pool)
        raise
    pool.shutdown()
    return broken


def _halt(pool: _Pool, pending: dict[Future, Chunk], on_result: OnResult) -> None:
    """Stop in order: chunks not started are dropped, running ones end after their
    current point (their finished points reach ``on_result``), and whatever still runs
    after ``stop.GRACE_S`` is abandoned with its worker."""
    pool.halt.set()
    for future in pending:
        future.cancel()
    running = [f for f in pending if not f.cancelled()]
    done, _ = wait(running, timeout=stop.GRACE_S)
    for future in done:
        with contextlib.suppress(Exception):  # a worker that died meanwhile: abandoned
            for result in future.result():
                on_result(result)
    _kill(pool)


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
    the parent once the pool is whole."""
    context = _context()
    halt = context.Event()
    with _signals_held():
        pool = _Pool(
            n_workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), halt),
        )
        pool.halt = halt
        pool.submit(_ready)
    return pool


class _Pool(ProcessPoolExecutor):
    """A process pool with the event that tells its workers to end their chunks."""

    halt: Any = None


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


def _start_worker(parent: int, halt: Any) -> None:
    """Ctrl-C reaches the whole process group; a worker ignores it (the sweeping
    process stops the sweep, :mod:`kernbench.sweep.stop`) and takes SIGTERM's default.
    It starts with both blocked (:func:`_started`): handlers set, then unblocked, a
    SIGINT pressed meanwhile is dropped. It exits if its parent dies
    (:func:`stop.watch_parent`). Then the warm-up (the module's docstring says why)."""
    global _HALT
    _HALT = halt
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(stop.STOP_SIGNALS))
    stop.watch_parent(stop.child_of(parent))
    warm_up(_WORKER_STATE[2])


def _work(chunk: Chunk) -> list[PointResult]:
    """Run a chunk in a worker, ending it early (after the point running) once the
    pool's halt event is set."""
    task, context, _ = _WORKER_STATE
    halted = _HALT.is_set if _HALT is not None else None
    return run_chunk(chunk, task, context, halted=halted)


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _died(chunk: Chunk) -> PointResult:
    return _failed(chunk, chunk.points[0].num, RuntimeError("its worker process died"))


def _failed(chunk: Chunk, num: int, exc: BaseException) -> PointResult:
    """An error result for a point whose worker gave none back."""
    from kernbench.sweep.points import error_result

    return error_result(chunk, num, f"{type(exc).__name__}: {exc}")

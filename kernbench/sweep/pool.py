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

from kernbench.sweep.points import Chunk, PointResult, run_chunk, warm_up

OnResult = Callable[[PointResult], None]
# (task function, HydraContext, the task config each worker warms up on, or None)
_WORKER_STATE: tuple[Any, Any, Any] = (None, None, None)


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

    def __init__(self, n_workers: int, task: Any, context: Any, warm: Any = None) -> None:
        self.n_workers = n_workers
        self.task, self.context, self.warm = task, context, warm
        self._pool: ProcessPoolExecutor | None = None

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
            broken = _round(first, chunks, on_result)
            singles = [replace(c, points=[p]) for c in broken for p in c.points]
            for chunk in singles:  # one at a time, so a crash names its own point
                if _round(_started(1), [chunk], on_result):
                    on_result(_died(chunk))
        finally:
            gc.unfreeze()


def run_chunks(
    chunks: Iterable[Chunk], n_workers: int, on_result: OnResult, task: Any, context: Any
) -> None:
    """Run ``chunks`` on ``n_workers`` new processes; ``on_result`` sees every point."""
    LocalPool(n_workers, task, context).run(chunks, on_result)


def _round(pool: ProcessPoolExecutor, chunks: Iterable[Chunk], on_result: OnResult) -> list[Chunk]:
    """Run ``chunks`` in ``pool`` (shut down on return); return those lost to a dead
    worker."""
    broken: list[Chunk] = []
    with pool:
        pending: dict[Future, Chunk] = {pool.submit(_work, c): c for c in chunks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
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
    return broken


def _ready() -> None:
    """The no-op task that makes a pool fork its workers."""


def _started(n_workers: int) -> ProcessPoolExecutor:
    """A pool with its workers forked (with ``fork``, the first submit forks them all),
    Ctrl-C held back meanwhile: a worker must not take it before :func:`_start_worker`
    ignores it, nor the parent inside the pool's start-up, half done (its manager
    thread then kept the interpreter from exiting). A Ctrl-C pressed meanwhile reaches
    the parent once the pool is whole."""
    with _ctrl_c_held():
        pool = ProcessPoolExecutor(n_workers, mp_context=_context(), initializer=_start_worker)
        pool.submit(_ready)
    return pool


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """SIGINT blocked in this thread (and in the threads and processes it starts)."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: spawned workers, no mask
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start_worker() -> None:
    """Ctrl-C reaches the whole process group. A worker waiting for a chunk (during
    the parent's planning, say) ignores it: the parent stops the sweep and then its
    workers, and the terminal shows one traceback, not one per worker too. (It starts
    with SIGINT blocked, :func:`_started`: ignored, then unblocked, one pressed
    meanwhile is dropped.) Then the warm-up (the module's docstring says why)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    warm_up(_WORKER_STATE[2])


def _work(chunk: Chunk) -> list[PointResult]:
    """Run a chunk in a worker; Ctrl-C interrupts it (and reaches the parent as the
    chunk's exception), while between chunks the worker ignores it."""
    task, context, _ = _WORKER_STATE
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return run_chunk(chunk, task, context)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _died(chunk: Chunk) -> PointResult:
    return _failed(chunk, chunk.points[0].num, RuntimeError("its worker process died"))


def _failed(chunk: Chunk, num: int, exc: BaseException) -> PointResult:
    """An error result for a point whose worker gave none back."""
    from kernbench.sweep.points import error_result

    return error_result(chunk, num, f"{type(exc).__name__}: {exc}")

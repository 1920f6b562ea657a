"""PE engines: in-order FIFOs of stages, issued when their dependences are met.

An engine issues the stage at the head of its FIFO once every stage it depends on
has finished and it has a free slot (one for GEMM and MATH; ``dma_max_outstanding``
for DMA). Issuing computes the stage's end time arithmetically and schedules one
event for it on the pipelines' :class:`~kernbench.sim.events.LocalQueue`; besides
PE_CPU's dispatch ends, nothing else in a PE schedules events. Engine time never
includes dispatch cost (ADR-0064 D5).

``pump(now)`` takes the time explicitly: the pipelines run their events ahead of
SimPy's clock (:mod:`kernbench.sim.events`), so ``env.now`` is not a stage's time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Final

from kernbench.sim.events import LocalQueue

READ: Final = "read"
WRITE: Final = "write"


class Stage:
    """One unit of engine work: a compute duration, or a DMA (direction, addr, nbytes)."""

    __slots__ = (
        "engine",
        "job",
        "duration_ns",
        "direction",
        "addr",
        "nbytes",
        "deps_left",
        "dependents",
        "parts",
        "flowing",
    )

    def __init__(
        self,
        engine: Engine,
        # The scheduler's Job that owns the stage (engines carry it, never read it), or
        # None for a stage that is a command of its own (the scheduler's DmaOp).
        job: Any,
        duration_ns: float = 0.0,
        direction: str = "",
        addr: int = 0,
        nbytes: int = 0,
    ) -> None:
        self.engine = engine
        self.job = job
        self.duration_ns = duration_ns
        self.direction = direction
        self.addr = addr
        self.nbytes = nbytes
        self.deps_left = 0
        self.dependents: list[Stage] = []
        # Completions still to come before the stage ends: one, unless the fair data
        # plane moves some of a DMA stage's requests as flows of their own.
        self.parts = 1
        # Of those, the fair data plane's flows that have not drained yet (the last to
        # drain is the last to complete: the others complete without an event).
        self.flowing = 0

    def after(self, other: Stage) -> None:
        """Make this stage wait for ``other`` to finish."""
        self.deps_left += 1
        other.dependents.append(self)


class Engine:
    """An in-order engine with ``slots`` stages in flight; tracks its busy time."""

    def __init__(
        self,
        events: LocalQueue,
        name: str,
        slots: int,
        on_done: Callable[[Stage, float], None],
    ) -> None:
        self.events = events
        self.name = name
        self.slots = slots
        self.on_done = on_done
        self.fifo: deque[Stage] = deque()
        self.in_flight = 0
        self.busy_ns = 0.0
        self._busy_since = 0.0
        self.stages_done = 0

    def pump(self, now: float) -> None:
        """Issue head stages at ``now`` while they are ready and a slot is free."""
        fifo = self.fifo
        while fifo and self.in_flight < self.slots and fifo[0].deps_left == 0:
            self.issue(fifo.popleft(), now)

    def issue(self, stage: Stage, now: float) -> None:
        """Issue ``stage`` at ``now`` bypassing the FIFO: the caller checked that the FIFO
        is empty, a slot is free and the stage is ready (what ``pump`` would issue)."""
        if self.in_flight == 0:
            self._busy_since = now
        self.in_flight += 1
        end = self.start(stage, now)
        if end is not None:
            # now + (end - now), as a SimPy timeout of that delay would land.
            self.events.schedule(now + (end - now), self._finish, stage)

    def start(self, stage: Stage, now: float) -> float | None:
        """Begin ``stage`` at ``now``; return its end time (or None when every part
        of it will call :meth:`_finish` by itself). Compute engines add the duration."""
        return now + stage.duration_ns

    def _finish(self, stage: Stage) -> None:
        stage.parts -= 1
        if stage.parts:
            return  # another part of the stage is still moving
        self.in_flight -= 1
        self.stages_done += 1
        now = self.events.now
        if self.in_flight == 0:
            self.busy_ns += now - self._busy_since
        self.on_done(stage, now)
        if self.fifo:
            self.pump(now)

"""PE engines: in-order FIFOs of stages, issued when their dependences are met.

An engine issues the stage at the head of its FIFO once every stage it depends on
has finished and it has a free slot (one for GEMM and MATH; ``dma_max_outstanding``
for DMA). Issuing computes the stage's end time arithmetically and schedules one
SimPy timeout for it; nothing else in the PE pipeline costs a SimPy event.
Engine time never includes dispatch cost (ADR-0064 D5).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import simpy

if TYPE_CHECKING:
    from kernbench.sim.scheduler import Job

READ = "read"
WRITE = "write"


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
    )

    def __init__(
        self,
        engine: Engine,
        job: Job,
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

    def after(self, other: Stage) -> None:
        """Make this stage wait for ``other`` to finish."""
        self.deps_left += 1
        other.dependents.append(self)


class Engine:
    """An in-order engine with ``slots`` stages in flight; tracks its busy time."""

    def __init__(
        self, env: simpy.Environment, name: str, slots: int, on_done: Callable[[Stage], None]
    ) -> None:
        self.env = env
        self.name = name
        self.slots = slots
        self.on_done = on_done
        self.fifo: deque[Stage] = deque()
        self.in_flight = 0
        self.busy_ns = 0.0
        self._busy_since = 0.0
        self.stages_done = 0

    def enqueue(self, stage: Stage) -> None:
        self.fifo.append(stage)

    def pump(self) -> None:
        """Issue head stages while they are ready and a slot is free."""
        fifo = self.fifo
        while fifo and self.in_flight < self.slots and fifo[0].deps_left == 0:
            stage = fifo.popleft()
            if self.in_flight == 0:
                self._busy_since = self.env.now
            self.in_flight += 1
            end = self.start(stage)
            ev = self.env.timeout(end - self.env.now, stage)
            ev.callbacks.append(self._finish)

    def start(self, stage: Stage) -> float:
        """Begin ``stage`` now; return its end time. Compute engines just add the duration."""
        return self.env.now + stage.duration_ns

    def _finish(self, ev: Any) -> None:
        stage: Stage = ev.value
        self.in_flight -= 1
        self.stages_done += 1
        if self.in_flight == 0:
            self.busy_ns += self.env.now - self._busy_since
        self.on_done(stage)
        self.pump()

"""PE engines: in-order FIFOs of stages, issued when their dependences are met.

An engine issues the stage at the head of its FIFO once every stage it depends on
has finished and it has a free slot (one for GEMM and MATH; ``dma_max_outstanding``
for DMA). Issuing computes the stage's end time arithmetically and pushes one SimPy
event for it; nothing else in the PE pipeline costs a SimPy event.
Engine time never includes dispatch cost (ADR-0064 D5).

``pump(now)`` takes the time explicitly: PE_CPU may submit a command at a dispatch
time that is still ahead of ``env.now`` when nothing can happen in between
(:mod:`kernbench.sim.events`), and the stage then issues at that time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kernbench.sim.events import Fired, SimEnv

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
        self, env: SimEnv, name: str, slots: int, on_done: Callable[[Stage], None]
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
        self.clock = 0.0  # the time the stage being started issues at (set by pump)
        self._owner: Any = None
        self._callbacks: tuple[Callable[[Any], None], ...] = (self._finish,)

    def bind(self, owner: Any, after: Callable[[Any], None]) -> None:
        """Every stage end also calls ``after`` (last) and is marked as ``owner``'s."""
        self._owner = owner
        self._callbacks = (self._finish, after)

    def enqueue(self, stage: Stage) -> None:
        self.fifo.append(stage)

    def pump(self, now: float) -> None:
        """Issue head stages at ``now`` while they are ready and a slot is free."""
        fifo = self.fifo
        while fifo and self.in_flight < self.slots and fifo[0].deps_left == 0:
            stage = fifo.popleft()
            if self.in_flight == 0:
                self._busy_since = now
            self.in_flight += 1
            self.clock = now
            end = self.start(stage)
            # now + (end - now), as a SimPy timeout of that delay would land.
            at = now + (end - now)
            self.env.push(Fired(self.env, stage, self._callbacks, self._owner), at)

    def start(self, stage: Stage) -> float:
        """Begin ``stage`` at ``self.clock``; return its end time. Compute engines just
        add the duration."""
        return self.clock + stage.duration_ns

    def _finish(self, ev: Any) -> None:
        stage: Stage = ev._value
        self.in_flight -= 1
        self.stages_done += 1
        now = self.env.now
        if self.in_flight == 0:
            self.busy_ns += now - self._busy_since
        self.on_done(stage)
        if self.fifo:
            self.pump(now)

"""PE_DMA: the address front end, then link reservation on the fabric.

A DMA stage's address (PA, VA or LA) goes through the run's address front end,
which returns physical requests ``(router node, pa, nbytes, channel)`` and any
translation delay; each request is booked on its route and the stage ends when
the last one completes — one event per DMA stage however many requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kernbench.sim.engines import Engine, Stage
from kernbench.sim.events import LocalQueue
from kernbench.sim.fabric import Fabric, PhysicalRequest
from kernbench.topology.names import PeId
from kernbench.topology.routes import MemoryRoutes, Router


class AddressFrontEnd(Protocol):
    """What PE_DMA asks of an address model."""

    def resolve(self, pe: PeId, addr: int, nbytes: int) -> tuple[list[PhysicalRequest], float]:
        """Physical requests covering exactly ``[addr, addr+nbytes)``, and a delay in ns."""
        ...


TraceSink = Callable[[PeId, Stage, float, PhysicalRequest, float, float], None]


class DmaEngine(Engine):
    """The DMA engine of one PE."""

    def __init__(
        self,
        events: LocalQueue,
        pe: PeId,
        slots: int,
        on_done: Callable[[Stage, float], None],
        frontend: AddressFrontEnd,
        router: Router,
        fabric: Fabric,
        trace: TraceSink | None = None,
    ) -> None:
        super().__init__(events, pe.node("dma"), slots, on_done)
        self.pe = pe
        self.frontend = frontend
        self.router = router
        self.fabric = fabric
        self.trace = trace
        self.bytes_moved = 0
        self._routes = MemoryRoutes(router, self.name)
        self._resolve = frontend.resolve
        self._book = fabric.book

    def start(self, stage: Stage, now: float) -> float:
        requests, delay = self._resolve(self.pe, stage.addr, stage.nbytes)
        self.bytes_moved += stage.nbytes
        issue = now + delay
        trace = self.trace
        if trace is None:
            return self._book(requests, self._routes, issue)
        pe = self.pe
        return self._book(
            requests,
            self._routes,
            issue,
            lambda req, begin, done: trace(pe, stage, issue, req, begin, done),
        )

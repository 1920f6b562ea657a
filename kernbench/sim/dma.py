"""PE_DMA: the address front end, then the data plane.

A DMA stage's address (PA, VA or LA) goes through the run's address front end,
which returns physical requests ``(router node, pa, nbytes, channel)`` and any
translation delay; the data plane moves each request on its route and the stage ends
when the last one completes. A write's route goes out to the memory; a read's is its
data's way back (DESIGN §13.1), from the same engine's second table of routes. A
request the data plane can time at once (every reservation; a fair-share request
alone on its links) costs no event of its own: the stage's one event covers them all.
A fair-share flow completes as its own part of the stage (``Stage.parts``).
"""

from __future__ import annotations

from collections.abc import Callable

from kernbench.sim.engines import READ, Engine, Stage
from kernbench.sim.events import LocalQueue
from kernbench.sim.fabric import DataPlane, PhysicalRequest
from kernbench.topology.names import PeId
from kernbench.topology.routes import MemoryRoutes, Router


class AddressFrontEnd:
    """What PE_DMA asks of an address model (the models subclass it through
    :class:`kernbench.address.models.AddressModelPolicy`). A base class, not a
    Protocol, for the same reason as :class:`~kernbench.sim.fabric.DataPlane`."""

    def resolve(self, pe: PeId, addr: int, nbytes: int) -> tuple[list[PhysicalRequest], float]:
        """Physical requests covering exactly ``[addr, addr+nbytes)``, and a delay in ns."""
        raise NotImplementedError


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
        fabric: DataPlane,
        trace: TraceSink | None = None,
    ) -> None:
        super().__init__(events, pe.node("dma"), slots, on_done)
        self.pe = pe
        self.frontend = frontend
        self.router = router
        self.fabric = fabric
        self.trace = trace
        self.bytes_moved = 0
        # Its routes by HBM router, made as its requests first take them: the way to
        # memory (writes, and reads' requests) and a read's data's way back. Reports
        # read them too (the routes a run took, not made again).
        self.writes = MemoryRoutes(router, self.name)
        self.reads = MemoryRoutes(router, self.name, reads=True)
        self._done = self._finish

    def issue(self, stage: Stage, now: float) -> None:
        """``Engine.issue`` with ``start`` inlined when nothing is traced (the fast
        path of a primitive DMA command: one call from PE_SCHEDULER to the fabric)."""
        if self.trace is not None:
            super().issue(stage, now)
            return
        if self.in_flight == 0:
            self._busy_since = now
        self.in_flight += 1
        requests, delay = self.frontend.resolve(self.pe, stage.addr, stage.nbytes)
        self.bytes_moved += stage.nbytes
        routes = self.reads if stage.direction == READ else self.writes
        end = self.fabric.start(requests, routes, now + delay, stage, self._done)
        if end is not None:
            self.events.schedule(now + (end - now), self._done, stage)

    def start(self, stage: Stage, now: float) -> float | None:
        requests, delay = self.frontend.resolve(self.pe, stage.addr, stage.nbytes)
        self.bytes_moved += stage.nbytes
        issue = now + delay
        trace = self.trace
        routes = self.reads if stage.direction == READ else self.writes
        if trace is None:
            return self.fabric.start(requests, routes, issue, stage, self._done)
        pe = self.pe
        return self.fabric.start(
            requests,
            routes,
            issue,
            stage,
            self._done,
            lambda req, begin, done: trace(pe, stage, issue, req, begin, done),
        )

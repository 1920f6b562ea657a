"""PE_DMA: the address front end, then link reservation on the fabric.

A DMA stage's address (PA, VA or LA) goes through the run's address front end,
which returns physical requests ``(router node, pa, nbytes, channel)`` and any
translation delay; each request is booked on its route and the stage ends when
the last one completes — one SimPy timeout per DMA stage however many requests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kernbench.sim.engines import Engine, Stage
from kernbench.sim.events import LocalQueue
from kernbench.sim.fabric import Fabric
from kernbench.topology.names import PeId
from kernbench.topology.routes import Route, Router

PhysicalRequest = tuple[str, int, int, int]  # (router node, pa, nbytes, channel id or -1)


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
        self._routes: dict[str, Route] = {}  # router node -> route from this DMA
        self._resolve = frontend.resolve

    def start(self, stage: Stage, now: float) -> float:
        requests, delay = self._resolve(self.pe, stage.addr, stage.nbytes)
        issue = now + delay
        end = issue
        routes, reserve = self._routes, self.fabric.reserve
        for req in requests:
            route = routes.get(req[0])
            if route is None:
                route = routes[req[0]] = self.router.to_memory(self.name, req[0])
            begin, done = reserve(route, req[2], issue)
            if done > end:
                end = done
            if self.trace is not None:
                self.trace(self.pe, stage, issue, req, begin, done)
        self.bytes_moved += stage.nbytes
        return end

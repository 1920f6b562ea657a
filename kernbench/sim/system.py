"""The SimPy system: one environment, the fabric, and every PE's CPU, scheduler and engines.

Built once per run from a validated config. Owns simulated state only; tensors and
kernel launches go through :class:`kernbench.runtime.RuntimeContext`.

A PE's components and its memory allocator are built the first time something uses
them (:class:`PeUnits`, :class:`Allocators`), so a run that touches 16 PEs of a
16,384-PE topology builds 16 PEs' worth: a PE nothing touched has every counter at
zero and all its memory free, which is what a PE built and left idle would hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import simpy

from kernbench.address.allocator import PEMemAllocator
from kernbench.address.models import AddressModelPolicy
from kernbench.address.pa_model import PhysicalLayer, hbm_alignment
from kernbench.address.registry import ENDPOINTS, build_model
from kernbench.config.schema import AddressModel, FabricModel, KernBenchConfig
from kernbench.sim.collector import fewer_collections
from kernbench.sim.control import ControlPlane
from kernbench.sim.cost_model import DispatchCostModel
from kernbench.sim.cpu import CommandSource, PeCpu
from kernbench.sim.dma import DmaEngine, TraceSink
from kernbench.sim.engines import Engine
from kernbench.sim.events import LocalQueue, SimEnv
from kernbench.sim.fabric import ReservationFabric
from kernbench.sim.fair_fabric import FairFabric
from kernbench.sim.oplog import OpLog
from kernbench.sim.scheduler import PeScheduler
from kernbench.topology.graph import build_graph
from kernbench.topology.names import PeId
from kernbench.topology.routes import Router


class PeUnit:
    """The components of one PE (ADR-0014): CPU -> scheduler -> DMA, GEMM, MATH, whose
    events go on the system's :class:`~kernbench.sim.events.LocalQueue`."""

    def __init__(self, system: System, pe: PeId) -> None:
        topo = system.cfg.topology
        pc = topo.pe
        self.id = pe
        self.events = system.events
        self.scheduler = PeScheduler(
            pe.index,
            pc.scheduler_queue_depth,
            pc.composite_buffers,
            gemm_ns_per_flop=1.0 / (pc.gemm_flops_per_cycle * pc.clock_ghz),
            math_ns_per_elem=1.0 / (pc.math_elems_per_cycle * pc.clock_ghz),
            oplog=system.oplog,
            fast_dma=system.cfg.sim.fast_dma,
        )
        done = self.scheduler.stage_done
        self.dma = DmaEngine(
            self.events,
            pe,
            pc.dma_max_outstanding,
            done,
            system.address,
            system.router,
            system.fabric,
            system.trace,
        )
        self.engines: dict[str, Engine] = {
            "dma": self.dma,
            "gemm": Engine(self.events, pe.node("gemm"), 1, done),
            "math": Engine(self.events, pe.node("math"), 1, done),
        }
        self.scheduler.connect(self.engines)
        cost = DispatchCostModel.from_config(pc.attrs.pe_cost_model)
        self.cpu = PeCpu(self.events, pe.index, self.scheduler, cost, system.oplog)


class PeUnits:
    """Every PE's :class:`PeUnit` by global index, each built on first use:
    ``units[i]`` builds PE ``i``'s. Iterating gives the units built so far, in the
    order they were built: sums over them (accesses, commands, bytes) are sums over
    every PE, since a PE not built has done nothing."""

    def __init__(self, system: System) -> None:
        self._system = system
        self._built: dict[int, PeUnit] = {}

    def __getitem__(self, index: int) -> PeUnit:
        unit = self._built.get(index)
        if unit is None:
            unit = self._built[index] = PeUnit(self._system, self._system.graph.pes[index])
        return unit

    def __iter__(self) -> Iterator[PeUnit]:
        return iter(list(self._built.values()))

    def built(self) -> dict[int, PeUnit]:
        """The units built so far, by global index."""
        return self._built


class Allocators(dict[int, PEMemAllocator]):
    """Each PE's HBM and TCM allocator by global index, made on first use (a dict, so
    one subscript finds it)."""

    def __init__(self, system: System) -> None:
        super().__init__()
        topo = system.cfg.topology
        self._pes = system.graph.pes
        self._capacity = system.physical.capacity
        self._tcm = topo.pe.tcm_bytes
        self._align = hbm_alignment(system.graph)

    def __missing__(self, index: int) -> PEMemAllocator:
        pe = self._pes[index]
        found = self[index] = PEMemAllocator(pe.prefix, self._capacity, self._tcm, self._align)
        return found


class RunObserver(Protocol):
    """Optional watcher of :meth:`System.run_programs` (the single run's progress bar,
    :class:`kernbench.sweep.progress.RunBar`). It only reads; with none set, the run
    takes the plain ``env.run`` path and pays nothing."""

    def launched(self, system: System, sources: list[tuple[PeId, CommandSource]]) -> None: ...

    def advanced(self, system: System) -> None: ...


# PE pipeline events between two RunObserver.advanced calls.
OBSERVE_EVERY_EVENTS = 4096


class System:
    """Everything simulated in one run."""

    def __init__(
        self,
        cfg: KernBenchConfig,
        oplog: bool | None = None,
        record_links: bool = False,
        trace: TraceSink | None = None,
    ) -> None:
        self.cfg = cfg
        topo, mm = cfg.topology, cfg.topology.cube.memory_map
        # Time is a float from the start: the compiled build (setup.py) holds every time
        # as a float, and SimPy's default start, the int 0, would print as 0 in the pure
        # build's op log (tests/test_build.py compares the two).
        self.env = SimEnv(initial_time=0.0)
        self.graph = build_graph(topo, with_mmu=cfg.address.model is AddressModel.va)
        self.router = Router(self.graph)
        self.events = LocalQueue(self.env)  # every PE pipeline's events
        self.fabric: ReservationFabric | FairFabric
        if cfg.sim.fabric is FabricModel.reservation:
            self.fabric = ReservationFabric(
                self.graph, mm.hbm_access_latency_ns, record=record_links
            )
        else:  # a trace sees every request as a flow, so it takes no fast path
            self.fabric = FairFabric(
                self.graph, mm.hbm_access_latency_ns, self.events, record_links, trace is None
            )
        self.oplog = OpLog() if (cfg.sim.oplog if oplog is None else oplog) else None
        self.trace = trace
        self.physical = PhysicalLayer(self.graph)
        self.memory = Allocators(self)
        model = cfg.address.model
        self.address: AddressModelPolicy = build_model(model, self.graph, self.physical)
        endpoint = ENDPOINTS.get(model)
        self.control = ControlPlane(self.env, self.graph, endpoint) if endpoint else None
        self.running = False
        self.observer: RunObserver | None = None
        self.pes = PeUnits(self)

    def run_until(self, event: simpy.Event) -> None:
        """Advance simulated time until ``event``; a no-op when already inside a run
        (then the event's work simply happens as that run goes on)."""
        if self.running:
            return
        with fewer_collections():
            self.running = True
            try:
                if self.observer is None:
                    self.env.run(until=event)
                else:
                    self._run_observed(event, self.observer)
            finally:
                self.running = False

    def _run_observed(self, event: simpy.Event, observer: RunObserver) -> None:
        """``env.run(until=event)``, telling ``observer`` every
        :data:`OBSERVE_EVERY_EVENTS` events of the PE pipelines (where a launch's time
        goes); the observer only reads, so simulated times are the same."""
        self.events.set_report(lambda: observer.advanced(self), OBSERVE_EVERY_EVENTS)
        try:
            self.env.run(until=event)
        finally:
            self.events.set_report(None)
        observer.advanced(self)

    @property
    def now(self) -> float:
        """Simulated time: SimPy's, or the PE pipelines' while they run ahead of it."""
        return max(self.env.now, self.events.now)

    def run_programs(self, sources: list[tuple[PeId, CommandSource]]) -> dict[int, float]:
        """Start one command stream per PE now; run until all finish; return end times."""
        ends: dict[int, float] = {}
        all_done = self.env.event()

        def finisher(pe: PeId) -> Callable[[], None]:
            def finish() -> None:
                ends[pe.index] = self.env.now
                if len(ends) == len(sources):
                    all_done.succeed()

            return finish

        if self.observer is not None:
            self.observer.launched(self, sources)
        for pe, source in sources:
            self.pes[pe.index].cpu.run(source, finisher(pe))
        if sources:
            self.run_until(all_done)
        return ends

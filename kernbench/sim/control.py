"""The control plane (DESIGN §3.3): install messages through component inboxes.

``MmuMapMsg``, ``MmuUnmapMsg`` and ``BaawSegmentInstallMsg`` / ``BaawSegmentUninstallMsg``
travel Host -> each target SIP's PCIE_EP -> that SIP's IO_CPU (fan-out to its own target
cubes only: D-VA3's ``target_sips``) -> M_CPU (fan-out to the target PEs) -> NOC -> the
PE endpoint (PE_MMU under VA, PE_DMA's BAAW port under LA). Each PE gets a message once;
a second landing is a routing bug and raises. Each component is a SimPy process with an inbox
(``simpy.Store``): it takes one message at a time, spends its processing time
(``topology.control.*_processing_ns``) and forwards copies to its children.

Timing model, kept deliberately simple: a hop costs the graph link's latency only —
a control message is small, so its size over the link bandwidth is ignored and
links do not serialise control messages; components do (one message at a time).
The NOC is a transit node with no processing time. With the default topology one
message lands after 500 + 40 + 50 + 200 + 50 + 100 + 50 + 5 + 10 = 1005 ns.

This module moves messages and measures them; what a message *does* on landing is
the address model's business (the ``apply`` callback it carries).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import HOST, PeId, cube_node, sip_node


@dataclass(eq=False)
class ControlMsg:
    """A message for a set of PEs. ``apply(pe)`` runs when it lands on a PE.

    ``target_sips`` limits SIP-level routing (D-VA3); ``target_cubes`` (pairs of
    sip, cube) and ``target_pes`` (global PE indices) narrow it further; None = all.
    """

    target_sips: tuple[int, ...]
    apply: Callable[[PeId], None]
    target_cubes: frozenset[tuple[int, int]] | None = None
    target_pes: frozenset[int] | None = None
    sent_ns: float = 0.0
    landed_ns: float = 0.0
    pending: int = 0
    landed_on: set[int] = field(default_factory=set, repr=False)
    done: simpy.Event | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return type(self).__name__

    @property
    def latency_ns(self) -> float:
        """Measured end to end: sent by the host until it landed on its last PE."""
        return self.landed_ns - self.sent_ns


class MmuMapMsg(ControlMsg):
    """Install VA -> PA page mappings in the target PEs' MMUs (D-VA3)."""


class MmuUnmapMsg(ControlMsg):
    """Remove a tensor's VA mappings (D-VA4)."""


class BaawSegmentInstallMsg(ControlMsg):
    """Register LA segments in the target PEs' BAAW tables (D-LA3)."""


class BaawSegmentUninstallMsg(ControlMsg):
    """Remove LA segments from the target PEs' BAAW tables (D-LA3 step 3)."""


Forward = Callable[[ControlMsg], list[tuple["Component", float]]]


class Component:
    """A control component: an inbox served one message at a time."""

    def __init__(
        self, env: simpy.Environment, name: str, processing_ns: float, forward: Forward
    ) -> None:
        self.env = env
        self.name = name
        self.processing_ns = processing_ns
        self.forward = forward
        self.inbox: simpy.Store = simpy.Store(env)
        self.handled = 0
        env.process(self._serve())

    def send(self, msg: ControlMsg, latency_ns: float) -> None:
        """Deliver ``msg`` into this inbox after a link latency."""
        self.env.process(self._deliver(msg, latency_ns))

    def _deliver(self, msg: ControlMsg, latency_ns: float) -> Generator[Any, Any, None]:
        yield self.env.timeout(latency_ns)
        yield self.inbox.put(msg)

    def _serve(self) -> Generator[Any, Any, None]:
        while True:
            msg = yield self.inbox.get()
            yield self.env.timeout(self.processing_ns)
            self.handled += 1
            for child, latency in self.forward(msg):
                child.send(msg, latency)


class ControlPlane:
    """Builds the control components of one system and sends messages through them."""

    def __init__(self, env: simpy.Environment, graph: TopologyGraph, endpoint: str) -> None:
        """``endpoint`` is the PE part a message lands on: ``mmu`` (VA) or ``dma`` (LA)."""
        self.env = env
        self.graph = graph
        self.log: list[ControlMsg] = []
        self._endpoint = endpoint
        ctl = graph.config.control
        end_ns = ctl.mmu_processing_ns if endpoint == "mmu" else ctl.dma_processing_ns
        self.pe_end = {
            pe.index: Component(env, pe.node(endpoint), end_ns, self._land(pe)) for pe in graph.pes
        }
        self.m_cpu = {
            (s, c): Component(
                env, cube_node(s, c, "m_cpu"), ctl.m_cpu_processing_ns, self._to_pes(s, c)
            )
            for s, c in sorted({(pe.sip, pe.cube) for pe in graph.pes})
        }
        sips = sorted({pe.sip for pe in graph.pes})
        self.io_cpu = {
            s: Component(env, sip_node(s, "io_cpu"), ctl.io_cpu_processing_ns, self._to_cubes(s))
            for s in sips
        }
        self.pcie_ep = {
            s: Component(env, sip_node(s, "pcie_ep"), ctl.pcie_ep_processing_ns, self._to_io(s))
            for s in sips
        }

    def send(self, msg: ControlMsg) -> simpy.Event:
        """Host sends ``msg`` now; the returned event fires when it landed on every PE."""
        msg.sent_ns = self.env.now
        msg.pending = len(self.targets(msg))
        msg.done = self.env.event()
        self.log.append(msg)
        if msg.pending == 0:
            msg.landed_ns = msg.sent_ns
            msg.done.succeed(msg)
        for s in msg.target_sips:
            ep = sip_node(s, "pcie_ep")
            self.pcie_ep[s].send(msg, self.graph.link(HOST, ep).latency_ns)
        return msg.done

    def targets(self, msg: ControlMsg) -> list[PeId]:
        """The PEs a message lands on."""
        return [pe for pe in self.graph.pes if _wants(msg, pe)]

    def _to_io(self, s: int) -> Forward:
        link = self.graph.link(sip_node(s, "pcie_ep"), sip_node(s, "io_cpu"))
        return lambda msg: [(self.io_cpu[s], link.latency_ns)]

    def _to_cubes(self, s: int) -> Forward:
        """IO_CPU -> the M_CPUs of its own SIP's target cubes (never another SIP's: each
        target SIP's IO_CPU gets its own copy from the host)."""
        io_cpu = sip_node(s, "io_cpu")
        cubes = [(c, m_cpu) for (sip, c), m_cpu in sorted(self.m_cpu.items()) if sip == s]
        latency = {c: self.graph.link(io_cpu, m_cpu.name).latency_ns for c, m_cpu in cubes}

        def forward(msg: ControlMsg) -> list[tuple[Component, float]]:
            wanted = msg.target_cubes
            return [(m, latency[c]) for c, m in cubes if wanted is None or (s, c) in wanted]

        return forward

    def _to_pes(self, s: int, c: int) -> Forward:
        """M_CPU -> NOC -> PE endpoint: the two link latencies, no NOC processing."""
        noc = cube_node(s, c, "noc")
        to_noc = self.graph.link(cube_node(s, c, "m_cpu"), noc).latency_ns
        pes = [pe for pe in self.graph.pes if (pe.sip, pe.cube) == (s, c)]

        def forward(msg: ControlMsg) -> list[tuple[Component, float]]:
            return [
                (self.pe_end[pe.index], to_noc + self._hop(noc, pe))
                for pe in pes
                if _wants(msg, pe)
            ]

        return forward

    def _hop(self, noc: str, pe: PeId) -> float:
        return self.graph.link(noc, pe.node(self._endpoint)).latency_ns

    def _land(self, pe: PeId) -> Forward:
        def land(msg: ControlMsg) -> list[tuple[Component, float]]:
            if pe.index in msg.landed_on:  # a routing bug, never bad input
                raise RuntimeError(f"{pe.node(self._endpoint)}: {msg.kind} delivered twice")
            msg.landed_on.add(pe.index)
            msg.apply(pe)
            msg.pending -= 1
            if msg.pending == 0 and msg.done is not None:
                msg.landed_ns = self.env.now
                msg.done.succeed(msg)
            return []

        return land


def _wants(msg: ControlMsg, pe: PeId) -> bool:
    return (
        pe.sip in msg.target_sips
        and (msg.target_cubes is None or (pe.sip, pe.cube) in msg.target_cubes)
        and (msg.target_pes is None or pe.index in msg.target_pes)
    )

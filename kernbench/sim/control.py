"""The control plane (DESIGN §3.3, §13.1): install messages through component inboxes.

``MmuMapMsg``, ``MmuUnmapMsg`` and ``BaawSegmentInstallMsg`` / ``BaawSegmentUninstallMsg``
travel Host -> each target SIP's PCIE_EP -> that SIP's IO_CPU (fan-out to its own target
cubes only: D-VA3's ``target_sips``) -> M_CPU (fan-out to the target PEs) -> NOC -> the
PE endpoint (PE_MMU under VA, PE_DMA's BAAW port under LA). Each PE gets a message once;
a second landing is a routing bug and raises. Each component is a SimPy process with an inbox
(``simpy.Store``): it takes one message at a time, spends its processing time
(``topology.control.*_processing_ns``) and forwards copies to its children. Components
are built when a first message reaches them, and the PE endpoints of a cube are
served in bulk (:mod:`kernbench.sim.endpoints`: one event for every PE that takes a
message at the same instant, each PE's queue still its own), to the same times.

A message has a size (:meth:`ControlMsg.size_bytes`): ``msg_header_bytes`` plus one
entry per page it maps or unmaps (``pte_bytes``) or per segment it installs or removes
(``baaw_segment_bytes``), so VA's install cost grows with a tensor's pages and LA's
with its segments (ADR-0011's case for LA's lighter installs). Timing model: every
link a message crosses costs its latency plus ``size / bandwidth`` at that link's own
bandwidth (the graph's: PCIe for Host -> PCIE_EP, ``ctrl_bw_gbs`` for the three
control links, the PE-NOC link for NOC -> endpoint), store and forward: a link hands
the whole message on before the next link starts (a control CPU acts on a whole
message; the NOC is taken alike, so every hop costs the same two terms). Links do not
serialise control messages (two messages cross one link side by side); components do
(one message at a time, for its processing time only). The NOC is a transit node with
no processing time. So one message of ``S`` bytes, alone, lands after

    sum over its 5 links of (latency + S / bw) + the 4 components' processing

which on the default topology is 500 + 40 + 50 + 200 + 50 + 100 + 50 + 5 + 10 = 1005 ns
plus S x (1/32 + 3 x 1/8 + 1/128) = S x 53/128 ns: 1011.625 + 6.625 P ns for a VA
message of P pages (S = 16 + 16 P), 1011.625 + 13.25 K ns for an LA message of K
segments (S = 16 + 32 K).

This module moves messages and measures them; what a message *does* on landing is
the address model's business (the ``apply`` callback it carries), and so is counting
the entries it carries (``entries``: the model builds it).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from kernbench.sim.endpoints import CubeEndpoints, Receiver
from kernbench.sim.messages import (
    BaawSegmentInstallMsg,
    BaawSegmentUninstallMsg,
    ControlMsg,
    MmuMapMsg,
    MmuUnmapMsg,
)
from kernbench.timebase import on_grid
from kernbench.topology.graph import Link, TopologyGraph
from kernbench.topology.names import PeId, cube_node, sip_node

__all__ = [
    "BaawSegmentInstallMsg",
    "BaawSegmentUninstallMsg",
    "Component",
    "ControlMsg",
    "ControlPlane",
    "MmuMapMsg",
    "MmuUnmapMsg",
    "targets",
    "transit_ns",
]


# A component's children for a message, each with the transit time to it.
Forward = Callable[[ControlMsg], list[tuple[Receiver, float]]]


def transit_ns(links: tuple[Link, ...], size_bytes: int) -> float:
    """Time for a message of ``size_bytes`` to cross ``links`` one after the other,
    each store and forward: its latency, then the whole message at its bandwidth."""
    total = 0.0
    for link in links:
        total += on_grid(link.latency_ns) + on_grid(size_bytes / link.bw_gbs)
    return total


class Component(Receiver):
    """A control component: an inbox served one message at a time."""

    def __init__(
        self, env: simpy.Environment, name: str, processing_ns: float, forward: Forward
    ) -> None:
        self.env = env
        self.name = name
        self.processing_ns = on_grid(processing_ns)
        self.forward = forward
        self.inbox: simpy.Store = simpy.Store(env)
        self.handled = 0
        env.process(self._serve())

    def send(self, msg: ControlMsg, delay_ns: float) -> None:
        """Deliver ``msg`` into this inbox after its transit over the link(s) to it,
        ``delay_ns`` (nothing holds the links: messages in transit do not queue)."""
        self.env.process(self._deliver(msg, delay_ns))

    def _deliver(self, msg: ControlMsg, delay_ns: float) -> Generator[Any, Any, None]:
        yield self.env.timeout(delay_ns)
        yield self.inbox.put(msg)

    def _serve(self) -> Generator[Any, Any, None]:
        while True:
            msg = yield self.inbox.get()
            yield self.env.timeout(self.processing_ns)
            self.handled += 1
            for child, latency in self.forward(msg):
                child.send(msg, latency)


class ControlPlane:
    """The control components of one system, each built when a first message reaches
    it, and the messages sent through them: a SIP no message targets has none, and a
    cube's PE endpoints are served in bulk (:class:`CubeEndpoints`)."""

    def __init__(self, env: simpy.Environment, graph: TopologyGraph, endpoint: str) -> None:
        """``endpoint`` is the PE part a message lands on: ``mmu`` (VA) or ``dma`` (LA)."""
        self.env = env
        self.graph = graph
        self.log: list[ControlMsg] = []
        self._endpoint = endpoint
        ctl = graph.config.control
        self._end_ns = ctl.mmu_processing_ns if endpoint == "mmu" else ctl.dma_processing_ns
        self._components: dict[str, Component] = {}  # PCIE_EP, IO_CPU, M_CPU by node
        self._cubes: dict[tuple[int, int], CubeEndpoints] = {}
        self._landed: dict[int, int] = {}  # messages landed, by PE

    def send(self, msg: ControlMsg) -> simpy.Event:
        """Host sends ``msg`` now; the returned event fires when it landed on every PE."""
        msg.sent_ns = self.env.now
        msg.sent_bytes = msg.size_bytes(self.graph.config.control)
        msg.pending = len(self.targets(msg))
        msg.done = self.env.event()
        self.log.append(msg)
        if msg.pending == 0:
            msg.landed_ns = msg.sent_ns
            msg.done.succeed(msg)
        layout = self.graph.layout
        for s in msg.target_sips:
            pcie = (self.graph.links[layout.host_to_pcie(s)],)
            self._pcie_ep(s).send(msg, transit_ns(pcie, msg.sent_bytes))
        return msg.done

    def targets(self, msg: ControlMsg) -> list[PeId]:
        """The PEs a message lands on."""
        return targets(self.graph, msg)

    def landed(self, index: int) -> int:
        """How many messages have landed on PE ``index`` (0 for a PE none reached)."""
        return self._landed.get(index, 0)

    def handled(self, node: str) -> int:
        """How many messages the PCIE_EP, IO_CPU or M_CPU ``node`` has handled (0 for
        one no message reached)."""
        found = self._components.get(node)
        return 0 if found is None else found.handled

    def _component(self, name: str, processing_ns: float, forward: Forward) -> Component:
        found = self._components.get(name)
        if found is None:
            found = self._components[name] = Component(self.env, name, processing_ns, forward)
        return found

    def _pcie_ep(self, s: int) -> Component:
        """PCIE_EP -> IO_CPU."""
        ctl, links = self.graph.config.control, self.graph.links
        pcie_io = (links[self.graph.layout.pcie_to_io(s)],)

        def forward(msg: ControlMsg) -> list[tuple[Receiver, float]]:
            return [(self._io_cpu(s), transit_ns(pcie_io, msg.sent_bytes))]

        return self._component(sip_node(s, "pcie_ep"), ctl.pcie_ep_processing_ns, forward)

    def _io_cpu(self, s: int) -> Component:
        """IO_CPU -> the M_CPUs of its own SIP's target cubes (never another SIP's: each
        target SIP's IO_CPU gets its own copy from the host)."""
        graph = self.graph

        def forward(msg: ControlMsg) -> list[tuple[Receiver, float]]:
            wanted = msg.target_cubes
            return [
                (self._m_cpu(s, c), transit_ns((to_m_cpu(c),), msg.sent_bytes))
                for c in range(graph.config.cubes_per_sip)
                if wanted is None or (s, c) in wanted
            ]

        def to_m_cpu(c: int) -> Link:
            return graph.links[graph.layout.io_to_m_cpu(s, c)]

        name, ctl = sip_node(s, "io_cpu"), graph.config.control
        return self._component(name, ctl.io_cpu_processing_ns, forward)

    def _m_cpu(self, s: int, c: int) -> Component:
        """M_CPU -> NOC -> the cube's PE endpoints: two links one after the other, no
        NOC processing, the same two for every PE of the cube (NOC -> its MMU under VA,
        NOC -> its DMA under LA)."""
        graph, layout = self.graph, self.graph.layout
        into = layout.noc_to_mmu(s, c, 0) if self._endpoint == "mmu" else layout.noc_to_dma(s, c, 0)
        links = (graph.links[layout.m_cpu_to_noc(s, c)], graph.links[into])
        ends = self._cube(s, c)

        def forward(msg: ControlMsg) -> list[tuple[Receiver, float]]:
            return [(ends, transit_ns(links, msg.sent_bytes))]

        name, ctl = cube_node(s, c, "m_cpu"), graph.config.control
        return self._component(name, ctl.m_cpu_processing_ns, forward)

    def _cube(self, s: int, c: int) -> CubeEndpoints:
        found = self._cubes.get((s, c))
        if found is None:
            pes = self.graph.pes.in_cube(s, c)

            def wanted(msg: ControlMsg) -> list[PeId]:
                return [pe for pe in pes if _wants(msg, pe)]

            found = CubeEndpoints(self.env, self._end_ns, wanted, self._land)
            self._cubes[s, c] = found
        return found

    def _land(self, msg: ControlMsg, pes: list[PeId]) -> None:
        """``msg`` lands on ``pes`` (processed there): applied on each, in order."""
        for pe in pes:
            if pe.index in msg.landed_on:  # a routing bug, never bad input
                raise RuntimeError(f"{pe.node(self._endpoint)}: {msg.kind} delivered twice")
            msg.landed_on.add(pe.index)
            msg.apply(pe)
            self._landed[pe.index] = self._landed.get(pe.index, 0) + 1
            msg.pending -= 1
            if msg.pending == 0 and msg.done is not None:
                msg.landed_ns = self.env.now
                msg.done.succeed(msg)


def targets(graph: TopologyGraph, msg: ControlMsg) -> list[PeId]:
    """The PEs a message lands on, in global order: every PE of its target SIPs'
    cubes (its target cubes only, if it names them), narrowed to its target PEs."""
    top = graph.config
    return [
        pe
        for s in range(top.n_sips)
        if s in msg.target_sips
        for c in range(top.cubes_per_sip)
        if msg.target_cubes is None or (s, c) in msg.target_cubes
        for pe in graph.pes.in_cube(s, c)
        if msg.target_pes is None or pe.index in msg.target_pes
    ]


def _wants(msg: ControlMsg, pe: PeId) -> bool:
    return (
        pe.sip in msg.target_sips
        and (msg.target_cubes is None or (pe.sip, pe.cube) in msg.target_cubes)
        and (msg.target_pes is None or pe.index in msg.target_pes)
    )

"""The control plane (DESIGN §3.3, §13.1): install messages through component inboxes.

``MmuMapMsg``, ``MmuUnmapMsg`` and ``BaawSegmentInstallMsg`` / ``BaawSegmentUninstallMsg``
travel Host -> each target SIP's PCIE_EP -> that SIP's IO_CPU (fan-out to its own target
cubes only: D-VA3's ``target_sips``) -> M_CPU (fan-out to the target PEs) -> NOC -> the
PE endpoint (PE_MMU under VA, PE_DMA's BAAW port under LA). Each PE gets a message once;
a second landing is a routing bug and raises. Each component is a SimPy process with an inbox
(``simpy.Store``): it takes one message at a time, spends its processing time
(``topology.control.*_processing_ns``) and forwards copies to its children.

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
from dataclasses import dataclass, field
from typing import Any

import simpy

from kernbench.config.schema import ControlConfig
from kernbench.topology.graph import Link, TopologyGraph
from kernbench.topology.names import PeId, cube_node, sip_node


@dataclass(eq=False)
class ControlMsg:
    """A message for a set of PEs. ``apply(pe)`` runs when it lands on a PE.

    ``target_sips`` limits SIP-level routing (D-VA3); ``target_cubes`` (pairs of
    sip, cube) and ``target_pes`` (global PE indices) narrow it further; None = all.
    ``entries`` is how many table entries it carries (pages or segments, by kind),
    which with the header makes its size; ``sent_bytes`` is that size, set when the
    host sends it.
    """

    target_sips: tuple[int, ...]
    apply: Callable[[PeId], None]
    target_cubes: frozenset[tuple[int, int]] | None = None
    target_pes: frozenset[int] | None = None
    entries: int = 0
    sent_bytes: int = 0
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

    def entry_bytes(self, ctl: ControlConfig) -> int:
        """Bytes of one of its entries. A bare message has no table behind it: it
        carries none (its size is its header), and a count of them is a bug."""
        if self.entries:
            raise TypeError(f"a bare {self.kind} carries no entries ({self.entries} given)")
        return 0

    def size_bytes(self, ctl: ControlConfig) -> int:
        """What it weighs on every link (DESIGN §13.1): the header and its entries."""
        return ctl.msg_header_bytes + self.entries * self.entry_bytes(ctl)


class MmuMapMsg(ControlMsg):
    """Install VA -> PA page mappings in the target PEs' MMUs (D-VA3): one page-table
    entry per page it maps."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.pte_bytes


class MmuUnmapMsg(ControlMsg):
    """Remove a tensor's VA mappings (D-VA4): one page-table entry per page it unmaps."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.pte_bytes


class BaawSegmentInstallMsg(ControlMsg):
    """Register LA segments in the target PEs' BAAW tables (D-LA3): one entry each."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.baaw_segment_bytes


class BaawSegmentUninstallMsg(ControlMsg):
    """Remove LA segments from the target PEs' BAAW tables (D-LA3 step 3): one entry
    each, as installed (the table is the install's, read back)."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.baaw_segment_bytes


# A component's children for a message, each with the transit time to its inbox.
Forward = Callable[[ControlMsg], list[tuple["Component", float]]]


def transit_ns(links: tuple[Link, ...], size_bytes: int) -> float:
    """Time for a message of ``size_bytes`` to cross ``links`` one after the other,
    each store and forward: its latency, then the whole message at its bandwidth."""
    total = 0.0
    for link in links:
        total += link.latency_ns + size_bytes / link.bw_gbs
    return total


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
    """Builds the control components of one system and sends messages through them."""

    def __init__(self, env: simpy.Environment, graph: TopologyGraph, endpoint: str) -> None:
        """``endpoint`` is the PE part a message lands on: ``mmu`` (VA) or ``dma`` (LA)."""
        self.env = env
        self.graph = graph
        self.log: list[ControlMsg] = []
        self._endpoint = endpoint
        ctl, top = graph.config.control, graph.config
        self._end_ns = ctl.mmu_processing_ns if endpoint == "mmu" else ctl.dma_processing_ns
        # A PE's endpoint is built when a first message is forwarded to it.
        self.pe_end: dict[int, Component] = {}
        cubes = [(s, c) for s in range(top.n_sips) for c in range(top.cubes_per_sip)]
        self.m_cpu = {
            (s, c): Component(
                env, cube_node(s, c, "m_cpu"), ctl.m_cpu_processing_ns, self._to_pes(s, c)
            )
            for s, c in cubes
        }
        sips = range(top.n_sips)
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
            self.pcie_ep[s].send(msg, transit_ns(pcie, msg.sent_bytes))
        return msg.done

    def targets(self, msg: ControlMsg) -> list[PeId]:
        """The PEs a message lands on."""
        return targets(self.graph, msg)

    def landed(self, index: int) -> int:
        """How many messages have landed on PE ``index`` (0 for a PE none reached)."""
        end = self.pe_end.get(index)
        return 0 if end is None else end.handled

    def _to_io(self, s: int) -> Forward:
        links = (self.graph.links[self.graph.layout.pcie_to_io(s)],)
        return lambda msg: [(self.io_cpu[s], transit_ns(links, msg.sent_bytes))]

    def _to_cubes(self, s: int) -> Forward:
        """IO_CPU -> the M_CPUs of its own SIP's target cubes (never another SIP's: each
        target SIP's IO_CPU gets its own copy from the host)."""
        cubes = [(c, self.m_cpu[s, c]) for c in range(self.graph.config.cubes_per_sip)]
        links = {c: (self.graph.links[self.graph.layout.io_to_m_cpu(s, c)],) for c, _ in cubes}

        def forward(msg: ControlMsg) -> list[tuple[Component, float]]:
            wanted = msg.target_cubes
            return [
                (m, transit_ns(links[c], msg.sent_bytes))
                for c, m in cubes
                if wanted is None or (s, c) in wanted
            ]

        return forward

    def _to_pes(self, s: int, c: int) -> Forward:
        """M_CPU -> NOC -> PE endpoint: two links one after the other, no NOC processing."""
        graph, layout = self.graph, self.graph.layout
        to_noc = graph.links[layout.m_cpu_to_noc(s, c)]

        def link_in(pe: PeId) -> Link:
            """NOC -> the PE's MMU (VA) or DMA (LA)."""
            if self._endpoint == "mmu":
                return graph.links[layout.noc_to_mmu(s, c, pe.pe)]
            return graph.links[layout.noc_to_dma(s, c, pe.pe)]

        def forward(msg: ControlMsg) -> list[tuple[Component, float]]:
            return [
                (self._end(pe), transit_ns((to_noc, link_in(pe)), msg.sent_bytes))
                for pe in graph.pes.in_cube(s, c)
                if _wants(msg, pe)
            ]

        return forward

    def _end(self, pe: PeId) -> Component:
        """The PE's endpoint, built on its first message."""
        found = self.pe_end.get(pe.index)
        if found is None:
            name = pe.node(self._endpoint)
            found = self.pe_end[pe.index] = Component(self.env, name, self._end_ns, self._land(pe))
        return found

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

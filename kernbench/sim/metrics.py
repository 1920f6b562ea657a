"""Measurements a workload turns into result columns (DESIGN §3.4, §8).

This module owns how utilisation, per-command dispatch and traffic are *measured* from
a run: utilisation is a component's busy time over the kernel latency, dispatch
figures are what PE_CPU actually paid, observed at the point of payment, and bytes
moved and link utilisation are what the fabric carried (:class:`LaunchUsage`). It must not compute
anything from the ADR-0064 formula itself: tests check the measurements against the
formula, which only means something if the two are independent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernbench.commands import PeCommand
from kernbench.sim.cost_model import DispatchCostModel

if TYPE_CHECKING:
    from kernbench.sim.system import PeUnit, System
    from kernbench.topology.graph import TopologyGraph
    from kernbench.topology.names import PeId

ENGINES = ("gemm", "math", "dma")


@dataclass(frozen=True)
class DispatchRecorder(DispatchCostModel):
    """A PE's cost model that remembers, per command in issue order, the command, its
    logical bytes and the dispatch cycles PE_CPU paid, so a workload can read off the
    figures of any stretch of its kernel (e.g. the KV-tile loop) and a test the
    commands PE_SCHEDULER was given. It is the model it replaces (same parameters), so
    PE_CPU's typed ``cost`` holds it in the compiled build too."""

    issued: list[PeCommand] = field(default_factory=list, compare=False, repr=False)
    logical_bytes: list[int] = field(default_factory=list, compare=False, repr=False)
    cycles: list[float] = field(default_factory=list, compare=False, repr=False)

    def price(self, cmd: PeCommand) -> tuple[float, float]:
        """What the model charges; remembered (PE_CPU prices each command once, then
        pushes it to PE_SCHEDULER)."""
        cycles, ns = super().price(cmd)
        self.issued.append(cmd)
        self.logical_bytes.append(cmd.logical_bytes)
        self.cycles.append(cycles)
        return cycles, ns

    @property
    def commands(self) -> int:
        return len(self.cycles)


def record_dispatch(pe: PeUnit) -> DispatchRecorder:
    """Install a recorder on ``pe``'s CPU (before launch) in place of its cost model,
    with the same parameters, and return it."""
    inner = pe.cpu.cost
    if isinstance(inner, DispatchRecorder):
        return inner
    recorder = DispatchRecorder(
        inner.fixed_per_cmd_cycles, inner.byte_cycles_recip, inner.clock_freq_ghz
    )
    pe.cpu.cost = recorder
    return recorder


def utilization(pe: PeUnit, latency_ns: float) -> dict[str, float]:
    """Busy time / ``latency_ns`` of the PE's CPU and each engine.

    Busy times are cumulative since the system was built, so this is the utilisation
    over one launch only when the launch is the system's only activity and starts at 0.
    """
    if latency_ns <= 0:
        return {f"{name}_utilization": 0.0 for name in ("cpu", *ENGINES)}
    row = {"cpu_utilization": pe.cpu.busy_ns / latency_ns}
    for name in ENGINES:
        row[f"{name}_utilization"] = pe.engines[name].busy_ns / latency_ns
    return row


def mean_utilization(pes: list[PeUnit], latency_ns: float) -> dict[str, float]:
    """Utilisation per component, averaged over ``pes``."""
    rows = [utilization(pe, latency_ns) for pe in pes]
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def bottleneck(row: dict[str, float]) -> str:
    """The component with the highest utilisation (``cpu``, ``gemm``, ``math`` or ``dma``)."""
    keys = [f"{name}_utilization" for name in ("cpu", *ENGINES)]
    return max(keys, key=lambda k: row[k]).removesuffix("_utilization")


# A unit busy at least this share of a transfer's time bounds it. A bound stream's
# issuing CPU or busiest link is within a few per cent of 1 (0.994-0.998 measured on
# the default topology); one that is not bound is far below (0.23-0.56 there).
SATURATED = 0.9


def stream_bottleneck(cpu_utilization: float, link: str, link_utilization: float) -> str:
    """What bounds a transfer: ``cpu`` (issuing commands), else its busiest ``link`` by
    name, when one is :data:`SATURATED`; else ``dma``, the accesses the DMA keeps in
    flight (their latency). :func:`bottleneck`'s argmax does not fit a transfer: its
    DMA engine is busy whenever an access is in flight, so its utilisation is ~1
    whatever bounds the run."""
    if max(cpu_utilization, link_utilization) < SATURATED:
        return "dma"
    return "cpu" if cpu_utilization >= link_utilization else link


class LaunchUsage:
    """What the fabric and each PE's DMA carried from the moment this is built: the
    measured side of a stream row (bytes moved, per-PE bandwidth, the busiest link).

    Counters are cumulative in the simulator, so this keeps their values at the start
    and reports differences: only the launch's own traffic counts. It reads the links
    that carried bytes and the PEs that were built, never every link or PE of the
    topology (a PE not built and a link never crossed carried nothing).
    """

    def __init__(self, system: System) -> None:
        self.system = system
        self._links = system.fabric.carried()
        built = system.pes.built()
        self._pes = {i: unit.dma.bytes_moved for i, unit in built.items()}
        self._accesses = sum(unit.dma.stages_done for unit in built.values())

    def link_bytes(self) -> dict[int, int]:
        """Bytes each link carried since the start, by link id; links that carried
        none are left out."""
        before = self._links
        found: dict[int, int] = {}
        for i, carried in self.system.fabric.carried().items():
            if carried != before.get(i, 0):
                found[i] = carried - before.get(i, 0)
        return found

    def hbm_bytes(self) -> list[int]:
        """Bytes each HBM resource carried since the start, both ways (a write's into
        HBM, a read's back out of it), one figure per resource that carried any."""
        layout = self.system.graph.layout
        per: dict[int, int] = {}
        for i, carried in self.link_bytes().items():
            slot = layout.router_slot(i)
            if slot >= 4:  # into HBM (4) or back out (5), the resource of the first
                resource = i if slot == 4 else i - 1
                per[resource] = per.get(resource, 0) + carried
        return list(per.values())

    def memory_bytes(self) -> int:
        """Bytes that reached or left HBM: each request crosses exactly one HBM
        resource (a router's link into its cube's HBM controller, or back out of it),
        so this counts every request once."""
        return sum(self.hbm_bytes())

    def hbm_channels_used(self) -> int:
        """HBM pseudo-channels that carried bytes since the start: under 1:1 each
        channel has its own router link into HBM, counted one by one; under n:1 a PE's
        channels are one aggregate link, which counts as all of them (N)."""
        graph = self.system.graph
        per_link = 1 if graph.one_to_one else graph.channels_per_pe
        return per_link * sum(b > 0 for b in self.hbm_bytes())

    def pe_bytes(self, pe: PeId) -> int:
        """Bytes PE ``pe``'s DMA engine moved since the start (reads plus writes)."""
        return self.system.pes[pe.index].dma.bytes_moved - self._pes.get(pe.index, 0)

    def accesses(self) -> int:
        """DMA accesses completed by every PE since the start."""
        return sum(unit.dma.stages_done for unit in self.system.pes) - self._accesses

    def busiest_link(self, interval_ns: float) -> tuple[str, float]:
        """The link resource with the highest utilisation (busy time = bytes /
        bandwidth, summed over the links that share it, over ``interval_ns``), named
        ``src->dst``, or ``router<->hbm_ctrl`` for an HBM resource (both ways, DESIGN
        §13.1). Ties go to HBM, then to the lowest id, so a run always names the same
        (with no traffic at all: the first HBM link, PE 0's)."""
        graph = self.system.graph
        busy = resource_busy_ns(graph, self.system.fabric.bw, self.link_bytes())
        best = busiest_resource(graph, busy)
        utilization = busy.get(best, 0.0) / interval_ns if interval_ns > 0 else 0.0
        return resource_name(graph, best), utilization


def resource_busy_ns(
    graph: TopologyGraph, bw: list[float], link_bytes: dict[int, int]
) -> dict[int, float]:
    """The least time each link resource needs to carry ``link_bytes`` (by link id,
    over that link's bandwidth ``bw``), summed over the links that share it (HBM's two
    ways are one resource, DESIGN §13.1); by resource id (a link id), only resources
    that carried bytes. No run carries them faster, whatever the sharing."""
    layout = graph.layout
    busy: dict[int, float] = {}
    for i, carried in sorted(link_bytes.items()):  # summed in id order
        resource = i - 1 if layout.router_slot(i) == 5 else i
        busy[resource] = busy.get(resource, 0.0) + carried / bw[i]
    return busy


def busiest_resource(graph: TopologyGraph, busy: dict[int, float]) -> int:
    """The resource with the most busy time; ties go to HBM, then to the lowest id,
    so a run always names the same (with no traffic at all: PE 0's first HBM link)."""
    layout = graph.layout
    if not busy:
        return layout.router_to_hbm(0, 0, 0, 0)
    return max(busy, key=lambda i: (busy[i], layout.router_slot(i) == 4, -i))


def resource_name(graph: TopologyGraph, resource: int) -> str:
    """``src->dst``, or ``router<->hbm_ctrl`` for an HBM resource (both ways)."""
    link = graph.links[resource]
    arrow = "<->" if graph.layout.router_slot(resource) == 4 else "->"
    return f"{link.src}{arrow}{link.dst}"


def spread(values: list[float]) -> tuple[float, float, float]:
    """(min, mean, max) of ``values``."""
    return min(values), sum(values) / len(values), max(values)


def jain_index(values: list[float]) -> float:
    """Jain's fairness index ``(Σx)² / (n Σx²)``: 1.0 when every value is equal, 1/n
    when one value takes everything; a single figure for how evenly PEs were served
    that min/mean/max hide when only one PE lags."""
    square = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * square) if square > 0 else 1.0

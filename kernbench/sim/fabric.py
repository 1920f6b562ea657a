"""The data plane: link reservation as arithmetic (DESIGN §3.2).

A physical request of ``n`` bytes over links ``l1..lk`` starts at
``S = max(now, free_at[l1..lk])``, holds each link until ``S + n / bw(li)`` and
completes at ``S + Σ latency(li) + n / min bw(li)`` plus the memory's access
latency. This is FIFO queueing per link with no SimPy events at all: whoever
issues requests (PE_DMA) waits on one timeout for the last completion.
"""

from __future__ import annotations

from kernbench.topology.graph import TopologyGraph
from kernbench.topology.routes import Route


class Fabric:
    """Per-link ``free_at`` times and bytes carried (a link's busy time is its bytes over
    its bandwidth); optionally a log of every reservation (for tests)."""

    def __init__(
        self, graph: TopologyGraph, access_latency_ns: float, record: bool = False
    ) -> None:
        self.free_at = [0.0] * len(graph.links)
        self.bw = [lk.bw_gbs for lk in graph.links]
        self.access_latency_ns = access_latency_ns
        self.bytes_carried = [0] * len(graph.links)
        self.reservations: list[tuple[int, float, float, int]] | None = [] if record else None

    def reserve(self, route: Route, nbytes: int, now: float) -> tuple[float, float]:
        """Book ``nbytes`` on every link of ``route``; return (start, completion) in ns."""
        free_at, bw, links = self.free_at, self.bw, route.link_ids
        start = now
        for i in links:
            if free_at[i] > start:
                start = free_at[i]
        carried = self.bytes_carried
        for i in links:
            free_at[i] = start + nbytes / bw[i]
            carried[i] += nbytes
        if self.reservations is not None:
            self.reservations.extend((i, start, start + nbytes / bw[i], nbytes) for i in links)
        done = start + route.latency_ns + nbytes / route.min_bw_gbs + self.access_latency_ns
        return start, done

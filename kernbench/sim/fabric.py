"""The data plane: link reservation as arithmetic (DESIGN §3.2).

A physical request of ``n`` bytes over links ``l1..lk`` starts at
``S = max(now, free_at[l1..lk])``, holds each link until ``S + n / bw(li)`` and
completes at ``S + Σ latency(li) + n / min bw(li)`` plus the memory's access
latency. This is FIFO queueing per link with no SimPy events at all: whoever
issues requests (PE_DMA) waits on one event for the last completion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kernbench.topology.graph import TopologyGraph
from kernbench.topology.routes import Route

PhysicalRequest = tuple[str, int, int, int]  # (HBM router node, pa, nbytes, channel id or -1)


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

    def book(
        self,
        requests: list[PhysicalRequest],
        routes: Mapping[str, Route],
        now: float,
        trace: Callable[[PhysicalRequest, float, float], None] | None = None,
    ) -> float:
        """Book requests ``(router, pa, nbytes, channel)`` issued at ``now``, each on
        ``routes[router]``, in order; return the last completion. ``trace`` is told each
        request's start and completion."""
        free_at, bw, carried = self.free_at, self.bw, self.bytes_carried
        log, access = self.reservations, self.access_latency_ns
        end = now
        for req in requests:
            route, nbytes = routes[req[0]], req[2]
            links = route.link_ids
            start = now
            for i in links:
                if free_at[i] > start:
                    start = free_at[i]
            for i in links:
                free_at[i] = start + nbytes / bw[i]
                carried[i] += nbytes
            if log is not None:
                log.extend((i, start, start + nbytes / bw[i], nbytes) for i in links)
            done = start + route.latency_ns + nbytes / route.min_bw_gbs + access
            if done > end:
                end = done
            if trace is not None:
                trace(req, start, done)
        return end

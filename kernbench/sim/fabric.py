"""The reservation data plane (``sim.fabric=reservation``, DESIGN §3.2's first design).

Kept for comparison with the fair-share model (:mod:`kernbench.sim.fair_fabric`, the
default) and as the bandwidth study's sensitivity axis: with two bottlenecks on a
path it is neither work-conserving nor fair, so results move with access size and
queue depth.

A physical request of ``n`` bytes over links ``l1..lk`` is *ready* at ``r``: its issue
for a write, whose bytes leave with the request; for a read (DESIGN §13.1), its
issue plus the payload-free request's way out (``Route.request_ns``) plus the
memory's access latency, its links being the data's way back. It starts at the
earliest ``S >= r`` at which every link ``li`` is free for ``n / bw(li)``, holds each
link for that long from ``S`` and completes at ``S + Σ latency(li) + n / min bw(li)``,
plus the access latency for a write. Capacity is kept per resource
(``Link.resource``): HBM's two directions are one. No SimPy events at all: whoever
issues requests (PE_DMA) waits on one event for the last completion.

Each link is free after ``free_at`` and in the *holes* before it: idle stretches left
when a request had to wait for another, narrower or busier, link of its path, or for
its own bytes (a read's come back only once its request is out and served, so a
request issued later but ready sooner can still go first). A later
request that fits in a hole takes it, as a link's arbiter would serve whichever request
is ready; without this, a PE waiting on its own 128 GB/s link would leave a shared
256 GB/s HBM link idle for every other PE (a hotspot would deliver about 60% of the
HBM's bandwidth). Where no link of a path has a hole — every path whose links have one
bandwidth and one user, e.g. all ``local`` stream traffic — this is exactly
``S = max(r, free_at[l1..lk])``, FIFO per link, and that case takes a fast path.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from operator import itemgetter
from typing import Any, Final

from kernbench.sim.engines import Stage
from kernbench.timebase import on_grid
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.routes import MemoryRoutes

PhysicalRequest = tuple[str, int, int, int]  # (HBM router node, pa, nbytes, channel id or -1)
# Told each request's start and completion: (request, start, completion).
TraceCall = Callable[[PhysicalRequest, float, float], None]
_end: Final[Callable[[tuple[float, float]], float]] = itemgetter(1)  # a hole's end


class DataPlane:
    """What PE_DMA asks of a fabric model (reservation or fair share). A base class,
    not a Protocol: the compiled build calls a native base class's method directly,
    a Protocol's through Python's generic call (once per DMA stage)."""

    def start(
        self,
        requests: list[PhysicalRequest],
        routes: MemoryRoutes,
        issue: float,
        transfer: Stage,
        done: Callable[[Any], None],
        trace: TraceCall | None = None,
    ) -> float | None:
        """Move ``requests`` issued at ``issue`` for the DMA stage ``transfer``: the
        completion of what is timed at once (the stage's first part), or None; every
        further part (``transfer.parts``) is counted down when it completes, through
        ``done(transfer)`` or, for a fair-share flow that is not its stage's last to
        drain, by the fabric itself (the fair fabric types the stage as the
        :class:`~kernbench.sim.flows.Transfer` it reads)."""
        raise NotImplementedError


class ReservationFabric(DataPlane):
    """Per-resource ``free_at`` times and holes, per-link bytes carried (a link's busy
    time is its bytes over its bandwidth: :meth:`busy_ns`); optionally a log of every
    reservation. State is kept in lists by link id, a resource under its own link's,
    long enough for the links of the routes booked so far (:meth:`_cover`)."""

    def __init__(
        self, graph: TopologyGraph, access_latency_ns: float, record: bool = False
    ) -> None:
        self.layout = graph.layout
        self.bw: list[float] = []
        self.free_at: list[float] = []
        self._carried: list[int] = []
        self.access_latency_ns = on_grid(access_latency_ns)
        # Per resource: idle (start, end) stretches before free_at, sorted; how many have any.
        self.holes: dict[int, list[tuple[float, float]]] = {}
        self._holed = 0
        self.reservations: list[tuple[int, float, float, int]] | None = [] if record else None

    def _cover(self, top: int) -> None:
        """Lengthen the per-link lists, in place, to cover link ``top`` (at least
        doubling them): a run's state costs the links its routes reach, so a run on 16
        PEs of a 16,384-PE topology keeps lists of a few thousand links, not 800,000
        (nor does the garbage collector walk them)."""
        size = len(self.bw)
        if top < size:
            return
        new = min(self.layout.count, max(top + 1, 2 * size))
        self.bw += self.layout.bandwidths(size, new)
        self.free_at += [0.0] * (new - size)
        self._carried += [0] * (new - size)

    @property
    def bytes_carried(self) -> list[int]:
        """Bytes each link has carried, by link id (every link of the topology)."""
        return self._carried + [0] * (self.layout.count - len(self._carried))

    def busy_ns(self) -> list[float]:
        """Time each link has spent carrying bytes, by link id."""
        every = zip(self.bytes_carried, self.layout.bandwidths(), strict=True)
        return [b / bw for b, bw in every]

    def carried(self) -> dict[int, int]:
        """Bytes each link that carried any has carried, by link id."""
        return {i: b for i, b in enumerate(self._carried) if b}

    def start(
        self,
        requests: list[PhysicalRequest],
        routes: MemoryRoutes,
        issue: float,
        transfer: object,
        done: object,
        trace: TraceCall | None = None,
    ) -> float:
        """The data plane's one entry (:class:`DataPlane`): every
        request is booked now, so the completion is final and the only part."""
        return self.book(requests, routes, issue, trace)

    def book(
        self,
        requests: list[PhysicalRequest],
        routes: MemoryRoutes,
        now: float,
        trace: TraceCall | None = None,
    ) -> float:
        """Book requests ``(router, pa, nbytes, channel)`` issued at ``now``, each on
        ``routes[router]``, in order; return the last completion. ``trace`` is told each
        request's start (its bytes leave the DMA, or the memory for a read) and
        completion."""
        free_at, bw, carried = self.free_at, self.bw, self._carried
        log, access = self.reservations, self.access_latency_ns
        end = now
        for req in requests:
            route, nbytes = routes[req[0]], req[2]
            if route.top_id >= len(bw):
                self._cover(route.top_id)  # in place: the lists above grow
            held = route.resources
            way = on_grid(route.latency_ns)  # on the time grid, as every duration
            if route.reads:  # the data leaves once the request is out and served
                ready, after = now + on_grid(route.request_ns) + access, 0.0
            else:
                ready, after = now, access
            if self._holed:
                start = self._fit(held, nbytes, ready, now)
                for i in held:
                    self._take(i, start, start + on_grid(nbytes / bw[i]), now)
            else:
                start = ready
                for i in held:
                    if free_at[i] > start:
                        start = free_at[i]
                for i in held:
                    free = free_at[i]
                    if free < start and now < start:  # idle until it starts: a hole
                        self._open(i, free if free > now else now, start)
                    free_at[i] = start + on_grid(nbytes / bw[i])
            for i in route.link_ids:
                carried[i] += nbytes
            if log is not None:
                log.extend(
                    (i, start, start + on_grid(nbytes / bw[i]), nbytes) for i in route.link_ids
                )
            done = start + way + on_grid(nbytes / route.min_bw_gbs) + after
            if done > end:
                end = done
            if trace is not None:
                trace(req, start, done)
        return end

    def _fit(self, links: tuple[int, ...], nbytes: int, ready: float, now: float) -> float:
        """The earliest start >= ``ready`` at which every resource is free for its
        share: each in turn moves the start to its own earliest fit until none moves it."""
        start, moved = ready, True
        while moved:
            moved = False
            for i in links:
                at = self._earliest(i, start, on_grid(nbytes / self.bw[i]), now)
                if at > start:
                    start, moved = at, True
        return start

    def _earliest(self, i: int, t: float, hold: float, now: float) -> float:
        """The earliest time >= ``t`` at which link ``i`` is free for ``hold`` ns.

        Holes are disjoint and sorted, so their ends ascend: one bisection drops those
        behind every future request (ending by ``now``) and skips those that end before
        ``t + hold``, which cannot hold it (a start ``s >= t`` has ``s + hold >= t +
        hold`` in floats too). A 16-PE hotspot so looks at about one hole per link and
        request, not the twenty or so before it."""
        holes = self.holes.get(i)
        if holes:
            if holes[0][1] <= now:
                del holes[: bisect_right(holes, now, key=_end)]
                self._holed -= not holes
            for k in range(bisect_left(holes, t + hold, key=_end), len(holes)):
                a, b = holes[k]
                s = a if a > t else t
                if s + hold <= b:
                    return s
        return t if t > self.free_at[i] else self.free_at[i]

    def _take(self, i: int, start: float, stop: float, now: float) -> None:
        """Reserve ``[start, stop)`` on resource ``i`` for a request issued at ``now``:
        from a hole, or from ``free_at`` (leaving what is idle before it a hole)."""
        free = self.free_at[i]
        if start >= free:
            idle = free if free > now else now
            if idle < start:
                self._open(i, idle, start)
            self.free_at[i] = stop
            return
        holes = self.holes[i]
        k = bisect_left(holes, stop, key=_end)  # the first ending at or after stop holds it
        a, b = holes.pop(k)
        rest = [(x, y) for x, y in ((a, start), (stop, b)) if y > x]
        holes[k:k] = rest
        self._holed -= not holes

    def _open(self, i: int, a: float, b: float) -> None:
        """Record link ``i`` idle over ``[a, b)`` (before its ``free_at``)."""
        holes = self.holes.get(i)
        if holes is None:
            holes = self.holes[i] = []
        self._holed += not holes
        holes.append((a, b))

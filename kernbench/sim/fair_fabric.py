"""The fair-share data plane (DESIGN §3.2, ``sim.fabric=fair``): requests as flows.

A physical request of ``n`` bytes over links ``l1..lk`` issued at ``t`` *joins* its
links at ``t + Σ latency(li)``, drains its bytes at the rate the links give it, and
completes an HBM access latency after its last byte. A read (DESIGN §13.1) joins the
links of its data's way back once its request is out and served (``t`` + the way out
+ the access + ``Σ latency(li)``) and completes at its last byte. Links share by
resource (``Link.resource``): HBM's two directions are one. Rates come from
:func:`kernbench.sim.fairshare.progressive_fill`, over *queues*: one requester's (one
PE DMA's) requests on one route, oldest first. Only a queue's oldest joined request
drains (a younger one on the same route would cross the same saturated link), so a
queue is one rate; a 1:1 access's channel requests are on different routes, so they
are different queues of one requester and drain side by side.

Rates are recomputed when a queue gains its first joined request, empties, or gets a
new oldest request that changes its requester's age order; otherwise the next
request simply takes over its queue's rate (a PE streaming to one hotspot costs no
solve per access). Whether the order changed is decided at the end of the instant:
a 1:1 access's channel flows drain together and their successors, taking over one
after another, pass each other's predecessors on the way, yet may leave the order
as it was. A recomputation covers the queues that share links or a requester,
transitively, with what changed (SimGrid's *selective update*; a requester's queues
are coupled by its age order), happens once per simulated instant
however many requests changed at it, and re-keys the completion of only the requests
whose rate moved (SimGrid's *lazy actions*), lazily: a completion that moves later keeps
its event, which queues the new one under its key when it comes, so a rate that falls
and rises again costs one event (``_complete_at``); a stale event is skipped when popped.
The flows of one DMA stage but the last to drain complete at their drain, with no
event: completion is the same time after the last byte for every flow of a stage (an
access latency for a write, none for a read).
Two things are kept between recomputations, both exact: components, which queues join
as they enter (merging those they connect) and leave, never split (a fill of
unconnected components together gives each its own fill's rates, so a component that
holds more than the connected queues is exact, only larger; no search of the component
at each entry or exit); and the rates, by the queues they were solved for in age order
(progressive filling is a function of those and of the fixed bandwidths, and a hotspot
meets the same orders again and again). The flows of one issue that join at one time
(a 1:1 access's channel requests) join in one event.

The fast path: a requester (a PE's DMA) whose every queue has its links to itself is
exactly FIFO per queue at its route's narrowest bandwidth, so it is booked
arithmetically as the reservation model books it (``start = max(issue, free_at)``,
done at ``start + Σ latency + n / min bw + access``, a read's latency counting its
request and access as well, and no access after): one event per DMA stage and no
flow. It is all or nothing per requester: in progressive filling an older queue on a
link of its own still takes its requester's turn first, so a requester with any flow
has all its queues in the solver. When another requester's request arrives on a link
it holds while it still has bytes to drain, its bookings become flows at that instant
(a flow can only get slower by sharing, so the DMA stage's arithmetic completion is a
lower bound it keeps as one of its parts: :class:`~kernbench.sim.flows.Transfer`).
Tracing or recording links turns the fast path off (every request becomes a flow,
with the same times), so every flow is observed.

One access's requests on one route are one flow (a descriptor: VA's pages of one
channel, DESIGN §3.2 as revised for issue 54), so a requester's queues are aged by
access. Every duration added to a time is on the grid of :mod:`kernbench.timebase`,
so times are exact and a run started later is the same run, shifted.

Ties between events at one instant run in the queue's key order (time, then the
order they were scheduled in); queues are aged by a counter over descriptors in the
order they are issued, so identical inputs give identical rates, times and logs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kernbench.sim.events import LocalQueue
from kernbench.sim.fabric import DataPlane, PhysicalRequest, TraceCall
from kernbench.sim.fairshare import age_order, progressive_fill
from kernbench.sim.flows import (
    INFINITY,
    Component,
    Done,
    Flow,
    Lane,
    LinkUse,
    Queue,
    Requester,
    Transfer,
    draining,
)
from kernbench.timebase import on_grid
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.routes import MemoryRoutes

KNOWN: Final = 1024  # solutions kept (emptied when full)
INSERTED: Final = 16  # queues sorted by insertion (more: heads_into_age_order)

# Told a component's queues (requester, links, oldest request's sequence number) and
# their rates after every recomputation, and the time: the tests' window on the solver.
SolveObserver = Callable[[float, list[tuple[str, tuple[int, ...], int]], list[float]], None]


class FairFabric(DataPlane):
    """The fair-share fabric of one system. Same counters as the reservation model
    (``bytes_carried``, ``bw``); ``segments`` (when recording) holds every
    ``(link ids, start, end, rate)`` stretch a flow drained at one rate."""

    def __init__(
        self,
        graph: TopologyGraph,
        access_latency_ns: float,
        events: LocalQueue,
        record: bool = False,
        fast: bool = True,
        on_solve: SolveObserver | None = None,
        reuse: bool = True,
        whole: bool = False,
    ) -> None:
        # Per-link lists cover the links of the routes seen so far (:meth:`_cover`).
        self.layout = graph.layout
        self.bw: list[float] = []
        self.access_latency_ns = on_grid(access_latency_ns)
        self.events = events
        self.segments: list[tuple[tuple[int, ...], float, float, float]] | None = (
            [] if record else None
        )
        self.on_solve = on_solve
        self.solves = 0  # recomputations, and queues they covered: the cost's measure
        self.solved_queues = 0
        self.reused = 0  # recomputations answered from _known
        # Rates by the queues they were solved for, in age order: progressive filling is
        # a function of its queues (requester, links: fixed per queue) and the links'
        # bandwidths (fixed per fabric), so the same queues in the same order get the
        # very same rates. A hotspot meets the same few orders again and again (1:1
        # hotspot on 16 PEs: 109 distinct of 1636); bounded, as traffic with no
        # repeats (uniform) would only fill it.
        self._known: dict[tuple[Queue, ...], list[float]] = {}
        self._reuse = reuse  # off: every recomputation searches and fills afresh (tests)
        # On: every recomputation covers every joined queue, the definition the
        # selective update must equal (tests).
        self._whole = whole
        self._fast = fast and not record
        self._never_binds = graph.layout.never_binds
        # Each link's record, by link id: made when a first queue crosses the link.
        self._uses: list[LinkUse | None] = []
        self._requesters: dict[str, Requester] = {}  # by DMA node
        self._lanes: dict[int, Lane] = {}  # by id(routes): one per DMA and direction
        self._joined: list[list[Queue]] = []  # by requester number: queues with joined flows
        self._seq = 0
        self._dirty: set[int] = set()  # links whose queues need new rates
        # Queues whose new head passed their requester's other heads at this instant
        # (each with the rate it takes over if the order holds: _recheck).
        self._unsure: list[Queue] = []
        # The drains queued last in one event, its last key and time (_queue_drain).
        self._run: list[Flow] = []
        self._run_key = -2
        self._run_at = -1.0
        self._searches = 0  # fresh searches (the definition's, reuse off)

    def _cover(self, top: int) -> None:
        """Lengthen the per-link lists, in place, to cover link ``top`` (at least
        doubling them): a run's state costs the links its routes reach, so a run on 16
        PEs of a 16,384-PE topology keeps lists of a few thousand links, not 800,000
        (nor does the garbage collector walk them)."""
        size = len(self.bw)
        if top < size:
            return
        new = min(self.layout.count, max(top + 1, 2 * size))
        more = new - size
        self.bw += self.layout.bandwidths(size, new)
        self._uses += [None] * more

    @property
    def bytes_carried(self) -> list[int]:
        """Bytes each link has carried, by link id: summed from the queues when asked
        (a launch asks twice), so issuing a request adds to one counter, not one per
        link of its path."""
        carried = [0] * self.layout.count
        for who in self._requesters.values():
            for queue in who.queues:
                for i in queue.path:
                    carried[i] += queue.moved
        return carried

    def busy_ns(self) -> list[float]:
        """Time each link has spent carrying bytes, by link id."""
        every = zip(self.bytes_carried, self.layout.bandwidths(), strict=True)
        return [b / bw for b, bw in every]

    def carried(self) -> dict[int, int]:
        """Bytes each link that carried any has carried, by link id (from the queues:
        a run's links, not the topology's)."""
        carried: dict[int, int] = {}
        for who in self._requesters.values():
            for queue in who.queues:
                if queue.moved:
                    for i in queue.path:
                        carried[i] = carried.get(i, 0) + queue.moved
        return carried

    # -- issuing ----------------------------------------------------------------
    def start(
        self,
        requests: list[PhysicalRequest],
        routes: MemoryRoutes,
        issue: float,
        transfer: Transfer,
        done: Done,
        trace: TraceCall | None = None,
    ) -> float | None:
        """Issue ``requests`` at ``issue`` for ``transfer``. Returns the completion of
        its arithmetic bookings (one part of ``transfer``, which the caller schedules),
        or None when it has none; every flow adds a part that calls ``done``."""
        now = self.events.now
        lane = self._lanes.get(id(routes))
        if lane is None:
            lane = self._lane(routes, done)
        who, queues = lane.who, lane.queues
        # One descriptor per route (DESIGN §3.2, age by access): the access's requests on
        # one queue (VA splits a 64 KiB 1:1 access at every page: 16 per channel) drain
        # as one flow of their bytes, as a DMA serving a descriptor in order moves them;
        # a page boundary is a translation, not a new request to arbitrate. So a PE's
        # queues are aged by access, PA, VA and LA with the same placement drain alike,
        # and a page's successor does not reorder its requester's queues (a
        # recomputation each: 92 per VA access against 6 under PA).
        access = self._seq + 1  # marks the queues this access reaches
        reached: list[Queue] = []
        for req in requests:
            queue = queues.get(req[0])
            if queue is None:
                route = routes[req[0]]
                self._cover(route.top_id)
                queue = Queue(route, self._never_binds, who, self.access_latency_ns)
                queue.uses = self._uses_of(queue.links)
                queues[req[0]] = queue
                who.queues.append(queue)
            if queue.access != access:
                queue.access = access
                queue.gathered = req[2]
                reached.append(queue)
                if trace is not None:
                    queue.pieces = [req]
            else:
                queue.gathered += req[2]
                if queue.pieces is not None:
                    queue.pieces.append(req)
        end = -1.0  # none yet
        flows = 0
        seq = self._seq
        last: Flow | None = None  # the last flow scheduled to join, if nothing since
        last_at = 0.0
        for queue in reached:
            nbytes = queue.gathered
            queue.moved += nbytes
            seq += 1
            if not who.fluid and (queue.holds or (self._fast and self._alone(queue, now))):
                start = issue if issue > queue.free_at else queue.free_at
                hold = on_grid(nbytes / queue.cap)
                queue.free_at = start + hold
                drained = queue.free_at + queue.latency  # (as draining() sums it)
                if drained > who.drained_at:
                    who.drained_at = drained
                stop = start + queue.latency + hold
                queue.book(stop, start, nbytes, issue, seq, transfer, now)
                at = stop + queue.tail  # the reservation model's sum, in its order
                if at > end:
                    end = at
                continue
            if not queue.fluid:
                last = None  # _share schedules events: later flows join after them
                self._share(queue, now)
            flows += 1
            # Its requests go along only to be traced.
            flow = Flow(seq, queue, nbytes, transfer, done, queue.pieces, trace)
            queue.pieces = None
            queue.waiting += 1
            at = issue + queue.latency
            if last is not None and at == last_at:
                last.then = flow  # joins in the same event, right after it
            else:
                self.events.schedule(at, self._join, flow)
                last_at = at
            last = flow
        self._seq = seq
        if flows:
            transfer.parts += flows - (end < 0.0)
            transfer.flowing += flows
            return end if end >= 0.0 else None
        return end if end >= 0.0 else issue  # no request: nothing to move

    def _lane(self, routes: MemoryRoutes, done: Done) -> Lane:
        """The lane of a DMA's route table not seen before; its requester's, made on
        its first lane (a DMA's reads and writes are one requester)."""
        who = self._requesters.get(routes.src)
        if who is None:
            who = self._requesters[routes.src] = Requester(routes.src, len(self._joined), done)
            self._joined.append([])
        lane = self._lanes[id(routes)] = Lane(who, routes)
        return lane

    def _uses_of(self, links: tuple[int, ...]) -> tuple[LinkUse, ...]:
        """The records of ``links``, made for those no queue crossed before."""
        uses = self._uses
        found: list[LinkUse] = []
        for i in links:
            use = uses[i]
            if use is None:
                use = uses[i] = LinkUse()
            found.append(use)
        return tuple(found)

    def _alone(self, queue: Queue, now: float) -> bool:
        """Whether ``queue`` has its links to itself now (no flows on them, and any
        other arithmetic holder done draining); if so it holds them."""
        for use in queue.uses:
            held = use.owner
            if use.fluid or (held is not None and held is not queue and draining(held, now)):
                return False
        for use in queue.uses:
            held = use.owner
            if held is not None and held is not queue:
                held.holds = False
            use.owner = queue
        queue.holds = True
        return True

    def _share(self, queue: Queue, now: float) -> None:
        """``queue`` meets other traffic (or its requester has flows): it becomes flows,
        and so does every requester holding one of its links with bytes still to drain
        (holders done draining let go of the links)."""
        for use in queue.uses:
            held = use.owner
            if held is not None and held is not queue:
                if draining(held, now):
                    self._requester_to_flows(held.who, now)
                else:
                    held.holds = False
                    use.owner = None
        self._requester_to_flows(queue.who, now)
        if not queue.fluid:
            self._to_flows(queue, now)

    def _requester_to_flows(self, who: Requester, now: float) -> None:
        """Every queue of ``who`` with bytes still to drain becomes flows: none once
        its last booking has drained (1:1 ``neighbor`` goes to flows at every access,
        and reading each of a requester's 8 queues for nothing was a tenth of the
        extra cache misses per access at 1,024 PEs)."""
        if who.drained_at <= now:
            return
        for queue in who.queues:
            if not queue.fluid and draining(queue, now):
                self._to_flows(queue, now)

    def _to_flows(self, queue: Queue, now: float) -> None:
        """Turn ``queue``'s arithmetic bookings still draining into flows at ``now``:
        the one draining keeps its rate (nothing else has joined yet) and its end;
        those behind it wait in order; those not joined yet join at their time."""
        lat, cap, done = queue.latency, queue.cap, queue.who.done
        booking = queue.booked
        while booking is not None:
            stop, start, issue, seq = booking.stop, booking.start, booking.issue, booking.seq
            nbytes, transfer = booking.nbytes, booking.transfer
            booking = booking.next
            drain = start + lat
            if stop <= now:
                continue  # drained already: its completion is in the arithmetic part
            flow = Flow(seq, queue, nbytes, transfer, done, None, None)
            transfer.parts += 1
            transfer.flowing += 1
            if issue + lat > now:
                queue.waiting += 1
                self.events.schedule(issue + lat, self._join, flow)
                continue
            if drain <= now:  # draining: the queue's head, at the route's bandwidth
                flow.left, flow.rate, flow.since = (stop - now) * cap, cap, now
                flow.began = drain - queue.hop
                self._complete_at(flow, stop)
            queue.append(flow)
        queue.booked = queue.last = None
        if queue.front is not None:
            queue.head = queue.front.seq
            self._enter(queue)
        queue.fluid, queue.holds = True, False  # the caller's queue gets a flow at once
        queue.who.fluid += 1
        for use in queue.uses:
            if use.owner is queue:
                use.owner = None
            use.fluid += 1

    # -- flow events ------------------------------------------------------------
    def _join(self, flow: Flow) -> None:
        """``flow``'s head reaches its links: it drains at once if its queue is empty
        (new rates), else waits behind the queue's head. So do the flows chained after
        it (``then``): the flows of one issue that join at this time, whose own events
        would have run one after another (consecutive keys), so a 1:1 access's channel
        requests cost one event, not eight."""
        joining: Flow | None = flow
        while joining is not None:
            queue = joining.queue
            queue.waiting -= 1
            alone = queue.front is None
            queue.append(joining)
            if alone:
                queue.head = joining.seq
                self._enter(queue)
                self._changed(queue)
            # Two statements, not one tuple assignment: mypyc (setup.py) compiles
            # ``joining.then, joining = None, joining.then`` into a type error.
            following = joining.then
            joining.then = None
            joining = following

    def _drained(self, flow: Flow) -> None:
        """``flow``'s last byte has left (unless the event is stale): complete it its
        queue's tail later; the next in its queue takes over."""
        now = self.events.now
        if flow.end_at != now or flow.left < 0.0:
            # Drained already, or re-keyed: an event superseded by an earlier one, or the
            # flow's earliest, whose completion has moved later since it was queued.
            if now == flow.queued and flow.left >= 0.0:
                if flow.end_at < INFINITY:
                    flow.queued = flow.end_at
                    self._queue_drain(flow, flow.end_at)
                else:
                    flow.queued = INFINITY  # stopped: queued again when it has a rate
            return
        self._close(flow, now)
        flow.left = -1.0
        queue = flow.queue
        head = queue.front = flow.behind  # it was the front: only a queue's front drains
        flow.behind = None
        transfer = flow.transfer
        transfer.flowing -= 1
        if transfer.flowing:
            # Another flow of its transfer drains at this instant or later, so completes
            # no earlier (completion is its queue's tail after the last byte, the same
            # for every flow of a stage: a stage has one direction): this part is done
            # with no event of its own (a 1:1 access's 8 channel flows cost one
            # completion event, not 8). An event would only have counted the part
            # down, in the order it now is.
            transfer.parts -= 1
        else:
            self.events.schedule(now + queue.tail, flow.done, transfer)
        if flow.trace is not None and flow.reqs is not None:
            for req in flow.reqs:  # one row per request, each as its descriptor drained
                flow.trace(req, flow.began, now + queue.tail)
        if head is None:
            queue.back = None
            self._leave(queue)
            self._changed(queue)
            if not queue.waiting:
                queue.fluid = False
                queue.who.fluid -= 1
                for use in queue.uses:
                    use.fluid -= 1
            return
        queue.head = head.seq
        if self._reorders(queue, flow.seq, head.seq):
            self._recheck(queue, flow.rate)
        else:
            self._set_rate(head, flow.rate, now)

    def _reorders(self, queue: Queue, old: int, new: int) -> bool:
        """Whether a new head (seq ``new`` after ``old``) changes its requester's age
        order of queues: then rates must be recomputed, else the head keeps the rate."""
        for other in self._joined[queue.rid]:
            if other is not queue and old < other.head < new:
                return True
        return False

    def _recheck(self, queue: Queue, rate: float) -> None:
        """``queue``'s new head passed some of its requester's other heads, so its
        requester's age order may have changed; whether it did is known at the end of
        this instant (:meth:`_solve`). A 1:1 access's channel flows drain at one
        instant one after another: the first new head passes the heads still to be
        replaced, and once all are, the order may be what it was (1:1 ``hotspot`` on
        16 PEs: a third of its recomputations). ``rate`` is the one it takes over if
        the order holds."""
        unsure = self._unsure
        if not unsure:  # (else the recomputation is scheduled already)
            self._solve_later()
        unsure.append(queue)
        queue.taken = rate

    def _order_kept(self, queues: list[Queue]) -> bool:
        """Whether the requesters of ``queues`` (the instant's new heads that passed
        some of their requester's others) have their joined queues in the age order of
        the last fill that covered them (asked when no queue entered or left at this
        instant, so that fill covered the same queues). Heads only grow, and one that
        passed none of its requester's others kept its place: two queues of that order
        can only have swapped if the older passed the younger, so the order holds if
        each of ``queues`` is still older than the one just younger than it there."""
        for queue in queues:
            younger = queue.younger
            if younger is not None and younger.head < queue.head:
                return False
        return True

    def _enter(self, queue: Queue) -> None:
        """``queue`` has a joined flow now: it joins the component of its links and of
        its requester's other joined queues (age priority couples them), those
        components merging into the largest when it joins several. A component is
        never split when a queue leaves: filling a union of unconnected components
        gives each the rates a fill of its own does (:meth:`_solve`), and at 256 PEs
        streaming ``uniform`` every queue in flight is connected anyway, so searching
        the component anew at every entry and exit (what this replaced) walked some
        8,000 queues each time: a fifth of a run."""
        joined = self._joined[queue.rid]
        into: Component | None = None
        merged: list[Component] = []
        for comp in [use.comp for use in queue.uses] + [mate.comp for mate in joined]:
            if comp is not None and comp not in merged:
                merged.append(comp)
                if into is None or len(comp.queues) > len(into.queues):
                    into = comp
        if into is None:
            into = Component([])
        for comp in merged:
            if comp is not into:
                into.queues.extend(comp.queues)
                into.order = None  # merged: sorted anew
                for other in comp.queues:
                    other.comp = into
                    for use in other.uses:
                        use.comp = into
        joined.append(queue)
        queue.comp = into
        into.queues.append(queue)
        into.same = False
        if into.order is not None:
            into.order.append(queue)
            queue.ranked_head = -1  # a head it cannot have: sorted in as moved
        for use in queue.uses:
            use.on.append(queue)
            use.comp = into

    def _leave(self, queue: Queue) -> None:
        """``queue`` has no joined flow any more: it leaves its component (which stays
        whole, see :meth:`_enter`) and lets go of the order of its last fill; a link it
        leaves empty lets go of the component (no recomputation starts from an empty
        link, and what idle links held of old components grew with the run: 1:1
        ``uniform`` on 1,024 PEs, 64 accesses each, kept 8,498 of them, 40.7 million
        list entries: its peak was 958 MB with them, 278 MB without)."""
        comp = queue.comp
        assert comp is not None  # a joined queue's
        queue.comp = None
        queue.ranked_in = None
        comp.queues.remove(queue)
        comp.same = False
        if comp.order is not None:
            comp.order.remove(queue)
        self._joined[queue.rid].remove(queue)
        for use in queue.uses:
            on = use.on
            on.remove(queue)
            if not on:
                use.comp = None

    # -- rates ------------------------------------------------------------------
    def _solve_later(self) -> None:
        """Schedule this instant's one recomputation, unless something scheduled it."""
        if not self._dirty and not self._unsure:
            self.events.schedule(self.events.now, self._solve, None)

    def _changed(self, queue: Queue) -> None:
        """Recompute the rates around ``queue``'s links once, at the end of this
        instant's events scheduled so far."""
        self._solve_later()
        dirty = self._dirty
        if queue.front is not None:
            # It joined or got a new head: it is in one component with every link of
            # it and its requester's other queues, so one link leads the search there.
            dirty.add(queue.links[0])
            return
        # It left: the component it was in may fall apart, each part holding some of
        # its links; its requester's other queues move too, and nothing links them to
        # it any more: one link of each leads the search to it.
        dirty.update(queue.links)
        for mate in self._joined[queue.rid]:
            dirty.add(mate.links[0])

    def _solve(self, _: object) -> None:
        """New rates for every queue connected to a changed link through shared links
        or requesters: each component filled on its own. Progressive filling carries
        no number from one component to another (a link's key moves only with the
        queues on it, and the first used among equal keys is the first used of its
        own component too), so these are the very rates one fill of them all gives;
        but that fill scans every component's links each round, and at 1,024 PEs
        streaming ``neighbor`` 1:1 in lockstep (a component per pair of PEs, all
        changing at one instant) its cost grew with the square of the PEs."""
        now = self.events.now
        dirty = self._dirty
        if self._unsure:
            unsure = self._unsure
            self._unsure = []
            if not dirty and not self._whole and self._order_kept(unsure):
                # Nothing else changed and every requester kept its order: a
                # recomputation would give every queue the rate it has, and each new
                # head the one it took over, set as it sets them. The definition
                # (``whole``) recomputes.
                heads_into_age_order(unsure)
                self._set_rates(unsure, [q.taken for q in unsure], now)
                return
            for queue in unsure:
                if queue.front is not None:  # (one that left since was marked as it left)
                    dirty.add(queue.links[0])
        self._dirty = set()
        self.solves += 1
        if self._whole or not self._reuse:
            self._solve_together(dirty, now)
            return
        comps = self._affected(dirty)
        if not comps:
            return
        if len(comps) == 1:  # the usual case: its queues are in age order already
            comp = comps[0]
            self.solved_queues += len(comp.queues)
            queues = self._fill(comp)
            rates = comp.rates
        else:
            queues = []
            rates = []
            for comp in comps:
                self.solved_queues += len(comp.queues)
                queues.extend(self._fill(comp))
                rates.extend(comp.rates)
            # In age order across the components, as one fill of them all would set
            # them (the order their completions are keyed in).
            ranks = age_order([q.head for q in queues])
            queues = [queues[i] for i in ranks]
            rates = [rates[i] for i in ranks]
        if self.on_solve is not None:
            self._observe(comps, now)
        self._set_rates(queues, rates, now)

    def _set_rates(self, queues: list[Queue], rates: list[float], now: float) -> None:
        """Give each queue's head its rate, in the order given (age order)."""
        for i in range(len(queues)):
            rate = rates[i]
            head = queues[i].front
            assert head is not None  # a queue with joined flows
            if head.rate != rate:
                self._set_rate(head, rate, now)

    def _observe(self, comps: list[Component], now: float) -> None:
        """Tell the observer every queue of ``comps`` in age order with its rate, as one
        fill of them all together would have (tests)."""
        assert self.on_solve is not None
        every: list[Queue] = []
        rates: list[float] = []
        for comp in comps:
            assert comp.order is not None  # solved just now
            every.extend(comp.order)
            rates.extend(comp.rates)
        ranks = age_order([q.head for q in every])
        self.on_solve(
            now,
            [(every[i].requester, every[i].links, every[i].head) for i in ranks],
            [rates[i] for i in ranks],
        )

    def _fill(self, comp: Component) -> list[Queue]:
        """Progressive filling over ``comp``'s queues in age order (or the rates of the
        same queues in the same order met before): its order and rates, kept on it."""
        # Sorted in place from its last order (queues that entered since were appended
        # to it, those that left taken out), which a few new heads leave almost in
        # order (heads are unique, so the order is the same however it is sorted);
        # sorted anew after a merge.
        order = comp.order
        if order is None:
            order = by_age(comp.queues)
        else:
            into_age_order(order)
        # Known rates are looked up only for a component solved before with the same
        # queues: a hotspot's recomputations meet the same few orders of it, but a
        # component a queue entered or left holds a new set (a Triton launch reused 9
        # of 2,338) and the lookup's key (a tuple of every queue, hashed) is not free.
        known = comp.same
        key = tuple(order) if known else ()
        rates = self._known.get(key) if known else None
        if rates is None:
            rates = progressive_fill([q.rid for q in order], [q.links for q in order], self.bw)
            if known:
                if len(self._known) == KNOWN:
                    self._known.clear()
                self._known[key] = rates
        else:
            self.reused += 1
        comp.order, comp.rates, comp.same = order, rates, True
        ranked(order, self.solves)
        return order

    def _solve_together(self, dirty: set[int], now: float) -> None:
        """The definition the selective update must equal (tests): one fill of every
        queue connected to a changed link (searched afresh, :meth:`_connected`) or
        (``whole``) of every joined queue."""
        if self._whole:
            found = [queue for mine in self._joined for queue in mine]
        else:
            self._searches += 1
            found = []
            uses = self._uses
            for i in dirty:
                use = uses[i]
                assert use is not None  # a link of a queue
                if use.on and use.seen != self._searches:
                    found.extend(self._connected(use, self._searches))
        if not found:
            return
        found = by_age(found)
        ranked(found, self.solves)
        rates = progressive_fill([q.rid for q in found], [q.links for q in found], self.bw)
        self.solved_queues += len(found)
        if self.on_solve is not None:
            self.on_solve(now, [(q.requester, q.links, q.head) for q in found], rates)
        self._set_rates(found, rates, now)

    def _affected(self, dirty: set[int]) -> list[Component]:
        """Every component that holds a link of ``dirty`` and a queue, once each (a
        link no queue is on is in none)."""
        uses = self._uses
        found: list[Component] = []
        for i in dirty:
            use = uses[i]
            assert use is not None  # a link of a queue
            comp = use.comp
            if comp is not None and comp.stamp != self.solves:
                comp.stamp = self.solves
                found.append(comp)
        return found

    def _connected(self, start: LinkUse, stamp: int) -> list[Queue]:
        """The queues connected to the link of ``start`` through shared links or a
        shared requester, now (the definition's search; the selective update keeps its
        components instead). Links and queues reached are marked with ``stamp``."""
        joined = self._joined
        queues: list[Queue] = []
        start.seen = stamp
        todo = [start.on]
        while todo:
            for queue in todo.pop():
                if queue.stamp == stamp:
                    continue
                # With the queue come its requester's other joined queues: age priority
                # couples them (where an older one freezes sets where a younger one
                # starts), so a requester is solved whole or its share is wrong.
                for mate in joined[queue.rid]:
                    if mate.stamp != stamp:
                        mate.stamp = stamp
                        queues.append(mate)
                        for use in mate.uses:
                            if use.seen != stamp:
                                use.seen = stamp
                                todo.append(use.on)
        return queues

    def _set_rate(self, flow: Flow, rate: float, now: float) -> None:
        """Drain ``flow`` at ``rate`` from ``now``; re-key its completion."""
        if flow.rate > 0.0:
            self._close(flow, now)
            flow.left -= flow.rate * (now - flow.since)
            if flow.left < 0.0:
                flow.left = 0.0
        elif rate > 0.0 and flow.began == INFINITY:
            flow.began = now - flow.queue.hop
        flow.rate, flow.since = rate, now
        if rate > 0.0:
            self._complete_at(flow, now + on_grid(flow.left / rate))
        else:
            flow.end_at = INFINITY

    def _complete_at(self, flow: Flow, end: float) -> None:
        """Re-key ``flow``'s completion to ``end``, as an event scheduled now would be
        keyed, and queue it only if it is earlier than the flow's earliest completion
        event; a later one is queued when that event comes (lazily: a flow's rate
        changes about twice as it drains, in a contended 1:1 run, and a rate that
        falls then rises again costs one event instead of two). The order of events
        is the eager one's: a completion runs under the key it would have had,
        scheduled at the change that set its time."""
        eid = self.events.reserve()
        if end != flow.end_at:
            flow.end_at, flow.key = end, eid
        if end < flow.queued:
            flow.queued = end
            self._queue_drain(flow, end)

    def _queue_drain(self, flow: Flow, end: float) -> None:
        """Queue ``flow``'s drain at ``end`` under its key: in the event queued just
        before, if that one is at ``end`` under the key right before (nothing can run
        between two consecutive keys, so running the two in one event is running them
        in order), else in an event of its own. A 1:1 access's channel flows, given
        equal rates one after another, so drain in one event, not eight."""
        key = flow.key
        if key == self._run_key + 1 and end == self._run_at:
            self._run.append(flow)
        else:
            self._run = [flow]
            self.events.push(end, key, self._drained_run, self._run)
        self._run_key, self._run_at = key, end

    def _drained_run(self, flows: list[Flow]) -> None:
        """The drain events of ``flows``, under consecutive keys from this event's."""
        if flows is self._run:
            self._run_key = -2  # run: nothing more joins it
        events = self.events
        key = events.eid
        for flow in flows:
            events.eid = key
            key += 1
            self._drained(flow)

    def _close(self, flow: Flow, now: float) -> None:
        """Record the stretch ``flow`` drained at its current rate, if recording."""
        if self.segments is not None and flow.rate > 0.0 and now > flow.since:
            self.segments.append((flow.queue.path, flow.since, now, flow.rate))


def into_age_order(order: list[Queue]) -> None:
    """Sort ``order``, a component's age order at its last fill, by head again, in
    place. A queue's head only grows while its component lasts, so the queues whose
    head has not moved since (``ranked_head``) are still in order: the few that moved
    are sorted among themselves and merged back in, one pass over the component (1:1
    ``hotspot`` on 16 PEs: about 13 of 78 queues, each moving some 27 places; sorting
    the whole by a list of boxed heads cost a fifth of its recomputations)."""
    moved: list[Queue] = []
    kept = 0
    for queue in order:
        if queue.head == queue.ranked_head:
            if moved:  # (before the first moved one, every kept one is in its place)
                order[kept] = queue
            kept += 1
        else:
            moved.append(queue)
    merge_moved(order, kept, moved)


def merge_moved(order: list[Queue], kept: int, moved: list[Queue]) -> None:
    """With ``order[:kept]`` in age order and ``moved`` the rest of its queues, put
    ``order`` in age order: ``moved`` sorted, then merged in from the youngest end."""
    heads_into_age_order(moved)
    i = kept - 1
    j = len(moved) - 1
    w = len(order) - 1
    while j >= 0:
        queue = moved[j]
        if i >= 0 and order[i].head > queue.head:
            order[w] = order[i]
            i -= 1
        else:
            order[w] = queue
            j -= 1
        w -= 1


def heads_into_age_order(queues: list[Queue]) -> None:
    """Sort ``queues`` by head in place: a few by insertion (no list of boxed heads to
    sort by, and nothing moves when they are in order already, as the new heads of an
    instant's drains, which come in the order of their flows' keys, mostly are); more
    than ``INSERTED`` out of order by their heads' :func:`age_order`. The new heads of
    one instant on 16 PEs streaming 1:1 ``hotspot`` can be 96, some 450 places out of
    order, and insertion moved each place through the list one step at a time."""
    n = len(queues)
    if n > INSERTED:
        for i in range(1, n):
            if queues[i - 1].head > queues[i].head:
                queues[:] = by_age(queues)
                return
        return
    for i in range(1, n):
        queue = queues[i]
        head = queue.head
        j = i
        while j and queues[j - 1].head > head:
            queues[j] = queues[j - 1]
            j -= 1
        if j != i:
            queues[j] = queue


def by_age(queues: list[Queue]) -> list[Queue]:
    """``queues`` from the oldest head to the youngest (a new list)."""
    return [queues[i] for i in age_order([q.head for q in queues])]


def ranked(order: list[Queue], mark: int) -> None:
    """Note, on each queue of ``order`` (a fill's age order), its head, the order itself
    and its requester's queue just younger in it: what :func:`into_age_order` and
    :meth:`FairFabric._order_kept` compare with. One pass from the youngest end: a
    requester met first under ``mark`` has none younger (no pass to clear what the
    last fill left). The mark is the recomputation's number: a requester's queues
    are all in one component, so the fills of one recomputation never meet one
    requester twice."""
    for queue in reversed(order):
        queue.ranked_head = queue.head
        queue.ranked_in = order
        who = queue.who
        queue.younger = who.seen if who.mark == mark else None
        who.seen = queue
        who.mark = mark

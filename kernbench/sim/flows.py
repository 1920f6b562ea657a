"""The fair data plane's state: flows, queues, requesters and components (DESIGN §3.2).

A *flow* is one physical request in the fluid model; a *queue* is one requester's
requests on one route (arithmetic bookings while the requester has its links to
itself, flows otherwise); a *requester* is one PE's DMA with its queues, reads and
writes alike; a *lane* is its queues of one direction by HBM router; a *link use*
is what the fabric keeps of one link the queues cross; a *component* is the queues a
recomputation found connected through shared links. Plain
records with slots: :mod:`kernbench.sim.fair_fabric` moves them through time and
:mod:`kernbench.sim.fairshare` sets their rates; this module owns no behaviour
beyond their constructors, a queue's arithmetic booking and two questions about a
queue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kernbench.sim.engines import Stage
from kernbench.sim.fabric import PhysicalRequest, TraceCall
from kernbench.timebase import on_grid
from kernbench.topology.routes import MemoryRoutes, Route

INFINITY: Final = float("inf")

# What the fabric completes: a DMA stage. ``parts`` counts the completions it is still
# owed (its ``done`` callback is called once per part), ``flowing`` those of them that
# are flows not drained yet. The stage's own class, not a protocol: the compiled build
# reads a protocol's attributes by name (a dictionary lookup each), and a contended 1:1
# access's drains spent 16 of their 41 thousand instructions there.
Transfer = Stage


Done = Callable[[Transfer], None]


class Flow:
    """One physical request in the fluid model."""

    __slots__ = (
        "seq",
        "queue",
        "nbytes",
        "left",
        "rate",
        "since",
        "end_at",
        "key",
        "queued",
        "began",
        "transfer",
        "done",
        "reqs",
        "trace",
        "then",
        "behind",
    )

    def __init__(
        self,
        seq: int,
        queue: Queue,
        nbytes: int,
        transfer: Transfer,
        done: Done,
        reqs: list[PhysicalRequest] | None,
        trace: TraceCall | None,
    ) -> None:
        self.seq = seq
        self.queue = queue
        self.nbytes = nbytes
        self.left = float(nbytes)  # bytes not drained at ``since``
        self.rate = 0.0
        self.since = 0.0
        self.end_at = INFINITY  # when its last byte leaves at its rate (INFINITY: none)
        # Its completion's key: the eid of the rate change that set ``end_at`` (the
        # first of those in a row that set that very time), the order it completes in
        # among events at that time; and the time of its earliest completion event in
        # the queue (INFINITY: none), which may be earlier than ``end_at``.
        self.key = -1
        self.queued = INFINITY
        self.began = INFINITY  # when it first drained (minus its latency: see trace)
        self.transfer = transfer
        self.done = done
        self.reqs = reqs  # the requests it carries, when traced
        self.trace = trace
        self.then: Flow | None = None  # joins in the same event, right after it
        # The next joined flow of its queue: a queue's joined flows are a chain from its
        # ``front`` to its ``back`` (the compiled build reads a deque through generic
        # method calls, a sixth of a drain's instructions).
        self.behind: Flow | None = None


class Queue:
    """One requester's requests on one route: arithmetic bookings while it has its
    links to itself, flows otherwise (never both at once)."""

    __slots__ = (
        "who",
        "links",
        "uses",
        "path",
        "latency",
        "cap",
        "requester",
        "rid",
        "hop",
        "tail",
        "front",
        "back",
        "waiting",
        "fluid",
        "holds",
        "stamp",
        "comp",
        "head",
        "access",
        "gathered",
        "pieces",
        "ranked_head",
        "ranked_in",
        "younger",
        "taken",
        "moved",
        "booked",
        "last",
        "free_at",
    )

    def __init__(
        self, route: Route, never_binds: Callable[[int], bool], who: Requester, access_ns: float
    ) -> None:
        self.who = who
        self.path = route.link_ids
        # The resources that can bind it (``LinkLayout.never_binds`` leaves out those that
        # saturate no earlier than the HBM resource every route through a router crosses).
        self.links = tuple(i for i in route.resources if not never_binds(i))
        self.uses: tuple[LinkUse, ...] = ()  # its links' records (the fabric's), in order
        # From issue until its first byte joins its links (``latency``), and from its
        # last byte's drain until it completes (``tail``): a write pays its way out,
        # then the memory's access; a read (DESIGN §13.1) its request's way out, the
        # access and its data's way back, then nothing.
        # On the time grid (kernbench.timebase), as every duration added to a time.
        way = on_grid(route.latency_ns)
        if route.reads:
            self.latency = on_grid(route.request_ns) + access_ns + way
            self.tail = 0.0
        else:
            self.latency = way
            self.tail = access_ns
        self.hop = way  # its bytes' own way: a trace's start is a drain minus it
        self.cap = route.min_bw_gbs
        self.requester = who.name
        self.rid = who.rid  # its requester's number (the solver's name for it)
        # Its joined flows, oldest (the draining one) first: a chain through ``behind``.
        self.front: Flow | None = None
        self.back: Flow | None = None
        self.waiting = 0  # flows issued, not joined yet
        self.fluid = False  # has flows, joined or waiting
        self.holds = False  # holds every link of its route for arithmetic bookings
        self.stamp = 0  # the last fresh search that found it (FairFabric._connected)
        self.comp: Component | None = None  # its component while it has a joined flow
        self.head = 0  # its age: its oldest joined request's sequence number
        # The access that last reached it (FairFabric.start's mark), the bytes of that
        # access's requests on it (one descriptor) and, when traced, those requests.
        self.access = 0
        self.gathered = 0
        self.pieces: list[PhysicalRequest] | None = None
        # Its head in the last fill that covered it, that fill's age order, and its
        # requester's queue just younger in it.
        self.ranked_head = 0
        self.ranked_in: list[Queue] | None = None
        self.younger: Queue | None = None
        self.taken = 0.0  # the rate its new head takes over if its order holds
        self.moved = 0  # bytes issued on it: every link of its path carried them
        # Arithmetic bookings whose bytes may not all have drained, oldest first: a
        # chain of records (``booked`` its oldest, ``last`` its youngest). Drained
        # ones are dropped as the next is booked: a DMA stage kept alive after its
        # job retired is one more object for the cyclic garbage collector to walk
        # (16 PEs streaming ran 1.24x slower in CPU time with 64 bookings kept per
        # queue, with no more instructions per access). A chain, not a list: booking
        # and dropping are then attribute stores of unboxed fields, no list slicing.
        self.booked: Booking | None = None
        self.last: Booking | None = None
        # The FIFO's next free start (the reservation model's ``free_at``): its last
        # booking's bytes have all drained at ``free_at + latency``.
        self.free_at = 0.0

    def append(self, flow: Flow) -> None:
        """Join ``flow`` behind the queue's joined flows."""
        back = self.back
        if back is None:
            self.front = flow
        else:
            back.behind = flow
        self.back = flow

    def book(
        self,
        stop: float,
        start: float,
        nbytes: int,
        issue: float,
        seq: int,
        transfer: Transfer,
        now: float,
    ) -> None:
        """Add an arithmetic booking at ``now``, dropping those drained by then. The
        oldest drained record takes the new booking: a stream allocates none per
        request (a fresh record per request was an eighth of a 1:1 access's instructions)."""
        booking = self.booked
        if booking is not None and booking.stop <= now:
            oldest = booking.next
            while oldest is not None and oldest.stop <= now:
                oldest = oldest.next
            booking.stop = stop
            booking.start = start
            booking.nbytes = nbytes
            booking.issue = issue
            booking.seq = seq
            booking.transfer = transfer
            booking.next = None
        else:
            oldest = booking
            booking = Booking(stop, start, nbytes, issue, seq, transfer)
        youngest = self.last
        if oldest is None or youngest is None:
            self.booked = booking
        else:
            self.booked = oldest
            youngest.next = booking
        self.last = booking


class Booking:
    """One arithmetic booking of a queue (``FairFabric.start``): what turning it into
    a flow needs (``FairFabric._to_flows``), and the next younger booking."""

    __slots__ = ("stop", "start", "nbytes", "issue", "seq", "transfer", "next")

    def __init__(
        self, stop: float, start: float, nbytes: int, issue: float, seq: int, transfer: Transfer
    ) -> None:
        self.stop = stop  # its last byte has left
        self.start = start  # its first byte left (the FIFO's start)
        self.nbytes = nbytes
        self.issue = issue
        self.seq = seq
        self.transfer = transfer
        self.next: Booking | None = None


class Requester:
    """One DMA's queues, and how many of them are flows. A requester is booked
    arithmetically only while none is: its queues' age order sets where its younger
    flows start filling (an older queue on a link of its own still takes its
    requester's turn first), so a requester is in the solver whole or not at all."""

    __slots__ = ("name", "rid", "queues", "fluid", "done", "seen", "mark", "drained_at")

    def __init__(self, name: str, rid: int, done: Done) -> None:
        self.name = name  # its DMA's node
        self.rid = rid  # its number, in the order requesters first issued
        self.queues: list[Queue] = []  # reads' and writes'
        self.fluid = 0
        self.done = done  # its DMA's completion callback
        # Every arithmetic booking of its queues has drained by then (the latest
        # ``free_at + latency`` of them): no queue of it is ``draining`` after.
        self.drained_at = 0.0
        # Its queue ranked last (ranked goes from the youngest), under fill ``mark``.
        self.seen: Queue | None = None
        self.mark = 0


class Lane:
    """A requester's queues of one direction, by HBM router: what one of its DMA's
    route tables (:class:`~kernbench.topology.routes.MemoryRoutes`) leads to."""

    __slots__ = ("who", "routes", "queues")

    def __init__(self, who: Requester, routes: MemoryRoutes) -> None:
        self.who = who
        self.routes = routes  # kept: the fabric finds the lane by its identity
        self.queues: dict[str, Queue] = {}


class LinkUse:
    """What the fair fabric keeps of one link (one resource) the runs' queues cross:
    its arithmetic holder, how many queues have flows on it, the queues with joined
    flows on it, and the component it was last found in. One record per link, not
    four lists by link id: a queue's visit to its links reads one object each, where
    the four lists were four cache lines per link (at 1,024 PEs they outgrow a core's
    second-level cache)."""

    __slots__ = ("owner", "fluid", "on", "comp", "seen")

    def __init__(self) -> None:
        self.owner: Queue | None = None  # the queue holding it for arithmetic bookings
        self.fluid = 0  # queues with flows on it, joined or waiting
        self.on: list[Queue] = []  # queues with joined flows on it
        self.comp: Component | None = None  # the component of its queues (none: empty)
        self.seen = 0  # the last fresh search that reached it (FairFabric._connected)


class Component:
    """Joined queues that shared links or a requester since it was made: components
    merge as queues enter and are never split (FairFabric._enter); once solved, its
    queues in the age order of its last solve (queues that entered since appended,
    those that left taken out), and their rates."""

    __slots__ = ("queues", "stamp", "order", "rates", "same")

    def __init__(self, queues: list[Queue]) -> None:
        self.queues = queues
        self.stamp = 0  # the last recomputation that took it
        self.order: list[Queue] | None = None  # None: not solved since made or merged
        self.rates: list[float] = []
        self.same = False  # no queue entered or left since its last solve


def draining(queue: Queue, now: float) -> bool:
    """Whether an arithmetic queue still has bytes to drain after ``now``."""
    return queue.free_at + queue.latency > now

"""SimPy's environment, and the PE pipelines' own event queue that runs ahead of it exactly.

SimPy pops events in the order of their key ``(time, priority, eid)``, where ``eid``
counts up as events are scheduled. The PE pipelines (every CPU's dispatch ends and
every engine's stage ends) schedule their events on one :class:`LocalQueue` instead:
each event takes its eid from SimPy's counter at the moment SimPy would have
scheduled it, so its key is the one it would have had, but it goes on a plain heap.

The queue runs its next event at once whenever that key is smaller than every key in
SimPy's queue: SimPy would pop it next, nothing else can happen before it, so the
outcome and the order of everything are those of plain SimPy events. When a SimPy
event comes first (the control plane, the end of a launch) the queue *parks*: one
triggered event (:class:`Fired`) goes into SimPy's queue under its next local key,
and it runs on when SimPy pops that. A kernel launch on any number of PEs so runs
without a SimPy event per command or per access.

It touches SimPy's private ``_queue`` and replaces its ``_eid`` (:class:`Eids`; both
stable across SimPy 4); nothing else in kernbench does.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final

import simpy
from simpy.events import NORMAL as _NORMAL

from kernbench.sim import eventheap

Callback = Callable[[Any], None]
NORMAL: Final = _NORMAL  # SimPy's priority of every event kernbench schedules
# Bound as Finals: a compiled build reads a Final from a C static, a name imported
# from another module from the module's dict on every call. The PE queue's heap takes
# eventheap's (its entries compared in C in the compiled build); SimPy's, heapq's.
heappush: Final = eventheap.heappush
heappop: Final = eventheap.heappop
simpy_push: Final = heapq.heappush
NEVER: Final = 1 << 62  # a report interval no run reaches


class Fired(simpy.Event):
    """An event that is triggered already, with a value and a fixed callback sequence
    (SimPy's ``Timeout`` minus its bookkeeping). The sequence may be shared between
    events: SimPy only iterates over it.

    Two of them can share a key in SimPy's queue: a PE that finishes hands the local
    event being run to SimPy under that event's key, and the same key may still be
    parked there (a proxy the queue ran past, left to wake it for nothing). They then
    go in the order they were made (the proxy first: it finds nothing due), never
    compared as events, which SimPy cannot do."""

    __slots__ = ("_order",)
    _made: ClassVar[itertools.count[int]] = itertools.count()

    def __init__(self, env: simpy.Environment, value: Any, callbacks: Sequence[Callback]) -> None:
        self.env = env
        self.callbacks = callbacks  # type: ignore[assignment]
        self._value = value
        self._ok = True
        self._order = next(Fired._made)

    def __lt__(self, other: Fired) -> bool:
        return self._order < other._order


class Eids:
    """SimPy's event counter (``Environment._eid``, an ``itertools.count`` there), as
    a class whose count compiled code steps as a field: the PE queue takes an eid
    about ten times per contended 1:1 access (every rate change re-keys a completion),
    and calling the count's ``__next__`` from compiled code was some 330 instructions
    a time, 5% of such an access. SimPy still draws its own with ``next()``."""

    __slots__ = ("next_eid",)

    def __init__(self) -> None:
        self.next_eid = 0

    def take(self) -> int:
        """The next eid, taken."""
        eid = self.next_eid
        self.next_eid = eid + 1
        return eid

    def __iter__(self) -> Eids:
        return self

    def __next__(self) -> object:  # (mypyc compiles an int here into a wrong slot type)
        return self.take()


class SimEnv(simpy.Environment):
    """A SimPy environment that can push triggered events at absolute times, counting
    its events with :class:`Eids`."""

    def __init__(self, initial_time: float = 0.0) -> None:
        super().__init__(initial_time)
        self.eids = Eids()
        self._eid = self.eids  # type: ignore[assignment]

    def push(self, event: simpy.Event, at: float, eid: int | None = None) -> None:
        """Schedule a triggered ``event`` at absolute time ``at`` (normal priority), with
        a reserved ``eid`` or a fresh one."""
        if eid is None:
            eid = self.eids.take()
        simpy_push(self._queue, (at, NORMAL, eid, event))  # type: ignore[attr-defined]


class LocalQueue:
    """The PEs' events: ``(time, eid, callback, argument)``, run in key order, ahead of
    SimPy's clock while they come first. ``now`` and ``eid`` are the key of the event
    being run (or SimPy's time when a PE is started from outside the queue)."""

    __slots__ = (
        "env",
        "heap",
        "now",
        "eid",
        "_queue",
        "_eids",
        "_proxy",
        "_parked",
        "_inside",
        "_report",
        "_every",
        "_left",
    )

    def __init__(self, env: SimEnv) -> None:
        self.env = env
        self.heap: list[tuple[float, int, Callback, Any]] = eventheap.new_heap()
        self.now = 0.0
        self.eid = -1
        self._queue: list[Any] = env._queue  # type: ignore[attr-defined]
        self._eids = env.eids  # SimPy's eid counter, stepped here as a field
        self._proxy: tuple[float, int, Fired] | None = None  # the earliest one parked
        self._parked: dict[tuple[float, int], Fired] = {}  # every proxy in SimPy's queue
        self._inside = False  # running the queue (not starting a PE from outside)
        self._report: Callable[[], None] | None = None
        self._every = self._left = NEVER

    def set_report(self, report: Callable[[], None] | None, every: int = NEVER) -> None:
        """Call ``report`` after every ``every`` local events from now on (None: stop).
        A progress bar: it must only read."""
        self._report, self._every, self._left = report, every, every

    def schedule(self, at: float, callback: Callback, arg: Any) -> None:
        """Call ``callback(arg)`` at ``at``, keyed as a SimPy event scheduled now."""
        heappush(self.heap, (at, self.reserve(), callback, arg))

    def reserve(self) -> int:
        """The eid an event scheduled now would get, taken: :meth:`push` it later under
        it, and it runs exactly where it would have run, scheduled now."""
        return self._eids.take()

    def push(self, at: float, eid: int, callback: Callback, arg: Any) -> None:
        """Call ``callback(arg)`` at ``at`` under an eid :meth:`reserve` gave earlier
        (pushed before anything later than it runs: before ``at``)."""
        heappush(self.heap, (at, eid, callback, arg))

    def run_inline(self, at: float, callback: Callback, arg: Any) -> bool:
        """Schedule ``callback(arg)`` at ``at`` — unless it would be the very next event:
        then it becomes the event being run and True tells the caller to go on with its
        work inline (no heap, no call). A fresh key loses every tie: keys already taken
        have smaller eids, so only a strictly earlier time comes first."""
        eid = self.reserve()
        heap, queue = self.heap, self._queue
        if not self._inside or (heap and at >= heap[0][0]) or (queue and at >= queue[0][0]):
            heappush(heap, (at, eid, callback, arg))
            return False
        self.now, self.eid = at, eid
        return True

    def enter(self) -> None:
        """Start a PE from outside the queue (a launch), at SimPy's time. Until the
        queue runs, the other PEs of the launch may not have scheduled their first
        events: nothing runs ahead."""
        self.now, self.eid = self.env.now, -1

    def run(self) -> None:
        """Run local events while SimPy would pop them next; then park."""
        heap, queue = self.heap, self._queue
        self._inside = True
        left = self._left
        try:
            while heap:
                entry = heap[0]
                at = entry[0]
                if queue:
                    head = queue[0]
                    # (at, NORMAL, eid) < head, the float compared first (the usual case)
                    if at > head[0] or (at == head[0] and (NORMAL, entry[1]) > head[1:3]):
                        break
                heappop(heap)
                self.now, self.eid = at, entry[1]
                entry[2](entry[3])
                left -= 1
                if not left:
                    left = self._every
                    if self._report is not None:
                        self._report()
        finally:
            self._left = left
            self._inside = False
        self.park()

    def park(self) -> None:
        """Hand the next local event to SimPy under its own key, unless an earlier one
        is parked already (a later one that is still there wakes the queue for
        nothing: it finds no event due and parks again). A key is parked once: a
        second proxy under the same key would tie with the first on every field."""
        if not self.heap:
            return
        at, eid = key = self.heap[0][:2]
        proxy = self._proxy
        if proxy is None or key < proxy[:2]:
            event = self._parked.get(key)
            if event is None:
                event = self._parked[key] = Fired(self.env, key, (self._on_wake,))
                simpy_push(self._queue, (at, NORMAL, eid, event))
            self._proxy = (at, eid, event)

    def _on_wake(self, event: Fired) -> None:
        del self._parked[event.value]  # type: ignore[arg-type]
        if self._proxy is not None and self._proxy[2] is event:
            self._proxy = None
        self.run()

"""SimPy's environment with two exact shortcuts the PE pipeline relies on.

SimPy pops events in the order of their key ``(time, priority, eid)``, where ``eid``
counts up as events are scheduled. Two things follow, and this module owns both:

- An event can be pushed at an absolute time (:meth:`SimEnv.push`) with a plain
  triggered :class:`Fired` event: SimPy's ``Timeout`` minus its bookkeeping.
- A *virtual event* is one whose key is fixed (:meth:`SimEnv.reserve` takes its eid at
  the moment SimPy would have scheduled it) but which is not pushed. If its key is
  smaller than every queued key (:meth:`SimEnv.comes_first`), SimPy would pop it next,
  so its work may run right away, at its own time, with the same outcome — nothing
  else can happen in between. Otherwise it is pushed with its reserved eid
  (:meth:`SimEnv.push`), landing exactly where SimPy would have put it. PE_CPU uses
  this for dispatch time (:mod:`kernbench.sim.cpu`), so paying for a command costs a
  SimPy event only when something else really happens before the payment ends.

It touches SimPy's private ``_queue`` and ``_eid`` (stable across SimPy 4); nothing
else in kernbench does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL

Callback = Callable[[Any], None]


class Fired(simpy.Event):
    """An event that is triggered already, with a value and a fixed callback sequence.

    The sequence may be shared between events: SimPy only iterates over it.
    ``owner`` names who is woken by it (PE_CPU looks for its own events in the queue).
    """

    def __init__(
        self, env: simpy.Environment, value: Any, callbacks: Sequence[Callback], owner: Any
    ) -> None:
        self.env = env
        self.callbacks = callbacks  # type: ignore[assignment]
        self._value = value
        self._ok = True
        self.owner = owner


class SimEnv(simpy.Environment):
    """A SimPy environment that can reserve event ids and push at absolute times."""

    def reserve(self) -> int:
        """The eid an event scheduled now would get; the next event gets a later one."""
        return next(self._eid)  # type: ignore[attr-defined]

    def comes_first(self, at: float, eid: int) -> bool:
        """Whether a normal-priority event with key ``(at, eid)`` would be popped next."""
        queue = self._queue  # type: ignore[attr-defined]
        # A 3-tuple against a 4-tuple entry: eids are unique, so events never compare.
        return not queue or (at, NORMAL, eid) < queue[0]

    def head_owner(self) -> Any:
        """The ``owner`` of the next event to pop (None if it has none, or no event)."""
        queue = self._queue  # type: ignore[attr-defined]
        return getattr(queue[0][3], "owner", None) if queue else None

    def push(self, event: simpy.Event, at: float, eid: int | None = None) -> None:
        """Schedule a triggered ``event`` at absolute time ``at`` (normal priority), with
        a reserved ``eid`` or a fresh one."""
        if eid is None:
            eid = next(self._eid)  # type: ignore[attr-defined]
        heappush(self._queue, (at, NORMAL, eid, event))  # type: ignore[attr-defined]

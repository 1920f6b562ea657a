"""PE_CPU: runs a kernel's command stream, paying dispatch cost before each push.

The CPU is a small callback-driven state machine rather than a SimPy process. It has
its own clock: paying for a command schedules its dispatch end on the pipelines'
:class:`~kernbench.sim.events.LocalQueue` (no SimPy event), or goes straight on when
that end would be the very next event; it otherwise waits only when PE_SCHEDULER's
queue is full (back-pressure) or, at the end, for the queue to drain. It runs ahead
of the engines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernbench.commands import PeCommand, PeCpuOverheadCmd
from kernbench.sim.cost_model import DispatchCostModel
from kernbench.sim.events import Fired, LocalQueue
from kernbench.sim.oplog import OpLog
from kernbench.sim.scheduler import PeScheduler


class CommandSource:
    """The kernel side of the CPU: replay (a list) or greenlet (live kernel code). A
    base class, not a Protocol: the compiled build calls a native base class's method
    directly, once per command."""

    def next(self) -> PeCommand | None:
        """The next command, or None when the kernel has returned."""
        raise NotImplementedError


class PeCpu:
    """One PE's CPU; ``run`` starts a command stream, ``on_finish`` fires when the PE
    has pushed every command and retired it."""

    def __init__(
        self,
        events: LocalQueue,
        pe_index: int,
        scheduler: PeScheduler,
        cost: DispatchCostModel,
        oplog: OpLog | None,
    ) -> None:
        self.events = events
        self.env = events.env
        self.pe_index = pe_index
        self.scheduler = scheduler
        self.cost = cost
        self.oplog = oplog
        self.busy_ns = 0.0
        self.dispatch_cycles = 0.0
        self.commands = 0  # commands paid for
        self._source: CommandSource | None = None
        self._pending: PeCommand | None = None  # fetched and paid for, not yet pushed
        self._on_finish: Callable[[], None] | None = None
        self._clock = 0.0  # the CPU's time: its dispatch end, or the event that woke it
        self._end = (self._on_end,)
        # Bound once: a dispatch end and a freed slot both wake the CPU through it.
        self._wake: Callable[[float], None] = self._step

    def run(self, source: CommandSource, on_finish: Callable[[], None]) -> None:
        self._source, self._on_finish = source, on_finish
        self.events.enter()
        self._step(self.events.now)
        self.events.park()  # the queue runs on once SimPy pops it: every PE has started

    def _step(self, now: float) -> None:
        """Go through the stream from ``now`` until the CPU must wait: for a dispatch
        end, a free queue slot, or the queue to drain. Called at the start, at a
        dispatch end (a local event whose argument is its time) and at a retirement
        that frees a slot (PE_SCHEDULER's ``on_slot_free``)."""
        source = self._source
        assert source is not None
        self._clock = now
        sched, events, cost = self.scheduler, self.events, self.cost
        while True:
            cmd = self._pending
            if cmd is None:
                cmd = self._pending = source.next()
                if cmd is None:
                    self._drain()
                    return
                # Pay for it: the one place dispatch cost is accounted.
                cycles, ns = cost.price(cmd)
                self.dispatch_cycles += cycles
                self.busy_ns += ns
                self.commands += 1
                if self.oplog is not None:
                    self.oplog.add(self._clock, self.pe_index, "dispatch", -1, type(cmd).__name__)
                if ns > 0:
                    at = self._clock + ns
                    if not events.run_inline(at, self._wake, at):
                        return  # the dispatch end is a local event
                    self._clock = at
            if type(cmd) is PeCpuOverheadCmd:
                self._pending = None
                continue
            if sched.in_flight >= sched.depth:  # full: wait for a retirement
                sched.on_slot_free = self._wake
                return
            self._pending = None
            sched.submit(cmd, self._clock)

    def _drain(self) -> None:
        """The kernel returned: finish now if the queue is empty, else when it drains."""
        if not self.scheduler.idle:
            self.scheduler.on_slot_free = self._drain_at
        elif self._clock > self.env.now:
            # Finishing ends the run, so it needs SimPy's clock: hand the local event
            # being run to SimPy under its own key (it comes first: popped next).
            self.env.push(Fired(self.env, None, self._end), self._clock, self.events.eid)
        else:
            self._finish()

    def _drain_at(self, now: float) -> None:
        self._clock = now
        self._drain()

    def _on_end(self, _ev: Any) -> None:
        self._finish()

    def _finish(self) -> None:
        done, self._on_finish, self._source = self._on_finish, None, None
        if done is not None:
            done()

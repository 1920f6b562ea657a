"""PE_CPU: runs a kernel's command stream, paying dispatch cost before each push.

The CPU is a small callback-driven state machine rather than a SimPy process. It has
its own clock: paying for a command moves it to the dispatch end, and it otherwise
waits only when PE_SCHEDULER's queue is full (back-pressure) or, at the end, for the
queue to drain. It runs ahead of the engines.

A dispatch end is a *virtual event* (:mod:`kernbench.sim.events`): its SimPy key is
reserved when the payment starts, exactly when a timeout would have been scheduled.
At the end of each of this PE's events (:meth:`PeCpu.poll`) the CPU runs on at once
if that key would be popped next — nothing can happen before it, so the outcome and
the order of everything are those of a real timeout — keeps waiting if the PE's own
next event comes first (it polls again), and otherwise pushes the event with its
reserved key. A CPU that keeps ahead of its engines so costs no SimPy event at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from kernbench.commands import PeCommand, PeCpuOverheadCmd
from kernbench.sim.cost_model import DispatchCostModel
from kernbench.sim.events import Fired, SimEnv
from kernbench.sim.oplog import OpLog
from kernbench.sim.scheduler import PeScheduler


class CommandSource(Protocol):
    """The kernel side of the CPU: replay (a list) or greenlet (live kernel code)."""

    def next(self) -> PeCommand | None:
        """The next command, or None when the kernel has returned."""
        ...


class PeCpu:
    """One PE's CPU; ``run`` starts a command stream, ``on_finish`` fires when the PE
    has pushed every command and retired it."""

    def __init__(
        self,
        env: SimEnv,
        pe_index: int,
        scheduler: PeScheduler,
        cost: DispatchCostModel,
        oplog: OpLog | None,
    ) -> None:
        self.env = env
        self.pe_index = pe_index
        self.scheduler = scheduler
        self.cost = cost
        self.oplog = oplog
        self.busy_ns = 0.0
        self.dispatch_cycles = 0.0
        self.dispatch_cycles_by_kind: Counter[str] = Counter()
        self.commands_by_kind: Counter[str] = Counter()
        self._source: CommandSource | None = None
        self._pending: PeCommand | None = None  # fetched and paid for, not yet pushed
        self._on_finish: Callable[[], None] | None = None
        # The CPU's time: env.now, or ahead of it while it runs a virtual event.
        self._clock = 0.0
        self._eid = -1  # key of the virtual event being run (with _clock)
        self._due: tuple[float, int] | None = None  # a dispatch end not reached yet
        self._wake = (self._on_wake,)
        self._end = (self._on_end,)

    def run(self, source: CommandSource, on_finish: Callable[[], None]) -> None:
        self._source, self._on_finish = source, on_finish
        self._clock = self.env.now
        self._step()
        self._park()  # other PEs start after us: not a point to run ahead from

    def poll(self, _ev: Any = None) -> None:
        """The last callback of each of this PE's events: run on past dispatch ends
        that SimPy would pop next."""
        env = self.env
        while self._due is not None:
            at, eid = self._due
            if env.comes_first(at, eid):
                self._due = None
                self._clock, self._eid = at, eid
                self._step()
            elif env.head_owner() is self:
                return  # our own next event comes first; it polls again
            else:
                self._park()
                return

    def _park(self) -> None:
        """Make the pending dispatch end a real event, at its reserved key."""
        if self._due is not None:
            at, eid = self._due
            self._due = None
            self.env.push(Fired(self.env, None, self._wake, None), at, eid)

    def _on_wake(self, _ev: Any) -> None:
        self._clock = self.env.now
        self._step()
        self.poll()

    def _step(self) -> None:
        """Go through the stream at ``_clock`` until the CPU must wait: for a dispatch
        end (``_due``), a free queue slot, or the queue to drain."""
        assert self._source is not None
        sched = self.scheduler
        while True:
            cmd = self._pending
            if cmd is None:
                cmd = self._pending = self._source.next()
                if cmd is None:
                    self._drain()
                    return
                ns = self._pay(cmd)
                if ns > 0:
                    self._due = (self._clock + ns, self.env.reserve())
                    return
            if type(cmd) is PeCpuOverheadCmd:
                self._pending = None
                continue
            if sched.in_flight >= sched.depth:  # full: wait for a retirement
                sched.on_slot_free = self._slot_free
                return
            self._pending = None
            sched.submit(cmd, self._clock)

    def _slot_free(self) -> None:
        """Woken by a retirement (inside one of our events, which then polls)."""
        self._clock = self.env.now
        self._step()

    def _pay(self, cmd: PeCommand) -> float:
        """Account the dispatch cycles of ``cmd``; return the CPU time in ns."""
        kind = type(cmd).__name__
        cycles, ns = self.cost.price(cmd)
        self.dispatch_cycles += cycles
        self.dispatch_cycles_by_kind[kind] += cycles
        self.commands_by_kind[kind] += 1
        self.busy_ns += ns
        if self.oplog is not None:
            self.oplog.add(self._clock, self.pe_index, "dispatch", -1, kind)
        return ns

    def _drain(self) -> None:
        """The kernel returned: finish now if the queue is empty, else when it drains."""
        if not self.scheduler.idle:
            self.scheduler.on_slot_free = self._drain_now
        elif self._clock > self.env.now:
            # Finishing ends the run, so it needs SimPy's clock: push the virtual
            # event being run as a real one (it comes first, so it is popped next).
            self.env.push(Fired(self.env, None, self._end, None), self._clock, self._eid)
        else:
            self._finish()

    def _drain_now(self) -> None:
        self._clock = self.env.now
        self._drain()

    def _on_end(self, _ev: Any) -> None:
        self._finish()

    def _finish(self) -> None:
        done, self._on_finish, self._source = self._on_finish, None, None
        if done is not None:
            done()

"""PE_CPU: runs a kernel's command stream, paying dispatch cost before each push.

The CPU is a small callback-driven state machine rather than a SimPy process: it
yields (one timeout) only while it pays dispatch cycles, and otherwise waits only
when PE_SCHEDULER's queue is full (back-pressure). It runs ahead of the engines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

import simpy

from kernbench.commands import PeCommand, PeCpuOverheadCmd
from kernbench.sim.cost_model import DispatchCostModel
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
        env: simpy.Environment,
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
        self._pending: PeCommand | None = None
        self._paid = False
        self._on_finish: Callable[[], None] | None = None

    def run(self, source: CommandSource, on_finish: Callable[[], None]) -> None:
        self._source, self._on_finish = source, on_finish
        self._step()

    def _step(self, _ev: Any = None) -> None:
        assert self._source is not None
        sched = self.scheduler
        while True:
            cmd = self._pending
            if cmd is None:
                cmd = self._pending = self._source.next()
                if cmd is None:
                    self._drain()
                    return
                self._paid = False
            if not self._paid:
                self._paid = True
                delay = self._pay(cmd)
                if delay > 0:
                    self.env.timeout(delay).callbacks.append(self._step)
                    return
            if isinstance(cmd, PeCpuOverheadCmd):
                self._pending = None
                continue
            if sched.full:
                sched.on_slot_free = self._step
                return
            self._pending = None
            sched.submit(cmd)

    def _pay(self, cmd: PeCommand) -> float:
        """Account the dispatch cycles of ``cmd``; return the CPU time in ns."""
        kind = type(cmd).__name__
        cycles = self.cost.dispatch_cycles(cmd)
        self.dispatch_cycles += cycles
        self.dispatch_cycles_by_kind[kind] += cycles
        self.commands_by_kind[kind] += 1
        ns = self.cost.dispatch_ns(cmd)
        self.busy_ns += ns
        if self.oplog is not None:
            self.oplog.add(self.env.now, self.pe_index, "dispatch", -1, kind)
        return ns

    def _drain(self) -> None:
        """The kernel returned: finish now if the queue is empty, else when it drains."""
        if self.scheduler.idle:
            self._finish()
        else:
            self.scheduler.on_slot_free = self._drain

    def _finish(self) -> None:
        done, self._on_finish, self._source = self._on_finish, None, None
        if done is not None:
            done()

"""The PE endpoints of one cube's control plane, served in bulk (DESIGN §3.3, §13.1).

An install or unmap message lands on every PE its M_CPU fans it out to: each PE's
endpoint (PE_MMU under VA, PE_DMA's BAAW port under LA) takes one message at a time,
in arrival order, for its processing time, then applies it. The endpoints of a cube
are alike and a message reaches all of them at one instant (the same two links from
the M_CPU), so :class:`CubeEndpoints` serves every PE that takes a message at the same
instant with one event, and keeps state only for a PE with messages waiting: a
message to the 1,024 PEs of a SIP is 16 events, not 1,024 SimPy processes. Each PE
still serves its own queue in order, so one that got an earlier message finishes this
one later, to the ns a process per PE gave (the times are the same sums: arrival plus
processing, or the previous landing plus processing).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import simpy

from kernbench.sim.messages import ControlMsg
from kernbench.timebase import on_grid
from kernbench.topology.names import PeId

# Lands a message on PEs of one cube, in order (the control plane's bookkeeping).
Land = Callable[[ControlMsg, list[PeId]], None]


class Receiver:
    """Something a control component forwards a message to."""

    def send(self, msg: ControlMsg, delay_ns: float) -> None:
        """Take ``msg`` after its transit over the link(s) to here, ``delay_ns``."""
        raise NotImplementedError


class CubeEndpoints(Receiver):
    """The PE endpoints of one cube. ``wanted(msg)`` names the cube's PEs a message is
    for; ``land(msg, pes)`` is called when it has been processed on them."""

    def __init__(
        self,
        env: simpy.Environment,
        processing_ns: float,
        wanted: Callable[[ControlMsg], list[PeId]],
        land: Land,
    ) -> None:
        self.env = env
        self.processing_ns = on_grid(processing_ns)
        self.wanted = wanted
        self.land = land
        self._waiting: dict[int, deque[ControlMsg]] = {}  # by PE: behind the one served
        self._busy: set[int] = set()  # PEs serving a message

    def send(self, msg: ControlMsg, delay_ns: float) -> None:
        arrive = self.env.timeout(delay_ns)
        arrive.callbacks.append(lambda _: self._arrive(msg))

    def _arrive(self, msg: ControlMsg) -> None:
        """Every wanted PE that is free starts on ``msg`` now; the others queue it."""
        free: list[PeId] = []
        for pe in self.wanted(msg):
            if pe.index in self._busy:
                self._waiting.setdefault(pe.index, deque()).append(msg)
            else:
                self._busy.add(pe.index)
                free.append(pe)
        if free:
            self._serve(msg, free)

    def _serve(self, msg: ControlMsg, pes: list[PeId]) -> None:
        done = self.env.timeout(self.processing_ns)
        done.callbacks.append(lambda _: self._served(msg, pes))

    def _served(self, msg: ControlMsg, pes: list[PeId]) -> None:
        """``msg`` has been processed on ``pes``: it lands there, and each PE moves on
        to its next waiting message (PEs that move on to the same one together)."""
        self.land(msg, pes)
        following: dict[int, tuple[ControlMsg, list[PeId]]] = {}
        for pe in pes:
            queue = self._waiting.get(pe.index)
            if not queue:
                self._busy.discard(pe.index)
                continue
            nxt = queue.popleft()
            if not queue:
                del self._waiting[pe.index]
            following.setdefault(id(nxt), (nxt, []))[1].append(pe)
        for nxt, group in following.values():
            self._serve(nxt, group)

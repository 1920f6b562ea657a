"""The two ways kernel code is driven (DESIGN §3.5, ADR-0064 review item 4).

- **replay**: run the kernel ahead of the simulation, recording its commands a batch
  at a time, and feed them to PE_CPU. Fast, the default.
- **greenlet**: run the kernel inside a greenlet that switches to the simulator at
  every ``tl`` op, so kernel code executes interleaved with simulated time.
Kernel code cannot observe simulated values, so both produce the same commands,
and PE_CPU charges them identically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from greenlet import greenlet

from kernbench import tl
from kernbench.commands import PeCommand
from kernbench.config.schema import ExecPath
from kernbench.sim.cpu import CommandSource

Kernel = Callable[..., None]


def kernel_greenlet(
    kernel: Kernel,
    args: tuple[Any, ...],
    program_id: tuple[int, ...],
    num_programs: tuple[int, ...],
    emit: Callable[[PeCommand], None],
) -> greenlet:
    """The kernel as a greenlet whose ``tl`` ops go to ``emit``. Both paths run kernels
    this way; they differ only in when ``emit`` hands control back."""

    def body() -> None:
        tl.bind(tl.KernelContext(program_id, num_programs, emit))
        kernel(*args)

    return greenlet(body)


BATCH = 4096  # commands ReplaySource traces at a time


class ReplaySource(CommandSource):
    """Trace the kernel ahead of the simulation, ``batch`` commands at a time.

    The kernel runs in a greenlet that hands back a full batch; the first batch is
    traced at once, so a short kernel is traced whole before it runs (and raises any
    error there). A long one never sits in memory whole: 10^6 commands cost one
    batch of them at a time.

    Once replayed to the end it drops its last batch: its greenlet, the kernel's
    context and its emit hook form a reference cycle that only the garbage collector
    frees, and the commands hanging off it would wait for that collection too (at
    1,024 PEs streaming ``neighbor`` 1:1, compiled build: the middle-generation
    collection after the run found 70,656 objects to free, 65,536 of them commands,
    in 48 ms; 9,216 in 33 ms once they go as each program ends).
    """

    def __init__(
        self,
        kernel: Kernel,
        args: tuple[Any, ...],
        program_id: tuple[int, ...],
        num_programs: tuple[int, ...],
        batch: int = BATCH,
    ) -> None:
        self.batch = batch
        self._glet = kernel_greenlet(kernel, args, program_id, num_programs, self._emit)
        self._caller = greenlet.getcurrent()
        self._buf: list[PeCommand] = []  # the batch being replayed, from ``_at`` on
        self._at = 0
        self._refill()
        # A kernel traced whole in its first batch has a known length (progress totals).
        self.known_total: int | None = len(self._buf) if self._glet.dead else None

    @property
    def commands(self) -> list[PeCommand]:
        """Every command not replayed yet (traces the rest of the kernel now; the
        source still replays them all). For inspection and progress counts."""
        rest = self._buf[self._at :]
        while not self._glet.dead:
            self._refill()
            rest += self._buf
        self._buf, self._at = rest, 0
        return rest

    def _emit(self, cmd: PeCommand) -> None:
        self._buf.append(cmd)
        if len(self._buf) >= self.batch:
            self._caller.switch()

    def _refill(self) -> None:
        self._buf = []
        self._caller = greenlet.getcurrent()
        self._glet.switch()  # runs the kernel until a batch is full or it returns
        self._at = 0

    def next(self) -> PeCommand | None:
        at = self._at
        if at == len(self._buf):
            if self._glet.dead:
                self._buf, self._at = [], 0  # replayed: freed now, not by the collector
                return None
            self._refill()  # the kernel runs on: to its next full batch, or its end
            if not self._buf:
                return None
            at = 0
        self._at = at + 1
        return self._buf[at]


class GreenletSource(CommandSource):
    def __init__(
        self,
        kernel: Kernel,
        args: tuple[Any, ...],
        program_id: tuple[int, ...],
        num_programs: tuple[int, ...],
    ) -> None:
        self._glet = kernel_greenlet(kernel, args, program_id, num_programs, self._emit)
        self.known_total: int | None = None  # a live kernel's length is unknown

    def _emit(self, cmd: PeCommand) -> None:
        self._glet.parent.switch(cmd)

    def next(self) -> PeCommand | None:
        if self._glet.dead:
            return None
        return self._glet.switch()  # runs the kernel up to its next op, or to its end


SOURCES = {ExecPath.replay: ReplaySource, ExecPath.greenlet: GreenletSource}

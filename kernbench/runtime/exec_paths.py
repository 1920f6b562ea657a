"""The two ways kernel code is driven (DESIGN §3.5, ADR-0064 review item 4).

- **replay**: run the kernel once up front, recording its commands, then feed the
  list to PE_CPU. Fast, the default.
- **greenlet**: run the kernel inside a greenlet that switches to the simulator at
  every ``tl`` op, so kernel code executes interleaved with simulated time.
Kernel code cannot observe simulated values, so both produce the same commands,
and PE_CPU charges them identically.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from greenlet import greenlet

from kernbench import tl
from kernbench.commands import PeCommand
from kernbench.config.schema import ExecPath

Kernel = Callable[..., None]


class ReplaySource:
    def __init__(
        self,
        kernel: Kernel,
        args: tuple[Any, ...],
        program_id: tuple[int, ...],
        num_programs: tuple[int, ...],
    ) -> None:
        cmds: list[PeCommand] = []

        def trace() -> None:
            tl.bind(tl.KernelContext(program_id, num_programs, cmds.append))
            kernel(*args)

        contextvars.copy_context().run(trace)
        self.commands = cmds
        self._it: Iterator[PeCommand] = iter(cmds)

    def next(self) -> PeCommand | None:
        return next(self._it, None)


class GreenletSource:
    def __init__(
        self,
        kernel: Kernel,
        args: tuple[Any, ...],
        program_id: tuple[int, ...],
        num_programs: tuple[int, ...],
    ) -> None:
        def body() -> None:
            tl.bind(tl.KernelContext(program_id, num_programs, self._emit))
            kernel(*args)

        self._glet = greenlet(body)

    def _emit(self, cmd: PeCommand) -> None:
        self._glet.parent.switch(cmd)

    def next(self) -> PeCommand | None:
        if self._glet.dead:
            return None
        return self._glet.switch()  # runs the kernel up to its next op, or to its end


SOURCES = {ExecPath.replay: ReplaySource, ExecPath.greenlet: GreenletSource}

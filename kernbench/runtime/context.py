"""RuntimeContext: deploy tensors, launch kernels over a grid of PEs, free on scope exit.

ADR-0007/0008/0009 and ADR-0011 D-VA4: tensors are placed by a :class:`DPPolicy`,
each shard in its PE's HBM (``PEMemAllocator``); a tensor is freed when it is
deleted (``Tensor.__del__`` through a weakref to the context) or when the ``with``
block ends. The context holds only weak references so it never keeps tensors alive.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from kernbench.address.pa import Region, pe_base
from kernbench.errors import ConfigError
from kernbench.runtime.exec_paths import SOURCES, Kernel
from kernbench.sim.system import System
from kernbench.topology.names import PeId

POLICIES = ("replicate", "column_wise", "row_wise")


@dataclass(frozen=True)
class DPPolicy:
    """Placement: ``cube`` is ``replicate`` (a full copy per cube, split over its PEs)
    or ``column_wise``/``row_wise`` (one copy split over ``pes``: a count or "all")."""

    cube: str = "column_wise"
    pes: int | str = "all"

    def __post_init__(self) -> None:
        if self.cube not in POLICIES:
            raise ConfigError("DPPolicy.cube", f"{self.cube!r} is not one of {POLICIES}")


@dataclass(frozen=True)
class Shard:
    """One PE's piece of a tensor: its offset in the tensor and its physical address."""

    pe: PeId
    offset_bytes: int
    nbytes: int
    pa: int


class Tensor:
    """A deployed tensor. ``shard_ptr(i)`` is the pointer kernel program ``i`` uses."""

    def __init__(
        self, ctx: RuntimeContext, name: str, nbytes: int, shards: list[Shard], policy: DPPolicy
    ) -> None:
        self.name = name
        self.nbytes = nbytes
        self.shards = shards
        self.policy = policy
        self.freed = False
        self._ctx = weakref.ref(ctx)

    def shard_ptr(self, i: int) -> int:
        """Address of shard ``i`` in the run's address space."""
        return self.shards[i].pa

    def __del__(self) -> None:
        ctx = self._ctx()
        if ctx is not None and not self.freed:
            ctx.free(self)


class RuntimeContext:
    """The host runtime of one simulated system."""

    def __init__(self, system: System) -> None:
        self.system = system
        self._tensors: list[weakref.ref[Tensor]] = []
        self._names = 0

    def __enter__(self) -> RuntimeContext:
        return self

    def __exit__(self, *exc: object) -> None:
        for ref in self._tensors:
            t = ref()
            if t is not None and not t.freed:
                self.free(t)
        self._tensors.clear()

    def pes(self, count: int | str = "all") -> list[PeId]:
        """The first ``count`` PEs in global order (sip, cube, pe)."""
        every = self.system.graph.pes
        return list(every) if count == "all" else list(every[: int(count)])

    def deploy(self, nbytes: int, policy: DPPolicy = DPPolicy(), name: str = "") -> Tensor:
        """Allocate a tensor of ``nbytes`` split into equal contiguous shards."""
        targets = self._targets(policy)
        shards = []
        for copy in targets:
            n = len(copy)
            for i, pe in enumerate(copy):
                lo, hi = nbytes * i // n, nbytes * (i + 1) // n
                offset = self.system.memory[pe.index].hbm.alloc(hi - lo)
                base = pe_base(pe.sip, pe.cube, pe.pe, Region.HBM)
                shards.append(Shard(pe, lo, hi - lo, base + offset))
        self._names += 1
        tensor = Tensor(self, name or f"t{self._names}", nbytes, shards, policy)
        self._tensors.append(weakref.ref(tensor))
        return tensor

    def free(self, tensor: Tensor) -> None:
        """Return a tensor's memory (idempotent)."""
        if tensor.freed:
            return
        tensor.freed = True
        for s in tensor.shards:
            self.system.memory[s.pe.index].hbm.free(s.pa - pe_base(s.pe.sip, s.pe.cube, s.pe.pe))

    def launch(self, kernel: Kernel, grid: int | list[PeId], *args: Any) -> dict[int, float]:
        """Run ``kernel`` as programs 0..n-1 on the first n PEs (or on the PEs given),
        until every program has retired its last command. Returns end time per PE."""
        pes = self.pes(grid) if isinstance(grid, int) else list(grid)
        source_cls = SOURCES[self.system.cfg.sim.exec_path]
        n = (len(pes),)
        sources = [(pe, source_cls(kernel, args, (i,), n)) for i, pe in enumerate(pes)]
        return self.system.run_programs(sources)

    def _targets(self, policy: DPPolicy) -> list[list[PeId]]:
        if policy.cube != "replicate":
            return [self.pes(policy.pes)]
        by_cube: dict[tuple[int, int], list[PeId]] = {}
        for pe in self.system.graph.pes:
            by_cube.setdefault((pe.sip, pe.cube), []).append(pe)
        return list(by_cube.values())

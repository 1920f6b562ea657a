"""RuntimeContext: deploy tensors, launch kernels over a grid of PEs, free on scope exit.

ADR-0007/0008/0009 and ADR-0011 D-VA4: tensors are placed by a :class:`DPPolicy`,
each shard in its PE's HBM (``PEMemAllocator``); a tensor is freed when it is
deleted (``Tensor.__del__`` through a weakref to the context) or when the ``with``
block ends. The context holds only weak references so it never keeps tensors alive.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import Any

from kernbench.address.models import Piece, TensorMap, shard_offsets
from kernbench.address.pa import Region, pe_base
from kernbench.config.schema import AddressModel
from kernbench.errors import ConfigError
from kernbench.runtime.exec_paths import SOURCES, Kernel
from kernbench.sim.collector import fewer_collections
from kernbench.sim.control import ControlMsg
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
    """One PE's piece of a tensor: its offset in the tensor's address range, its size
    and its physical address. Shards are back to back in the range (offset = the sizes
    before it) unless the model's layout unit forbids it: under VA, shards that are not
    whole pages start a page-rounded stride apart, with holes between
    (docs/explanation/models.md, "Address models")."""

    pe: PeId
    offset_bytes: int
    nbytes: int
    pa: int


class Tensor:
    """A deployed tensor. ``shard_ptr(i)`` is the pointer kernel program ``i`` uses."""

    def __init__(
        self,
        ctx: RuntimeContext,
        name: str,
        nbytes: int,
        shards: list[Shard],
        policy: DPPolicy,
        tmap: TensorMap,
    ) -> None:
        self.name = name
        self.nbytes = nbytes
        self.shards = shards
        self.policy = policy
        self.freed = False
        self.tmap = tmap
        self.base = tmap.base
        model = ctx.system.cfg.address.model
        self.va_base = tmap.base if model is AddressModel.va else None
        self.la_base = tmap.base if model is AddressModel.la else None
        # Set by the deploy: how long its install messages took to land, and the bytes
        # of those messages as the host sent them (0 and 0 under PA: none are sent).
        self.install_latency_ns = 0.0
        self.install_bytes = 0
        self._ctx = weakref.ref(ctx)
        self._ptrs: list[int] | None = None

    def shard_ptr(self, i: int) -> int:
        """Address of shard ``i`` in the run's address space: its PA under PA,
        ``va_base + offset_bytes`` under VA, ``la_base + offset_bytes`` under LA."""
        shard = self.shards[i]
        return shard.pa if self.base is None else self.base + shard.offset_bytes

    def shard_ptrs(self) -> list[int]:
        """Every shard's :meth:`shard_ptr`, listed once (a kernel's every program may
        index them; the list is the tensor's, not to be changed)."""
        if self._ptrs is None:
            self._ptrs = [self.shard_ptr(i) for i in range(len(self.shards))]
        return self._ptrs

    def __del__(self) -> None:
        ctx = self._ctx()
        if ctx is not None and not self.freed:
            # A finaliser must not raise: after a failed run (its error reported
            # already) the unmap can fail too, and would print a second traceback.
            with contextlib.suppress(Exception):
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
        """Allocate a tensor of ``nbytes`` split into equal contiguous shards, map it in
        the address model and wait until the mapping has landed on every PE.

        Collected as a run is (:func:`~kernbench.sim.collector.fewer_collections`): a
        deploy over many PEs makes their mappings and messages, alive until the tensor
        is freed, and young collections would promote them all."""
        model = self.system.address
        self._names += 1
        name = name or f"t{self._names}"
        with fewer_collections():
            copies = [self._place(c, nbytes, model.layout_unit) for c in self._targets(policy)]
            tmap, msgs = model.map_tensor(copies, sharded=policy.cube != "replicate", name=name)
            shards = [Shard(p.pe, p.offset_bytes, p.nbytes, p.pa) for c in copies for p in c]
            tensor = Tensor(self, name, nbytes, shards, policy, tmap)
            tensor.install_latency_ns = self._deliver(msgs)
        tensor.install_bytes = sum(m.sent_bytes for m in msgs)
        self._tensors.append(weakref.ref(tensor))
        return tensor

    def free(self, tensor: Tensor) -> None:
        """Unmap a tensor (through the control plane) and return its memory (idempotent)."""
        if tensor.freed:
            return
        tensor.freed = True
        with fewer_collections():  # as deploy
            self._deliver(self.system.address.unmap_tensor(tensor.tmap))
        for s in tensor.shards:
            self.system.memory[s.pe.index].hbm.free(s.pa - pe_base(s.pe.sip, s.pe.cube, s.pe.pe))

    def _place(self, copy: list[PeId], nbytes: int, unit: int) -> list[Piece]:
        """Allocate one copy's shards in their PEs' HBM and lay them out in the tensor's
        range by :func:`~kernbench.address.models.shard_offsets`."""
        n = len(copy)
        sizes = [nbytes * (i + 1) // n - nbytes * i // n for i in range(n)]
        pas: list[int] = []
        try:
            for pe, size in zip(copy, sizes, strict=True):
                # an empty shard (tensor smaller than its PEs) still gets a block
                pas.append(_pa(pe) + self.system.memory[pe.index].hbm.alloc(max(size, 1)))
        except Exception:
            for pe, pa in zip(copy, pas, strict=False):
                self.system.memory[pe.index].hbm.free(pa - _pa(pe))
            raise
        offsets = shard_offsets(sizes, unit)
        return [Piece(*fields) for fields in zip(copy, offsets, sizes, pas, strict=True)]

    def _deliver(self, msgs: list[ControlMsg]) -> float:
        """Send install/uninstall messages; run until they land; the measured latency."""
        control = self.system.control
        if not msgs or control is None:
            return 0.0
        events = [control.send(m) for m in msgs]
        self.system.run_until(self.system.env.all_of(events))
        return max(m.latency_ns for m in msgs) if all(m.pending == 0 for m in msgs) else 0.0

    def launch(self, kernel: Kernel, grid: int | list[PeId], *args: Any) -> dict[int, float]:
        """Run ``kernel`` as programs 0..n-1 on the first n PEs (or on the PEs given),
        until every program has retired its last command. Returns end time per PE.

        Tracing the kernels' first batches (every command of a short kernel, on every
        PE) makes objects that live until the run retires them, none of them garbage:
        collected as a run's are (:func:`~kernbench.sim.collector.fewer_collections`),
        or young collections promote them all and a full one walks them once more (at
        1,024 PEs, 64 reads each: 193 young, 17 middle and 1 full collection, 1.75 of
        23 us per access)."""
        pes = self.pes(grid) if isinstance(grid, int) else list(grid)
        source_cls = SOURCES[self.system.cfg.sim.exec_path]
        n = (len(pes),)
        with fewer_collections():
            sources: list[tuple[PeId, Any]] = [
                (pe, source_cls(kernel, args, (i,), n)) for i, pe in enumerate(pes)
            ]
            return self.system.run_programs(sources)

    def _targets(self, policy: DPPolicy) -> list[list[PeId]]:
        """One list of PEs per copy: every cube's PEs (replicate) or the policy's PEs."""
        if policy.cube != "replicate":
            return [self.pes(policy.pes)]
        by_cube: dict[tuple[int, int], list[PeId]] = {}
        for pe in self.system.graph.pes:
            by_cube.setdefault((pe.sip, pe.cube), []).append(pe)
        return list(by_cube.values())


def _pa(pe: PeId) -> int:
    return pe_base(pe.sip, pe.cube, pe.pe, Region.HBM)

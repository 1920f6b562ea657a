"""The LA model (ADR-0011 D-LA1…D-LA8): logical addresses resolved by BAAW in PE_DMA.

- Each PE has its own LA space from ``0x1_0000_0000``, 64 GiB (D-LA1), a free list.
  A tensor gets one ``la_base``, the same in every PE that sees it, so one kernel
  pointer works everywhere; the PAs behind it differ by PE table (PE-local LA).
- A :class:`~kernbench.address.segment.Segment` maps one shard's HBM range into
  the tensor's LA range (D-LA3).
- :class:`~kernbench.address.baaw.Baaw` is the segment table inside PE_DMA (not a
  component, D-LA4). One install message's segments are one table, shared by every
  BAAW it lands on.
"""

from __future__ import annotations

from typing import Final

from kernbench.address.allocator import FreeListAllocator
from kernbench.address.baaw import Baaw, SegmentTable, overlap
from kernbench.address.models import (
    AddressModelPolicy,
    Copies,
    Cubes,
    Piece,
    TensorMap,
    strategy_messages,
    tensor_span,
    visible_pes,
)
from kernbench.address.pa_model import PhysicalLayer, hbm_alignment
from kernbench.address.segment import Segment, make_segment
from kernbench.errors import AddressFault, AllocationError
from kernbench.sim.control import BaawSegmentInstallMsg, BaawSegmentUninstallMsg, ControlMsg
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId

__all__ = ["LA_BASE", "LA_SIZE", "Baaw", "LaModel", "Segment", "make_segment"]

LA_BASE: Final = 0x1_0000_0000  # 4 GiB, as the former VA start
LA_SIZE: Final = 64 << 30  # 64 GiB per PE


class Baaws(dict[int, Baaw]):
    """Each PE's BAAW by global index, made empty on first use."""

    def __init__(self, graph: TopologyGraph) -> None:
        super().__init__()
        self._pes = graph.pes

    def __missing__(self, index: int) -> Baaw:
        baaw = self[index] = Baaw(self._pes[index].node("dma") + ".baaw")
        return baaw


class LaSpaces(dict[int, FreeListAllocator]):
    """Each PE's LA space by global index, made whole (all free) on first use."""

    def __init__(self, graph: TopologyGraph) -> None:
        super().__init__()
        self._pes = graph.pes
        self._align = hbm_alignment(graph)

    def __missing__(self, index: int) -> FreeListAllocator:
        name = f"{self._pes[index].prefix} LA space"
        space = self[index] = FreeListAllocator(name, LA_BASE, LA_SIZE, self._align)
        return space


class LaModel(AddressModelPolicy):
    """Kernels see LAs: ``la_base + offset_bytes``; BAAW resolves them (no delay)."""

    # Segments are byte-granular, so every tensor's shards sit back to back.
    layout_unit = 1

    def __init__(self, graph: TopologyGraph, physical: PhysicalLayer) -> None:
        self.graph = graph
        self.la_spaces = LaSpaces(graph)
        self.baaws = Baaws(graph)
        # The table each install message installs, by (LA base, target cubes), until the
        # tensor is unmapped: its uninstall message drops that very table on each BAAW.
        self._shared: dict[tuple[int, Cubes], SegmentTable | None] = {}

    def resolve(self, pe: PeId, addr: int, nbytes: int) -> tuple[list[PhysicalRequest], float]:
        return self.baaws[pe.index].resolve(addr, nbytes), 0.0

    def map_tensor(
        self, copies: Copies, sharded: bool, name: str = ""
    ) -> tuple[TensorMap, list[ControlMsg]]:
        span = tensor_span(copies)
        spaces = [self.la_spaces[pe.index] for pe in self._visible(copies, sharded)]
        base = _common_base(spaces, span)
        for space in spaces:
            space.reserve(base, span)
        tmap = TensorMap(base, span, copies, sharded, name)
        return tmap, strategy_messages(copies, sharded, self._message(base, BaawSegmentInstallMsg))

    def unmap_tensor(self, tmap: TensorMap) -> list[ControlMsg]:
        assert tmap.base is not None
        make = self._message(tmap.base, BaawSegmentUninstallMsg)
        for pe in self._visible(tmap.copies, tmap.sharded):
            self.la_spaces[pe.index].free(tmap.base)
        return strategy_messages(tmap.copies, tmap.sharded, make)

    def _visible(self, copies: Copies, sharded: bool) -> list[PeId]:
        """Every PE that gets segments for the tensor: its LA range is reserved there."""
        probe = strategy_messages(copies, sharded, lambda s, c, p: ControlMsg(s, _noop, c))
        return sorted({pe for m in probe for pe in visible_pes(self.graph, m)}, key=_index)

    def _message(self, base: int, kind: type[ControlMsg]):  # noqa: ANN202 (a factory)
        install = kind is BaawSegmentInstallMsg

        def make(sips: tuple[int, ...], cubes: Cubes, pieces: list[Piece]) -> ControlMsg:
            segs = [
                make_segment(self.graph, p.pe, base + p.offset_bytes, p.pa, p.nbytes)
                for p in pieces
                if p.nbytes
            ]
            if install:
                table = self._shared[base, cubes] = self._table(segs)
            else:
                table = self._shared.pop((base, cubes), None)

            def apply(pe: PeId) -> None:
                if table is not None:
                    baaw = self.baaws[pe.index]
                    baaw.install_table(table) if install else baaw.uninstall_table(table)

            return kind(sips, apply, cubes, entries=len(segs))  # one entry per segment

        return make

    def _table(self, segs: list[Segment]) -> SegmentTable | None:
        """One message's segments: made once, shared by every BAAW it lands on (None
        if every shard is empty)."""
        segs = sorted(segs, key=_base)
        if overlap(segs) >= 0:
            raise AddressFault(f"segment LA {segs[overlap(segs)].la_base:#x} overlaps another")
        return SegmentTable(segs) if segs else None


def _noop(pe: PeId) -> None:
    return None


def _base(seg: Segment) -> int:
    return seg.la_base


def _index(pe: PeId) -> int:
    return pe.index


def _common_base(spaces: list[FreeListAllocator], span: int) -> int:
    """The lowest LA where ``span`` bytes are free in every given PE's LA space."""
    at = LA_BASE
    while True:
        moved = False
        for space in spaces:
            fit = space.find_fit(at, span)
            if fit is None:
                raise AllocationError(
                    f"{space.name}: no free range of {span} bytes at or above {at:#x} "
                    f"(LA space {LA_BASE:#x}+{LA_SIZE}, {space.free_bytes} bytes free)"
                )
            if fit != at:
                at, moved = fit, True
        if not moved:
            return at

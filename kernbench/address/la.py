"""The LA model (ADR-0011 D-LA1…D-LA8): logical addresses resolved by BAAW in PE_DMA.

- Each PE has its own LA space from ``0x1_0000_0000``, 64 GiB (D-LA1), a free list.
  A tensor gets one ``la_base``, the same in every PE that sees it, so one kernel
  pointer works everywhere; the PAs behind it differ by PE table (PE-local LA).
- A :class:`Segment` maps ``[la_base, la_base+la_size)`` onto one shard's HBM
  range ``[A, A+S)`` of its owner PE (A aligned to g·N, the allocation behind it
  whole stripes, S any size: segments are byte-granular, so a tensor's shards sit
  back to back in its LA range and ``la_base + k`` is byte k of the tensor). Under
  1:1 channel ``c`` holds channel space ``[A/N, (A+S)/N)``, starts at PA
  ``pe_base + A + c·g`` and LA offset ``o`` lives where PE offset ``A + o`` does in
  the interleave of DESIGN §4 — so 1:1 and n:1 move the same bytes, and aligned
  accesses drain in the same time. Under n:1 the whole access goes to the owner's
  aggregate router (D-LA7).
- :class:`Baaw` is the segment table inside PE_DMA (not a component, D-LA4): a
  bisect over sorted bases with a one-entry cache; per-channel bytes in closed form.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Final

from kernbench.address import interleave
from kernbench.address.allocator import FreeListAllocator
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
from kernbench.address.pa import pe_base
from kernbench.address.pa_model import PhysicalLayer, hbm_alignment
from kernbench.errors import AddressFault, AllocationError
from kernbench.sim.control import BaawSegmentInstallMsg, BaawSegmentUninstallMsg, ControlMsg
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId

LA_BASE: Final = 0x1_0000_0000  # 4 GiB, as the former VA start
LA_SIZE: Final = 64 << 30  # 64 GiB per PE


@dataclass(frozen=True, slots=True)
class Segment:
    """D-LA3 fields; ``routers[c]`` is channel c's node ``{owner}.ch_r{channel_ids[c]}``."""

    la_base: int
    la_size: int
    one_to_one: bool
    granule: int = 0
    channel_count: int = 0
    pa_bases: tuple[int, ...] = ()
    channel_ids: tuple[int, ...] = ()
    channel_size: int = 0
    routers: tuple[str, ...] = ()
    agg_pa_base: int = 0
    agg_node_id: str = ""
    # Derived: the end, and (router, PA base, channel id) per channel under 1:1.
    la_end: int = field(init=False, repr=False, compare=False)
    channels: tuple[tuple[str, int, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "la_end", self.la_base + self.la_size)
        chans = tuple(zip(self.routers, self.pa_bases, self.channel_ids, strict=True))
        object.__setattr__(self, "channels", chans)

    def resolve(self, o: int, nbytes: int) -> list[PhysicalRequest]:
        """Requests for segment offsets ``[o, o+nbytes)`` (inside the segment)."""
        if not self.one_to_one:
            return [(self.agg_node_id, self.agg_pa_base + o, nbytes, -1)]
        g, n = self.granule, self.channel_count
        if interleave.whole_stripes(o, nbytes, g, n):
            each = nbytes // n
            return [(r, base + o, each, ch) for r, base, ch in self.channels]
        return self.split(o, nbytes)

    def split(self, o: int, nbytes: int) -> list[PhysicalRequest]:
        """The 1:1 requests of any range (the general case)."""
        g, n, bases = self.granule, self.channel_count, self.pa_bases
        return [
            (self.routers[ch], bases[ch] + (co // g) * g * n + co % g, nb, self.channel_ids[ch])
            for ch, co, nb in interleave.split(o, nbytes, g, n)
        ]


def make_segment(graph: TopologyGraph, owner: PeId, la_base: int, pa: int, size: int) -> Segment:
    """The segment for an owner's HBM range ``[pa, pa+size)``. Under 1:1 the range must
    start on a stripe (g·N) so that it starts on channel 0; its size is free (the HBM
    allocation behind it is whole stripes), and ``channel_size`` is each channel's
    share of those stripes."""
    if not graph.one_to_one:
        return Segment(la_base, size, False, agg_pa_base=pa, agg_node_id=owner.agg_router)
    g, n = graph.config.cube.memory_map.interleave_bytes, graph.channels_per_pe
    if (pa - pe_base(owner.sip, owner.cube, owner.pe)) % (g * n):
        raise AddressFault(f"segment PA {pa:#x}+{size} is not aligned to a stripe of {g * n}")
    ids = tuple(owner.pe * n + c for c in range(n))
    return Segment(
        la_base,
        size,
        True,
        granule=g,
        channel_count=n,
        pa_bases=tuple(pa + c * g for c in range(n)),
        channel_ids=ids,
        channel_size=-(-size // (g * n)) * g,
        routers=tuple(owner.channel_router(i) for i in ids),
    )


class Baaw:
    """One PE's segment table: sorted by ``la_base``, segments never overlap."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._bases: list[int] = []
        self._segs: list[Segment] = []
        self._last: Segment | None = None
        self.generation = 0  # bumped by every install / uninstall (translation caches)

    @property
    def segments(self) -> list[Segment]:
        return list(self._segs)

    def install(self, seg: Segment) -> None:
        i = bisect.bisect_left(self._bases, seg.la_base)
        left = self._segs[i - 1] if i > 0 else None
        right = self._segs[i] if i < len(self._segs) else None
        if (left and left.la_end > seg.la_base) or (right and right.la_base < seg.la_end):
            raise AddressFault(f"{self.name}: segment {seg.la_base:#x}+{seg.la_size} overlaps")
        self.generation += 1
        self._bases.insert(i, seg.la_base)
        self._segs.insert(i, seg)

    def uninstall(self, la_base: int) -> None:
        i = bisect.bisect_left(self._bases, la_base)
        if i == len(self._bases) or self._bases[i] != la_base:
            raise AddressFault(f"{self.name}: no segment at LA {la_base:#x} to uninstall")
        self.generation += 1
        del self._bases[i], self._segs[i]
        self._last = None

    def lookup(self, la: int) -> Segment:
        """The segment holding ``la``; a clear fault naming PE and address if none."""
        seg = self._last
        if seg is not None and seg.la_base <= la < seg.la_end:
            return seg
        i = bisect.bisect_right(self._bases, la) - 1
        if i < 0 or la >= self._segs[i].la_end:
            raise AddressFault(
                f"{self.name}: LA {la:#x} is outside every BAAW segment "
                f"({len(self._segs)} installed)"
            )
        self._last = self._segs[i]
        return self._segs[i]

    def resolve(self, la: int, nbytes: int) -> list[PhysicalRequest]:
        """D-LA4: an access -> physical requests, across adjacent segments if it spans them."""
        seg = self.lookup(la)
        if la + nbytes <= seg.la_end:
            return seg.resolve(la - seg.la_base, nbytes)
        out: list[PhysicalRequest] = []
        end = la + nbytes
        while la < end:
            seg = self.lookup(la)
            n = min(end, seg.la_end) - la
            out += seg.resolve(la - seg.la_base, n)
            la += n
        return out


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

            def apply(pe: PeId) -> None:
                baaw = self.baaws[pe.index]
                for seg in segs:
                    baaw.install(seg) if install else baaw.uninstall(seg.la_base)

            return kind(sips, apply, cubes, entries=len(segs))  # one entry per segment

        return make


def _noop(pe: PeId) -> None:
    return None


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

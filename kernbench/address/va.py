"""The VA model (ADR-0011 D-VA1…D-VA5): one contiguous VA range per tensor, per-PE MMUs.

- :class:`VirtualAllocator`: the device-wide VA space, page-aligned, a free list with
  coalescing (D-VA5).
- :class:`PeMMU`: a page table per PE, held as runs of contiguous pages (one entry
  per mapping, so a 2 GiB tensor is one entry, not 500,000 pages), found by bisect;
  an access crossing a page boundary is split at it (D-VA2).
- :class:`VaModel`: the policy PE_DMA and the runtime use. An access pays
  ``tlb_overhead_ns`` once (``topology.pe_mmu.tlb_charge=per_access``, the ADR) or once
  per page it touches (``per_page``). A VA outside every tensor the PE holds is
  treated as a PA (the PageFault fallback, D-PA1); it then costs no TLB time, so
  PA-only kernels behave exactly as under the PA model. A VA inside a tensor's range
  but in no shard's bytes (the hole after a shard that is not a whole number of
  pages) is a fault naming the tensor, the PE and the address, never a PA.
Mappings change only when an ``MmuMapMsg`` / ``MmuUnmapMsg`` lands (control plane).
"""

from __future__ import annotations

import bisect
from typing import Final

from kernbench.address.allocator import FreeListAllocator, align_up
from kernbench.address.models import (
    AddressModelPolicy,
    Copies,
    Cubes,
    Piece,
    TensorMap,
    strategy_messages,
    tensor_span,
)
from kernbench.address.pa_model import PhysicalLayer
from kernbench.config.schema import TlbCharge
from kernbench.errors import AddressFault
from kernbench.sim.control import ControlMsg, MmuMapMsg, MmuUnmapMsg
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId

VA_BASE: Final = 0x1_0000_0000  # 4 GiB, so a VA never looks like a small PA
VA_SIZE: Final = 1 << 40  # device-wide VA space: 1 TiB


class VirtualAllocator:
    """Device-wide VA space: page-aligned alloc/free with coalescing (D-VA5)."""

    def __init__(self, page_size: int, base: int = VA_BASE, size: int = VA_SIZE) -> None:
        self.page_size = page_size
        self.space = FreeListAllocator("device VA space", base, size, page_size)

    def alloc(self, nbytes: int) -> int:
        return self.space.alloc(nbytes)

    def free(self, va: int) -> None:
        self.space.free(va)


class PeMMU:
    """One PE's page table: runs ``(first VA page, end page, PA of the first page, end
    VA of the valid bytes)``, sorted and never overlapping; a page maps to its run's PA
    plus its offset in it. It also knows the VA range of every tensor it holds, so a VA
    inside a tensor but outside its shards' bytes (a hole) is a fault naming the tensor,
    not a page fault."""

    def __init__(self, name: str, page_size: int, tlb_overhead_ns: float) -> None:
        self.name = name
        self.page_size = page_size
        self.shift = page_size.bit_length() - 1
        self.mask = page_size - 1
        self.tlb_overhead_ns = tlb_overhead_ns
        self._starts: list[int] = []  # first VA page of each run, for bisect
        self._runs: list[Run] = []
        self._last: Run = (0, 0, 0, 0)  # the run found last (empty at first)
        self._tensors: dict[int, tuple[int, str]] = {}  # VA base -> (end, name)
        self.generation = 0  # bumped by every change (translation caches check it)

    @property
    def mapped_pages(self) -> int:
        return sum(run[1] - run[0] for run in self._runs)

    def add_tensor(self, base: int, span: int, name: str) -> None:
        self._tensors[base] = (base + span, name)
        self.generation += 1

    def remove_tensor(self, base: int) -> None:
        self._tensors.pop(base, None)
        self.generation += 1

    def map(self, va: int, pa: int, nbytes: int, valid_bytes: int | None = None) -> None:
        """Map ``[va, va+nbytes)`` onto ``[pa, pa+nbytes)``; all page-aligned, over no
        page already mapped. Only the first ``valid_bytes`` (default all) may be accessed."""
        if (va | pa | nbytes) & self.mask:
            raise AddressFault(
                f"{self.name}: map {va:#x} -> {pa:#x} of {nbytes} bytes is not aligned "
                f"to the page size {self.page_size}"
            )
        start, end = va >> self.shift, (va + nbytes) >> self.shift
        i = bisect.bisect_left(self._starts, start)
        if (i > 0 and self._runs[i - 1][1] > start) or (
            i < len(self._runs) and self._runs[i][0] < end
        ):
            raise AddressFault(f"{self.name}: map {va:#x}+{nbytes} overlaps a mapped page")
        limit = va + (nbytes if valid_bytes is None else valid_bytes)
        self.generation += 1
        self._starts.insert(i, start)
        self._runs.insert(i, (start, end, pa, limit))

    def unmap(self, va: int, nbytes: int) -> None:
        """Unmap every mapped page of ``[va, va+nbytes)`` (page-aligned)."""
        lo, hi, shift = va >> self.shift, (va + nbytes) >> self.shift, self.shift
        kept: list[Run] = []
        for start, end, pa, limit in self._runs:
            if end <= lo or start >= hi:
                kept.append((start, end, pa, limit))
                continue
            if start < lo:
                kept.append((start, lo, pa, min(limit, lo << shift)))
            if end > hi:
                kept.append((hi, end, pa + ((hi - start) << shift), limit))
        self.generation += 1
        self._runs = kept
        self._starts = [run[0] for run in kept]
        self._last = (0, 0, 0, 0)

    def run_of(self, va: int) -> Run | None:
        """The run mapping ``va``'s page, or None. O(log runs), O(1) when it is the last."""
        page = va >> self.shift
        run = self._last
        if run[0] <= page < run[1]:
            return run
        i = bisect.bisect_right(self._starts, page) - 1
        if i < 0 or page >= self._runs[i][1]:
            return None
        self._last = run = self._runs[i]
        return run

    def page_pa(self, va: int, nbytes: int) -> int:
        """The PA of ``va`` when its ``nbytes`` lie in one page and in its run's valid
        bytes (the usual case), else -1 (``translate_range`` then says what they are):
        an int, not the run, so a compiled build boxes no tuple per access."""
        run = self._last
        page = va >> self.shift
        if not run[0] <= page < run[1]:
            found = self.run_of(va)
            if found is None:
                return -1
            run = found
        if (va & self.mask) + nbytes <= self.page_size and va + nbytes <= run[3]:
            return run[2] + va - (run[0] << self.shift)
        return -1

    def translate(self, va: int) -> int | None:
        """The PA of one VA byte, or None on a page fault (outside every tensor this
        PE holds). A VA in a hole of a tensor is a fault."""
        run = self.run_of(va)
        if run is None or va >= run[3]:
            self.check_hole(va)
            return None
        return run[2] + va - (run[0] << self.shift)

    def check_hole(self, va: int) -> None:
        """Fault if ``va`` lies inside a tensor this PE holds (it is not mapped)."""
        for base, (end, name) in self._tensors.items():
            if base <= va < end:
                raise AddressFault(
                    f"{self.name}: VA {va:#x} is in a hole of tensor {name!r} "
                    f"(VA {base:#x}+{end - base}): between its shards, no shard's bytes"
                )

    def translate_range(self, va: int, nbytes: int) -> list[tuple[int, int]] | None:
        """``(pa, nbytes)`` per page touched; None if the first byte page-faults.

        A range that starts mapped and runs into unmapped bytes is a fault: a hole,
        or past the end of its tensor's VA range."""
        if self.translate(va) is None:
            return None
        mask = self.mask
        pieces = []
        end = va + nbytes
        while va < end:
            pa = self.translate(va)
            if pa is None:
                raise AddressFault(
                    f"{self.name}: VA {va:#x} is not mapped (access ends at {end:#x}; "
                    "it runs past the end of its tensor's VA range)"
                )
            n = min(end, (va | mask) + 1, self._last[3]) - va
            pieces.append((pa, n))
            va += n
        return pieces


# (first VA page, end page, PA of the first page, end VA of the valid bytes)
Run = tuple[int, int, int, int]


class Mmus(dict[int, PeMMU]):
    """Each PE's MMU by global index, made empty on first use (a PE no message or
    access reached has none: an empty table is what it would hold)."""

    def __init__(self, graph: TopologyGraph) -> None:
        super().__init__()
        self._pes = graph.pes
        pm = graph.config.pe_mmu
        self._page_size, self._tlb_ns = pm.page_size, pm.tlb_overhead_ns

    def __missing__(self, index: int) -> PeMMU:
        mmu = self[index] = PeMMU(self._pes[index].node("mmu"), self._page_size, self._tlb_ns)
        return mmu


class VaModel(AddressModelPolicy):
    """Kernels see VAs: ``va_base + offset_bytes`` per shard, translated per access.

    ``tlb_overhead_ns`` is paid once per access (``tlb_charge=per_access``, ADR-0011
    D-VA2) or once per page the access touches (``per_page``)."""

    def __init__(self, graph: TopologyGraph, physical: PhysicalLayer) -> None:
        pm = graph.config.pe_mmu
        self.physical = physical
        self.layout_unit = pm.page_size
        self.per_page = pm.tlb_charge is TlbCharge.per_page
        self.va = VirtualAllocator(pm.page_size)
        self.mmus = Mmus(graph)

    def resolve(self, pe: PeId, addr: int, nbytes: int) -> tuple[list[PhysicalRequest], float]:
        mmu = self.mmus[pe.index]
        pa = mmu.page_pa(addr, nbytes)  # inside one page and its valid bytes: the usual case
        if pa >= 0:
            return self.physical.resolve(pa, nbytes), mmu.tlb_overhead_ns
        pieces = mmu.translate_range(addr, nbytes)
        if pieces is None:
            return self._page_fault(pe, addr, nbytes), 0.0
        tlb = mmu.tlb_overhead_ns * (len(pieces) if self.per_page else 1)
        resolve = self.physical.resolve
        if len(pieces) == 1:
            return resolve(pieces[0][0], nbytes), tlb
        return [req for pa, n in pieces for req in resolve(pa, n)], tlb

    def _page_fault(self, pe: PeId, addr: int, nbytes: int) -> list[PhysicalRequest]:
        """D-PA1: an address outside every tensor's range is used as a PA."""
        try:
            return self.physical.resolve(addr, nbytes)
        except AddressFault as exc:
            raise AddressFault(
                f"{pe.node('mmu')}: VA {addr:#x}+{nbytes} has no mapping, and as a PA "
                f"(PageFault fallback): {exc}"
            ) from None

    def map_tensor(
        self, copies: Copies, sharded: bool, name: str = ""
    ) -> tuple[TensorMap, list[ControlMsg]]:
        span = tensor_span(copies)
        base = self.va.alloc(span)
        tmap = TensorMap(base, span, copies, sharded, name)

        def make(sips: tuple[int, ...], cubes: Cubes, pieces: list[Piece]) -> ControlMsg:
            return MmuMapMsg(sips, self._mapper(tmap, pieces), cubes, entries=self._ptes(pieces))

        return tmap, strategy_messages(copies, sharded, make)

    def unmap_tensor(self, tmap: TensorMap) -> list[ControlMsg]:
        assert tmap.base is not None
        self.va.free(tmap.base)

        def make(sips: tuple[int, ...], cubes: Cubes, pieces: list[Piece]) -> ControlMsg:
            unmap = self._unmapper(tmap, pieces)
            return MmuUnmapMsg(sips, unmap, cubes, entries=self._ptes(pieces))

        return strategy_messages(tmap.copies, tmap.sharded, make)

    def _pages(self, nbytes: int) -> int:
        return align_up(nbytes, self.layout_unit)

    def _ptes(self, pieces: list[Piece]) -> int:
        """Page-table entries a message carries: one per page its shards map (what
        :meth:`_mapper` and :meth:`_unmapper` map and unmap), none for an empty shard."""
        return sum(self._pages(p.nbytes) // self.layout_unit for p in pieces if p.nbytes)

    def _mapper(self, tmap: TensorMap, pieces: list[Piece]):  # noqa: ANN202 (a closure)
        base = tmap.base
        assert base is not None

        def apply(pe: PeId) -> None:
            mmu = self.mmus[pe.index]
            mmu.add_tensor(base, tmap.span, tmap.name)
            for p in pieces:
                if p.nbytes:
                    mmu.map(base + p.offset_bytes, p.pa, self._pages(p.nbytes), p.nbytes)

        return apply

    def _unmapper(self, tmap: TensorMap, pieces: list[Piece]):  # noqa: ANN202 (a closure)
        base = tmap.base
        assert base is not None

        def apply(pe: PeId) -> None:
            mmu = self.mmus[pe.index]
            mmu.remove_tensor(base)
            for p in pieces:
                if p.nbytes:
                    mmu.unmap(base + p.offset_bytes, self._pages(p.nbytes))

        return apply

"""The VA model (ADR-0011 D-VA1…D-VA5): one contiguous VA range per tensor, per-PE MMUs.

- :class:`VirtualAllocator`: the device-wide VA space, page-aligned, a free list with
  coalescing (D-VA5).
- :class:`PeMMU`: a page table per PE, held as runs of contiguous pages (one entry
  per mapping, so a 2 GiB tensor is one entry, not 500,000 pages), found by bisect;
  an access crossing a page boundary is split at it and each translated piece costs
  ``tlb_overhead_ns`` (D-VA2).
- :class:`VaModel`: the policy PE_DMA and the runtime use. A VA with no mapping is
  treated as a PA (the PageFault fallback, D-PA1); it then costs no TLB time, so
  PA-only kernels behave exactly as under the PA model.
Mappings change only when an ``MmuMapMsg`` / ``MmuUnmapMsg`` lands (control plane).
"""

from __future__ import annotations

import bisect

from kernbench.address.allocator import FreeListAllocator
from kernbench.address.models import Copies, Cubes, Piece, TensorMap, strategy_messages
from kernbench.address.pa_model import PhysicalLayer
from kernbench.errors import AddressFault
from kernbench.sim.control import ControlMsg, MmuMapMsg, MmuUnmapMsg
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId

VA_BASE = 0x1_0000_0000  # 4 GiB, so a VA never looks like a small PA
VA_SIZE = 1 << 40  # device-wide VA space: 1 TiB


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
    """One PE's page table: runs ``(first VA page, end page, PA of the first page)``,
    sorted and never overlapping; a page maps to its run's PA plus its offset in it."""

    def __init__(self, name: str, page_size: int, tlb_overhead_ns: float) -> None:
        self.name = name
        self.page_size = page_size
        self.shift = page_size.bit_length() - 1
        self.mask = page_size - 1
        self.tlb_overhead_ns = tlb_overhead_ns
        self._starts: list[int] = []  # first VA page of each run, for bisect
        self._runs: list[tuple[int, int, int]] = []
        self._last: tuple[int, int, int] = (0, 0, 0)  # the run found last (empty at first)

    @property
    def mapped_pages(self) -> int:
        return sum(end - start for start, end, _ in self._runs)

    def map(self, va: int, pa: int, nbytes: int) -> None:
        """Map ``[va, va+nbytes)`` onto ``[pa, pa+nbytes)``; all page-aligned, over no
        page already mapped."""
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
        self._starts.insert(i, start)
        self._runs.insert(i, (start, end, pa))

    def unmap(self, va: int, nbytes: int) -> None:
        """Unmap every mapped page of ``[va, va+nbytes)`` (page-aligned)."""
        lo, hi, shift = va >> self.shift, (va + nbytes) >> self.shift, self.shift
        kept: list[tuple[int, int, int]] = []
        for start, end, pa in self._runs:
            if end <= lo or start >= hi:
                kept.append((start, end, pa))
                continue
            if start < lo:
                kept.append((start, lo, pa))
            if end > hi:
                kept.append((hi, end, pa + ((hi - start) << shift)))
        self._runs = kept
        self._starts = [start for start, _, _ in kept]
        self._last = (0, 0, 0)

    def _run(self, page: int) -> tuple[int, int, int] | None:
        run = self._last
        if run[0] <= page < run[1]:
            return run
        i = bisect.bisect_right(self._starts, page) - 1
        if i < 0 or page >= self._runs[i][1]:
            return None
        self._last = run = self._runs[i]
        return run

    def translate(self, va: int) -> int | None:
        """The PA of one VA byte, or None on a page fault. O(log runs)."""
        run = self._run(va >> self.shift)
        return None if run is None else run[2] + va - (run[0] << self.shift)

    def translate_range(self, va: int, nbytes: int) -> list[tuple[int, int]] | None:
        """``(pa, nbytes)`` per page touched; None if the first page is unmapped.

        A range that starts mapped and runs into an unmapped page is a fault: it
        ran past the end of its tensor."""
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
            n = min(end, (va | mask) + 1) - va
            pieces.append((pa, n))
            va += n
        return pieces


class VaModel:
    """Kernels see VAs: ``va_base + offset_bytes`` per shard, translated per access."""

    contiguous = True

    def __init__(self, graph: TopologyGraph, physical: PhysicalLayer) -> None:
        pm = graph.config.pe_mmu
        self.physical = physical
        self.va = VirtualAllocator(pm.page_size)
        self.mmus = {
            pe.index: PeMMU(pe.node("mmu"), pm.page_size, pm.tlb_overhead_ns) for pe in graph.pes
        }

    def resolve(self, pe: PeId, addr: int, nbytes: int) -> tuple[list[PhysicalRequest], float]:
        mmu = self.mmus[pe.index]
        if (addr & mmu.mask) + nbytes <= mmu.page_size:  # inside one page: the usual case
            pa = mmu.translate(addr)
            if pa is not None:
                return self.physical.resolve(pa, nbytes), mmu.tlb_overhead_ns
        pieces = mmu.translate_range(addr, nbytes)
        if pieces is None:
            return self._page_fault(pe, addr, nbytes), 0.0
        resolve = self.physical.resolve
        if len(pieces) == 1:
            return resolve(pieces[0][0], nbytes), mmu.tlb_overhead_ns
        requests = [req for pa, n in pieces for req in resolve(pa, n)]
        return requests, len(pieces) * mmu.tlb_overhead_ns

    def _page_fault(self, pe: PeId, addr: int, nbytes: int) -> list[PhysicalRequest]:
        """D-PA1: an unmapped address is used as a PA."""
        try:
            return self.physical.resolve(addr, nbytes)
        except AddressFault as exc:
            raise AddressFault(
                f"{pe.node('mmu')}: VA {addr:#x}+{nbytes} has no mapping, and as a PA "
                f"(PageFault fallback): {exc}"
            ) from None

    def map_tensor(self, copies: Copies, sharded: bool) -> tuple[TensorMap, list[ControlMsg]]:
        span = max(p.offset_bytes + p.alloc_bytes for copy in copies for p in copy)
        base = self.va.alloc(span)
        tmap = TensorMap(base, span, copies, sharded)

        def make(sips: tuple[int, ...], cubes: Cubes, pieces: list[Piece]) -> ControlMsg:
            return MmuMapMsg(sips, self._mapper(base, pieces), cubes)

        return tmap, strategy_messages(copies, sharded, make)

    def unmap_tensor(self, tmap: TensorMap) -> list[ControlMsg]:
        assert tmap.base is not None
        base = tmap.base
        self.va.free(base)

        def make(sips: tuple[int, ...], cubes: Cubes, pieces: list[Piece]) -> ControlMsg:
            return MmuUnmapMsg(sips, self._unmapper(base, pieces), cubes)

        return strategy_messages(tmap.copies, tmap.sharded, make)

    def _mapper(self, base: int, pieces: list[Piece]):  # noqa: ANN202 (a closure)
        def apply(pe: PeId) -> None:
            for p in pieces:
                self.mmus[pe.index].map(base + p.offset_bytes, p.pa, p.alloc_bytes)

        return apply

    def _unmapper(self, base: int, pieces: list[Piece]):  # noqa: ANN202 (a closure)
        def apply(pe: PeId) -> None:
            for p in pieces:
                self.mmus[pe.index].unmap(base + p.offset_bytes, p.alloc_bytes)

        return apply

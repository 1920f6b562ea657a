"""The VA model (ADR-0011 D-VA1…D-VA5): one contiguous VA range per tensor, per-PE MMUs.

- :class:`VirtualAllocator`: the device-wide VA space, page-aligned, a free list with
  coalescing (D-VA5).
- :class:`PeMMU`: a page dict per PE, O(1) translate; an access crossing a page
  boundary is split at it and each translated piece costs ``tlb_overhead_ns`` (D-VA2).
- :class:`VaModel`: the policy PE_DMA and the runtime use. A VA with no mapping is
  treated as a PA (the PageFault fallback, D-PA1); it then costs no TLB time, so
  PA-only kernels behave exactly as under the PA model.
Mappings change only when an ``MmuMapMsg`` / ``MmuUnmapMsg`` lands (control plane).
"""

from __future__ import annotations

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
    """One PE's page table: VA page number -> PA of the page's first byte."""

    def __init__(self, name: str, page_size: int, tlb_overhead_ns: float) -> None:
        self.name = name
        self.page_size = page_size
        self.shift = page_size.bit_length() - 1
        self.mask = page_size - 1
        self.tlb_overhead_ns = tlb_overhead_ns
        self.pages: dict[int, int] = {}

    def map(self, va: int, pa: int, nbytes: int) -> None:
        """Map ``[va, va+nbytes)`` onto ``[pa, pa+nbytes)``; all page-aligned."""
        if (va | pa | nbytes) & self.mask:
            raise AddressFault(
                f"{self.name}: map {va:#x} -> {pa:#x} of {nbytes} bytes is not aligned "
                f"to the page size {self.page_size}"
            )
        vpn, shift = va >> self.shift, self.shift
        for k in range(nbytes >> shift):
            self.pages[vpn + k] = pa + (k << shift)

    def unmap(self, va: int, nbytes: int) -> None:
        vpn = va >> self.shift
        for k in range(nbytes >> self.shift):
            self.pages.pop(vpn + k, None)

    def translate(self, va: int) -> int | None:
        """The PA of one VA byte, or None on a page fault. O(1)."""
        page = self.pages.get(va >> self.shift)
        return None if page is None else page | (va & self.mask)

    def translate_range(self, va: int, nbytes: int) -> list[tuple[int, int]] | None:
        """``(pa, nbytes)`` per page touched; None if the first page is unmapped.

        A range that starts mapped and runs into an unmapped page is a fault: it
        ran past the end of its tensor."""
        pages, shift, mask = self.pages, self.shift, self.mask
        if (va >> shift) not in pages:
            return None
        pieces = []
        end = va + nbytes
        while va < end:
            page = pages.get(va >> shift)
            if page is None:
                raise AddressFault(
                    f"{self.name}: VA {va:#x} is not mapped (access ends at {end:#x}; "
                    "it runs past the end of its tensor's VA range)"
                )
            n = min(end, (va | mask) + 1) - va
            pieces.append((page | (va & mask), n))
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

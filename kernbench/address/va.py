"""The VA model (ADR-0011 D-VA1…D-VA5): one contiguous VA range per tensor, per-PE MMUs.

- :class:`VirtualAllocator`: the device-wide VA space, page-aligned, a free list with
  coalescing (D-VA5).
- :class:`~kernbench.address.page_table.PeMMU`: a page table per PE, held as runs of
  contiguous pages, found by bisect; an access crossing a page boundary is split at it
  (D-VA2). One install message's runs are one table, shared by every MMU it lands on.
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
from kernbench.address.page_table import PageTable, PeMMU, overlap, page_run
from kernbench.config.schema import TlbCharge
from kernbench.errors import AddressFault
from kernbench.sim.control import ControlMsg, MmuMapMsg, MmuUnmapMsg
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId

__all__ = ["VA_BASE", "VA_SIZE", "Mmus", "PeMMU", "VaModel", "VirtualAllocator"]

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
        # The table each install message maps, by (VA base, target cubes), until the
        # tensor is unmapped: its unmap message drops that very table on each MMU.
        self._shared: dict[tuple[int, Cubes], PageTable | None] = {}

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
            table = self._shared[base, cubes] = self._table(tmap, pieces)
            return MmuMapMsg(sips, self._mapper(tmap, table), cubes, entries=self._ptes(pieces))

        return tmap, strategy_messages(copies, sharded, make)

    def unmap_tensor(self, tmap: TensorMap) -> list[ControlMsg]:
        base = tmap.base
        assert base is not None
        self.va.free(base)

        def make(sips: tuple[int, ...], cubes: Cubes, pieces: list[Piece]) -> ControlMsg:
            unmap = self._unmapper(base, self._shared.pop((base, cubes), None))
            return MmuUnmapMsg(sips, unmap, cubes, entries=self._ptes(pieces))

        return strategy_messages(tmap.copies, tmap.sharded, make)

    def _pages(self, nbytes: int) -> int:
        return align_up(nbytes, self.layout_unit)

    def _ptes(self, pieces: list[Piece]) -> int:
        """Page-table entries a message carries: one per page its shards map (the runs
        of :meth:`_table`, mapped and unmapped), none for an empty shard."""
        return sum(self._pages(p.nbytes) // self.layout_unit for p in pieces if p.nbytes)

    def _table(self, tmap: TensorMap, pieces: list[Piece]) -> PageTable | None:
        """The runs one message maps, one per non-empty shard: made once, shared by
        every MMU the message lands on (None if every shard is empty)."""
        base, name = tmap.base, f"tensor {tmap.name!r}"
        assert base is not None
        runs = [
            page_run(
                name, base + p.offset_bytes, p.pa, self._pages(p.nbytes), p.nbytes, self.layout_unit
            )
            for p in pieces
            if p.nbytes
        ]
        runs.sort()
        if overlap(runs) >= 0:
            raise AddressFault(f"{name}: two shards map one VA page")
        return PageTable(runs) if runs else None

    def _mapper(self, tmap: TensorMap, table: PageTable | None):  # noqa: ANN202 (a closure)
        base = tmap.base
        assert base is not None

        def apply(pe: PeId) -> None:
            mmu = self.mmus[pe.index]
            mmu.add_tensor(base, tmap.span, tmap.name)
            if table is not None:
                mmu.attach(table)

        return apply

    def _unmapper(self, base: int, table: PageTable | None):  # noqa: ANN202 (a closure)
        def apply(pe: PeId) -> None:
            mmu = self.mmus[pe.index]
            mmu.remove_tensor(base)
            if table is not None:
                mmu.detach(table)

        return apply

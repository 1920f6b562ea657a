"""Functional memory: device tensors' bytes by physical address (DESIGN §10).

In the spirit of ADR-0013's PA tagging, a device tensor's bytes live at the PAs the
address model gives its shards, and every load and store of a kernel reaches them
through the same translation PE_DMA uses for timing: host pointer -> tensor byte ->
device address in the run's space (PA, VA or LA) -> PA via the model's ``resolve``
(MMU page table, BAAW segment, the 1:1 channel interleave). So a wrong mapping gives
a wrong *value*, not only a wrong time.

- :class:`HostWindow`: the host addresses kernels see. Each device tensor gets its
  own page-aligned range with an unmapped guard page after it; kernel pointers are
  these addresses (``data_ptr()``), so Triton's pointer arithmetic is unchanged.
- :class:`Translator`: host address -> device address (per PE: a replicated tensor
  is read from the copy in the PE's own cube) -> PA. PAs are resolved once per
  translation chunk (``min(page_size, interleave_bytes)``, inside which every model
  maps linearly) with a one-byte ``resolve``, cached per PE for as long as the PE's
  mapping table (MMU, BAAW; PA's interleave is fixed) has not changed since.
- :class:`FunctionalMemory`: sparse 4 KiB pages keyed by PA, zero until written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from kernbench.address.la import LaModel
from kernbench.address.pa_model import PaModel
from kernbench.address.va import VaModel
from kernbench.errors import AddressFault
from kernbench.runtime.context import Tensor
from kernbench.sim.system import System
from kernbench.topology.names import PeId

HOST_BASE = 0x7E00_0000_0000
HOST_ALIGN = 4096
PAGE_BYTES = 4096


@dataclass(frozen=True)
class ShardView:
    """One shard of one copy: tensor bytes ``[start, start+nbytes)`` at device ``ptr``."""

    start: int
    nbytes: int
    ptr: int
    pe: PeId


def shard_views(tensor: Tensor) -> list[list[ShardView]]:
    """The tensor's copies (one per cube under ``replicate``, else one), each its shards
    in order, from the runtime's public ``shards`` and ``shard_ptr``."""
    copies: dict[object, list[ShardView]] = {}
    replicate = tensor.policy.cube == "replicate"
    for i, s in enumerate(tensor.shards):
        key = (s.pe.sip, s.pe.cube) if replicate else 0
        views = copies.setdefault(key, [])
        start = views[-1].start + views[-1].nbytes if views else 0
        views.append(ShardView(start, s.nbytes, tensor.shard_ptr(i), s.pe))
    return list(copies.values())


class PastEnd(AddressFault):
    """A kernel pointer past the end of the device tensor whose host range it is in;
    :class:`~kernbench.triton.accelerator.Accelerator` adds the kernel's line and the
    argument the tensor was passed as."""

    def __init__(self, pointer: int, base: int, nbytes: int) -> None:
        super().__init__(
            f"pointer {pointer:#x} reads past the end of its device tensor ({nbytes} bytes)"
        )
        self.pointer, self.base, self.nbytes = pointer, base, nbytes


class HostWindow:
    """Host address ranges of device tensors, for pointer -> tensor lookup."""

    def __init__(self) -> None:
        self._bases = np.zeros(0, np.int64)  # ascending, as ranges are handed out
        self._items: list[tuple[int, int, list[list[ShardView]]]] = []  # base, nbytes, views
        self._next = HOST_BASE

    def add(self, nbytes: int, views: list[list[ShardView]]) -> int:
        """A fresh host range for a tensor of ``nbytes`` (and a guard page after it)."""
        base = self._next
        self._next += -(-max(nbytes, 1) // HOST_ALIGN) * HOST_ALIGN + HOST_ALIGN
        self._bases = np.append(self._bases, np.int64(base))
        self._items.append((base, nbytes, views))
        return base

    def find(self, addr: int) -> tuple[int, int, list[list[ShardView]]] | None:
        """``(base, nbytes, views)`` of the host range ``addr`` falls in, if any."""
        i = int(np.searchsorted(self._bases, addr, side="right")) - 1
        return self._items[i] if i >= 0 else None

    def locate(
        self, addrs: np.ndarray
    ) -> Iterator[tuple[list[list[ShardView]], int, int, np.ndarray | slice]]:
        """Per device tensor the pointers fall in: ``(views, base, nbytes, indices)``
        (``slice(None)`` when they all do)."""
        which = np.searchsorted(self._bases, addrs, side="right") - 1
        if which.min() < 0:
            bad = int(addrs[np.argmin(which)])
            raise AddressFault(f"pointer {bad:#x} is outside every device tensor")
        if which[0] == which[-1] and np.all(which == which[0]):  # one tensor: all of them
            base, nbytes, views = self._items[int(which[0])]
            yield views, base, nbytes, slice(None)
            return
        for k in np.unique(which):
            base, nbytes, views = self._items[int(k)]
            yield views, base, nbytes, np.flatnonzero(which == k)


class Translator:
    """Tensor byte offsets -> device addresses -> PAs, as the executing PE sees them."""

    def __init__(self, system: System) -> None:
        self.system = system
        mm = system.cfg.topology.cube.memory_map
        self.chunk = min(system.cfg.topology.pe_mmu.page_size, mm.interleave_bytes)
        # Per PE: the chunks it resolved, while its mapping table is unchanged.
        self._pa_of_chunk: dict[int, _ChunkPas] = {}
        # Per (tensor's views, PE): the shard starts and pointers of the copy it reads.
        self._copies: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, object]] = {}

    def device_addrs(
        self, views: list[list[ShardView]], pe: PeId, offsets: np.ndarray
    ) -> np.ndarray:
        """Device addresses of tensor byte ``offsets`` in the copy ``pe`` reads."""
        key = (id(views), pe.index)
        found = self._copies.get(key)
        if found is None or found[2] is not views:
            copy = _copy_for(views, pe)
            starts = np.array([v.start for v in copy], dtype=np.int64)
            ptrs = np.array([v.ptr for v in copy], dtype=np.int64)
            found = self._copies[key] = (starts, ptrs, views)
        starts, ptrs, _ = found
        if starts.size == 1:
            return offsets + (ptrs[0] - starts[0])
        idx = np.searchsorted(starts, offsets, side="right") - 1
        return ptrs[idx] + (offsets - starts[idx])

    def run_pieces(
        self, views: list[list[ShardView]], pe: PeId, offset: int, nbytes: int
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
        """Tensor bytes ``[offset, offset+nbytes)`` (inside the tensor) as device runs
        and PA pieces: the ``(device start, bytes)`` runs in address order, contiguous
        ones merged (what :func:`~kernbench.triton.runs.contiguous_runs` gives for
        its elements' device addresses), and the ``(PA, bytes)`` pieces in tensor
        order, contiguous PAs merged. A block that crosses shards (a shard's bytes are
        rarely a multiple of the block's) is one run per shard. None (take the
        element-wise path) unless every chunk it touches is resolved already."""
        cache = self._cache(pe)
        # A warm launch reads and writes the same blocks again: their runs and pieces
        # are kept with the chunks they came from (and forgotten with them).
        held = cache.runs.get((id(views), offset, nbytes))
        if held is not None and held[0] is views:
            return held[1], held[2]
        known = cache.base_of
        chunk = self.chunk
        runs: list[tuple[int, int]] = []
        pieces: list[tuple[int, int]] = []
        end_offset = offset + nbytes
        for v in _copy_for(views, pe):  # shards in tensor order (shard_views)
            lo, hi = max(offset, v.start), min(end_offset, v.start + v.nbytes)
            if lo >= hi:
                continue
            at = v.ptr + lo - v.start
            end = at + hi - lo
            runs.append((at, end - at))
            while at < end:
                key, within = divmod(at, chunk)
                base = known.get(key)
                if base is None:
                    return None
                n = min(end, (key + 1) * chunk) - at
                _extend(pieces, base + within, n)
                at += n
        merged: list[tuple[int, int]] = []
        for at, n in sorted(runs):
            _extend(merged, at, n)
        cache.runs[id(views), offset, nbytes] = (views, merged, pieces)
        return merged, pieces

    def span_pieces(self, pe: PeId, dev: int, nbytes: int) -> list[tuple[int, int]]:
        """The ``(PA, bytes)`` pieces of the device range ``[dev, dev+nbytes)``, one per
        translation chunk it touches (each maps linearly), contiguous PAs merged: a
        whole shard is written or read by chunks, not element by element."""
        cuts = np.arange(-(-dev // self.chunk) * self.chunk, dev + nbytes, self.chunk)
        starts = np.concatenate(([dev], cuts[cuts > dev])).astype(np.int64)
        sizes = np.diff(np.append(starts, dev + nbytes))
        pieces: list[tuple[int, int]] = []
        for pa, n in zip(self.pas(pe, starts).tolist(), sizes.tolist(), strict=True):
            _extend(pieces, pa, n)
        return pieces

    def pas(self, pe: PeId, dev: np.ndarray) -> np.ndarray:
        """PA of every device address in ``dev``, through the address model."""
        keys = dev // self.chunk
        cache = self._cache(pe)
        rows, hit = cache.find(keys)
        if not hit.all():
            missing = np.unique(keys[~hit])
            cache.add(missing, [self._chunk_pa(pe, int(k)) for k in missing])
            rows, _ = cache.find(keys)
        return cache.bases[rows] + dev % self.chunk

    def forget(self) -> None:
        """Drop cached translations (mappings may have changed since)."""
        self._pa_of_chunk.clear()
        self._copies.clear()

    def _generation(self, pe: PeId) -> int | None:
        """The version of ``pe``'s mapping table (MMU or BAAW): a cached translation is
        good while it is unchanged. None for a model without one we know, whose
        translations are then never trusted across calls."""
        model = self.system.address
        if isinstance(model, VaModel):
            return model.mmus[pe.index].generation
        if isinstance(model, LaModel):
            return model.baaws[pe.index].generation
        return 0 if isinstance(model, PaModel) else None  # PA: the fixed interleave

    def _cache(self, pe: PeId) -> _ChunkPas:
        gen = self._generation(pe)
        held = self._pa_of_chunk.get(pe.index)
        if held is None or gen is None or held.generation != gen:
            held = self._pa_of_chunk[pe.index] = _ChunkPas(gen)
        return held

    def _chunk_pa(self, pe: PeId, key: int) -> int:
        """The PA of chunk ``key``'s first byte (the chunk maps linearly from it)."""
        requests, _ = self.system.address.resolve(pe, key * self.chunk, 1)
        return requests[0][1]


class _ChunkPas:
    """One PE's resolved chunks: sorted chunk numbers and the PA of each one's start,
    valid while the PE's mapping table is at ``generation``."""

    def __init__(self, generation: int | None) -> None:
        self.generation = generation
        self.keys = np.zeros(0, np.int64)
        self.bases = np.zeros(0, np.int64)
        self.base_of: dict[int, int] = {}  # the same, for a few chunks at a time
        # Blocks resolved whole, by (id of the tensor's views, offset, bytes): the views
        # (an id is only good while they live), device runs and PA pieces. The callers
        # only read them.
        self.runs: dict[
            tuple[int, int, int],
            tuple[list[list[ShardView]], list[tuple[int, int]], list[tuple[int, int]]],
        ] = {}

    def find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each key's index into ``bases``, and whether it is held at all."""
        if not self.keys.size:
            return np.zeros(keys.shape, np.int64), np.zeros(keys.shape, bool)
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        return at, self.keys[at] == keys

    def add(self, keys: np.ndarray, bases: list[int]) -> None:
        """Hold ``bases`` for ``keys`` (sorted, none held yet)."""
        all_keys = np.concatenate((self.keys, keys))
        order = np.argsort(all_keys, kind="stable")
        self.keys = all_keys[order]
        self.bases = np.concatenate((self.bases, np.array(bases, np.int64)))[order]
        self.base_of.update(zip(keys.tolist(), bases, strict=True))


def _extend(spans: list[tuple[int, int]], start: int, nbytes: int) -> None:
    """Add ``(start, nbytes)`` to ``spans``, merged into the last if it continues it."""
    if spans and spans[-1][0] + spans[-1][1] == start:
        spans[-1] = (spans[-1][0], spans[-1][1] + nbytes)
    else:
        spans.append((start, nbytes))


def _copy_for(views: list[list[ShardView]], pe: PeId) -> list[ShardView]:
    """The copy in ``pe``'s own cube if there is one (replicate), else the first. A
    cube is its SIP and cube number: cube numbers repeat in every SIP."""
    for copy in views:
        if any((v.pe.sip, v.pe.cube) == (pe.sip, pe.cube) for v in copy):
            return copy
    return views[0]


class FunctionalMemory:
    """Device memory contents by PA, in sparse zero-initialised 4 KiB pages.

    The pages are rows of one backing array (grown by doubling); a sorted array of
    the page ids held and their rows finds every PA's row with one ``searchsorted``,
    so a load or store is a few numpy calls whatever the number of pages it touches.
    A page never written reads as zero and takes no row."""

    def __init__(self) -> None:
        self._rows = np.zeros((16, PAGE_BYTES), np.uint8)  # row r holds page _ids[r]
        self._used = 0
        self._sorted_ids = np.zeros(0, np.int64)  # page ids held, ascending
        self._sorted_rows = np.zeros(0, np.int64)  # their rows
        self._row_of: dict[int, int] = {}  # the same, for a few pages at a time

    def read_pieces(self, pieces: list[tuple[int, int]]) -> np.ndarray:
        """The bytes of ``(PA, nbytes)`` pieces, one after another (uint8)."""
        out = np.zeros(sum(n for _, n in pieces), np.uint8)
        at = 0
        for page, off, n in _page_spans(pieces):
            row = self._row_of.get(page)
            if row is not None:
                out[at : at + n] = self._rows[row, off : off + n]
            at += n
        return out

    def write_pieces(self, pieces: list[tuple[int, int]], data: np.ndarray) -> None:
        """Store ``data`` (uint8, flat) over ``(PA, nbytes)`` pieces, one after another."""
        spans = list(_page_spans(pieces))
        new = sorted({page for page, _, _ in spans if page not in self._row_of})
        if new:
            self._add(np.array(new, np.int64))
        at = 0
        for page, off, n in spans:
            self._rows[self._row_of[page], off : off + n] = data[at : at + n]
            at += n

    def read(self, pas: np.ndarray, elem_bytes: int) -> np.ndarray:
        """The ``elem_bytes`` bytes at each PA, shape ``(len(pas), elem_bytes)``."""
        offs = self._offsets(pas, elem_bytes)
        rows = self._find(pas // PAGE_BYTES)
        held = rows >= 0
        if held.all():
            return self._take(rows * PAGE_BYTES + offs, elem_bytes)
        out = np.zeros((pas.size, elem_bytes), np.uint8)
        if held.any():
            out[held] = self._take(rows[held] * PAGE_BYTES + offs[held], elem_bytes)
        return out

    def write(self, pas: np.ndarray, data: np.ndarray) -> None:
        """Store row ``i`` of ``data`` (uint8, ``(len(pas), elem_bytes)``) at ``pas[i]``;
        the last write to a byte wins, as element order in a Triton store."""
        elem_bytes = data.shape[1]
        offs = self._offsets(pas, elem_bytes)
        pages = pas // PAGE_BYTES
        rows = self._find(pages)
        if (rows < 0).any():
            self._add(np.unique(pages[rows < 0]))
            rows = self._find(pages)
        flat = rows * PAGE_BYTES + offs
        mem = self._rows.reshape(-1)
        if elem_bytes in _UINT and not (flat % elem_bytes).any():
            word = _UINT[elem_bytes]
            mem.view(word)[flat // elem_bytes] = np.ascontiguousarray(data).view(word).reshape(-1)
        else:
            mem[flat[:, None] + np.arange(elem_bytes)] = data

    def _offsets(self, pas: np.ndarray, elem_bytes: int) -> np.ndarray:
        offs = pas % PAGE_BYTES
        if np.any(offs + elem_bytes > PAGE_BYTES):
            raise AddressFault(f"an element of {elem_bytes} bytes crosses a {PAGE_BYTES} B page")
        return offs

    def _find(self, pages: np.ndarray) -> np.ndarray:
        """Each page's row, -1 where the page is not held."""
        ids = self._sorted_ids
        if not ids.size:
            return np.full(pages.shape, -1, np.int64)
        at = np.minimum(np.searchsorted(ids, pages), ids.size - 1)
        return np.where(ids[at] == pages, self._sorted_rows[at], -1)

    def _add(self, pages: np.ndarray) -> None:
        """Zeroed rows for ``pages`` (sorted, none held yet)."""
        need = self._used + pages.size
        if need > len(self._rows):
            grown = np.zeros((max(need, 2 * len(self._rows)), PAGE_BYTES), np.uint8)
            grown[: self._used] = self._rows[: self._used]
            self._rows = grown
        rows = np.arange(self._used, need, dtype=np.int64)
        self._used = need
        ids = np.concatenate((self._sorted_ids, pages))
        order = np.argsort(ids, kind="stable")
        self._sorted_ids = ids[order]
        self._sorted_rows = np.concatenate((self._sorted_rows, rows))[order]
        self._row_of.update(zip(pages.tolist(), rows.tolist(), strict=True))

    def _take(self, flat: np.ndarray, elem_bytes: int) -> np.ndarray:
        """The ``elem_bytes`` bytes at each flat index into the backing rows (a copy)."""
        mem = self._rows.reshape(-1)
        if elem_bytes in _UINT and not (flat % elem_bytes).any():
            word = _UINT[elem_bytes]
            return mem.view(word)[flat // elem_bytes].view(np.uint8).reshape(-1, elem_bytes)
        return mem[flat[:, None] + np.arange(elem_bytes)]


def _page_spans(pieces: list[tuple[int, int]]) -> Iterator[tuple[int, int, int]]:
    """``(page, offset in it, bytes)`` of ``(PA, nbytes)`` pieces, cut at page ends."""
    for pa, n in pieces:
        while n:
            page, off = divmod(pa, PAGE_BYTES)
            k = min(n, PAGE_BYTES - off)
            yield page, off, k
            pa, n = pa + k, n - k


# Element sizes read and written as one machine word when elements are aligned to it.
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

"""A PE's page table, made of shared tables of runs (ADR-0011 D-VA2, D-VA3).

A mapping is held as *runs* ``(first VA page, end page, PA of the first page, end VA
of the valid bytes)``: a page maps to its run's PA plus its offset in it, so a 2 GiB
tensor is one run, not 500,000 pages. A :class:`PageTable` is one install message's
runs, shared by every MMU it lands on (:mod:`kernbench.address.sorted_tables`:
sorted, copy on write; 16,384 PEs would otherwise hold 268 million runs); ``map`` and
``unmap`` of a range on one PE, as tests and the Triton layer do, make that PE a new
table of its own.
"""

from __future__ import annotations

import bisect

from kernbench.address.sorted_tables import Ranged, SortedTables
from kernbench.errors import AddressFault
from kernbench.timebase import on_grid

# (first VA page, end page, PA of the first page, end VA of the valid bytes)
Run = tuple[int, int, int, int]


def page_run(name: str, va: int, pa: int, nbytes: int, valid: int, page_size: int) -> Run:
    """The run mapping ``[va, va+nbytes)`` onto ``[pa, pa+nbytes)``, all page-aligned,
    of which the first ``valid`` bytes may be accessed; a fault naming ``name`` if not
    aligned."""
    if (va | pa | nbytes) & (page_size - 1):
        raise AddressFault(
            f"{name}: map {va:#x} -> {pa:#x} of {nbytes} bytes is not aligned "
            f"to the page size {page_size}"
        )
    shift = page_size.bit_length() - 1
    return (va >> shift, (va + nbytes) >> shift, pa, va + valid)


def overlap(runs: list[Run]) -> int:
    """The index of the first run (sorted by first page) that overlaps the one before
    it, or -1 if none does."""
    for k in range(1, len(runs)):
        if runs[k - 1][1] > runs[k][0]:
            return k
    return -1


class PageTable(Ranged):
    """Runs sorted by first page, never overlapping, never empty; never changed once
    made (MMUs share it). Its range: its first page to past its last."""

    def __init__(self, runs: list[Run]) -> None:
        super().__init__(runs[0][0], max(run[1] for run in runs))
        self.runs = runs
        self.starts = [run[0] for run in runs]
        self.pages = sum(run[1] - run[0] for run in runs)

    def find(self, page: int) -> Run | None:
        """The run holding ``page``, or None."""
        i = bisect.bisect_right(self.starts, page) - 1
        if i < 0 or page >= self.runs[i][1]:
            return None
        return self.runs[i]

    def without(self, lo: int, hi: int, shift: int) -> list[Run]:
        """Its runs once pages ``[lo, hi)`` are unmapped (a run cut at either end)."""
        kept: list[Run] = []
        for start, end, pa, limit in self.runs:
            if end <= lo or start >= hi:
                kept.append((start, end, pa, limit))
                continue
            if start < lo:
                kept.append((start, lo, pa, min(limit, lo << shift)))
            if end > hi:
                kept.append((hi, end, pa + ((hi - start) << shift), limit))
        return kept


class PeMMU:
    """One PE's page table: shared :class:`PageTable` s, sorted. It also knows the VA
    range of every tensor it holds, so a VA inside a tensor but outside its shards'
    bytes (a hole) is a fault naming the tensor, not a page fault."""

    def __init__(self, name: str, page_size: int, tlb_overhead_ns: float) -> None:
        self.name = name
        self.page_size = page_size
        self.shift = page_size.bit_length() - 1
        self.mask = page_size - 1
        self.tlb_overhead_ns = on_grid(tlb_overhead_ns)  # a multiple: exact sums
        self._index: SortedTables[PageTable] = SortedTables(_merged)
        self._last: Run = (0, 0, 0, 0)  # the run found last (empty at first)
        self._tensors: dict[int, tuple[int, str]] = {}  # VA base -> (end, name)
        self.generation = 0  # bumped by every change (translation caches check it)

    @property
    def mapped_pages(self) -> int:
        return sum(table.pages for table in self._index.tables)

    def add_tensor(self, base: int, span: int, name: str) -> None:
        self._tensors[base] = (base + span, name)
        self.generation += 1

    def remove_tensor(self, base: int) -> None:
        self._tensors.pop(base, None)
        self.generation += 1

    def attach(self, table: PageTable) -> None:
        """Map ``table``'s runs (a bulk install: the table is shared, not copied,
        unless its range meets one of this PE's own)."""
        if not self._insert(table):
            raise AddressFault(
                f"{self.name}: pages {table.lo:#x}..{table.hi:#x} overlap a mapped page"
            )

    def detach(self, table: PageTable) -> None:
        """Unmap what ``table`` mapped: drop it, or, if this PE's copy changed since
        (copy on write), unmap its runs' pages."""
        if self._index.drop(table):
            self._changed()
            return
        for start, end, _, _ in table.runs:
            self.unmap(start << self.shift, (end - start) << self.shift)

    def map(self, va: int, pa: int, nbytes: int, valid_bytes: int | None = None) -> None:
        """Map ``[va, va+nbytes)`` onto ``[pa, pa+nbytes)``; all page-aligned, over no
        page already mapped. Only the first ``valid_bytes`` (default all) may be accessed."""
        valid = nbytes if valid_bytes is None else valid_bytes
        run = page_run(self.name, va, pa, nbytes, valid, self.page_size)
        if run[0] == run[1]:
            return  # no page
        if not self._insert(PageTable([run])):
            raise AddressFault(f"{self.name}: map {va:#x}+{nbytes} overlaps a mapped page")

    def unmap(self, va: int, nbytes: int) -> None:
        """Unmap every mapped page of ``[va, va+nbytes)`` (page-aligned)."""
        lo, hi = va >> self.shift, (va + nbytes) >> self.shift
        tables: list[PageTable] = []
        for table in self._index.tables:
            if table.hi <= lo or table.lo >= hi:
                tables.append(table)
            else:  # this PE's own copy, without the range
                kept = table.without(lo, hi, self.shift)
                if kept:
                    tables.append(PageTable(kept))
        self._index.set(tables)
        self._changed()

    def _insert(self, table: PageTable) -> bool:
        if not self._index.insert(table):
            return False
        self._changed()
        return True

    def _changed(self) -> None:
        self.generation += 1
        self._last = (0, 0, 0, 0)

    def run_of(self, va: int) -> Run | None:
        """The run mapping ``va``'s page, or None. O(log runs), O(1) when it is the last."""
        page = va >> self.shift
        run = self._last
        if run[0] <= page < run[1]:
            return run
        j = bisect.bisect_right(self._index.los, page) - 1
        if j < 0:
            return None
        found = self._index.tables[j].find(page)
        if found is None:
            return None
        self._last = found
        return found

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


def _merged(tables: list[PageTable]) -> PageTable | None:
    """The tables' runs as one table of a PE's own, or None if two overlap."""
    runs = sorted([run for t in tables for run in t.runs])
    return PageTable(runs) if overlap(runs) < 0 else None

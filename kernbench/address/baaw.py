"""The BAAW: one PE's table of LA segments inside PE_DMA (ADR-0011 D-LA3, D-LA4).

A :class:`SegmentTable` is one install message's segments, shared by every BAAW it
lands on (:mod:`kernbench.address.sorted_tables`: sorted, copy on write); a
:class:`Baaw` finds a segment by bisect with a one-entry cache.
"""

from __future__ import annotations

import bisect

from kernbench.address.segment import Segment
from kernbench.address.sorted_tables import Ranged, SortedTables
from kernbench.errors import AddressFault
from kernbench.sim.fabric import PhysicalRequest


class SegmentTable(Ranged):
    """Segments sorted by LA base, never overlapping, never empty; never changed once
    made (BAAWs share it). Its range: its first LA to past its last."""

    def __init__(self, segs: list[Segment]) -> None:
        super().__init__(segs[0].la_base, max(seg.la_end for seg in segs))
        self.segs = segs
        self.bases = [seg.la_base for seg in segs]

    def find(self, la: int) -> Segment | None:
        """The segment holding ``la``, or None."""
        i = bisect.bisect_right(self.bases, la) - 1
        if i < 0 or la >= self.segs[i].la_end:
            return None
        return self.segs[i]


def overlap(segs: list[Segment]) -> int:
    """The index of the first segment (sorted by base) that overlaps the one before
    it, or -1 if none does."""
    for k in range(1, len(segs)):
        if segs[k - 1].la_end > segs[k].la_base:
            return k
    return -1


class Baaw:
    """One PE's segment table: shared :class:`SegmentTable` s, sorted."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._index: SortedTables[SegmentTable] = SortedTables(_merged)
        self._last: Segment | None = None
        self.generation = 0  # bumped by every install / uninstall (translation caches)

    @property
    def segments(self) -> list[Segment]:
        return [seg for table in self._index.tables for seg in table.segs]

    def install(self, seg: Segment) -> None:
        if not self._insert(SegmentTable([seg])):
            raise AddressFault(f"{self.name}: segment {seg.la_base:#x}+{seg.la_size} overlaps")

    def install_table(self, table: SegmentTable) -> None:
        """Install ``table``'s segments (a bulk install: the table is shared, not
        copied, unless its range meets one of this PE's own)."""
        if not self._insert(table):
            raise AddressFault(f"{self.name}: segments {table.lo:#x}..{table.hi:#x} overlap")

    def uninstall(self, la_base: int) -> None:
        tables = self._index.tables
        j = bisect.bisect_right(self._index.los, la_base) - 1
        table = tables[j] if j >= 0 else None
        i = bisect.bisect_left(table.bases, la_base) if table is not None else 0
        if table is None or i == len(table.bases) or table.bases[i] != la_base:
            raise AddressFault(f"{self.name}: no segment at LA {la_base:#x} to uninstall")
        kept = table.segs[:i] + table.segs[i + 1 :]  # this PE's own copy, without it
        rest = tables[:j] + tables[j + 1 :]
        self._index.set(rest + [SegmentTable(kept)] if kept else rest)
        self._changed()

    def uninstall_table(self, table: SegmentTable) -> None:
        """Remove what ``table`` installed: drop it, or, if this PE's copy changed
        since (copy on write), its segments one by one."""
        if self._index.drop(table):
            self._changed()
            return
        for seg in table.segs:
            self.uninstall(seg.la_base)

    def _insert(self, table: SegmentTable) -> bool:
        if not self._index.insert(table):
            return False
        self._changed()
        return True

    def _changed(self) -> None:
        self.generation += 1
        self._last = None

    def lookup(self, la: int) -> Segment:
        """The segment holding ``la``; a clear fault naming PE and address if none."""
        seg = self._last
        if seg is not None and seg.la_base <= la < seg.la_end:
            return seg
        j = bisect.bisect_right(self._index.los, la) - 1
        found = self._index.tables[j].find(la) if j >= 0 else None
        if found is None:
            raise AddressFault(
                f"{self.name}: LA {la:#x} is outside every BAAW segment "
                f"({len(self.segments)} installed)"
            )
        self._last = found
        return found

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


def _merged(tables: list[SegmentTable]) -> SegmentTable | None:
    """The tables' segments as one table of a PE's own, or None if two overlap."""
    segs = sorted([seg for t in tables for seg in t.segs], key=_base)
    return SegmentTable(segs) if overlap(segs) < 0 else None


def _base(seg: Segment) -> int:
    return seg.la_base

"""The BAAW: one PE's table of LA segments inside PE_DMA (ADR-0011 D-LA3, D-LA4).

D-VA3's sharded install puts a tensor's segments on every PE of the SIPs that hold
it: one message, the same segments on each PE. A :class:`SegmentTable` is one
message's segments, made once and shared by every BAAW it lands on, so a tensor of N
shards installed on N PEs costs N segments, not N², and installing it on a PE costs
one insert. A :class:`Baaw` holds its tables sorted, their LA ranges never
overlapping, found by bisect with a one-entry cache; a change to one PE alone
(``install``, ``uninstall`` of one segment) makes that PE a new table in place of the
old (copy on write): a shared table never changes.
"""

from __future__ import annotations

import bisect

from kernbench.address.segment import Segment
from kernbench.errors import AddressFault
from kernbench.sim.fabric import PhysicalRequest


class SegmentTable:
    """Segments sorted by LA base, never overlapping, never empty; never changed once
    made (BAAWs share it)."""

    def __init__(self, segs: list[Segment]) -> None:
        self.segs = segs
        self.bases = [seg.la_base for seg in segs]
        self.lo = segs[0].la_base
        self.hi = max(seg.la_end for seg in segs)

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
        self._tables: list[SegmentTable] = []
        self._los: list[int] = []  # each table's first LA, for bisect
        self._last: Segment | None = None
        self.generation = 0  # bumped by every install / uninstall (translation caches)

    @property
    def segments(self) -> list[Segment]:
        return [seg for table in self._tables for seg in table.segs]

    def install(self, seg: Segment) -> None:
        if not self._insert(SegmentTable([seg])):
            raise AddressFault(f"{self.name}: segment {seg.la_base:#x}+{seg.la_size} overlaps")

    def install_table(self, table: SegmentTable) -> None:
        """Install ``table``'s segments (a bulk install: the table is shared, not
        copied, unless its range meets one of this PE's own)."""
        if not self._insert(table):
            raise AddressFault(f"{self.name}: segments {table.lo:#x}..{table.hi:#x} overlap")

    def uninstall(self, la_base: int) -> None:
        j = bisect.bisect_right(self._los, la_base) - 1
        table = self._tables[j] if j >= 0 else None
        i = bisect.bisect_left(table.bases, la_base) if table is not None else 0
        if table is None or i == len(table.bases) or table.bases[i] != la_base:
            raise AddressFault(f"{self.name}: no segment at LA {la_base:#x} to uninstall")
        kept = table.segs[:i] + table.segs[i + 1 :]  # this PE's own copy, without it
        rest = self._tables[:j] + self._tables[j + 1 :]
        self._set(rest + [SegmentTable(kept)] if kept else rest)

    def uninstall_table(self, table: SegmentTable) -> None:
        """Remove what ``table`` installed: drop it, or, if this PE's copy changed
        since (copy on write), its segments one by one."""
        i = bisect.bisect_left(self._los, table.lo)
        if i < len(self._tables) and self._tables[i] is table:
            del self._tables[i], self._los[i]
            self._changed()
            return
        for seg in table.segs:
            self.uninstall(seg.la_base)

    def _insert(self, table: SegmentTable) -> bool:
        """Add ``table``: shared if its LA range meets no other's, else merged with the
        tables it meets into a new one of this PE's own. False if segments overlap."""
        i = bisect.bisect_right(self._los, table.lo)
        tables = self._tables
        if (i == 0 or tables[i - 1].hi <= table.lo) and (
            i == len(tables) or tables[i].lo >= table.hi
        ):
            tables.insert(i, table)
            self._los.insert(i, table.lo)
            self._changed()
            return True
        met = [t for t in tables if t.lo < table.hi and table.lo < t.hi]
        segs = sorted([seg for t in met for seg in t.segs] + table.segs, key=_base)
        if overlap(segs) >= 0:
            return False
        self._set([t for t in tables if t not in met] + [SegmentTable(segs)])
        return True

    def _set(self, tables: list[SegmentTable]) -> None:
        tables.sort(key=_lo)
        self._tables = tables
        self._los = [t.lo for t in tables]
        self._changed()

    def _changed(self) -> None:
        self.generation += 1
        self._last = None

    def lookup(self, la: int) -> Segment:
        """The segment holding ``la``; a clear fault naming PE and address if none."""
        seg = self._last
        if seg is not None and seg.la_base <= la < seg.la_end:
            return seg
        j = bisect.bisect_right(self._los, la) - 1
        found = self._tables[j].find(la) if j >= 0 else None
        if found is None:
            raise AddressFault(
                f"{self.name}: LA {la:#x} is outside every BAAW segment "
                f"({sum(len(t.segs) for t in self._tables)} installed)"
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


def _base(seg: Segment) -> int:
    return seg.la_base


def _lo(table: SegmentTable) -> int:
    return table.lo

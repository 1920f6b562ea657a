"""A PE's translation table made of shared tables (ADR-0011 D-VA3): what its BAAW
(:mod:`kernbench.address.baaw`) and its MMU (:mod:`kernbench.address.page_table`) both
hold.

D-VA3 installs a sharded tensor on every PE of the SIPs that hold it: one message, the
same entries (LA segments, VA page runs) on each PE. The message's entries are one
table, made once and shared by every PE it lands on, so a tensor of N shards installed
on N PEs costs N entries, not N², and installing it on a PE costs one insert. A PE
holds its tables sorted by range, the ranges never overlapping; a change to one PE
alone makes that PE a new table in place of the old (copy on write): a shared table
never changes.

The BAAW and the MMU each hold a :class:`SortedTables` rather than derive from it, and
look up by bisecting its ``los`` themselves: a compiled build treats every attribute of
a class with a generic base as possibly unset and checks it on each read, which would
put five checks on a translation's path (the holders' cache hits touch nothing here).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Generic, TypeVar


class Ranged:
    """A shared table's key range ``[lo, hi)`` (LA bytes, VA pages); never changed once
    made."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi


T = TypeVar("T", bound=Ranged)


class SortedTables(Generic[T]):
    """Tables sorted by ``lo`` (``los[i]`` is ``tables[i].lo``, for bisect), their
    ranges never overlapping. ``merged`` makes one new table of several tables'
    entries, or None if two entries overlap."""

    def __init__(self, merged: Callable[[list[T]], T | None]) -> None:
        self.tables: list[T] = []
        self.los: list[int] = []
        self.merged = merged

    def insert(self, table: T) -> bool:
        """Add ``table``: shared if its range meets no other's, else merged with the
        tables it meets into a new one of this PE's own. False (nothing changed) if
        entries overlap."""
        i = bisect.bisect_right(self.los, table.lo)
        tables = self.tables
        if (i == 0 or tables[i - 1].hi <= table.lo) and (
            i == len(tables) or tables[i].lo >= table.hi
        ):
            tables.insert(i, table)
            self.los.insert(i, table.lo)
            return True
        met = [t for t in tables if t.lo < table.hi and table.lo < t.hi]
        merged = self.merged([*met, table])
        if merged is None:
            return False
        self.set([t for t in tables if t not in met] + [merged])
        return True

    def drop(self, table: T) -> bool:
        """Remove ``table`` if this PE still holds it as installed; False if its copy
        changed since (copy on write), which the caller then undoes entry by entry."""
        i = bisect.bisect_left(self.los, table.lo)
        if i < len(self.tables) and self.tables[i] is table:
            del self.tables[i], self.los[i]
            return True
        return False

    def set(self, tables: list[T]) -> None:
        """Hold ``tables`` (non-overlapping, any order) instead."""
        tables.sort(key=_lo)
        self.tables = tables
        self.los = [t.lo for t in tables]


def _lo(table: Ranged) -> int:
    return table.lo

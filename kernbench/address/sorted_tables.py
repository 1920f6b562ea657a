"""A PE's translation table made of shared tables (ADR-0011 D-VA3): what its BAAW
(:mod:`kernbench.address.baaw`) and its MMU (:mod:`kernbench.address.page_table`) both
are.

D-VA3 installs a sharded tensor on every PE of the SIPs that hold it: one message, the
same entries (LA segments, VA page runs) on each PE. The message's entries are one
table, made once and shared by every PE it lands on, so a tensor of N shards installed
on N PEs costs N entries, not N², and installing it on a PE costs one insert. A PE
holds its tables sorted by range, the ranges never overlapping; a change to one PE
alone makes that PE a new table in place of the old (copy on write): a shared table
never changes. Lookups stay in the two holders (each bisects ``_los`` itself), so a
compiled build calls nothing generic per access.
"""

from __future__ import annotations

import bisect
from typing import Generic, TypeVar


class Ranged:
    """A shared table's key range ``[lo, hi)`` (LA bytes, VA pages); never changed once
    made."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi


T = TypeVar("T", bound=Ranged)


class SortedTables(Generic[T]):
    """Tables sorted by ``lo``, their ranges never overlapping. Each change bumps
    ``generation`` (translation caches check it)."""

    def __init__(self) -> None:
        self._tables: list[T] = []
        self._los: list[int] = []  # each table's lo, for bisect
        self.generation = 0

    def _merged(self, met: list[T], table: T) -> T | None:
        """One new table of ``met``'s and ``table``'s entries, or None if two overlap."""
        raise NotImplementedError

    def _insert(self, table: T) -> bool:
        """Add ``table``: shared if its range meets no other's, else merged with the
        tables it meets into a new one of this PE's own. False if entries overlap."""
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
        merged = self._merged(met, table)
        if merged is None:
            return False
        self._set([t for t in tables if t not in met] + [merged])
        return True

    def _drop(self, table: T) -> bool:
        """Remove ``table`` if this PE still holds it as installed; False if its copy
        changed since (copy on write), which the caller then undoes entry by entry."""
        i = bisect.bisect_left(self._los, table.lo)
        if i < len(self._tables) and self._tables[i] is table:
            del self._tables[i], self._los[i]
            self._changed()
            return True
        return False

    def _set(self, tables: list[T]) -> None:
        tables.sort(key=_lo)
        self._tables = tables
        self._los = [t.lo for t in tables]
        self._changed()

    def _changed(self) -> None:
        self.generation += 1


def _lo(table: Ranged) -> int:
    return table.lo

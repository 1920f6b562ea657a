"""Tables shared between PEs behave as each PE's own (kernbench.address.page_table, baaw).

A bulk install hands every PE the same table; a PE's own change (map, unmap, install
or uninstall of one entry) must then copy it, never alter what the other PEs see,
and removing the install later must remove exactly what it added, whatever the PE did
in between. Two MMUs (two BAAWs) sharing tables are driven by random operations and
compared after each with a page-by-page (segment-by-segment) table of their own.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.address.baaw import Baaw, SegmentTable
from kernbench.address.page_table import PageTable, PeMMU, page_run
from kernbench.address.segment import Segment
from kernbench.errors import AddressFault

PAGE = 4096
REGION = 16  # pages (LA bytes x 256) of each table's own region

# (kind, table number or target, first page, pages): kinds "share" (a new table of
# runs in the table's own region, onto both PEs or one), "map", "unmap", "drop".
op = st.tuples(
    st.sampled_from(["share", "share", "map", "unmap", "drop"]),
    st.integers(0, 2),  # both PEs (2), or PE 0 or 1
    st.integers(0, 4 * REGION - 1),
    st.integers(1, 6),
)


def runs_in(region: int, first: int, pages: int) -> list[tuple[int, int]]:
    """Two runs (first page, pages) inside table ``region``'s own pages."""
    base = region * REGION
    a = first % (REGION // 2)
    return [(base + a, min(pages, REGION // 2 - a)), (base + REGION // 2 + a // 2, 2)]


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_page_tables_shared_by_two_mmus_translate_like_their_own_page_tables(ops):
    mmus = [PeMMU(f"m{i}", PAGE, 2.0) for i in range(2)]
    want: list[dict[int, int]] = [{}, {}]
    tables: list[tuple[PageTable, list[int]]] = []  # each shared table and its PEs
    for kind, who, first, pages in ops:
        pes = [0, 1] if who == 2 else [who]
        if kind == "share" and len(tables) < 4:
            region = len(tables)
            runs = [
                page_run("t", (p0 << 12), (7000 + p0) << 12, n << 12, n << 12, PAGE)
                for p0, n in runs_in(region, first, pages)
            ]
            table = PageTable(sorted(runs))
            if any(p in want[pe] for pe in pes for r in runs for p in range(r[0], r[1])):
                continue  # the PE mapped these pages itself: a shared install never meets them
            for pe in pes:
                mmus[pe].attach(table)
                for r in runs:
                    want[pe].update({p: (r[2] >> 12) + p - r[0] for p in range(r[0], r[1])})
            tables.append((table, pes))
        elif kind == "map":
            pe, span = pes[0], range(first, first + pages)
            if any(p in want[pe] for p in span):
                with pytest.raises(AddressFault, match="overlaps a mapped page"):
                    mmus[pe].map(first << 12, (9000 + first) << 12, pages << 12)
                continue
            mmus[pe].map(first << 12, (9000 + first) << 12, pages << 12)
            want[pe].update({p: 9000 + p for p in span})
        elif kind == "unmap":
            for pe in pes:
                mmus[pe].unmap(first << 12, pages << 12)
                for p in range(first, first + pages):
                    want[pe].pop(p, None)
        elif kind == "drop" and tables:
            table, holders = tables[first % len(tables)]
            for pe in holders:
                mmus[pe].detach(table)
                for r in table.runs:
                    for p in range(r[0], r[1]):
                        want[pe].pop(p, None)
            holders.clear()
        for pe in (0, 1):
            assert mmus[pe].mapped_pages == len(want[pe])
            for p in range(4 * REGION + 8):
                got = mmus[pe].translate((p << 12) + 5)
                assert got == (None if p not in want[pe] else (want[pe][p] << 12) + 5)


def segment(la: int, size: int) -> Segment:
    return Segment(la, size, False, agg_pa_base=la * 3, agg_node_id="r")


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_segment_tables_shared_by_two_baaws_resolve_like_their_own_tables(ops):
    baaws = [Baaw(f"b{i}") for i in range(2)]
    want: list[dict[int, int]] = [{}, {}]  # LA base -> size
    tables: list[tuple[SegmentTable, list[int]]] = []

    def free(pe: int, la: int, size: int) -> bool:
        return all(b + s <= la or la + size <= b for b, s in want[pe].items())

    for kind, who, first, pages in ops:
        pes = [0, 1] if who == 2 else [who]
        if kind == "share" and len(tables) < 4:
            region = len(tables)
            segs = [segment(p0 << 8, n << 8) for p0, n in runs_in(region, first, pages)]
            if not all(free(pe, s.la_base, s.la_size) for pe in pes for s in segs):
                continue
            table = SegmentTable(sorted(segs, key=lambda s: s.la_base))
            for pe in pes:
                baaws[pe].install_table(table)
                want[pe].update({s.la_base: s.la_size for s in segs})
            tables.append((table, pes))
        elif kind == "map":  # one segment of a PE's own
            pe, seg = pes[0], segment(first << 8, pages << 8)
            if not free(pe, seg.la_base, seg.la_size):
                with pytest.raises(AddressFault, match="overlaps"):
                    baaws[pe].install(seg)
                continue
            baaws[pe].install(seg)
            want[pe][seg.la_base] = seg.la_size
        elif kind == "unmap":  # one segment, if there is one at that base
            for pe in pes:
                if (first << 8) in want[pe]:
                    baaws[pe].uninstall(first << 8)
                    del want[pe][first << 8]
                else:
                    with pytest.raises(AddressFault, match="no segment at LA"):
                        baaws[pe].uninstall(first << 8)
        elif kind == "drop" and tables:
            table, holders = tables[first % len(tables)]
            for pe in holders:
                if all(want[pe].get(s.la_base) == s.la_size for s in table.segs):
                    baaws[pe].uninstall_table(table)
                    for s in table.segs:
                        del want[pe][s.la_base]
            holders.clear()
        for pe in (0, 1):
            got = [(s.la_base, s.la_size) for s in baaws[pe].segments]
            assert got == sorted(want[pe].items())
            for la in range(0, (4 * REGION + 8) << 8, 128):
                owner = [b for b, s in want[pe].items() if b <= la < b + s]
                if owner:
                    assert baaws[pe].lookup(la).la_base == owner[0]
                else:
                    with pytest.raises(AddressFault, match="outside every BAAW segment"):
                        baaws[pe].lookup(la)


def test_a_pes_own_page_between_a_shared_tables_runs_outlives_the_table():
    """PE 0 maps a page of its own between two runs of a table both PEs share: its
    copy of the table is merged with it; removing the table leaves that page, and PE
    1's table never had it."""
    shared = PageTable([page_run("t", 0x10000, 0x80000, PAGE, PAGE, PAGE),
                        page_run("t", 0x12000, 0x90000, PAGE, PAGE, PAGE)])  # fmt: skip
    mmus = [PeMMU(f"m{i}", PAGE, 2.0) for i in range(2)]
    for mmu in mmus:
        mmu.attach(shared)
    mmus[0].map(0x11000, 0xA0000, PAGE)
    assert [mmu.translate(0x11000) for mmu in mmus] == [0xA0000, None]
    for mmu in mmus:
        mmu.detach(shared)
    assert [mmu.translate(0x11000) for mmu in mmus] == [0xA0000, None]
    assert [mmu.mapped_pages for mmu in mmus] == [1, 0]


def test_a_pes_own_segment_between_a_shared_tables_segments_outlives_the_table():
    shared = SegmentTable([segment(0x100, 0x100), segment(0x300, 0x100)])
    baaws = [Baaw(f"b{i}") for i in range(2)]
    for baaw in baaws:
        baaw.install_table(shared)
    baaws[0].install(segment(0x200, 0x80))
    baaws[1].uninstall(0x300)
    assert [len(b.segments) for b in baaws] == [3, 1]
    baaws[0].uninstall_table(shared)
    assert [(s.la_base, s.la_size) for s in baaws[0].segments] == [(0x200, 0x80)]
    assert [(s.la_base, s.la_size) for s in shared.segs] == [(0x100, 0x100), (0x300, 0x100)]

"""Property tests (hypothesis): BAAW conserves bytes; VA translate returns allocated PAs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.address.la import LA_BASE, Baaw, make_segment
from kernbench.address.pa import pe_base
from kernbench.address.va import PeMMU
from kernbench.topology.graph import build_graph
from tests.support import make_cfg

G, N = 256, 8  # default granule and channels per PE
STRIPE = G * N
GRAPH_1TO1 = build_graph(make_cfg(one_to_one=True).topology)


@settings(max_examples=200, deadline=None)
@given(
    stripes_at=st.integers(0, 1000),
    stripes=st.integers(1, 64),
    data=st.data(),
)
def test_baaw_requests_cover_the_access_exactly_and_stay_in_their_channel(
    stripes_at, stripes, data
):
    owner = GRAPH_1TO1.pes[5]
    a, size = stripes_at * STRIPE, stripes * STRIPE  # the segment's PE-HBM range [A, A+S)
    seg = make_segment(GRAPH_1TO1, owner, LA_BASE, pe_base(0, 0, 5) + a, size)
    baaw = Baaw("b")
    baaw.install(seg)
    o = data.draw(st.integers(0, size - 1))
    n = data.draw(st.integers(1, size - o))
    reqs = baaw.resolve(LA_BASE + o, n)
    assert sum(r[2] for r in reqs) == n
    seen = set()
    for node, pa, nbytes, ch in reqs:
        c = ch - owner.pe * N
        assert node == f"sip0.cube0.pe5.ch_r{ch}" and 0 <= c < N
        for k in range(nbytes):  # every byte: its channel, and inside that channel's range
            off = pa + _pe_delta(pa, k) - pe_base(0, 0, 5)
            assert (off // G) % N == c
            chan_off = (off // STRIPE) * G + off % G
            assert a // N <= chan_off < (a + size) // N
            assert a + o <= off < a + o + n
            assert off not in seen
            seen.add(off)
    assert len(seen) == n


def _pe_delta(pa: int, k: int) -> int:
    """PE offset of the k-th byte of a channel piece starting at PA ``pa``."""
    start = pa % G
    j = start + k
    return (j // G) * STRIPE + j % G - start


@settings(max_examples=100, deadline=None)
@given(
    pages=st.lists(st.integers(0, 1 << 20), min_size=1, max_size=8, unique=True),
    data=st.data(),
)
def test_va_translate_of_a_mapped_range_returns_the_allocator_pas(pages, data):
    mmu = PeMMU("m", 4096, 2.0)
    va0 = LA_BASE
    for i, ppn in enumerate(pages):  # VA page i -> an arbitrary allocated PA page
        mmu.map(va0 + i * 4096, ppn * 4096, 4096)
    o = data.draw(st.integers(0, len(pages) * 4096 - 1))
    n = data.draw(st.integers(1, len(pages) * 4096 - o))
    pieces = mmu.translate_range(va0 + o, n)
    assert sum(nb for _, nb in pieces) == n
    va = va0 + o
    for pa, nb in pieces:
        page = (va - va0) // 4096
        assert pa == pages[page] * 4096 + (va - va0) % 4096
        assert (va % 4096) + nb <= 4096  # split at page boundaries
        va += nb


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 1 << 18), min_size=1, max_size=3), data=st.data())
def test_va_translate_through_the_runtime_returns_the_pas_the_pe_allocator_gave(sizes, data):
    from tests.address_support import model_cfg
    from tests.support import make_system

    system, ctx = make_system(model_cfg("va"))
    tensors = [ctx.deploy(n) for n in sizes]
    t = data.draw(st.sampled_from(tensors))
    i = data.draw(st.integers(0, len(t.shards) - 1))
    shard = t.shards[i]
    if shard.nbytes == 0:
        return
    o = data.draw(st.integers(0, shard.nbytes - 1))
    n = data.draw(st.integers(1, shard.nbytes - o))
    pieces = system.address.mmus[data.draw(st.integers(0, 15))].translate_range(
        t.shard_ptr(i) + o, n
    )
    assert pieces[0][0] == shard.pa + o
    assert sum(nb for _, nb in pieces) == n
    pa = shard.pa + o
    for got, nb in pieces:  # one shard is one contiguous HBM allocation
        assert got == pa
        pa += nb


@settings(max_examples=100, deadline=None)
@given(
    maps=st.lists(st.tuples(st.integers(1, 6), st.integers(0, 1 << 10)), min_size=1, max_size=6),
    cut=st.tuples(st.integers(0, 40), st.integers(0, 12)),
    data=st.data(),
)
def test_mmu_runs_translate_like_a_page_by_page_table(maps, cut, data):
    """Runs of pages, mapped back to back and then partly unmapped, translate every
    byte exactly as a table holding one entry per page would."""
    mmu, table, page = PeMMU("m", 4096, 2.0), {}, 0
    for npages, ppn in maps:  # VA pages [page, page+npages) -> PA pages from ppn
        mmu.map(LA_BASE + page * 4096, ppn * 4096, npages * 4096)
        table |= {page + k: (ppn + k) * 4096 for k in range(npages)}
        page += npages
    first, count = cut
    mmu.unmap(LA_BASE + first * 4096, count * 4096)
    for k in range(first, first + count):
        table.pop(k, None)
    assert mmu.mapped_pages == len(table)
    for _ in range(20):
        va = data.draw(st.integers(0, (page + 2) * 4096 - 1))
        want = table.get(va // 4096)
        assert mmu.translate(LA_BASE + va) == (None if want is None else want + va % 4096)

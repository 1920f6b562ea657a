"""The compiled build's progressive filling (``kernbench/sim/fairshare.c``) gives the
very rates of the pure build's (``fairshare.py``), bit for bit; its age order the same
positions.

Both are loaded from their files, whichever build this process imported: the ``.py``
from source, the C module from the extension the compiled build put beside it. The
inputs are random (hypothesis) with bandwidths and queue counts drawn from small sets,
so levels tie and the tie rule (the first used link among equal keys) decides; and
shaped like the solver's real inputs (requester names, link-id tuples, a topology's
bandwidth list longer than the links used).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import sim_native, sim_source

SOURCE = sim_source("fairshare")
NATIVE = sim_native("fairshare")
needs_native = pytest.mark.skipif(
    NATIVE is None, reason="a pure-Python install has no compiled fairshare"
)

BANDWIDTHS = [0.0, 1.0, 3.7, 8.0, 32.0, 64.0, 128.0]  # 0: a link that gives nothing
LINKS = 9


def same(a: list[float], b: list[float]) -> bool:
    """Equal bit for bit (``==`` would take -0.0 for 0.0)."""
    return len(a) == len(b) and all(x.hex() == y.hex() for x, y in zip(a, b, strict=True))


@needs_native
@settings(max_examples=400, deadline=None)
@given(
    bw=st.lists(st.sampled_from(BANDWIDTHS), min_size=LINKS, max_size=LINKS),
    queues=st.lists(
        st.tuples(
            st.sampled_from([0, 1, 7, 300]),  # requester numbers (FairFabric's Queue.rid)
            st.lists(st.integers(0, LINKS - 1), min_size=0, max_size=4),
        ),
        max_size=24,
    ),
)
def test_the_c_fill_equals_the_python_fill(bw, queues):
    requesters = [who for who, _ in queues]
    links = [tuple(ls) for _, ls in queues]  # repeats allowed: both count each
    expected = SOURCE.progressive_fill(requesters, links, bw)
    got = NATIVE.progressive_fill(requesters, links, bw)
    assert same(got, expected), (got, expected)


# Bandwidths that are not binary fractions: sums of shares round, levels land an ulp
# apart or exactly together, and the tie rule and the rounding floor (NO_RATE) decide
# about 1% of these inputs (seeded, so every run checks the same ones).
DECIMAL = [0.1, 0.3, 0.7, 1.1, 3.7]


@needs_native
def test_the_c_fill_equals_the_python_fill_where_rounding_decides():
    rng = random.Random(2026)
    for _ in range(5000):
        bw = [rng.choice(DECIMAL) for _ in range(6)]
        n = rng.randint(1, 12)
        requesters = [rng.choice((0, 1, 2)) for _ in range(n)]
        links = [tuple(rng.sample(range(6), rng.randint(1, 3))) for _ in range(n)]
        expected = SOURCE.progressive_fill(requesters, links, bw)
        got = NATIVE.progressive_fill(requesters, links, bw)
        assert same(got, expected), (requesters, links, bw, got, expected)


@needs_native
@pytest.mark.parametrize(
    "requesters, links, bw",
    [
        # Two links saturate at one level: the first used goes first (0.05, not an ulp
        # off it, for the last queue).
        (
            [2, 1, 0, 2, 2, 2, 1, 1],
            [(2, 3, 5), (4, 2), (4, 1, 0), (2,), (1, 4, 5), (1,), (5, 4), (0,)],
            [0.1, 3.7, 0.1, 0.3, 0.1, 3.7],
        ),
        # A queue starts on a link at the level it saturates at, but for rounding: its
        # share of 8.9e-16 is zero.
        (
            [1, 0, 1, 2, 0, 0, 1],
            [(6,), (4, 8), (0, 6), (3, 1), (6, 4, 3), (1, 5, 3), (3, 4)],
            [3.7, 64.0, 8.0, 8.0, 8.0, 1.0, 3.7, 128.0, 128.0],
        ),
    ],
)
def test_the_tie_rule_and_the_rounding_floor(requesters, links, bw):
    expected = SOURCE.progressive_fill(requesters, links, bw)
    assert same(NATIVE.progressive_fill(requesters, links, bw), expected)


@needs_native
def test_bad_input_is_an_error_naming_it():
    with pytest.raises(IndexError, match="link id 3 of 3"):
        NATIVE.progressive_fill([0], [(3,)], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="one requester per queue"):
        NATIVE.progressive_fill([0, 1], [(0,)], [1.0])
    with pytest.raises(ValueError, match="requester number -1"):
        NATIVE.progressive_fill([-1], [(0,)], [1.0])
    with pytest.raises(TypeError, match="tuple"):
        NATIVE.progressive_fill([0], [[0]], [1.0])
    assert NATIVE.progressive_fill([], [], [1.0]) == []


@needs_native
@settings(max_examples=300, deadline=None)
@given(heads=st.lists(st.integers(0, 40) | st.integers(2**40, 2**40 + 3), max_size=40))
def test_the_c_age_order_equals_the_python_one(heads):
    """Positions oldest first; equal heads (never two queues' in a solve, but allowed)
    keep their order."""
    assert NATIVE.age_order(heads) == SOURCE.age_order(heads)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    queues=st.integers(20, 160),
    nlinks=st.sampled_from([70, 200]),
)
def test_the_heap_picks_the_link_the_scan_picks(seed, queues, nlinks):
    """Past ``SCAN_MAX`` links the fill finds the lowest key on a heap: the same rates,
    bit for bit, as the scan (``scan_max`` forces either way), in both builds' fills;
    bandwidths that round, so levels tie and the tie rule decides."""
    rng = random.Random(seed)
    bw = [rng.choice(DECIMAL + [8.0, 32.0]) for _ in range(nlinks)]
    requesters = [rng.randrange(queues // 3 + 1) for _ in range(queues)]
    links = [tuple(rng.sample(range(nlinks), rng.randint(1, 4))) for _ in range(queues)]
    scan = SOURCE.progressive_fill(requesters, links, bw, 1 << 30)
    assert same(SOURCE.progressive_fill(requesters, links, bw, 0), scan)
    if NATIVE is not None:
        assert same(NATIVE.progressive_fill(requesters, links, bw, 0), scan)
        assert same(NATIVE.progressive_fill(requesters, links, bw, 1 << 30), scan)
        assert same(NATIVE.progressive_fill(requesters, links, bw), scan)

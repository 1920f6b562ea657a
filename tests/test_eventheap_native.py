"""The compiled build's event heap (``kernbench/sim/eventheap.c``) leaves the very list
:mod:`heapq` leaves (``eventheap.py``, the pure build's), after every push and pop, on
a plain list and on its ``EventHeap`` (a list keeping its entries' keys in a C array,
which the PE queue keeps its events in).

Both are driven with the same random operations on entries shaped as the PE queue's,
``(time, eid, callback, argument)``: times from a small set, so they tie and the eids
decide (70-94% of a run's comparisons), and among them the entries the C leaves to the
generic comparison: ``-0.0`` beside ``0.0``, an int time, a NaN, eids past 64 bits,
and an eid shared by two entries, where the callbacks are compared (and raise as heapq
raises: eids are unique in a run, so a run never gets there).
"""

from __future__ import annotations

import heapq
import random

import pytest

from tests.support import sim_native, sim_source

NATIVE = sim_native("eventheap")
needs_native = pytest.mark.skipif(
    NATIVE is None, reason="a pure-Python install has no compiled eventheap"
)
TIMES = [0.0, 1.5, 2.0, 2.0000000000000004, 7.25, 100.0]


def test_the_pure_build_runs_heapq():
    source = sim_source("eventheap")
    assert (source.heappush, source.heappop) == (heapq.heappush, heapq.heappop)
    assert type(source.new_heap()) is list


def entry(rng: random.Random, eid: int) -> tuple:
    at: float = rng.choice(TIMES)
    odd = rng.random()
    if odd < 0.03:
        at = -0.0 if at == 0.0 else int(at)  # ties 0.0; an int time ties its float
    elif odd < 0.04:
        eid += 1 << 70  # past a C long long: compared as Python ints
    return (at, eid, print, eid)


def drive(seed: int, ops: int, ours: list) -> None:
    """The same pushes and pops on heapq and the C heap (``ours``, empty); the lists
    and the popped entries are the same objects at every step."""
    rng = random.Random(seed)
    theirs: list[tuple] = []
    eid = 0
    for _ in range(ops):
        if theirs and rng.random() < 0.45:
            assert NATIVE.heappop(ours) is heapq.heappop(theirs)
        else:
            eid += rng.randint(1, 3)
            item = entry(rng, eid)
            NATIVE.heappush(ours, item)
            heapq.heappush(theirs, item)
        assert ours == theirs and all(a is b for a, b in zip(ours, theirs, strict=True))
    while theirs:
        assert NATIVE.heappop(ours) is heapq.heappop(theirs)


@needs_native
@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kind", ["list", "EventHeap"])
def test_the_c_heap_leaves_heapqs_list(seed, kind):
    drive(seed, 2000, [] if kind == "list" else NATIVE.new_heap())


@needs_native
@pytest.mark.parametrize("kind", ["list", "EventHeap"])
def test_a_nan_time_is_compared_as_heapq_compares_it(kind):
    nan = float("nan")
    ours: list[tuple] = [] if kind == "list" else NATIVE.new_heap()
    theirs: list[tuple] = []
    for item in [(2.0, 5, print, 0), (nan, 1, print, 1), (1.0, 9, print, 2), (nan, 0, print, 3)]:
        NATIVE.heappush(ours, item)
        heapq.heappush(theirs, item)
        assert ours == theirs or [repr(x) for x in ours] == [repr(x) for x in theirs]
    got = [NATIVE.heappop(ours) for _ in range(4)]
    want = [heapq.heappop(theirs) for _ in range(4)]
    assert [x[1] for x in got] == [x[1] for x in want]


@needs_native
def test_errors_are_heapqs():
    with pytest.raises(IndexError):
        NATIVE.heappop([])
    with pytest.raises(TypeError, match="must be a list"):
        NATIVE.heappop(())
    with pytest.raises(TypeError, match="must be a list"):
        NATIVE.heappush((), (1.0, 1, print, 0))
    same_eid = [(1.0, 4, print, 0)]
    with pytest.raises(TypeError, match="'<' not supported"):
        NATIVE.heappush(same_eid, (1.0, 4, len, 1))  # the callbacks compared
    heap = NATIVE.new_heap()
    with pytest.raises(IndexError):
        NATIVE.heappop(heap)
    NATIVE.heappush(heap, (1.0, 4, print, 0))
    with pytest.raises(TypeError, match="'<' not supported"):
        NATIVE.heappush(heap, (1.0, 4, len, 1))


@needs_native
def test_an_event_heap_changed_otherwise_is_an_error():
    """Its keys would no longer be its entries': the next push or pop says so."""
    heap = NATIVE.new_heap()
    NATIVE.heappush(heap, (1.0, 1, print, 0))
    heap.append((0.5, 2, print, 1))
    with pytest.raises(RuntimeError, match="changed other than by heappush and heappop"):
        NATIVE.heappop(heap)

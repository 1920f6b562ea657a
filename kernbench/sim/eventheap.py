"""The PE queue's event heap: ``heappush`` and ``heappop`` on a list of entries
``(time, eid, callback, argument)``, ordered by ``(time, eid)``, and ``EventHeap``, the
list the queue keeps them in.

This is what the pure-Python build runs (:mod:`heapq`'s own functions, on a plain
list) and the specification of the compiled build's ``eventheap.c``: CPython's heap
algorithm step for step, so the list is the very list :mod:`heapq` leaves, but an
entry whose time is a float and whose eid an int is compared on those two in C.
:mod:`heapq` compares two tuples through the generic protocol, item by item, with an
equality test before the order test and the eid compared after the (usual) tie on
time: some 200 instructions a comparison, and the heap holds about two entries per PE
streaming, so a pop from 2,000 compared 22 times (1:1 ``neighbor`` on 1,024 PEs: 5.2
thousand instructions per pop, 29% of its run, with the entries' scattered tuples and
floats most of its cache misses). The C build's heap (:func:`new_heap`) keeps every
entry's time and eid beside it in a C array, so those comparisons read two keys side
by side. Eids are unique, so the callback is never compared.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

__all__ = ["heappop", "heappush", "new_heap"]


def new_heap() -> list[Any]:
    """An empty heap: a list here, an ``EventHeap`` (a list keeping its entries' keys
    in a C array) in the compiled build. A function, not the class: a compiled caller
    would make ``list()`` itself of a name it knows to be ``list``."""
    return []

"""Progressive filling over requesters: the rates of the fair data plane (DESIGN §3.2).

The problem, stated before any code (as SimGrid's lmm solver states its own). Given
links ``l`` of bandwidth ``bw(l)`` and *queues* ``q`` (one requester's requests on
one route: only a queue's oldest request drains, so a queue is one rate), each with
its requester ``r(q)``, its age (the sequence number of its oldest request) and the
links of its route, find rates ``x(q) >= 0`` such that

1. no link is above its bandwidth: ``Σ_{q crosses l} x(q) <= bw(l)``;
2. between requesters the totals ``X(r) = Σ_{q of r} x(q)`` are max-min fair: no
   requester's total can grow without taking from a requester whose total is no
   larger, on a link that is saturated;
3. within a requester, age priority: a younger queue has a rate only where every
   older one of the same requester is stopped by a saturated link.

Progressive filling finds it. Each unfrozen requester's *active* queue is its oldest
unfrozen one; every requester raises its active queue by the same amount until a
link saturates (its spare capacity over the number of active queues on it); every
queue that crosses a saturated link freezes, and its requester moves on to its next
oldest queue; a requester whose queues are all frozen is done.

The rounds are not run one by one. Every active queue's rate is the common *level*
minus the level at which it became active, so a link with ``k`` active queues whose
start levels sum to ``S``, carrying ``F`` of frozen rate, saturates at level
``(bw - F + S) / k``. Each link keeps that key, re-computed only when a queue on it
freezes or starts; each round takes the link with the lowest key (the first used,
among equal keys) and freezes its queues. A solve so costs what its queues touch plus
``rounds x links`` key comparisons, not ``rounds x queues``. The lowest key is found
by a scan up to ``SCAN_MAX`` links: most solves have a few rounds over a few dozen
links (1:1 uniform traffic on 16 PEs: 7 rounds over 114 links, at most 50 rounds; a
Triton launch: 10 rounds over 48), and a heap's tuple entries, compared generically,
cost more than the scan (a fifth of a solve's instructions). Past it, on a heap by
``(key, first use)``, whose root is the link the scan would pick: ``uniform`` traffic
on 1,024 PEs is one component of about 2,000 queues, and a scan per round made each
recomputation cost rounds x links. Per-link state is indexed by
the link's place in the order of first use, as the C does: a solve costs the links it
touches (indexed by link id, each solve made seven lists as long as the run's links,
and a 1,024-PE ``neighbor`` run, a fill per component, took 12x longer).

This module owns the arithmetic only: no time, no events (those are
:mod:`kernbench.sim.fair_fabric`'s). It is what the pure-Python build runs; the compiled
build runs ``fairshare.c`` instead, the same steps on C arrays (setup.py's ``NATIVE``),
bit for bit the same rates (``tests/test_fairshare_native.py``): compiled by mypyc, this
function cost about 4,000 instructions per queue, every list element boxed, and a Triton
launch under ``fair`` spent 59% of its simulation here (1:1 ``uniform``: 43%).
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Final

# A rate below this many bytes/ns is rounding, never a real share: it is zero.
NO_RATE: Final = 1e-9
# Past this many links a solve finds its lowest key on a heap, not by a scan.
SCAN_MAX: Final = 64


def age_order(heads: list[int]) -> list[int]:
    """The positions of ``heads`` from the oldest (lowest) to the youngest, equal ones
    in place: the order a solve's queues go to :func:`progressive_fill` in (sorting
    the queues themselves by an attribute is a generic attribute read per queue in the
    compiled build, a sixth of a Triton launch's simulation)."""
    return sorted(range(len(heads)), key=heads.__getitem__)


def progressive_fill(
    requesters: list[int],
    links: list[tuple[int, ...]],
    bw: list[float],
    scan_max: int = SCAN_MAX,
) -> list[float]:
    """The rate of each queue, given in age order (oldest first across the whole
    list), with its requester's number and its route's link ids; ``bw`` by link id.
    Past ``scan_max`` links the lowest key is found on a heap (the same link: tests
    set ``scan_max`` to compare the two ways)."""
    n = len(links)
    rate = [0.0] * n
    frozen = [False] * n
    running = [False] * n  # its requester's active queue
    began = [0.0] * n  # the level at which each active queue started
    # The links these queues use, by their place in order of first use (``u``): the
    # order that breaks ties between links saturating at one level. Per link (by
    # ``u``, so a solve costs the links it touches, not the topology's): its
    # bandwidth, the queues on it, frozen load on it, active queues, the sum of their
    # start levels, the level at which it saturates (valid while it has active
    # queues), whether it has saturated, and whether it is to be re-keyed.
    number: dict[int, int] = {}  # link id -> u
    cap: list[float] = []
    users: list[list[int]] = []
    route: list[list[int]] = []  # per queue, its links' u
    owner: list[int] = []  # per queue, its requester's index
    order: list[list[int]] = []  # per requester, its queues oldest first
    index: dict[int, int] = {}
    for q in range(n):
        who = requesters[q]
        r = index.get(who)
        if r is None:
            r = index[who] = len(order)
            order.append([q])
        else:
            order[r].append(q)
        owner.append(r)
        mine: list[int] = []
        for lk in links[q]:
            i = number.get(lk, -1)
            if i < 0:
                i = number[lk] = len(users)
                cap.append(bw[lk])
                users.append([q])
            else:
                users[i].append(q)
            mine.append(i)
        route.append(mine)
    nlinks = len(users)
    load = [0.0] * nlinks
    active = [0] * nlinks
    starts = [0.0] * nlinks
    key = [0.0] * nlinks
    full = [False] * nlinks
    moved = [False] * nlinks
    at = [0] * len(order)
    for mine in order:  # every requester starts its oldest queue at level 0
        running[mine[0]] = True
        for u in route[mine[0]]:
            active[u] += 1
    for u in range(nlinks):
        if active[u]:
            key[u] = cap[u] / active[u]
    scan = nlinks <= scan_max
    # Else every link still to saturate has an entry (its key, u) here, pushed when it
    # was last keyed; an entry whose key is not the link's any more is skipped.
    heap = [] if scan else [(key[u], u) for u in range(nlinks) if active[u]]
    heapify(heap)
    while True:
        # The next link to saturate: the lowest key, the first used among equal ones.
        lk = -1
        level = 0.0
        if scan:
            for i in range(nlinks):
                if active[i] and not full[i] and (lk < 0 or key[i] < level):
                    lk = i
                    level = key[i]
        else:
            while heap:
                level, i = heappop(heap)
                if active[i] and not full[i] and key[i] == level:
                    lk = i
                    break
        if lk < 0:
            return rate
        full[lk] = True  # saturated: no unfrozen queue crosses it any more
        hit = []  # the active queues it stops (the others freeze at zero)
        for q in users[lk]:
            if not frozen[q]:
                frozen[q] = True
                if running[q]:
                    hit.append(q)
        touched: list[int] = []  # links whose key moved, each re-keyed once below
        for q in hit:
            running[q] = False
            share = level - began[q]
            if share <= NO_RATE:
                share = 0.0
            rate[q] = share
            b = began[q]
            for other in route[q]:
                if other != lk:
                    active[other] -= 1
                    starts[other] -= b
                    load[other] += share
                    if not moved[other]:
                        moved[other] = True
                        touched.append(other)
            r = owner[q]
            mine = order[r]
            i = at[r] + 1
            while i < len(mine) and frozen[mine[i]]:
                i += 1
            at[r] = i
            if i < len(mine):
                q = mine[i]
                running[q] = True
                began[q] = level
                for other in route[q]:
                    active[other] += 1
                    starts[other] += level
                    if not moved[other]:
                        moved[other] = True
                        touched.append(other)
        for other in touched:
            moved[other] = False
            k = active[other]
            if k:
                key[other] = (cap[other] - load[other] + starts[other]) / k
                if not scan and not full[other]:
                    heappush(heap, (key[other], other))

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
``(bw - F + S) / k``; a heap of those levels pops the next link to saturate, and only
the links of queues that freeze or start are re-keyed. A solve so costs what its
queues touch (about ``queues x path x log links``), not ``rounds x queues``: a
component of 177 queues in 1:1 uniform traffic takes about a hundred rounds.

This module owns the arithmetic only: no time, no events (those are
:mod:`kernbench.sim.fair_fabric`'s).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from heapq import heapify, heappop, heappush

# A rate below this many bytes/ns is rounding, never a real share: it is zero.
NO_RATE = 1e-9


def progressive_fill(
    requesters: Sequence[Hashable],
    links: Sequence[tuple[int, ...]],
    bw: Sequence[float],
) -> list[float]:
    """The rate of each queue, given in age order (oldest first across the whole
    list), with its requester and its route's link ids; ``bw`` by link id."""
    n = len(links)
    rate = [0.0] * n
    frozen = [False] * n
    running = [False] * n  # its requester's active queue
    began = [0.0] * n  # the level at which each active queue started
    # The component's links, numbered from 0 here in order of first use (a topology
    # has hundreds): the number breaks ties between links that saturate at one level.
    number: dict[int, int] = {}
    cap: list[float] = []
    users: list[list[int]] = []
    paths: list[list[int]] = []
    owner: list[int] = []  # per queue, its requester's index
    order: list[list[int]] = []  # per requester, its queues oldest first
    index: dict[Hashable, int] = {}
    for q in range(n):
        path = []
        for lk in links[q]:
            i = number.get(lk)
            if i is None:
                i = number[lk] = len(cap)
                cap.append(bw[lk])
                users.append([q])
            else:
                users[i].append(q)
            path.append(i)
        paths.append(path)
        who = requesters[q]
        r = index.get(who)
        if r is None:
            r = index[who] = len(order)
            order.append([q])
        else:
            order[r].append(q)
        owner.append(r)
    nlinks = len(cap)
    # Per link: frozen load on it, active queues, the sum of their start levels, and a
    # version (heap entries of an older version are stale).
    load = [0.0] * nlinks
    active = [0] * nlinks
    starts = [0.0] * nlinks
    version = [0] * nlinks
    at = [0] * len(order)
    for mine in order:  # every requester starts its oldest queue at level 0
        running[mine[0]] = True
        for lk in paths[mine[0]]:
            active[lk] += 1
    heap = [(cap[lk] / active[lk], lk, 0) for lk in range(nlinks) if active[lk]]
    heapify(heap)
    while heap:
        level, lk, v = heappop(heap)
        if v != version[lk]:
            continue
        version[lk] += 1  # saturated: no unfrozen queue crosses it any more
        hit = []  # the active queues it stops (the others freeze at zero)
        for q in users[lk]:
            if not frozen[q]:
                frozen[q] = True
                if running[q]:
                    hit.append(q)
        # Links whose key moved: each is pushed once, with its state after the last
        # queue that touched it (what a push per touch would leave valid).
        moved: list[int] = []
        for q in hit:
            running[q] = False
            share = level - began[q]
            if share <= NO_RATE:
                share = 0.0
            rate[q] = share
            b = began[q]
            for other in paths[q]:
                if other != lk:
                    active[other] -= 1
                    starts[other] -= b
                    load[other] += share
                    if version[other] >= 0:
                        version[other] = ~version[other]  # marked: re-key it below
                        moved.append(other)
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
                for other in paths[q]:
                    active[other] += 1
                    starts[other] += level
                    if version[other] >= 0:
                        version[other] = ~version[other]
                        moved.append(other)
        for other in moved:
            v = version[other] = ~version[other] + 1
            k = active[other]
            if k:
                heappush(heap, ((cap[other] - load[other] + starts[other]) / k, other, v))
    return rate

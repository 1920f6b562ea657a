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
oldest queue; a requester whose queues are all frozen is done. Each round saturates
at least one link, so there are at most as many rounds as links.

This module owns the arithmetic only: no time, no events (those are
:mod:`kernbench.sim.fair_fabric`'s).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

# A link with spare capacity below this fraction of its bandwidth is saturated: the
# rounding of a sum of rates, never a real spare.
SATURATED = 1e-12


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
    spare: dict[int, float] = {}
    users: dict[int, list[int]] = {}
    order: dict[Hashable, list[int]] = {}
    for q in range(n):
        order.setdefault(requesters[q], []).append(q)
        for lk in links[q]:
            if lk not in spare:
                spare[lk] = bw[lk]
                users[lk] = []
            users[lk].append(q)
    queues = list(order.values())  # each requester's queues, oldest first
    at = [0] * len(queues)  # each requester's active queue, as an index into its list
    live = list(range(len(queues)))
    while True:
        active: list[int] = []
        still: list[int] = []
        for r in live:
            mine, i = queues[r], at[r]
            while i < len(mine) and frozen[mine[i]]:
                i += 1
            at[r] = i
            if i < len(mine):
                active.append(mine[i])
                still.append(r)
        if not active:
            return rate
        live = still
        count: dict[int, int] = {}
        for q in active:
            for lk in links[q]:
                count[lk] = count.get(lk, 0) + 1
        step = min(spare[lk] / c for lk, c in count.items())
        for q in active:
            rate[q] += step
        for lk, c in count.items():
            left = spare[lk] - step * c
            if left <= SATURATED * bw[lk]:
                spare[lk] = 0.0
                for q in users[lk]:
                    frozen[q] = True
            else:
                spare[lk] = left

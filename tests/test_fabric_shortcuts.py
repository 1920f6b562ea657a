"""The fabrics' shortcuts give what the plain paths give, to the bit.

- Fair fabric, grouped joins: one ``start`` of several requests (a 1:1 access's channel
  requests) joins its flows in one event per join time; issuing the same requests one
  ``start`` each, back to back, joins them one event each. Same solves, same rates,
  same stretches, same completions (no two requests of one access on one queue:
  those share their access's age, which one ``start`` each would not give them).
- Fair fabric, reuse (``reuse=False`` is the plain path): components kept until a
  queue enters or leaves, and rates kept by the queues and their age order. Every
  recomputation sees the same queues and gets the same rates.
- Reservation fabric, holes found by bisection: the same starts and reservations as a
  linear scan over every hole (the code before, kept here as the reference), on
  traffic whose times are multiples of 1/4 ns so a request often ends exactly where a
  hole does.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.sim.engines import Stage
from kernbench.sim.events import LocalQueue, SimEnv
from kernbench.sim.fabric import ReservationFabric
from kernbench.sim.fair_fabric import FairFabric
from kernbench.topology.routes import MemoryRoutes, Router
from tests.support import Stages
from tests.test_fair_properties import assert_kept_cover_fresh, topology

ROOT = Path(__file__).resolve().parents[1]


def traffic(
    seed: int, pes: int, count: int, hot: bool
) -> list[tuple[int, list[tuple[int, int]], int, float]]:
    """``count`` accesses ``(source PE, [(target PE, router k)...], bytes, gap)``: 1:1
    style (several routers of one target), and now and then two targets at once (routes
    of different latencies in one issue); ``hot``: every PE reads all of PE 0's
    channels (the same queues meet again and again)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if hot:
            out.append(
                (rng.randrange(pes), [(0, k) for k in range(8)], 2048, rng.choice((0.0, 9.0)))
            )
            continue
        src, dst = rng.randrange(pes), rng.choice((0, 0, rng.randrange(pes)))
        picks = [(dst, k) for k in rng.sample(range(8), rng.choice((1, 4, 8)))]
        if rng.random() < 0.25:
            extra = (rng.randrange(pes), rng.randrange(8))
            if extra not in picks:  # one access's requests on one queue share an age
                picks.append(extra)
        out.append((src, picks, rng.choice((256, 1024, 5000)), rng.choice((0.0, 0.0, 2.0, 30.0))))
    return out


def run_fair(seed: int, one_by_one: bool, reuse: bool = True, fast: bool = False, hot=False):
    """Completion of every access, every solve seen, and the link stretches."""
    graph = topology(4, 2, 8, True)
    env = SimEnv()
    events = LocalQueue(env)
    solves: list[tuple[float, list, list[float]]] = []
    fabric = FairFabric(
        graph, 40.0, events, record=not fast, fast=fast, reuse=reuse,
        on_solve=lambda now, queues, rates: solves.append((now, queues, list(rates))),
    )  # fmt: skip
    router = Router(graph)
    pes = graph.pes
    routes = [MemoryRoutes(router, pe.node("dma")) for pe in pes]
    accesses = traffic(seed, len(pes), 120, hot)
    stages = Stages(events)
    ends: list[list[Stage]] = []

    def issue(k: int) -> None:
        src, picks, nbytes, _ = accesses[k]
        requests = [(graph.routers(pes[dst])[r], 0, nbytes, r) for dst, r in picks]
        batches = [[req] for req in requests] if one_by_one else [requests]
        for batch in batches:
            t = stages.new()
            ends[k].append(t)
            end = fabric.start(batch, routes[src], events.now, t, stages.finish)
            if end is not None:
                events.schedule(end, stages.finish, t)

    now = 0.0
    for k, access in enumerate(accesses):
        ends.append([])
        now += access[3]
        events.schedule(now, issue, k)
    events.run()
    done = [max(stages.outcome(t).end for t in ts) for ts in ends]
    assert all(t in stages.ends for ts in ends for t in ts), "every request completed"
    return done, solves, fabric.segments, fabric


@pytest.mark.parametrize("hot", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_grouped_joins_equal_one_join_each(seed, hot):
    done, solves, segments, fabric = run_fair(seed, one_by_one=False, hot=hot)
    alone = run_fair(seed, one_by_one=True, hot=hot)
    assert solves  # contention: the solver ran
    assert (done, solves, segments) == alone[:3]


@pytest.mark.parametrize("hot", [False, True])
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_reused_components_and_rates_equal_a_fresh_solve(seed, fast, hot):
    done, solves, segments, fabric = run_fair(seed, one_by_one=False, fast=fast, hot=hot)
    plain = run_fair(seed, one_by_one=False, reuse=False, fast=fast, hot=hot)
    assert plain[3].reused == 0
    if hot:  # the same queues in the same order came back
        assert fabric.reused > 0
    assert fabric._searches == 0 < plain[3]._searches  # components kept, never searched
    assert (done, segments) == (plain[0], plain[2])
    assert_kept_cover_fresh(solves, plain[1])


def test_a_queue_that_leaves_leaves_its_component():
    """Two PEs on one link, then the first's queue leaves: the next solve covers the
    second alone (a component that kept it would still hold the first)."""
    graph = topology(2, 1, 1, False)
    env = SimEnv()
    events = LocalQueue(env)
    seen: list[list[str]] = []
    fabric = FairFabric(
        graph, 40.0, events, fast=False,
        on_solve=lambda now, queues, rates: seen.append(sorted(q[0] for q in queues)),
    )  # fmt: skip
    router = Router(graph)
    a, b = graph.pes[:2]
    target = graph.routers(a)[0]
    routes = [MemoryRoutes(router, pe.node("dma")) for pe in (a, b)]  # kept: a DMA's own
    stages = Stages(events)
    fabric.start([(target, 0, 1000, -1)], routes[0], 0.0, stages.new(), stages.finish)
    fabric.start([(target, 0, 9000, -1)], routes[1], 0.0, stages.new(), stages.finish)
    events.run()
    both = sorted([a.node("dma"), b.node("dma")])
    assert both in seen
    assert seen[-1] == [b.node("dma")]  # after a's queue drained and left


# -- reservation fabric -------------------------------------------------------------
class LinearReservationFabric(ReservationFabric):
    """The reservation model with the linear hole scans it had before (the reference)."""

    def _earliest(self, i: int, t: float, hold: float, now: float) -> float:
        holes = self.holes.get(i, [])  # a link's holes are listed from its first
        while holes and holes[0][1] <= now:
            holes.pop(0)
            self._holed -= not holes
        for a, b in holes:
            s = a if a > t else t
            if s + hold <= b:
                return s
        return t if t > self.free_at[i] else self.free_at[i]

    def _take(self, i: int, start: float, stop: float, now: float) -> None:
        free = self.free_at[i]
        if start >= free:
            idle = free if free > now else now
            if idle < start:
                self._open(i, idle, start)
            self.free_at[i] = stop
            return
        holes = self.holes[i]
        k = next(k for k, (a, b) in enumerate(holes) if a <= start and stop <= b)
        a, b = holes.pop(k)
        holes[k:k] = [(x, y) for x, y in ((a, start), (stop, b)) if y > x]
        self._holed -= not holes


def run_reservation(cls: type[ReservationFabric], seed: int, one_to_one: bool):
    graph = topology(4, 2, 8 if one_to_one else 2, one_to_one)
    fabric = cls(graph, 40.0, record=True)
    fabric._cover(len(graph.links) - 1)  # every link's state now, to set its bandwidth
    for lk in graph.links:  # bandwidths in powers of two: exact quarter-ns holds
        fabric.bw[lk.id] = 2.0 ** round(math.log2(lk.bw_gbs))
    router = Router(graph)
    pes = graph.pes
    routes = [MemoryRoutes(router, pe.node("dma")) for pe in pes]
    rng = random.Random(seed)
    now, ends = 0.0, []
    for _ in range(400):
        now += rng.choice((0.0, 0.0, 0.25, 4.0, 16.0))
        src, dst = rng.randrange(len(pes)), rng.choice((0, 0, 1, rng.randrange(len(pes))))
        routers = graph.routers(pes[dst])
        picks = rng.sample(range(len(routers)), rng.randint(1, len(routers)))
        nbytes = rng.choice((64, 256, 512, 2048))
        requests = [(routers[k], 0, nbytes, k) for k in picks]
        ends.append(fabric.book(requests, routes[src], now))
    return ends, fabric.reservations, fabric.holes, fabric.free_at


SEEDS = range(8)
LINEAR = """
import json
from tests.test_fabric_shortcuts import SEEDS, LinearReservationFabric, run_reservation
print(json.dumps({f"{seed}-{one}": repr(run_reservation(LinearReservationFabric, seed, one))
                  for seed in SEEDS for one in (False, True)}))
"""


@pytest.fixture(scope="module")
def linear_scans() -> dict[str, str]:
    """The reference's results (as ``repr`` text) for every seed and mapping, from a
    process running the pure-Python modules (KERNBENCH_PURE=1): the reference is a
    subclass, which the compiled build's ReservationFabric refuses (setup.py)."""
    env = {**os.environ, "KERNBENCH_PURE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", LINEAR], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("one_to_one", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_bisected_holes_equal_a_linear_scan(linear_scans, seed, one_to_one):
    got = run_reservation(ReservationFabric, seed, one_to_one)
    assert any(got[2]), "the traffic leaves holes"
    assert repr(got) == linear_scans[f"{seed}-{one_to_one}"]


def test_a_request_that_ends_exactly_where_a_hole_ends_takes_it():
    """Hole [10, 18) on a link free after 30: a hold of 8 from 10 fits to the ns."""
    graph = topology(2, 1, 1, False)
    fabric = ReservationFabric(graph, 40.0)
    fabric._cover(0)
    fabric._open(0, 10.0, 18.0)
    fabric.free_at[0] = 30.0
    assert fabric._earliest(0, 10.0, 8.0, 0.0) == 10.0
    assert fabric._earliest(0, 10.5, 8.0, 0.0) == 30.0
    assert fabric._earliest(0, 9.0, 8.0, 0.0) == 10.0
    assert fabric._earliest(0, 10.0, 8.0, 18.0) == 30.0  # drained: forgotten
    assert fabric.holes[0] == [] and fabric._holed == 0

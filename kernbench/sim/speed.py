"""Simulator speed, measured against SimPy's own limit on this machine (issue 7).

SimPy's limit is its bare event rate: a process looping on ``yield env.timeout(1)``.
A run's speed is the DMA accesses (DMA stages: one per stream access) it simulated
per wall second; dividing by the bare rate measured in the same process just before
gives a ratio that a loaded machine moves far less than either figure. These are
wall-clock figures: they go to a run's ``timings``, never to its metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import simpy

BARE_EVENTS = 200_000  # ~0.2 s: long enough to be steady, short beside a sweep point


def bare_timeout_rate(
    events: int = BARE_EVENTS, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Events per second of a loop of ``yield env.timeout(1)``: SimPy's own limit, by
    ``clock`` (wall time for a run's columns; the benchmarks pass CPU time)."""
    env = simpy.Environment()

    def loop():  # noqa: ANN202 (a SimPy process)
        for _ in range(events):
            yield env.timeout(1)

    env.process(loop())
    start = clock()
    env.run()
    return events / (clock() - start)


def speed_timings(accesses: int, wall_s: float, bare_per_s: float) -> dict[str, float]:
    """The timing columns of a measured run."""
    per_s = accesses / wall_s if wall_s > 0 else 0.0
    return {
        "sim_accesses": float(accesses),
        "accesses_per_s": per_s,
        "bare_simpy_events_per_s": bare_per_s,
        "speed_ratio": per_s / bare_per_s,
    }

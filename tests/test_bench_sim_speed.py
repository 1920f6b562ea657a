"""Benchmark: simulated DMA accesses per wall second against SimPy's bare event rate.

Not a timed test: it records ratios measured within one process, so a loaded machine
moves both numbers together. Run with ``pytest -m benchmark -s tests/test_bench_sim_speed.py``.
"""

from __future__ import annotations

import time

import pytest
import simpy

from kernbench import simulate
from tests.support import make_cfg

ACCESSES_PER_PE = 6250  # x 16 PEs = 100,000 accesses
ACCESS = 4096


def bare_timeout_rate(events: int = 300_000) -> float:
    """Events per second of a loop of ``yield env.timeout(1)``: SimPy's own limit here."""
    env = simpy.Environment()

    def loop():
        for _ in range(events):
            yield env.timeout(1)

    env.process(loop())
    start = time.perf_counter()
    env.run()
    return events / (time.perf_counter() - start)


@pytest.mark.benchmark
@pytest.mark.parametrize("one_to_one", [False, True], ids=["n_to_one", "one_to_one"])
def test_stream_accesses_per_second_vs_bare_simpy(one_to_one):
    cfg = make_cfg(
        one_to_one=one_to_one,
        zero_cost=False,
        access_bytes=ACCESS,
        bytes_per_pe=ACCESS * ACCESSES_PER_PE,
        outstanding=4,
    )
    bare = bare_timeout_rate()
    start = time.perf_counter()
    metrics = simulate.run(cfg).metrics
    wall = time.perf_counter() - start
    rate = metrics["accesses"] / wall
    assert metrics["accesses"] >= 100_000
    print(
        f"\n{'1:1' if one_to_one else 'n:1'}: {metrics['accesses']} accesses in {wall:.2f} s"
        f" = {rate:,.0f}/s; bare SimPy timeout loop {bare:,.0f}/s; ratio {rate / bare:.3f}"
    )

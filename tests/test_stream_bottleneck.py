"""What bounds a stream row (``bottleneck``, ``cpu_utilization``) and its two bandwidths
(``mean_pe_bw_gbs``, the mean of each PE's own figure; ``aggregate_bw_gbs``, every byte
over the launch's time), checked against figures worked out by hand.

The default dispatch cost is 32 cycles + 0.25 cycles per logical byte at 1 GHz; a DMA
read's descriptor is 28 logical bytes (ADR-0064 D2), so a load of 4096 B costs its PE's
CPU 32 + 7 = 39 ns to issue, 4096 / 39 = 105 GB/s at most, while the PE's 8 channels at
32 GB/s carry it in 16 ns (256 GB/s): with two accesses in flight the CPU bounds the
stream.
"""

from __future__ import annotations

import pytest

from kernbench import simulate
from kernbench.sim.metrics import SATURATED, stream_bottleneck
from tests.support import make_cfg

ACCESS = 4096
PER_PE = 16 * ACCESS  # 16 accesses per PE
ISSUE_NS = 32 + 28 * 0.25  # default model at 1 GHz, a read descriptor's 28 logical bytes
HBM_PE0 = "sip0.cube0.pe0.agg_router<->sip0.cube0.hbm_ctrl"


def stream(zero_cost: bool, outstanding: int, per_pe: int = PER_PE) -> dict:
    cfg = make_cfg(zero_cost=zero_cost, access_bytes=ACCESS, bytes_per_pe=per_pe,
                   outstanding=outstanding)  # fmt: skip
    return simulate.run(cfg).metrics


@pytest.fixture(scope="module")
def default_cost() -> dict:
    return stream(zero_cost=False, outstanding=2)


def test_default_dispatch_cost_makes_the_stream_cpu_bound(default_cost):
    m = default_cost
    busy = 16 * ISSUE_NS  # each PE's CPU issues its 16 loads, one after another
    assert m["cpu_utilization"] == pytest.approx(busy / m["sim_time_ns"], rel=1e-12)
    assert m["cpu_utilization"] >= SATURATED
    assert m["bottleneck"] == "cpu"
    assert ISSUE_NS == 39
    assert 0.9 * ACCESS / ISSUE_NS <= m["mean_pe_bw_gbs"] <= ACCESS / ISSUE_NS
    # while the link that carried most is far from busy
    assert m["busiest_link_utilization"] < 0.5


def test_zero_dispatch_cost_is_not_cpu_bound():
    """Same stream, nothing charged to issue: two accesses in flight bound it (dma);
    eight keep PE 0's HBM link busy, and the row names that link."""
    two = stream(zero_cost=True, outstanding=2)
    assert two["cpu_utilization"] == 0.0
    assert two["bottleneck"] == "dma"
    eight = stream(zero_cost=True, outstanding=8, per_pe=4 * PER_PE)
    assert eight["busiest_link"] == HBM_PE0
    assert eight["bottleneck"] == HBM_PE0


def test_aggregate_is_every_byte_over_the_launch_time(default_cost):
    """16 PEs each read 64 KiB: 1 MiB over the launch. Each PE's own figure is over its
    own time; here every PE issues alike and ends with the launch, so the mean of them
    is aggregate / 16."""
    m = default_cost
    assert m["bytes_moved"] == 16 * PER_PE
    assert m["aggregate_bw_gbs"] == pytest.approx(16 * PER_PE / m["sim_time_ns"], rel=1e-12)
    assert m["mean_pe_bw_gbs"] == pytest.approx(m["aggregate_bw_gbs"] / 16, rel=1e-12)
    assert m["min_pe_bw_gbs"] == pytest.approx(m["max_pe_bw_gbs"], rel=1e-12)


@pytest.mark.parametrize(
    ("cpu", "link", "expected"),
    [
        (SATURATED, 0.5, "cpu"),  # saturated from SATURATED on
        (0.5, SATURATED, "L"),
        (0.95, 0.95, "cpu"),  # a tie goes to the CPU: it issues before the link carries
        (SATURATED - 1e-9, SATURATED - 1e-9, "dma"),
    ],
)
def test_the_saturation_threshold(cpu, link, expected):
    assert stream_bottleneck(cpu, "L", link) == expected

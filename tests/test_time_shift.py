"""A run gives the same answer whenever it starts (kernbench.timebase, DESIGN §3.2).

Every duration is put on a grid of 2^-16 ns before it is added to a time, so every
time is a multiple of the tick and float sums of times are exact: a run whose launch
moves by ``k`` ns gives every time moved by exactly ``k`` and the same figures, to the
bit, in both fabrics. Before the grid, moving LA's launch by 50 ns (its IO_CPU's
processing time 200 -> 250 ns) moved a ``uniform`` 512 B point's ``sim_time_ns``
by 0.5%, and PA (launch at 0) and LA (launch at 1117.625 ns), whose data planes are
the same, ended 0.9% apart.

- The fabrics driven directly (random traffic, both models): the same requests issued
  ``k`` later complete exactly ``k`` later, for whole ``k`` and for LA's 1117.625.
- Whole runs (random stream configurations, the chaotic ``uniform`` 512 B regime
  among them): LA's install time moved by ``k`` moves every op-log time by one and the
  same amount and no figure.
- PA and LA, the same placement and traffic: the same ``sim_time_ns`` and bandwidths.
"""

from __future__ import annotations

import dataclasses

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kernbench import simulate
from kernbench.config.schema import KernBenchConfig, StreamPattern
from kernbench.config.validate import validate
from kernbench.sim.events import LocalQueue, SimEnv
from kernbench.sim.fabric import ReservationFabric
from kernbench.sim.fair_fabric import FairFabric
from kernbench.topology.graph import build_graph
from tests.support import Stages, make_cfg
from tests.test_fair_properties import dma_routes, requests, topologies

# What a launch moves by: any whole number of ns, and an install time LA produces.
shifts = st.one_of(st.integers(1, 10**6).map(float), st.just(1117.625))


def driven_ends(fabric_model: str, graph, reqs, start: float) -> list[float]:
    """Each access's completion when ``reqs`` (tests.test_fair_properties' traffic) are
    issued from ``start`` on, each source PE's in turn, one at a time: an access
    issues its gap after its PE's last completed (so every completion time feeds the
    next issue, as a DMA's does)."""
    events = LocalQueue(SimEnv())
    if fabric_model == "fair":
        fabric = FairFabric(graph, 40.0, events)
    else:
        fabric = ReservationFabric(graph, 40.0)
    pes = graph.pes
    routes = dma_routes(graph)
    stages = Stages(events)
    transfers = [stages.new() for _ in reqs]
    chains: dict[int, list[int]] = {}
    for k, req in enumerate(reqs):
        chains.setdefault(req[0] % len(pes), []).append(k)
    following = {k: chain[i + 1] for chain in chains.values() for i, k in enumerate(chain[:-1])}

    def done(stage) -> None:
        stages.finish(stage)
        k = transfers.index(stage)
        if stage.parts == 0 and k in following:
            events.schedule(events.now + reqs[following[k]][4], issue, following[k])

    def issue(k: int) -> None:
        src, dst, channels, nbytes, _, reads = reqs[k]
        routers = graph.routers(pes[dst % len(pes)])
        chosen = [routers[(channels + i) % len(routers)] for i in range(1 + channels % 3)]
        requests = [(r, 0, nbytes, -1) for r in chosen]
        t = transfers[k]
        end = fabric.start(requests, routes[src % len(pes), reads], events.now, t, done)
        if end is not None:
            events.schedule(end, done, t)

    for chain in chains.values():
        events.schedule(start + reqs[chain[0]][4], issue, chain[0])
    events.run()
    return [stages.outcome(t).end for t in transfers]


def awkward(pes_per_cube: int, cubes: int, channels: int, one_to_one: bool):
    """tests.test_fair_properties' topology with times that are no multiple of a power
    of two: 30 GB/s channels (a 512 B request drains in 17.0666... ns) and a
    NOC link of 3.3 ns."""
    cfg = make_cfg(one_to_one=one_to_one)
    topo = dataclasses.replace(
        cfg.topology, pes_per_cube=pes_per_cube, cubes_per_sip=cubes, n_sips=1
    )
    mm = topo.cube.memory_map
    mm.hbm_pseudo_channels = channels * pes_per_cube
    mm.hbm_channels_per_pe = channels
    mm.hbm_channel_bw_gbs = 30.0
    topo.links.noc_router_latency_ns = 3.3
    return build_graph(topo)


@settings(max_examples=60, deadline=None)
@given(reqs=requests, topo=topologies, k=shifts, fabric=st.sampled_from(["fair", "reservation"]))
def test_the_fabrics_complete_the_same_requests_k_later_exactly_k_later(reqs, topo, k, fabric):
    graph = awkward(*topo)
    at_zero = driven_ends(fabric, graph, reqs, 0.0)
    shifted = driven_ends(fabric, graph, reqs, k)
    assert all(end >= 0.0 for end in at_zero)  # every access completed
    assert shifted == [end + k for end in at_zero]


def small(pattern: str, one_to_one: bool, access: int, op: str, fabric: str, model: str,
          io_cpu_ns: float = 200.0, clock_ghz: float | None = None) -> KernBenchConfig:  # fmt: skip
    """A ``bw_equivalence``-like point on 4 PEs per cube, 32 channels each cube, 16
    accesses per PE, four in flight, with the op log; dispatch free, or at the
    default FIXED and R on a ``clock_ghz`` clock."""
    cfg = make_cfg(
        one_to_one=one_to_one, model=model, fabric=fabric, op=op, access_bytes=access,
        bytes_per_pe=16 * access, outstanding=4, pattern=StreamPattern(pattern),
        zero_cost=clock_ghz is None,
    )  # fmt: skip
    if clock_ghz is not None:
        cfg.topology.pe.attrs.pe_cost_model.clock_freq_ghz = clock_ghz
    cfg.topology.pes_per_cube = 4
    cfg.topology.cube.memory_map.hbm_pseudo_channels = 32
    cfg.topology.control.io_cpu_processing_ns = io_cpu_ns
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True)
    return validate(cfg)


INSTALLS = ("install_latency_ns",)  # what moving the launch moves on purpose


@settings(max_examples=12, deadline=None)
@given(
    pattern=st.sampled_from(["uniform", "hotspot", "neighbor", "local"]),
    one_to_one=st.booleans(),
    access=st.sampled_from([512, 4096, 65792]),
    op=st.sampled_from(["read", "copy"]),
    fabric=st.sampled_from(["fair", "reservation"]),
    model=st.sampled_from(["la", "va"]),
    k=st.integers(1, 10**5),
    clock=st.sampled_from([None, 1.7]),  # 1.7 GHz: 48 cycles are 28.235... ns
)
@example(pattern="uniform", one_to_one=True, access=512, op="read", fabric="fair", model="la",
         k=50, clock=None)  # fmt: skip
@example(pattern="local", one_to_one=False, access=4096, op="read", fabric="fair", model="la",
         k=100000, clock=1.7)  # fmt: skip
def test_moving_the_launch_moves_every_time_by_the_same_amount_and_no_figure(
    pattern, one_to_one, access, op, fabric, model, k, clock
):
    base = simulate.run(small(pattern, one_to_one, access, op, fabric, model, clock_ghz=clock))
    moved = simulate.run(
        small(pattern, one_to_one, access, op, fabric, model, 200.0 + k, clock_ghz=clock)
    )
    shift = moved.metrics["install_latency_ns"] - base.metrics["install_latency_ns"]
    assert shift >= k  # every install message passes an IO_CPU at least once
    figures = {c: v for c, v in base.metrics.items() if c not in INSTALLS}
    assert {c: moved.metrics[c] for c in figures} == figures
    assert base.oplog and len(moved.oplog) == len(base.oplog)
    assert [e[1:] for e in moved.oplog] == [e[1:] for e in base.oplog]
    if op == "read":  # one tensor: the launch moves by its install time's change
        assert [e[0] for e in moved.oplog] == [e[0] + shift for e in base.oplog]
    else:  # two installs: whatever the launch moved by, every time moved by it
        launch = moved.oplog[0][0] - base.oplog[0][0]
        assert launch >= shift
        assert [e[0] for e in moved.oplog] == [e[0] + launch for e in base.oplog]


def test_pa_and_la_give_the_same_figures_where_only_the_launch_differs():
    """The chaotic point of issue 54 (4 PEs per cube, 32 channels, 1:1, ``uniform``,
    512 B, 512 KiB per PE): PA launches at 0, LA after 1117.625 ns of installs, and
    the data planes are the same; before the grid 27493.4 against 27252.4 ns."""

    def point(model: str) -> dict:  # fmt: skip
        cfg = small("uniform", True, 512, "read", "fair", model)
        cfg.workload.bytes_per_pe = 524288
        return simulate.run(validate(cfg)).metrics

    pa, la = point("pa"), point("la")
    assert la["install_latency_ns"] == 1117.625 and pa["install_latency_ns"] == 0.0
    same = ("sim_time_ns", "mean_pe_bw_gbs", "min_pe_bw_gbs", "max_pe_bw_gbs", "aggregate_bw_gbs",
            "bw_fairness", "busiest_link")  # fmt: skip
    assert {c: la[c] for c in same} == {c: pa[c] for c in same}

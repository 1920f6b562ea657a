"""Simulator speed without timing anything: exactness of the fast paths, the event
count they buy, lazy replay, the ``sim_speed`` preset and its report.

Wall-clock figures are measured by ``tests/test_bench_sim_speed.py`` (a benchmark,
not part of the default run).
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from omegaconf import OmegaConf

from kernbench import simulate, tl
from kernbench.config.schema import ExecPath
from kernbench.config.store import experiments_dir
from kernbench.report import bw_equivalence, sim_speed, tables
from kernbench.runtime import DPPolicy
from kernbench.runtime.exec_paths import BATCH, ReplaySource
from tests.support import make_cfg, make_system, run_python
from tests.test_sweep import merged, run_sweep

KIB4 = 4096
SPEED_COLUMNS = ("sim_accesses", "accesses_per_s", "bare_simpy_events_per_s", "speed_ratio")


def remote_reads(src, lead_cycles, count):
    """Program p spends ``lead_cycles[p]`` cycles, then reads ``count[p]`` 4 KiB blocks
    of PE 2's memory."""
    pid = tl.program_id(0)
    if lead_cycles[pid]:
        tl.cycles(lead_cycles[pid])
    for i in range(count[pid]):
        tl.load(src.shard_ptr(2) + i * KIB4, (KIB4,), dtype_bytes=1)


def run_remote_reads(lead_cycles, count, fabric="reservation"):
    system, ctx = make_system(make_cfg(zero_cost=False, fabric=fabric))
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    return ctx.launch(remote_reads, system.graph.pes[:2], src, lead_cycles, count)


def test_shared_link_is_booked_in_simulated_time_order():
    """PE0 and PE1 read PE2's memory, whose bytes come back through the shared
    pe2's HBM -> pe2.agg_router -> NOC resources, paying 39 ns of dispatch per load. A
    remote 4 KiB read is a round trip (DESIGN §13.1): its payload-free request goes
    out (5 + 3 + 4 = 12 ns) and is served (40), so its bytes are ready 52 ns after
    issue; they hold each shared resource 16 ns (256 GB/s) and NOC -> pe 32 ns
    (128 GB/s) from their start, and the read is done 12 + 32 = 44 ns after it: 96 ns
    after issue when nothing waits (was 84: 12 + 32 + 40, the bytes on the way out).

    PE0 runs ahead of PE1 without paying SimPy events; if it booked its later loads
    before PE1's earlier one, PE1 would queue behind them. (The reservation model books
    at issue, so order matters there; the fair model's requests join the links as
    events, in time order by construction: two 128 GB/s reads fill the 256 GB/s links
    side by side, both done at 39 + 96 = 135.)"""
    # A tie at 39 ns: PE0's dispatch was scheduled first, so it goes first (ready at 91,
    # done 135); PE1's bytes, ready at 91 too, wait for the shared resources until 107:
    # done 107 + 44 = 151 (was 123 and 139).
    assert run_remote_reads({0: 0, 1: 0}, {0: 1, 1: 1}) == {0: 135, 1: 151}
    # PE0 issues at 39, 78, 117; PE1 spends 50 cycles, then issues at 89. In time
    # order: PE0@39 ready 91, done 135; PE0@78 ready 130, done 174, shared resources
    # busy until 146; PE1@89 ready 141, starts at 146, done 190, resources busy until
    # 162; PE0@117 ready 169, done 213 (was 201 and 178).
    # This case no longer shows the booking order by itself: booked first, PE0@117
    # would hold the shared resources over [169, 185), after PE1's bytes' [146, 162),
    # so under §13.1's rule (the earliest start at or after the ready time at which
    # every resource is free) PE1 would still end at 190. (The fabric as built gives
    # 229: it keeps no record of the idle stretch before a booking's ready time.)
    assert run_remote_reads({0: 0, 1: 50}, {0: 3, 1: 1}) == {0: 213, 1: 190}
    # With 70 cycles PE1 issues at 109 and its bytes are ready at 161, within PE0@117's
    # window: in time order PE1@109 holds the shared resources over [161, 177), done
    # 205, and PE0@117, ready at 169, starts at 177, done 221. Booking PE0@117 first
    # would have held [169, 185) and pushed PE1 to 185 + 44 = 229.
    assert run_remote_reads({0: 0, 1: 70}, {0: 3, 1: 1}) == {0: 221, 1: 205}
    assert run_remote_reads({0: 0, 1: 0}, {0: 1, 1: 1}, "fair") == {0: 135, 1: 135}
    # fair: PE0's reads come back over [103, 135), [142, 174), [181, 213) on its own
    # NOC -> pe0 link; PE1's over [153, 185), beside PE0's second: 128 + 128 fill the
    # shared 256 GB/s, so neither waits (was 201 and 89 + 84)
    assert run_remote_reads({0: 0, 1: 50}, {0: 3, 1: 1}, "fair") == {0: 213, 1: 89 + 96}
    # PE1's bytes over [173, 205), beside PE0's third: again neither waits
    assert run_remote_reads({0: 0, 1: 70}, {0: 3, 1: 1}, "fair") == {0: 213, 1: 109 + 96}


def count_simpy_events(n_pes: int, accesses: int) -> int:
    """SimPy events popped while ``n_pes`` PEs each read ``accesses`` 4 KiB blocks of
    their own memory (default dispatch cost: 39 ns per load, longer than a read's
    16 ns on the fabric, so the PEs issue in lockstep)."""
    cfg = make_cfg(zero_cost=False, access_bytes=KIB4, bytes_per_pe=KIB4 * accesses)
    system, ctx = make_system(cfg)
    src = ctx.deploy(KIB4 * accesses * n_pes, DPPolicy("column_wise", n_pes))
    steps = 0
    step = system.env.step

    def counting_step() -> None:
        nonlocal steps
        steps += 1
        step()

    system.env.step = counting_step  # type: ignore[method-assign]

    def kernel(t) -> None:
        ptr = t.shard_ptr(tl.program_id(0))
        for i in range(accesses):
            tl.load(ptr + i * KIB4, (KIB4,), dtype_bytes=1)

    ctx.launch(kernel, system.graph.pes[:n_pes], src)
    assert sum(pe.dma.stages_done for pe in system.pes) == n_pes * accesses
    return steps


@pytest.mark.parametrize("n_pes", [1, 2, 4])
def test_a_launch_costs_a_few_simpy_events_however_long_its_streams(n_pes):
    """The PE pipelines run their events from their own queue while those come
    first; with nothing else going on, a launch costs SimPy its start and its end,
    whether its PEs run alone or in lockstep (1,000 local events per PE here)."""
    assert count_simpy_events(n_pes, 100) == count_simpy_events(n_pes, 500) <= 4


def test_replay_traces_in_batches_and_matches_greenlet():
    """A kernel of many batches replays the same commands, times and op log as the
    greenlet path, holding one batch at a time."""
    accesses = BATCH + 100  # a copy is 2 commands an access: 3 batches
    cfg = make_cfg(zero_cost=False, access_bytes=64, bytes_per_pe=64 * accesses, op="copy")
    cfg.sim = dataclasses.replace(cfg.sim, oplog=True, exec_path=ExecPath.replay)
    replay = simulate.run(cfg)
    cfg.sim = dataclasses.replace(cfg.sim, exec_path=ExecPath.greenlet)
    green = simulate.run(cfg)
    assert replay.oplog == green.oplog and replay.metrics == green.metrics
    src = ReplaySource(lambda: [tl.cycles(i) for i in range(20)], (), (0,), (1,), batch=7)
    assert len(src._buf) == 7  # the first batch only
    assert [c.cycles for c in src.commands] == list(range(20))


def replayed(src: ReplaySource) -> list[float]:
    out = []
    while (cmd := src.next()) is not None:
        out.append(cmd.cycles)
    assert src.next() is None  # and stays at the end
    return out


@pytest.mark.parametrize("n", [0, 6, 7, 14, 15])
def test_replay_gives_every_command_once_whatever_the_kernels_length_in_batches(n):
    """0, 1, 2 or 3 batches of 7, full or not: a kernel that fills its last batch
    exactly returns with nothing left, and the source must end there."""
    src = ReplaySource(lambda: [tl.cycles(i) for i in range(n)], (), (0,), (1,), batch=7)
    assert replayed(src) == list(range(n))
    src = ReplaySource(lambda: [tl.cycles(i) for i in range(n)], (), (0,), (1,), batch=7)
    first = [src.next().cycles for _ in range(min(n, 3))]
    assert first + [c.cycles for c in src.commands] == list(range(n))  # the rest, traced
    assert replayed(src) == list(range(min(n, 3), n))  # and still replayed


def test_measure_speed_adds_timings_and_leaves_metrics_alone():
    cfg = make_cfg(zero_cost=False, access_bytes=2048, bytes_per_pe=2048 * 100, active_pes=1)
    plain = simulate.run(cfg)
    cfg.sim = dataclasses.replace(cfg.sim, measure_speed=True)
    measured = simulate.run(cfg)
    assert measured.metrics == plain.metrics
    assert set(plain.timings) == {"sim_wall_s"}
    t = measured.timings
    assert t["sim_accesses"] == 100 == measured.metrics["accesses"]
    assert t["bare_simpy_events_per_s"] > 0 and t["accesses_per_s"] > 0
    assert t["speed_ratio"] == t["accesses_per_s"] / t["bare_simpy_events_per_s"]


def test_sim_speed_preset_composes(compose_cfg):
    cfg = compose_cfg("+experiment=sim_speed")
    assert cfg.sim.measure_speed is True and cfg.cache is False
    assert (cfg.workload.access_bytes, cfg.workload.active_pes) == (2048, "1")
    preset = OmegaConf.load(experiments_dir() / "sim_speed.yaml")
    assert preset.hydra.launcher.n_jobs == 1
    params = preset.hydra.sweeper.params
    work = [int(b) // 2048 for b in str(params["workload.bytes_per_pe"]).split(",")]
    assert work == [10**3, 10**4, 10**5, 10**6]
    assert set(params.address.split(",")) >= {"pa", "la"}
    assert params.channel_mapping == "n_to_one,one_to_one"


def test_sim_speed_sweep_writes_the_speed_columns(tmp_path):
    """A small slice of the preset, end to end: the columns appear, the report finds
    the study and not a bandwidth one."""
    proc, sweep = run_sweep(
        tmp_path, "+experiment=sim_speed", "workload.bytes_per_pe=20480,40960", "address=pa"
    )
    assert proc.returncode == 0, proc.stderr
    rows = merged(sweep)
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}
    for r in rows:
        assert all(r[c] > 0 for c in SPEED_COLUMNS)
        assert r["sim_accesses"] == r["accesses"] == r["workload.bytes_per_pe"] // 2048
    df = pd.DataFrame(rows)
    assert bw_equivalence.table(df) is None
    table = sim_speed.table(df)
    assert table is not None and len(table) == 4


def speed_rows(costs_us: dict[tuple[str, int], float]) -> pd.DataFrame:
    """Result rows of a speed sweep: (mapping, accesses) -> cost per access in us."""
    rows = []
    for (mapping, n), us in costs_us.items():
        wall = n * us * 1e-6
        rows.append(
            {
                "status": "ok",
                tables.MAPPING: mapping,
                tables.WORK: n * 2048,
                "sim_accesses": float(n),
                "sim_wall_s": wall,
                "accesses_per_s": n / wall,
                "bare_simpy_events_per_s": 1e6,
                "speed_ratio": n / wall / 1e6,
            }
        )
    return pd.DataFrame(rows)


def test_sim_speed_report_checks_ratio_and_linearity():
    df = speed_rows(
        {
            ("n_to_one", 1000): 4.0,  # below 10^4: set-up cost, not judged
            ("n_to_one", 10**4): 1.9,
            ("n_to_one", 10**5): 1.8,
            ("one_to_one", 10**4): 5.0,
            ("one_to_one", 10**5): 6.5,  # 30% dearer per access
        }
    )
    table = sim_speed.table(df)
    assert list(table["cost_vs_1e4"].round(3)) == [pytest.approx(4 / 1.9, 1e-3), 1, 0.947, 1, 1.3]
    ratio_n1, ratio_11, linear = sim_speed.check(table)
    assert ratio_n1.holds is True  # 1 / 1.9 us = 0.53 and 0.56 of 10^6 events/s
    assert ratio_11.holds is False  # 0.2 and 0.15 < 0.25
    assert linear.holds is False and "30.0%" in linear.detail


def test_a_replayed_kernels_commands_are_freed_as_it_ends_not_by_the_collector():
    """A run with the garbage collector off, as a user's process may hold it: 16 PEs
    read 64 times each (1,024 commands, 4 in flight). Once the run is over, only the
    commands of each DMA's last 4 operations are alive (the system holds those until
    it is collected): 64. A source that kept its last batch would leave all 1,024 for
    the collector, on the cycle its greenlet and kernel context make."""
    code = (
        "import gc\n"
        "from kernbench import simulate\n"
        "from tests.support import make_cfg\n"
        "gc.disable()\n"
        "cfg = make_cfg(zero_cost=False, access_bytes=64, bytes_per_pe=64 * 64, outstanding=4)\n"
        "result = simulate.run(cfg)\n"
        "left = sum(type(o).__name__ == 'DmaReadCmd' for o in gc.get_objects())\n"
        "print(result.metrics['accesses'], left)\n"
    )
    out = run_python(code)
    assert out.stdout.split() == ["1024", str(16 * 4)], out.stderr

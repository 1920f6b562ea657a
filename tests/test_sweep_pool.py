"""The fast sweep's worker pool (kernbench.sweep.pool): a point that kills its worker
process costs only its own row.

Workers are forked, so a stand-in for ``run_job`` patched into the parent is what they
run: it ends its process abruptly (``os._exit``, as a segfault or the OOM killer
would) on one point and runs the real ``run_job`` on the others.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode

from kernbench import job
from kernbench.config.store import conf_dir, register_configs
from kernbench.sweep import points as points_module
from kernbench.sweep import pool as pool_module
from kernbench.sweep.plan import Planner, screen
from kernbench.sweep.points import run_chunk
from kernbench.sweep.pool import run_chunks
from kernbench.sweep.run import fixed_sizes, guided_sizes, make_chunks
from tests.support import run_python

SMALL = [
    "topology=small",
    "pe_cost_model=zero",
    "workload.active_pes=1",
    "workload.access_bytes=4096",
]
DEADLY = 2  # the job number whose worker dies


@pytest.fixture(params=["typed", "omegaconf"])
def plan(request):
    """The same five points on either path of kernbench.sweep.points.PointConfigs:
    screened (typed leaves: chunks carry the typed object alone) or not."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        loader = GlobalHydra.instance().hydra.config_loader
        master = loader.load_configuration("config", SMALL, RunMode.MULTIRUN)
        jobs = [[*SMALL, f"workload.bytes_per_pe={4096 * (n + 1)}"] for n in range(5)]
        plan = Planner(loader, master).plan(jobs)
        if request.param == "typed":
            screen(plan)
        yield plan


def test_a_point_that_kills_its_worker_loses_only_its_own_row(plan, monkeypatch, tmp_path):
    real = job.run_job

    def run_job(cfg, out_dir, job, cache=None, bar=None, rows=None, **kwargs):
        if job.job_num == DEADLY:
            os._exit(3)
        return real(cfg, out_dir, job, cache, bar, rows, **kwargs)

    monkeypatch.setattr(job, "run_job", run_job)
    chunks = list(
        make_chunks(plan, fixed_sizes(2), {"sweep_dir": str(tmp_path), "cache_dir": None})
    )
    assert [[p.num for p in c.points] for c in chunks] == [[0, 1], [2, 3], [4]]
    typed = plan.points[0].assigned is not None
    assert all((c.config is None) == typed and c.typed is not None for c in chunks)
    results = {}
    run_chunks(chunks, 2, lambda r: results.__setitem__(r.num, r), None, None)
    assert gc.get_freeze_count() == 0  # frozen for the workers' fork only, then thawed

    assert sorted(results) == [0, 1, 2, 3, 4]  # every point reported exactly once
    assert {n: r.status for n, r in results.items()} == {
        0: "ok",
        1: "ok",
        2: "error",
        3: "ok",
        4: "ok",
    }
    assert results[DEADLY].error == (  # it died in its chunk, then again on its retry alone
        "its worker process died running it (exit status 3) and again on its retry alone"
        " (exit status 3)"
    )
    [row] = results[DEADLY].rows
    assert (row["job_num"], row["status"]) == (DEADLY, "error")
    # The row holds the point's own config: its shape's topology, its own values.
    assert (row["topology.pes_per_cube"], row["workload.bytes_per_pe"]) == (2, 4096 * 3)
    # The others hold their own simulation: one PE streams (n + 1) x 4 KiB.
    moved = {n: r.rows[0]["bytes_moved"] for n, r in results.items() if n != DEADLY}
    assert moved == {n: 4096 * (n + 1) for n in (0, 1, 3, 4)}


def test_chunks_hold_one_shape_and_shrink_towards_the_end(tmp_path):
    """Points alternating between two shapes (a grid whose last key picks a config
    group) still make chunks of several points, each of one shape, and every point is
    in exactly one. Guided sizes for 2 workers, ceil(points left / 4): 11 left -> 3,
    8 -> 2, 6 -> 2 (shape 0 has one left: a chunk of 1), 5 -> 2 (shape 1), then 3, 2
    and 1 left -> 1 each: the last chunks hold one point, so no worker waits long for
    another at the end."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        loader = GlobalHydra.instance().hydra.config_loader
        master = loader.load_configuration("config", SMALL, RunMode.MULTIRUN)
        groups = ["address=pa", "address=va"]
        jobs = [[*SMALL, groups[n % 2], f"workload.outstanding={n + 1}"] for n in range(11)]
        plan = Planner(loader, master).plan(jobs)
    chunks = list(
        make_chunks(plan, guided_sizes(2), {"sweep_dir": str(tmp_path), "cache_dir": None})
    )
    nums = [[p.num for p in c.points] for c in chunks]
    assert nums == [[0, 2, 4], [6, 8], [10], [1, 3], [5], [7], [9]]
    assert all(len({p.shape for p in c.points}) == 1 for c in chunks)
    shapes = [plan.shapes[c.points[0].shape].groups[-1] for c in chunks[2:4]]
    assert shapes == ["address=pa", "address=va"]


def test_a_chunk_mixing_typed_and_omegaconf_points_runs_each_point(tmp_path):
    """One shape whose points take both paths of PointConfigs: plain values (typed)
    and a value that is an interpolation (OmegaConf: it reads another key). The chunk
    carries both the typed object and the DictConfig, and each point simulates its
    own config: one PE streams bytes_per_pe in 4 KiB accesses."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        loader = GlobalHydra.instance().hydra.config_loader
        master = loader.load_configuration("config", SMALL, RunMode.MULTIRUN)
        values = ["8192", "${workload.access_bytes}", "12288"]
        plan = Planner(loader, master).plan(
            [[*SMALL, f"workload.bytes_per_pe={v}"] for v in values]
        )
    screen(plan)
    assert [p.assigned is not None for p in plan.points] == [True, False, True]
    base = {"sweep_dir": str(tmp_path), "cache_dir": None}
    [chunk] = make_chunks(plan, fixed_sizes(3), base)
    assert chunk.typed is not None and chunk.config is not None
    rows = [r.rows[0] for r in run_chunk(chunk)]
    assert [r["status"] for r in rows] == ["ok"] * 3
    assert [r["workload.bytes_per_pe"] for r in rows] == [8192, 4096, 12288]
    assert [r["bytes_moved"] for r in rows] == [8192, 4096, 12288]


def test_each_worker_warms_up_on_the_task_config_as_it_starts(monkeypatch, tmp_path):
    """LocalPool(warm=cfg): the parent runs points.warm_up(cfg) once before forking
    (the workers inherit what it loads), then every forked worker once more, before
    any chunk (while the parent plans), so its first point does not pay for it."""
    seen = tmp_path / "warmed"
    seen.mkdir()

    def warm_up(task):
        (seen / str(os.getpid())).write_text(str(task["marker"]))

    monkeypatch.setattr(pool_module, "warm_up", warm_up)
    started = pool_module.LocalPool(2, None, None, warm={"marker": 41})
    started.start()
    started.close()
    assert sorted(p.read_text() for p in seen.iterdir()) == ["41", "41", "41"]
    workers = {int(p.name) for p in seen.iterdir()} - {os.getpid()}
    assert len(workers) == 2  # the parent's and each worker's


def test_a_worker_runs_points_in_batches_of_three_phases(plan, monkeypatch, tmp_path):
    """A worker takes a batch of points (2 here) at a time: builds and validates
    them, then simulates them, then makes their rows, each phase in a row. Each point's
    wall_s counts its own preparing and simulating, not the other points': preparing
    sleeps 200 ms here and so does the simulation, so a point's wall_s is 400 ms and
    its simulation's plus well under a millisecond; counting the other point's
    simulation of its batch too would make it 600. What preparing printed is in the
    point's log, and so is its metric block."""
    real_prepare, real_run, real_row = job.prepare, job.run_job, job.make_row
    real_simulate = job.simulate.run_validated
    events = []

    def prepare(cfg):
        typed, columns = real_prepare(cfg)
        print(f"prepared {columns['workload.bytes_per_pe']}")
        events.append(f"prepare {columns['workload.bytes_per_pe'] // 4096 - 1}")
        time.sleep(0.2)
        return typed, columns

    def run_job(cfg, out_dir, job, *args, **kwargs):
        events.append(f"run {job.job_num}")
        return real_run(cfg, out_dir, job, *args, **kwargs)

    def simulate(*args, **kwargs):
        time.sleep(0.2)
        return real_simulate(*args, **kwargs)

    def make_row(columns, **kwargs):
        events.append(f"row {kwargs['job_num']}")
        return real_row(columns, **kwargs)

    monkeypatch.setattr(job, "prepare", prepare)
    monkeypatch.setattr(job, "run_job", run_job)
    monkeypatch.setattr(job.simulate, "run_validated", simulate)
    monkeypatch.setattr(job, "make_row", make_row)
    monkeypatch.setattr(points_module, "batch_size", lambda point_s: 2)
    [chunk] = make_chunks(plan, fixed_sizes(5), {"sweep_dir": str(tmp_path), "cache_dir": None})
    results = run_chunk(chunk)
    assert [r.status for r in results] == ["ok"] * 5
    assert events == [
        *("prepare 0", "prepare 1", "run 0", "run 1", "row 0", "row 1"),
        *("prepare 2", "prepare 3", "run 2", "run 3", "row 2", "row 3"),
        *("prepare 4", "run 4", "row 4"),
    ]
    for n, result in enumerate(results):
        [row] = result.rows
        assert row["cached"] is False
        assert result.log.startswith(f"prepared {4096 * (n + 1)}\n")
        assert f"bytes_moved               {4096 * (n + 1)}\n" in result.log
        assert 0.4 + row["sim_wall_s"] <= row["wall_s"] < 0.55 + row["sim_wall_s"]
        assert row["wall_s"] <= result.wall_s < row["wall_s"] + 0.15


def test_a_point_that_fails_to_prepare_ahead_gets_its_error_row(plan, tmp_path):
    """Preparing ahead swallows nothing: a point whose values break a rule (one PE
    cannot stream more than its HBM) is run as before and reports its own error."""
    plan.points[1].values = []  # the OmegaConf path below reads only the overrides
    plan.points[1].assigned = None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    [bad] = OverridesParser.create().parse_overrides(["workload.bytes_per_pe=0"])
    plan.points[1].values = [bad]
    chunk = next(
        iter(make_chunks(plan, fixed_sizes(5), {"sweep_dir": str(tmp_path), "cache_dir": None}))
    )
    results = {r.num: r for r in run_chunk(chunk)}
    assert [results[n].status for n in range(5)] == ["ok", "error", "ok", "ok", "ok"]
    assert results[1].error == "workload.bytes_per_pe: 0 is not >= 1"
    assert results[1].rows[0]["workload.bytes_per_pe"] == 0


def signal_masks(pid: int, tid: int | None = None) -> dict[str, bool]:
    """Whether SIGINT is blocked / ignored in a process (or one of its threads), from
    the hexadecimal signal sets in /proc/<pid>/status (bit n - 1 for signal n)."""
    path = f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status"
    lines = Path(path).read_text().splitlines()
    sets = dict(line.split(":\t") for line in lines if ":\t" in line)
    bit = 1 << (signal.SIGINT - 1)
    return {name: bool(int(sets[name], 16) & bit) for name in ("SigBlk", "SigIgn")}


def test_workers_start_with_ctrl_c_held_then_ignore_it(monkeypatch):
    """The workers are forked with SIGINT blocked (a Ctrl-C in the instant after a
    fork, before the worker ignores it, printed a worker's traceback), and each then
    ignores it and unblocks it. The pool's manager thread, started in the same held
    stretch, keeps it blocked (the main thread takes Ctrl-C); the parent does not."""
    monkeypatch.setattr(pool_module, "warm_up", lambda task: None)
    # How this process met SIGINT (a shell's background job starts with it ignored):
    # starting the pool must leave the main thread as it was.
    before = signal_masks(os.getpid(), threading.get_native_id())
    started = pool_module.LocalPool(2, None, None)
    started.start()
    try:
        executor = started._pool
        ready = {"SigBlk": False, "SigIgn": True}  # once each worker's initializer ran
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(signal_masks(pid) == ready for pid in executor._processes):
                break
            time.sleep(0.01)
        for pid in executor._processes:
            assert signal_masks(pid) == ready
        manager = executor._executor_manager_thread.native_id
        assert signal_masks(os.getpid(), manager)["SigBlk"]
        assert signal_masks(os.getpid(), threading.get_native_id()) == before
        assert not before["SigBlk"]
    finally:
        started.close()


def test_a_generic_task_chunk_reports_each_point_as_it_ends(plan, monkeypatch, tmp_path):
    """Points of another task function (Hydra's run_job per point) are not batched:
    ``after`` (a cluster task's progress marks) sees each as soon as it ends."""
    events = []

    def run_hydra_job(chunk, point, task, context):
        events.append(f"run {point.num}")
        return points_module.PointResult(point.num, "ok")

    monkeypatch.setattr(points_module, "run_hydra_job", run_hydra_job)
    base = {"sweep_dir": str(tmp_path), "cache_dir": None, "kernbench": False}
    [chunk] = make_chunks(plan, fixed_sizes(5), base)
    results = run_chunk(chunk, after=lambda result: events.append(f"done {result.num}"))
    assert [r.num for r in results] == [0, 1, 2, 3, 4]
    assert events == [f"{what} {n}" for n in range(5) for what in ("run", "done")]


def test_batches_hold_about_a_tenth_of_a_second_of_the_workers_recent_points():
    """batch_size: one point before the worker has timed any; then as many of its
    recent points as fit in BATCH_SECONDS (0.1 s), at least 1, at most 16."""
    assert (points_module.BATCH_SECONDS, points_module.POINTS_PER_BATCH) == (0.1, 16)
    assert points_module.batch_size(None) == 1
    assert points_module.batch_size(0.005) == 16  # a dispatch_ratio point
    assert points_module.batch_size(0.01) == 10
    assert points_module.batch_size(0.0099) == 10
    assert points_module.batch_size(0.0101) == 9
    assert points_module.batch_size(0.04) == 2  # a bw_equivalence point
    assert points_module.batch_size(0.1) == 1
    assert points_module.batch_size(0.06) == 1
    assert points_module.batch_size(30.0) == 1  # minutes-long points: one at a time
    assert points_module.batch_size(0.0) == 16


def test_each_batch_is_sized_from_the_last_ones_points(plan, monkeypatch, tmp_path):
    """run_chunk asks batch_size with the mean wall_s of the previous batch's points
    (None for the worker's first), and takes that many points next."""
    asked = []

    def sizes(point_s):
        asked.append(point_s)
        return [1, 3, 2][len(asked) - 1]

    monkeypatch.setattr(points_module, "batch_size", sizes)
    monkeypatch.setattr(points_module, "_recent_point_s", None)
    [chunk] = make_chunks(plan, fixed_sizes(5), {"sweep_dir": str(tmp_path), "cache_dir": None})
    results = run_chunk(chunk)
    walls = [r.wall_s for r in results]
    assert asked == [None, walls[0], sum(walls[1:4]) / 3]
    assert points_module._recent_point_s == sum(walls[4:]) / 1


# A worker killed halfway through writing its chunk's result (the sweep abandons its
# workers when it stops, or when the parent fails, e.g. points.log over the file size
# limit: once in CI, the sweep said "cannot write" and then hung at exit). The
# worker here writes the first part of a result message (a 4-byte length of 1000,
# then 10 bytes) and waits to be killed; the process must still exit once the pool
# is killed. In a fresh process: the hang was in the interpreter's exit.
KILLED_MID_RESULT = """
import os, struct, sys, time
from pathlib import Path
from kernbench.sweep.pool import _kill, _started

def half_a_result(fd, flag):
    os.write(fd, struct.pack("!i", 1000) + b"x" * 10)
    Path(flag).touch()
    time.sleep(600)

flag = Path(sys.argv[1]) / "written"
pool = _started(1)
pool.submit(half_a_result, pool._result_queue._writer.fileno(), str(flag))
while not flag.exists():
    time.sleep(0.01)
_kill(pool)
print("killed")
"""


def test_a_process_whose_pool_was_killed_mid_result_exits(tmp_path):
    proc = run_python(KILLED_MID_RESULT, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "killed\n"


# A worker lost with its chunks at the moment the sweep stops. The first chunk kills
# the one worker that takes it (unpickled there, it ends the process at once, as a
# segfault or the OOM killer would), so both chunks in flight (two per worker) are
# lost; the stop comes as the pool asks for the next chunk (it cuts the sweep's next
# chunk before it forks a new pool). Lost chunks are abandoned once stopping, not rerun
# in a new pool: one round, one worker forked. The pool's parent counts its forks.
LOST_AT_THE_STOP = """
import os, signal, sys
from kernbench.sweep import stop
from kernbench.sweep.plan import Point
from kernbench.sweep.points import Chunk
from kernbench.sweep.pool import LocalPool

class KillsItsWorker:
    def __reduce__(self):
        return os._exit, (3,)

forks = []
os.register_at_fork(before=lambda: forks.append(os.getpid()))
request = stop.StopRequest()

def chunks():
    yield Chunk(KillsItsWorker(), [Point(0, [], 0), Point(1, [], 0)], sys.argv[1])
    yield Chunk(None, [Point(2, [], 0)], sys.argv[1])
    request.handle(signal.SIGINT, None)  # asked for more: both chunks are lost by now

results = []
with request.polled():
    LocalPool(1, None, None, request=request).run(chunks(), results.append)
print(len(forks), "forked,", len(results), "results")
"""


def test_chunks_lost_to_a_dead_worker_as_the_sweep_stops_are_not_rerun(tmp_path):
    proc = run_python(LOST_AT_THE_STOP, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "1 forked, 0 results\n"

"""A sweep stops when told (Ctrl-C, SIGTERM) and never leaves a process behind.

Each test drives the real ``kernbench -m`` in a subprocess in its own process group
(``start_new_session``), as a terminal or a job scheduler meets it: Ctrl-C is SIGINT to
the whole group, ``kill PID`` is SIGTERM to the sweeping process alone, SIGKILL is
either. What an interrupted sweep must show (kernbench.sweep.stop): exit status
128 + the signal (130, 143), one line ``kernbench: interrupted: N of M points done; ...``
and no traceback, the N finished points' rows in results.parquet, no process of the
group alive 2 s after it exits, and a rerun of the same command that finishes the sweep
with every point exactly once.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.sweep import MERGED_FILE
from kernbench.sweep.stop import WATCH_S
from tests.test_launchers import (
    SLOW_GRID,
    cached_points,
    command,
    environment,
    group_size,
    run_cli,
)

pytestmark = pytest.mark.slow

LINE = re.compile(
    r"^kernbench: interrupted: (\d+) of (\d+) points done; rerun the same command to"
    r" finish \(done points are cached\)$"
)
# Two points of several seconds each even in the compiled build (1 GiB a PE in 4 KiB
# accesses on 16 PEs, ~12 s compiled): still running whenever a signal comes. With
# 512 MiB (~6 s), a point under the Ray launcher sometimes finished first (1 of 5
# runs): the cluster starts the chunk tasks fast, and the test waits 3 s more.
LONG_GRID = (
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=1073741824",
    "workload.outstanding=1,2",
    "hydra.sweeper.chunk_size=1",
)
# Two chunks of one point: chunk 0 runs for seconds (time to kill its job), chunk 1 at once.
ONE_LONG_CHUNK = (
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=1073741824,4096",
    "hydra.sweeper.chunk_size=1",
    "cache=false",
)
# 16 shapes: the sweeper composes for over a second (its workers already forked, idle).
MANY_SHAPES = (
    "address=pa,va",
    "topology=small,default",
    "channel_mapping=n_to_one,one_to_one",
    "workload=stream,gqa_opt2",
)


def start(out: Path, *overrides: str) -> subprocess.Popen:
    return subprocess.Popen(
        command(out, *overrides),
        cwd=out.parent,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the sweep and its workers
    )


def wait_for(proc: subprocess.Popen, ready: Callable[[], bool], within: float = 120) -> None:
    deadline = time.monotonic() + within
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the sweep ended before it could be told to stop"
    assert ready(), "the sweep never reached the state to interrupt"


def a_point_ended(out: Path) -> Callable[[], bool]:
    log = out / "points.log"
    return lambda: log.exists() and re.search(r"^#\d", log.read_text(), re.M) is not None


def finish(proc: subprocess.Popen) -> str:
    """Wait for the sweep to exit; then no process of its group may be left 2 s later
    (a worker checks its parent every WATCH_S = 0.5 s)."""
    _, stderr = proc.communicate(timeout=60)
    gone = time.monotonic() + 4 * WATCH_S
    while group_size(proc.pid) and time.monotonic() < gone:
        time.sleep(0.05)
    left = subprocess.run(["ps", "-o", "pid,args", "-g", str(proc.pid)], capture_output=True)
    assert group_size(proc.pid) == 0, f"a process of the sweep outlived it: {left.stdout}"
    return stderr


def chunk_runner(pids: list[int], sweep: Path, num: int) -> int | None:
    """Which of ``pids`` runs chunk job ``num`` of ``sweep`` under another launcher
    (submitit, Ray): the one holding the job's log open in its folder."""
    folder = f"{sweep / '.kernbench' / 'chunks' / str(num)}/"
    for pid in pids:
        with contextlib.suppress(OSError):
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith(folder) for fd in fds):
                return pid
    return None


def done_marks(sweep: Path) -> int:
    """Points a launcher's chunk jobs have marked done (kernbench.sweep.remote)."""
    done = sweep / ".kernbench" / "done"
    return sum(not m.name.startswith(".") for m in done.iterdir()) if done.is_dir() else 0


def one_line(stderr: str) -> re.Match:
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("kernbench:")]
    assert len(lines) == 1, stderr[-3000:]
    match = LINE.match(lines[0])
    assert match, lines[0]
    return match


@pytest.mark.parametrize(
    ("signum", "to_group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["ctrl-c", "sigterm-to-the-sweep-alone"],
)
def test_a_stopped_sweep_keeps_what_is_done_and_a_rerun_finishes_it(tmp_path, signum, to_group):
    out = tmp_path / "sweep"
    proc = start(out, *SLOW_GRID)
    wait_for(proc, a_point_ended(out))
    (os.killpg if to_group else os.kill)(proc.pid, signum)
    stderr = finish(proc)
    assert proc.returncode == 128 + signum  # 130 for SIGINT, 143 for SIGTERM
    done, total = map(int, one_line(stderr).groups())
    assert total == 8 and 1 <= done < 8, "stopped part-way"
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    nums = [row["job_num"] for row in rows]
    assert len(rows) == done and len(set(nums)) == done and set(nums) <= set(range(8))
    assert {row["status"] for row in rows} == {"ok"}
    cached_before = cached_points(tmp_path)  # points that finished, merged or not
    assert cached_before >= done

    # The same command again (the same sweep directory): every point exactly once,
    # exactly the points that had finished from the cache.
    rerun = run_cli(tmp_path, command(out, *SLOW_GRID))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [row["job_num"] for row in rows] == list(range(8))
    assert [row["workload.outstanding"] for row in rows] == list(range(1, 9))
    assert sum(row["cached"] for row in rows) == cached_before


def test_a_stopped_uncached_sweep_says_how_to_keep_its_points_and_that_works(tmp_path):
    """Issue 56: with cache=false the line said a rerun runs every point again, though
    resuming into the sweep's directory keeps the merged rows. It now gives that
    command's keys; run with them, the points done are kept, not run again."""
    out = tmp_path / "sweep"
    proc = start(out, *SLOW_GRID, "cache=false")
    wait_for(proc, a_point_ended(out))
    os.killpg(proc.pid, signal.SIGINT)
    stderr = finish(proc)
    assert proc.returncode == 130
    [line] = [x for x in stderr.splitlines() if x.startswith("kernbench:")]
    advice = f"hydra.sweeper.resume=true hydra.sweep.dir={out}"
    found = re.fullmatch(
        rf"kernbench: interrupted: (\d+) of 8 points done; cache=false: rerun with"
        rf" {re.escape(advice)} to keep them and run the rest",
        line,
    )
    assert found, line
    kept = {r["job_num"]: r["sim_wall_s"] for r in pq.read_table(out / MERGED_FILE).to_pylist()}
    assert len(kept) == int(found.group(1)) >= 1
    rerun = run_cli(tmp_path, command(out, *SLOW_GRID, "cache=false", *advice.split()[:1]))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [row["job_num"] for row in rows] == list(range(8))
    # the kept rows are the stopped sweep's own (a point run again would time anew)
    assert {r["job_num"]: r["sim_wall_s"] for r in rows if r["job_num"] in kept} == kept


def test_ctrl_c_while_composing_stops_before_any_point(tmp_path):
    out = tmp_path / "sweep"
    proc = start(out, *MANY_SHAPES, "cache=false")
    wait_for(proc, lambda: group_size(proc.pid) >= 3 and not (out / "points.log").exists())
    os.killpg(proc.pid, signal.SIGINT)
    stderr = finish(proc)
    assert proc.returncode == 130
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == (
        "kernbench: interrupted: 0 of 16 points done; cache=false, so a rerun runs every"
        " point again"
    )
    assert not (out / MERGED_FILE).exists()


def test_a_second_ctrl_c_leaves_at_once(tmp_path):
    """The first Ctrl-C waits up to GRACE_S for the running points (here several seconds each:
    they are abandoned); a second one leaves at once, merging nothing."""
    out = tmp_path / "sweep"
    proc = start(out, *LONG_GRID)
    wait_for(proc, lambda: (out / "points.log").exists() and group_size(proc.pid) >= 3)
    os.killpg(proc.pid, signal.SIGINT)
    # Ctrl-C again, as a user presses it when nothing seems to happen: every 0.1 s until
    # the sweep exits, so one comes after the first was handled (two SIGINTs that arrive
    # before Python runs its handler are one; a single second one 0.2 s later sometimes
    # was, on a loaded machine) and well inside the first one's GRACE_S of 0.8 s.
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
    stderr = finish(proc)
    assert proc.returncode == 130
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == "kernbench: interrupted again: stopped at once"
    assert not (out / MERGED_FILE).exists()


def test_workers_end_when_the_sweep_is_killed(tmp_path):
    """SIGKILL to the sweeping process alone: its workers, mid-point, exit on their own."""
    out = tmp_path / "sweep"
    proc = start(out, *LONG_GRID, "cache=false")
    wait_for(proc, lambda: (out / "points.log").exists() and group_size(proc.pid) >= 3)
    os.kill(proc.pid, signal.SIGKILL)
    finish(proc)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill-to-the-sweep-alone"])
def test_submitit_local_jobs_end_with_the_sweep(tmp_path, how):
    """Under submitit_local the chunks run in submitit's own processes (a controller
    and a job per chunk): Ctrl-C reaches the sweeper alone (no traceback from
    submitit's processes), and whichever way the sweep ends, its jobs end too."""
    out = tmp_path / "sweep"
    proc = start(out, *LONG_GRID, "hydra/launcher=submitit_local", "cache=false")
    jobs = out / ".submitit"
    wait_for(proc, lambda: jobs.exists() and group_size(proc.pid) >= 5)
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    stderr = finish(proc)
    if how == "ctrl-c":
        assert proc.returncode == 130
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
        assert stderr.strip().splitlines()[-1].startswith("kernbench: interrupted: 0 of 2")
    else:
        assert proc.returncode == -signal.SIGKILL


def test_ray_cluster_ends_with_a_stopped_sweep(tmp_path):
    """Under the ray launcher (a local cluster this process starts), Ctrl-C stops the
    sweep in one line, and no process of the cluster is left."""
    out = tmp_path / "sweep"
    proc = start(
        out,
        *LONG_GRID,
        "hydra/launcher=ray",
        "+hydra.launcher.ray.init.num_cpus=2",
        "cache=false",
    )
    jobs = out / ".kernbench" / "chunks"
    wait_for(proc, lambda: jobs.exists() and group_size(proc.pid) >= 8)
    time.sleep(3)  # the cluster has started the chunk tasks
    os.killpg(proc.pid, signal.SIGINT)
    stderr = finish(proc)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.strip().splitlines()[-1].startswith("kernbench: interrupted: 0 of 2")


# A process that keeps starting others (a Ray cluster starting up: its dashboard
# spawned module processes for seconds), and a stop that waits meanwhile (Ray's
# shutdown) before it kills: abandon_jobs must leave none of them, even those started
# while it waited. It killed what its first scan had found, and the children started
# meanwhile lived on, orphaned. In a process of its own, in its own process group.
SPAWNER = """
import subprocess, time
while True:
    subprocess.Popen(["sleep", "30"])
    time.sleep(0.02)
"""
ABANDON = """
import subprocess, sys, time, types
from kernbench.sweep import remote

subprocess.Popen([sys.executable, "-c", sys.argv[1]])
time.sleep(0.3)
sys.modules["ray"] = types.SimpleNamespace(  # a shutdown that takes its time
    is_initialized=lambda: True, shutdown=lambda: time.sleep(0.3)
)
remote.abandon_jobs()
"""


def test_abandoned_jobs_leave_nothing_started_while_they_were_ended(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", ABANDON, SPAWNER], cwd=tmp_path, env=environment(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # an orphan would hold a pipe
        start_new_session=True,
    )  # fmt: skip
    finish(proc)  # no process of its group left 2 s after it exits
    assert proc.returncode == 0

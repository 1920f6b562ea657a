"""A local worker that dies mid-sweep (the OOM killer's SIGKILL, any signal) costs the
sweep no row (kernbench.sweep.pool): the points it had finished keep theirs, its chunk's
unfinished points are each retried once alone, only one that kills its worker again
gets an error row (naming the signal), and the sweep ends with its table and a line
naming what died.

The sweeps run the real ``kernbench -m`` in a subprocess, as a user meets it: one kills
a real worker from outside while chunks are still to be handed out (issue 56: exit 1, a
``BrokenProcessPool`` traceback, no table); one has a point kill its worker every time
it runs, through the test-only hook ``KERNBENCH_TEST_KILL_POINT`` (and the same sweep
without it shows no death); a SIGTERM to the whole process group stays a stop. Workers
that die before they run any point end the sweep instead of being replaced forever.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.sweep import MERGED_FILE
from kernbench.sweep.pool import TEST_KILL_ENV
from tests.support import run_python
from tests.test_launchers import command, environment, run_cli
from tests.test_stop import finish, one_line, start, wait_for

# 48 points of about 0.1 s each (16 PEs of topology=small stream 6-10 MiB each in 4 KiB
# accesses) in chunks of 4 on 2 workers: 12 chunks, at most 4 in flight, so when a
# worker is killed after 10 points (mid-chunk) there are chunks it never saw.
SLOW_48 = (
    "topology=small",
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=6291456,8388608,10485760",
    "workload.outstanding=range(1,17)",
    "hydra.sweeper.chunk_size=4",
    "hydra.launcher.n_jobs=2",
    "cache=false",
)
# 32 quick points (one PE streams (n + 1) x 4 KiB) in chunks of 4 on 2 workers: 8 chunks.
QUICK_32 = (
    "topology=small",
    "pe_cost_model=zero",
    "workload.active_pes=1",
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=range(4096,131073,4096)",
    "hydra.sweeper.chunk_size=4",
    "hydra.launcher.n_jobs=2",
    "cache=false",
)
DEATH = re.compile(r"^kernbench: warning: a worker process died \((?P<how>[^)]*)\) (?P<what>.*)$")
KILLED = "signal 9, SIGKILL"


def death_lines(stderr: str) -> list[re.Match]:
    return [m for line in stderr.splitlines() if (m := DEATH.match(line))]


def workers(pid: int) -> list[int]:
    """The sweeping process's children: its pool's workers."""
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def points_logged(sweep: Path) -> int:
    log = sweep / "points.log"
    return len(re.findall(r"^#\d+ \[", log.read_text(), re.M)) if log.exists() else 0


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_costs_no_row(tmp_path):
    """SIGKILL to one worker (as the OOM killer sends it) once 10 of 48 points are done:
    exit 0, every point's row ok and once, and a line naming the death and what became
    of the points its chunk had not finished (each retried alone, each ok)."""
    out = tmp_path / "sweep"
    proc = subprocess.Popen(
        command(out, *SLOW_48), cwd=tmp_path, env=environment(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while points_logged(out) < 10 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None and points_logged(out) < 40, "no time left to kill"
        os.kill(workers(proc.pid)[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "Traceback" not in stderr, stderr[-3000:]
    assert proc.returncode == 0, stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [r["job_num"] for r in rows] == list(range(48))
    assert {r["status"] for r in rows} == {"ok"}
    [death] = death_lines(stderr)
    assert death["how"] == KILLED
    # Killed running its chunk (or, rarely, between two: nothing lost then). Its
    # unfinished points, at most the chunk's 4, were each retried alone, and came back ok.
    what = re.fullmatch(
        r"with (\d) points? of its chunk unfinished \(([#\d, ]+)\); (each was|it was)"
        r" retried alone: (\d) ok, 0 errors|while it ran no point",
        death["what"],
    )
    assert what, death["what"]
    if what[1]:
        assert 1 <= int(what[1]) <= 4 and what[4] == what[1]
        assert len(what[2].split(", ")) == int(what[1])


def test_a_point_that_always_kills_its_worker_is_the_one_error_row(tmp_path):
    """Point #10 kills its worker (SIGKILL) each time it starts. Its chunk is #8-#11:
    #8 and #9 had finished and keep their rows, #10 and #11 are retried alone; #10
    kills its worker again and gets the one error row, naming the signal; every other
    point is ok (those in flight on the other worker ran again), including the chunks
    not yet handed out when the pool broke. Exit 1: a point failed."""
    out = tmp_path / "sweep"
    proc = run_cli(tmp_path, command(out, *QUICK_32), env={TEST_KILL_ENV: "10"})
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1, proc.stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [r["job_num"] for r in rows] == list(range(32))
    assert [r["status"] for r in rows] == ["ok"] * 10 + ["error"] + ["ok"] * 21
    error = f"its worker process died running it ({KILLED}) and again on its retry alone ({KILLED})"
    assert rows[10]["error"] == error
    assert rows[10]["workload.bytes_per_pe"] == 11 * 4096  # the point's own config
    assert [r["bytes_moved"] for r in rows[11:]] == [4096 * (n + 1) for n in range(11, 32)]
    runs = f"{TEST_KILL_ENV}: point #10 kills its worker"
    assert proc.stderr.splitlines().count(runs) == 2  # its run in its chunk, its one retry
    [death] = death_lines(proc.stderr)
    assert death["how"] == KILLED
    assert death["what"] == (
        "with 2 points of its chunk unfinished (#10, #11); each was retried alone:"
        " 1 ok, 1 error (#10 killed its worker again)"
    )
    lines = [line for line in proc.stderr.splitlines() if line.startswith("kernbench:")]
    assert lines[-2:] == [
        death.group(0),
        f"kernbench: error: 1 of 32 sweep points failed; see the status and error columns"
        f" of {out / MERGED_FILE}",
    ]
    said = f"kernbench: error: point #10 ({' '.join(QUICK_32[:4])} workload.bytes_per_pe=45056"
    assert f"{said} cache=False): {error}" in proc.stderr.splitlines()


def test_without_the_hook_the_same_sweep_has_no_death(tmp_path):
    """The hook costs nothing unset: the same sweep, every row ok, exit 0, no line."""
    out = tmp_path / "sweep"
    proc = run_cli(tmp_path, command(out, *QUICK_32))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [(r["job_num"], r["status"]) for r in rows] == [(n, "ok") for n in range(32)]
    assert death_lines(proc.stderr) == []


@pytest.mark.slow
def test_sigterm_to_the_process_group_is_a_stop_not_a_death(tmp_path):
    """A scheduler's SIGTERM to the whole process group ends the workers too (they take
    SIGTERM's default): the sweep stops in order (143, its one line, the finished
    points' rows), and retries nothing and names no death."""
    out = tmp_path / "sweep"
    proc = start(out, *(o for o in SLOW_48 if o != "cache=false"))
    wait_for(proc, lambda: points_logged(out) >= 10)
    os.killpg(proc.pid, signal.SIGTERM)
    stderr = finish(proc)
    assert proc.returncode == 143, stderr[-3000:]
    done, total = map(int, one_line(stderr).groups())  # the stop's line, and no other
    assert total == 48 and 10 <= done < 48
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert len(rows) == done and {r["status"] for r in rows} == {"ok"}


# Workers that die before they run any point (here: unpickling the chunk ends the
# process, as a crash at start-up would) are not replaced forever: after
# MAX_IDLE_BREAKS pools in a row that broke with no point run, every point left gets an
# error row saying so, and the sweep ends. The parent counts its forks (one a pool).
DIE_BEFORE_ANY_POINT = """
import os, sys
from kernbench.sweep.plan import Point
from kernbench.sweep.points import Chunk
from kernbench.sweep.pool import MAX_IDLE_BREAKS, LocalPool

class KillsItsWorker:
    def __reduce__(self):
        return os._exit, (3,)

forks = []
os.register_at_fork(before=lambda: forks.append(os.getpid()))
chunks = [
    Chunk(KillsItsWorker(), [Point(n, [], 0), Point(n + 1, [], 0)], sys.argv[1], kernbench=False)
    for n in (0, 2, 4)
]
results = []
LocalPool(1, None, None).run(chunks, results.append)
assert len(forks) == MAX_IDLE_BREAKS == 3, forks
for result in results:
    print(result.num, result.status, result.error)
"""


def test_workers_that_die_before_any_point_are_not_replaced_forever(tmp_path):
    proc = run_python(DIE_BEFORE_ANY_POINT, str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    error = (
        "its worker processes kept dying before they ran a point (3 pools in a row; the"
        " last: exit status 3), so it was not run"
    )
    assert proc.stdout.splitlines() == [f"{n} error {error}" for n in range(6)]
    said = "kernbench: warning: a worker process died (exit status 3) while it ran no point"
    assert proc.stderr.splitlines() == [said] * 3

"""The submitit launcher stops and fails as the local pool does (issue 36).

Under ``hydra/launcher=submitit_local`` each chunk is a job in a process of its own
(and SLURM's are on other nodes): SIGTERM to the sweeping process stops it like Ctrl-C
(exit 143, one line, the finished points' rows merged, no job left), and a job that
ends without a result (killed, out of time, its node lost) makes error rows of its
points where it aborted the sweep with a traceback and no table. (Joining a running
cluster is Ray's; that no job outlives a SIGKILLed sweep, tests/test_stop.py.)
"""

from __future__ import annotations

import os
import signal

import pyarrow.parquet as pq
import pytest

from kernbench.sweep import MERGED_FILE
from kernbench.sweep.stop import descendants
from tests.test_stop import (
    ONE_LONG_CHUNK,
    chunk_runner,
    done_marks,
    finish,
    one_line,
    start,
    wait_for,
)

pytestmark = pytest.mark.slow

SUBMITIT = ("hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5")


def test_sigterm_stops_a_submitit_sweep_and_merges_what_is_done(tmp_path):
    out = tmp_path / "sweep"
    grid = (
        "workload.access_bytes=4096",
        "workload.bytes_per_pe=8388608",
        "workload.outstanding=1,2",
        "hydra.sweeper.chunk_size=2",  # one job: its second point runs when told
    )
    proc = start(out, *grid, *SUBMITIT)
    wait_for(proc, lambda: done_marks(out) >= 1)
    os.kill(proc.pid, signal.SIGTERM)
    stderr = finish(proc)  # and no job left 2 s later
    assert proc.returncode == 143, stderr[-3000:]
    done, total = map(int, one_line(stderr).groups())
    assert (done, total) == (1, 2)
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert len(rows) == done and {r["status"] for r in rows} == {"ok"}


def test_a_submitit_job_killed_becomes_error_rows(tmp_path):
    """The job running chunk 0 killed: submitit's UncompletedJobError (after it waited
    15 s for a result file, for a local job 1 s) is an error row for its point, and
    chunk 1's point is ok."""
    out = tmp_path / "sweep"
    overrides = (
        *ONE_LONG_CHUNK,
        *SUBMITIT,
    )
    proc = start(out, *overrides)
    wait_for(proc, lambda: chunk_runner(descendants(proc.pid), out, 0) is not None)
    os.kill(chunk_runner(descendants(proc.pid), out, 0), signal.SIGKILL)
    stderr = finish(proc)
    assert proc.returncode == 1, stderr[-3000:]  # a failed point, as any
    assert "Traceback" not in stderr, stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [(r["job_num"], r["status"]) for r in rows] == [(0, "error"), (1, "ok")]
    assert rows[0]["error"].startswith("its chunk job failed: UncompletedJobError: submitit job")
    assert "ended without a result" in rows[0]["error"] and "\n" not in rows[0]["error"]

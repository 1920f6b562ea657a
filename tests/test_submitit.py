"""The submitit launcher stops and fails as the local pool does (issue 36).

Under ``hydra/launcher=submitit_local`` each chunk is a job in a process of its own
(and SLURM's are on other nodes): SIGTERM to the sweeping process stops it like Ctrl-C
(exit 143, one line, the finished points' rows merged, no job left), and a job that
ends without a result (killed, out of time, its node lost) makes error rows of its
points where it aborted the sweep with a traceback and no table. (Joining a running
cluster is Ray's; that no job outlives a SIGKILLed sweep, tests/test_stop.py.)
"""

from __future__ import annotations

import pytest

from kernbench.sweep.stop import descendants

pytestmark = pytest.mark.slow

SUBMITIT = ("hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5")


def test_sigterm_stops_a_submitit_sweep_and_merges_what_is_done(launcher_stop):
    grid = (
        "workload.access_bytes=4096",
        "workload.bytes_per_pe=8388608",
        "workload.outstanding=1,2",
        "hydra.sweeper.chunk_size=2",  # one job: its second point runs when told
    )
    done, total, _ = launcher_stop.sigterm(*grid, *SUBMITIT)
    assert (done, total) == (1, 2)


def test_a_submitit_job_killed_becomes_error_rows(launcher_stop):
    """The job running chunk 0 killed: submitit's UncompletedJobError (after it waited
    15 s for a result file, for a local job 1 s) is an error row for its point, and
    chunk 1's point is ok."""
    rows = launcher_stop.kill_chunk_zero(lambda proc: descendants(proc.pid), *SUBMITIT)
    assert rows[0]["error"].startswith("its chunk job failed: UncompletedJobError: submitit job")
    assert "ended without a result" in rows[0]["error"] and "\n" not in rows[0]["error"]

"""A sweep directory holds one grid's results, written by one sweep at a time
(kernbench.sweep.claim).

Each test runs the real ``kernbench -m`` in a subprocess into a directory named with
``hydra.sweep.dir`` (Hydra's default directory is new for every sweep, so only a named
one can meet another sweep's results).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.results import write_table_atomic
from kernbench.sweep import MERGED_FILE
from tests.test_launchers import command, run_cli
from tests.test_stop import LONG_GRID, finish, start, wait_for

SMALL = ("topology=small", "pe_cost_model=zero", "address=pa", "workload.access_bytes=4096")
GRID = (*SMALL, "workload.bytes_per_pe=4096,8192", "workload.outstanding=1,2")


def sweep(tmp_path: Path, out: Path, *overrides: str) -> subprocess.CompletedProcess:
    return run_cli(tmp_path, [*command(out, *overrides), "hydra.launcher.n_jobs=2"])


def rows(out: Path) -> list[dict]:
    return pq.read_table(out / MERGED_FILE).to_pylist()


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if line.startswith("kernbench:")]


def test_another_grid_is_refused_and_the_first_sweeps_results_stay(tmp_path):
    out = tmp_path / "sweep"
    first = sweep(tmp_path, out, *GRID)
    assert first.returncode == 0, first.stderr[-3000:]
    table = (out / MERGED_FILE).read_bytes()
    log = (out / "points.log").read_text()

    other = sweep(tmp_path, out, *SMALL, "workload.bytes_per_pe=4096,16384")
    assert other.returncode == 1
    assert error_lines(other.stderr) == [
        f"kernbench: error: hydra.sweep.dir: {out} holds another grid's sweep (point #0"
        " there is 'topology=small pe_cost_model=zero address=pa workload.access_bytes=4096"
        " workload.bytes_per_pe=4096 workload.outstanding=1', here 'topology=small"
        " pe_cost_model=zero address=pa workload.access_bytes=4096 workload.bytes_per_pe=4096');"
        " choose another directory (hydra.sweep.dir=...), or delete that one"
    ]
    assert (out / MERGED_FILE).read_bytes() == table  # nothing written
    assert (out / "points.log").read_text() == log

    # A grid that is the first one's first points only differs in size: refused too.
    fewer = sweep(tmp_path, out, *SMALL, "workload.bytes_per_pe=4096", "workload.outstanding=1,2")
    assert fewer.returncode == 1
    [line] = error_lines(fewer.stderr)
    assert "holds another grid's sweep (it has 4 points, this sweep 2)" in line


def test_the_same_grid_reruns_from_the_cache(tmp_path):
    out = tmp_path / "sweep"
    assert sweep(tmp_path, out, *GRID).returncode == 0
    again = sweep(tmp_path, out, *GRID)
    assert again.returncode == 0, again.stderr[-3000:]
    merged = rows(out)
    assert [r["job_num"] for r in merged] == [0, 1, 2, 3]
    assert all(r["cached"] for r in merged)


def test_resume_keeps_the_rows_there_and_runs_only_the_others(tmp_path):
    out = tmp_path / "sweep"
    assert sweep(tmp_path, out, *GRID, "cache=false").returncode == 0
    before = rows(out)
    # As a sweep stopped after points 0, 1 and 2 leaves it (no cache to serve the
    # rest), with point 1's row made by other code and point 2's an error (a timeout,
    # say): 0 is kept; 1, 2 and 3 run.
    other_code = {**before[1], "git_commit": "0" * 40}
    kept = [before[0], other_code, {**before[2], "status": "error", "error": "stopped"}]
    table = pq.read_table(out / MERGED_FILE)
    write_table_atomic(table.from_pylist(kept, schema=table.schema), out / MERGED_FILE)

    resumed = sweep(tmp_path, out, *GRID, "cache=false", "hydra.sweeper.resume=true")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = rows(out)
    assert [r["job_num"] for r in after] == [0, 1, 2, 3]
    assert after[0] == before[0]  # kept as it was, its wall_s included
    assert all(r["status"] == "ok" and not r["cached"] for r in after)
    metrics = ("sim_time_ns", "bytes_moved")
    assert [[r[m] for m in metrics] for r in after] == [[r[m] for m in metrics] for r in before]
    assert "# sweep of 3 points started" in (out / "points.log").read_text()

    # resume=true does not make another grid welcome
    other = sweep(tmp_path, out, *SMALL, "workload.bytes_per_pe=4096", "hydra.sweeper.resume=true")
    assert other.returncode == 1
    [line] = error_lines(other.stderr)
    assert "holds another grid's sweep" in line


def test_resume_keeps_no_row_of_another_grid(tmp_path):
    """Issue 36: with the records deleted (or another sweep's table copied in), resume
    met another grid's ok rows under this grid's job numbers and kept them all. A row
    is kept only when its configuration (its config hash) is its point's: here none
    is, so all four points run, the summary says four rows were dropped and why, and
    the table holds this grid's rows."""
    out = tmp_path / "sweep"
    first = (*SMALL[:-1], "workload.access_bytes=512,8192", "traffic=local,uniform")
    assert sweep(tmp_path, out, *first, "cache=false").returncode == 0
    shutil.rmtree(out / ".hydra")
    second = (*SMALL[:-1], "workload.access_bytes=1024,4096", "traffic=hotspot,neighbor")
    resumed = sweep(tmp_path, out, *second, "cache=false", "hydra.sweeper.resume=true")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = resumed.stdout + resumed.stderr
    assert (
        "Resuming: 0 of 4 points kept from " in said
        and "; 4 rows dropped (4 whose configuration is not their point's)" in said
    ), said[-2000:]
    after = rows(out)
    assert sorted((r["workload.access_bytes"], r["workload.pattern"]) for r in after) == [
        (1024, "hotspot"), (1024, "neighbor"), (4096, "hotspot"), (4096, "neighbor"),
    ]  # fmt: skip
    assert all(r["status"] == "ok" for r in after)


def test_resume_keeps_a_row_whose_configuration_is_its_points(tmp_path):
    """The same grid, records deleted: every row is its point's, so all are kept and
    nothing runs again."""
    out = tmp_path / "sweep"
    assert sweep(tmp_path, out, *GRID, "cache=false").returncode == 0
    before = rows(out)
    shutil.rmtree(out / ".hydra")
    resumed = sweep(tmp_path, out, *GRID, "cache=false", "hydra.sweeper.resume=true")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    said = resumed.stdout + resumed.stderr
    assert "Resuming: 4 of 4 points kept from " in said and "dropped" not in said
    assert rows(out) == before  # kept as they were, wall times included


def test_a_second_sweep_into_a_directory_being_written_is_refused(tmp_path):
    out = tmp_path / "sweep"
    first = start(out, *LONG_GRID)  # two points of several seconds
    try:
        wait_for(first, lambda: (out / "points.log").exists())
        second = sweep(tmp_path, out, *LONG_GRID)
        assert second.returncode == 1
        [line] = error_lines(second.stderr)
        assert line.startswith(f"kernbench: error: hydra.sweep.dir: {out} is being written by")
        assert f"another sweep (pid {first.pid} on " in line
        assert line.endswith("; wait for it to end or choose another directory")
    finally:
        first.send_signal(signal.SIGINT)
        finish(first)
    assert first.returncode == 130


@pytest.mark.parametrize("dry", [False, True])
def test_a_dry_run_writes_nothing_where_a_sweep_is(tmp_path, dry):
    """A dry run (of any grid) into a sweep's directory leaves it as it was."""
    out = tmp_path / "sweep"
    assert sweep(tmp_path, out, *GRID).returncode == 0
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other = (*SMALL, "workload.bytes_per_pe=4096,16384")
    run = sweep(tmp_path, out, *other, f"hydra.sweeper.dry_run={str(dry).lower()}")
    assert run.returncode == (0 if dry else 1), run.stderr[-3000:]
    if dry:
        assert run.stdout.startswith("dry run: 2 points; composing and checking each\n")
        assert "dry run: 2 points in 1 shapes, 0 invalid; nothing was run" in run.stdout
        assert "results.parquet" not in run.stdout
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files

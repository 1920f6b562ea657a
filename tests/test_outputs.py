"""Writing outputs: a location that cannot be written is one line naming the path and
the system's reason, exit 1 (kernbench.sweep.outputs); a row the table cannot hold
costs that row, never the table (kernbench.results.table); input the records cannot
hold is refused before anything is written; a grid is counted before it is enumerated.

Runs are real ``kernbench`` subprocesses; a file size limit (``RLIMIT_FSIZE``, what a
full disk does to the file being written: the write fails part way) is set in the
child only.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.results import rows_to_table, write_table_atomic
from kernbench.sweep import MERGED_FILE, outputs
from tests.test_launchers import run_cli

SMALL = ("topology=small", "pe_cost_model=zero", "address=pa", "workload.access_bytes=4096")
# 80 points, each logging a few hundred bytes in points.log: past 20 KB it cannot grow.
# (The seed is read only by uniform traffic: a seed axis over local is one point,
# kernbench.sweep.repeats; the offset is read by every pattern.)
LOG_PAST_20_KB = (
    *SMALL,
    "workload.bytes_per_pe=4096,8192",
    "workload.align_offset_bytes=range(0,40)",
)


def kernbench(
    tmp_path: Path,
    *args: str,
    file_limit: int | None = None,
    entry: tuple[str, ...] = ("-m", "kernbench.app"),
) -> subprocess.CompletedProcess:
    """``kernbench *args`` (``entry``: how Python starts it) under ``file_limit``."""

    def limit() -> None:
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return run_cli(tmp_path, [sys.executable, *entry, *args], preexec_fn=limit)


def one_error(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr[-3000:]
    [line] = [line for line in stderr.splitlines() if line.startswith("kernbench:")]
    return line


@pytest.mark.parametrize("multirun", [False, True], ids=["run", "sweep"])
def test_an_output_root_that_is_a_file_is_one_line(tmp_path, multirun):
    (tmp_path / "blocker").write_text("a file where a directory should be")
    args = ["-m"] if multirun else []
    proc = kernbench(
        tmp_path, *args, *SMALL, "workload.bytes_per_pe=4096", "paths.root=blocker/out"
    )
    assert proc.returncode == 1
    line = one_error(proc.stderr)  # names the key, and the run's (sweep's) directory in out/
    assert line.startswith(
        f"kernbench: error: paths.root: cannot write {tmp_path / 'blocker' / 'out'}/"
    )
    assert line.endswith(": Not a directory")


def test_a_sweep_whose_log_outgrows_the_disk_is_one_line_and_leaves_no_table(tmp_path):
    # 80 points each log a few hundred bytes in points.log: past 20 KB it cannot grow.
    out = tmp_path / "sweep"
    proc = kernbench(
        tmp_path,
        "-m",
        *LOG_PAST_20_KB,
        f"hydra.sweep.dir={out}",
        "cache=false",
        file_limit=20_000,
    )
    assert proc.returncode == 1
    assert (
        one_error(proc.stderr)
        == f"kernbench: error: cannot write {out / 'points.log'}: File too large"
    )
    assert not (out / MERGED_FILE).exists()  # no table that looks complete
    assert not list(out.glob(".results.parquet.*"))  # nor a partial one


# The sweeping process with CPython's exit-time race made wide: the pool's manager
# thread takes 0.4 s to clean up after a kill, and the exit's unlocked wake-up of that
# thread waits 1 s between seeing its pipe open and writing to it.
SLOW_POOL_THREAD = """
import sys, time
import concurrent.futures.process as futures
clean_up = futures._ExecutorManagerThread.join_executor_internals
def slow_clean_up(self):
    time.sleep(0.4)
    clean_up(self)
def slow_exit_wakeup(self):
    if not self._closed:
        if futures._global_shutdown:
            time.sleep(1.0)
        self._writer.send_bytes(b"")
futures._ExecutorManagerThread.join_executor_internals = slow_clean_up
futures._ThreadWakeup.wakeup = slow_exit_wakeup
from kernbench.app import main
sys.argv[0] = "kernbench"
main()
"""


def test_an_error_exit_waits_for_the_pools_thread_and_says_one_line(tmp_path):
    # Seen once in CI: after the one error line, Python's exit wrote to the wake-up
    # pipe of a pool thread that was closing it (OSError: Bad file descriptor). The
    # killed pool's thread must have ended before the process exits.
    out = tmp_path / "sweep"
    proc = kernbench(
        tmp_path,
        "-m",
        *LOG_PAST_20_KB,
        f"hydra.sweep.dir={out}",
        "cache=false",
        file_limit=20_000,
        entry=("-c", SLOW_POOL_THREAD),
    )
    assert proc.returncode == 1
    assert one_error(proc.stderr) == (
        f"kernbench: error: cannot write {out / 'points.log'}: File too large"
    )


def test_a_table_that_outgrows_the_disk_is_one_line_naming_it(tmp_path):
    # Two points: their records and log are a few KB each (the largest, a shape's
    # config, ~5.5 KB), under the 12 KB limit; results.parquet, ~160 columns of
    # metadata, is over 20 KB.
    out = tmp_path / "sweep"
    args = ["-m", *SMALL, "workload.bytes_per_pe=4096,8192"]
    proc = kernbench(tmp_path, *args, f"hydra.sweep.dir={out}", "cache=false", file_limit=12_000)
    line = one_error(proc.stderr)
    assert proc.returncode == 1
    assert line == f"kernbench: error: cannot write {out / MERGED_FILE}: File too large"
    assert not (out / MERGED_FILE).exists()
    assert not list(out.glob(".results.parquet.*"))
    assert (out / "points.log").read_text().count("[ok]") == 2


def test_a_row_the_table_cannot_hold_becomes_an_error_row_and_the_rest_are_written(tmp_path):
    rows = [
        {"job_num": 0, "status": "ok", "error": None, "workload.name": "stream", "x": 1.5},
        # text with a byte no encoding decoded (Python keeps it as a lone surrogate)
        {"job_num": 1, "status": "ok", "error": None, "workload.name": "str\udcffeam", "x": 2.5},
        {"job_num": "two", "status": "ok", "error": None, "workload.name": "stream", "x": 3.5},
    ]
    path = write_table_atomic(rows_to_table(rows), tmp_path / MERGED_FILE)
    table = pq.read_table(path).to_pylist()
    assert table[0] == rows[0]
    assert table[1] == {
        "job_num": 1,
        "status": "error",
        "error": "column workload.name: the value 'str\\xffeam' cannot be stored as string"
        " in the results table",
        "workload.name": "str\\xffeam",
        "x": 2.5,
    }
    assert table[2]["status"] == "error" and table[2]["job_num"] is None
    assert table[2]["error"] == (
        "column job_num: the value 'two' cannot be stored as int64 in the results table"
    )
    assert rows[1]["status"] == "ok"  # the caller's rows are left as they were


@pytest.mark.parametrize("multirun", [False, True], ids=["run", "sweep"])
def test_an_override_that_is_not_utf8_is_one_line(tmp_path, multirun):
    # What a shell passes for $'\xff' under a UTF-8 locale: Python holds it as U+DCFF.
    args = ["-m"] if multirun else []
    proc = kernbench(tmp_path, *args, *SMALL, "topology.name='a\udcff'", "paths.root=out")
    assert proc.returncode == 1
    assert one_error(proc.stderr) == (
        "kernbench: error: topology.name: the value 'a\\xff' is not UTF-8 text"
    )
    assert not (tmp_path / "out").exists()


def test_a_dry_run_counts_a_huge_grid_before_enumerating_it(tmp_path):
    out = tmp_path / "sweep"
    proc = kernbench(
        tmp_path,
        "-m",
        *SMALL,
        "workload.seed=range(1,100000000)",
        "workload.outstanding=1,2",
        f"hydra.sweep.dir={out}",
        "hydra.sweeper.dry_run=true",
    )
    assert proc.returncode == 1
    assert proc.stdout == "dry run: more than 1,000,000 points; composing and checking each\n"
    assert one_error(proc.stderr) == (
        "kernbench: error: hydra.sweeper.params: the grid has more than 1,000,000 points,"
        " the most one sweep holds (~16 KB of memory each in the sweeping process): split it"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("lines", "count"),
    [
        (["a=range(0,1000000,2)", "b=1,2"], 1_000_000),  # 500,000 x 2, measured
        (["a=range(0,1000001,2)", "b=1,2"], 1_000_001),  # 1,000,002: past the limit
        (["a=range(0,1,0.1)", "b=x,y,z", "c=7"], 30),  # a float range is walked
        (["a=range(10,0,-3)"], 4),  # 10, 7, 4, 1
        (["a=1"], 1),
    ],
)
def test_a_grid_is_counted_without_enumerating_it(lines, count):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from kernbench.sweep.sweeper import count_points

    overrides = OverridesParser.create().parse_overrides(lines)
    assert count_points(overrides, 1_000_000) == count


def test_a_write_error_names_its_own_file_else_the_callers_path(tmp_path, capsys):
    """``outputs.reported(where)``: an error the system raised naming a file (opening
    ``points.log`` under a path whose parent is a file) is reported with that file;
    ``where`` is named only for an error that names none (``os.write`` to
    ``/dev/full``: no space left, and no file name in the error)."""
    (tmp_path / "blocker").write_text("a file where a directory should be")
    log = tmp_path / "blocker" / "points.log"
    with pytest.raises(SystemExit) as stopped, outputs.reported(tmp_path / "sweep"):
        log.open("w")
    assert stopped.value.code == 1
    assert capsys.readouterr().err == f"kernbench: error: cannot write {log}: Not a directory\n"
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(SystemExit) as stopped, outputs.reported(tmp_path / "points.log"):
            os.write(fd, b"a row")
    finally:
        os.close(fd)
    assert stopped.value.code == 1
    assert capsys.readouterr().err == (
        f"kernbench: error: cannot write {tmp_path / 'points.log'}: No space left on device\n"
    )

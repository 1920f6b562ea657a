"""``hydra.sweeper.point_timeout_s``: a point that runs longer becomes an error row naming
the limit, and the sweep goes on (kernbench.sweep.points.deadline).

Each test runs the real ``kernbench -m`` in a subprocess on one worker, so the points
after a stopped one run in the same process the limit interrupted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.sweep import MERGED_FILE
from tests.test_launchers import command, run_cli
from tests.test_triton_sweep import USER_MODULE

LIMIT = ("hydra.sweeper.point_timeout_s: the point ran longer than {} s and was stopped"
         " (raise the limit, or leave it unset for none)")  # fmt: skip


def sweep(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    out = tmp_path / "sweep"
    proc = run_cli(tmp_path, [*command(out, *overrides), "hydra.launcher.n_jobs=1", "cache=false"])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist() if (out / MERGED_FILE).exists() else []
    return proc, rows


def test_a_point_past_the_limit_is_an_error_row_and_the_next_points_run(tmp_path):
    # Points 0 and 1 stream 512 MiB on each of 16 PEs in 4 KiB accesses: 2,097,152
    # accesses, ~5 s here even in the compiled build (setup.py), far past 1 s. Points 2
    # and 3 stream 8 KiB a PE, two 4 KiB reads of the PE's own HBM (dispatch free, PA).
    # A read is a round trip (DESIGN §13.1): 6 ns of route out, 40 ns of HBM access,
    # 6 ns back, then 4096 / 256 GB/s = 16 ns of drain, 68 ns; one in flight runs them
    # one after the other, 136 ns; two in flight overlap all but the second's drain
    # behind the first's, 6 + 40 + 6 + 2 x 16 = 84 ns (were 124 and 78, with the access
    # after the bytes and no way back). All four in one chunk on one worker: the points
    # after the stopped ones run in the process the limit stopped.
    proc, rows = sweep(
        tmp_path,
        "workload.access_bytes=4096",
        "workload.bytes_per_pe=536870912,8192",
        "workload.outstanding=1,2",
        "pe_cost_model=zero",
        "address=pa",
        "hydra.sweeper.point_timeout_s=1",
        "hydra.sweeper.chunk_size=4",
    )
    assert proc.returncode == 1  # a point failed
    assert [r["job_num"] for r in rows] == [0, 1, 2, 3]
    for long in rows[:2]:
        assert long["workload.bytes_per_pe"] == 536870912
        assert (long["status"], long["error"]) == ("error", LIMIT.format(1))
        assert long["wall_s"] >= 1.0  # it ran up to the limit
        assert long["sim_time_ns"] is None
    assert [(r["status"], r["sim_time_ns"]) for r in rows[2:]] == [("ok", 136.0), ("ok", 84.0)]
    stopped = [line for line in proc.stderr.splitlines() if line.endswith(LIMIT.format(1))]
    assert [line.split(" (")[0] for line in stopped] == [
        "kernbench: error: point #0",
        "kernbench: error: point #1",
    ]


SPIN = USER_MODULE.replace(
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)",
    "    x = tl.load(x_ptr + offs, mask=mask)\n"
    "    i = 0\n"
    "    while i >= 0:\n"
    "        x = x * factor\n"
    "        i += 1\n"
    "    tl.store(out_ptr + offs, x, mask=mask)",
)
assert SPIN != USER_MODULE


def test_a_triton_kernel_that_never_ends_is_stopped(tmp_path):
    # The user's kernel loops forever in Triton's interpreter (a while loop whose
    # condition never turns false): the limit interrupts it between two bytecodes.
    (tmp_path / "spin.py").write_text(SPIN)
    proc, rows = sweep(
        tmp_path,
        "topology=small",
        "workload=triton",
        "workload.kernel=spin:scale",
        "workload.size=1000,2000",
        "workload.block_size=256",
        "hydra.sweeper.point_timeout_s=5",
    )
    assert proc.returncode == 1
    assert [(r["job_num"], r["status"], r["error"]) for r in rows] == [
        (0, "error", LIMIT.format(5)),
        (1, "error", LIMIT.format(5)),
    ]


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("0", "0.0 is not a number of seconds in (0, 604800]"),
        ("-1", "-1.0 is not a number of seconds in (0, 604800]"),
        ("nan", "nan is not a number of seconds in (0, 604800]"),
        ("1e9", "1000000000.0 is not a number of seconds in (0, 604800]"),
    ],
)
def test_a_limit_out_of_range_is_one_line(tmp_path, value, line):
    proc, rows = sweep(
        tmp_path, "workload.bytes_per_pe=65536", f"hydra.sweeper.point_timeout_s={value}"
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"kernbench: error: hydra.sweeper.point_timeout_s: {line} (leave it unset for no limit)"
    ]
    assert rows == [] and not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("hydra.sweeper.point_timeout_s=abc", "hydra.sweeper.point_timeout_s=abc: not a number"),
        ("hydra.sweeper.resume=maybe", "hydra.sweeper.resume=maybe: not true or false"),
        ("hydra.launcher.n_jobs=two", "hydra.launcher.n_jobs=two: not an integer"),
        (
            "hydra.sweeper.chunk_sise=2",
            "hydra.sweeper.chunk_sise: no such key; did you mean hydra.sweeper.chunk_size?",
        ),
        (
            "hydra.sweeper.chunk_size=0",
            "hydra.sweeper.chunk_size: 0 is not an integer >= 1 or auto (points per chunk;"
            " auto or unset sizes chunks automatically)",
        ),
        (
            "hydra.sweeper.chunk_size=abc",
            "hydra.sweeper.chunk_size: 'abc' is not an integer >= 1 or auto (points per chunk;"
            " auto or unset sizes chunks automatically)",
        ),
        (
            "hydra.sweeper.max_batch_size=0",
            "hydra.sweeper.max_batch_size: 0 is not >= 1 (points per launcher batch; leave it"
            " unset for one batch)",
        ),
    ],
)
def test_the_sweepers_keys_are_typed_and_bounded(tmp_path, override, line):
    proc, rows = sweep(tmp_path, "workload.bytes_per_pe=65536", override)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [f"kernbench: error: {line}"]
    assert rows == [] and not (tmp_path / "sweep").exists()


def test_chunk_size_auto_is_the_automatic_size(tmp_path):
    proc, rows = sweep(
        tmp_path, "workload.bytes_per_pe=65536,131072", "hydra.sweeper.chunk_size=auto"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["status"] for r in rows] == ["ok", "ok"]


def test_a_limit_that_falls_during_an_import_waits_for_it(tmp_path):
    # The user's kernel case imports a helper that registers itself in a registry
    # (as torch registers its operators) and takes 2 s to import, then its kernel never
    # ends. The 1 s limit falls during that import: point 0 is stopped once the import
    # is done, in the kernel; point 1 finds the helper imported and is stopped in the
    # kernel too. Raised inside the import, the limit left the helper half-imported and
    # registered: point 1 imported it again and failed ("duplicate registration").
    (tmp_path / "registry.py").write_text("names = set()\n")
    (tmp_path / "slow_helper.py").write_text(
        "import time\n"
        "import registry\n"
        "if __name__ in registry.names:\n"
        "    raise RuntimeError('duplicate registration of ' + __name__)\n"
        "registry.names.add(__name__)\n"
        "time.sleep(2)\n"
    )
    case = "def scale_case(acc, w):\n"
    slow = SPIN.replace(case, case + "    import slow_helper  # in the point, whenever\n")
    assert slow != SPIN  # the module itself is imported ahead (to validate the key)
    (tmp_path / "slow.py").write_text(slow)
    proc, rows = sweep(
        tmp_path,
        "topology=small",
        "workload=triton",
        "workload.kernel=slow:scale",
        "workload.size=1000,2000",
        "workload.block_size=256",
        "hydra.sweeper.point_timeout_s=1",
    )
    assert proc.returncode == 1
    assert [(r["job_num"], r["status"], r["error"]) for r in rows] == [
        (0, "error", LIMIT.format(1)),
        (1, "error", LIMIT.format(1)),
    ]

"""A sweep's records survive a crash (kernbench.files, kernbench.sweep.claim): each is
written whole by rename, what a killed writer left is removed by the next sweep, a
damaged record is one line naming the file and what to do, and ``results.parquet``'s
place is checked before the first point.

Each test runs the real ``kernbench -m`` in a subprocess; a full disk is a file size
limit (``RLIMIT_FSIZE``) in the child, which makes a write fail part way as a full
disk does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.sweep import MERGED_FILE
from tests.test_outputs import kernbench
from tests.test_sweep_dirs import GRID, SMALL, error_lines, rows

POINTS_YAML = Path(".hydra") / "points.yaml"
# 48 points: their points.yaml (~8.8 KB) is the largest record a sweep writes before
# its first point (multirun.yaml ~5.8 KB), so a limit between the two fails its write.
# 48 points (an offset every pattern reads; a seed axis over local would be one point)
WIDE = (*SMALL, "workload.bytes_per_pe=4096,8192", "workload.align_offset_bytes=range(0,24)")


def sweep(tmp_path: Path, out: Path, *overrides: str, file_limit: int | None = None):
    stock = "hydra/launcher=basic" in overrides
    workers = () if stock else ("hydra.launcher.n_jobs=2",)
    return kernbench(
        tmp_path,
        "-m",
        *overrides,
        "cache=false",
        *workers,
        f"hydra.sweep.dir={out}",
        file_limit=file_limit,
    )


def metrics(out: Path) -> list[tuple]:
    """Each row's point and result, without what differs between two runs of it."""
    return [(r["job_num"], r["status"], r["config_hash"], r["sim_time_ns"]) for r in rows(out)]


def test_points_yaml_outlives_a_full_disk_during_its_write(tmp_path):
    out = tmp_path / "sweep"
    first = sweep(tmp_path, out, *WIDE)
    assert first.returncode == 0, first.stderr[-3000:]
    records = (out / POINTS_YAML).read_bytes()
    assert (out / "multirun.yaml").stat().st_size < 8000 < len(records)
    table = metrics(out)

    full = sweep(tmp_path, out, *WIDE, file_limit=8000)
    assert full.returncode == 1
    [line] = error_lines(full.stderr)
    assert line == f"kernbench: error: cannot write {out / POINTS_YAML}: File too large"
    assert (out / POINTS_YAML).read_bytes() == records  # the previous version, whole
    assert not [p for p in out.rglob(".*.tmp")]  # the failed write's temporary removed

    again = sweep(tmp_path, out, *WIDE, "hydra.sweeper.resume=true")
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Resuming: 48 of 48 points kept from {out}" in again.stdout + again.stderr
    assert metrics(out) == table


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (
            "0:\n  shape: 0\n  overrides:\n  - topology=sm",
            "cut short: it does not end with '# 1 points'",
        ),
        (
            "0:\n  shape: 0\n  overrides: topology=small\n# 1 points\n",
            "point 0 has no list of overrides",
        ),
        ("", "empty"),
        ("0: {shape: 0, overrides: [a\n", "not YAML at line 2"),
        ("- a\n- b\n", "not a mapping of points"),
        ("1: {shape: 0, overrides: []}\n# 1 points\n", "its keys are not the job numbers 0 to 0"),
    ],
    ids=["cut-short", "no-list", "empty", "not-yaml", "a-list", "numbering"],
)
def test_a_damaged_points_yaml_is_one_line_saying_what_to_do(tmp_path, text, why):
    """Records cut short (a kill or a full disk under an older version) or foreign: the
    same sweep is refused in one line naming the file, with the two ways on."""
    out = tmp_path / "sweep"
    (out / ".hydra").mkdir(parents=True)
    (out / POINTS_YAML).write_text(text)
    run = sweep(tmp_path, out, *GRID)
    assert run.returncode == 1
    assert error_lines(run.stderr) == [
        f"kernbench: error: hydra.sweep.dir: {out / POINTS_YAML} is damaged ({why});"
        " rerun with hydra.sweeper.resume=true to keep the rows that are this grid's and"
        f" run the rest, or delete {out} to start over"
    ]
    assert not (out / "points.log").exists()  # nothing ran


def test_resume_over_damaged_records_keeps_only_this_grids_rows(tmp_path):
    """Resume past a cut-short points.yaml and a cut-short results.parquet: one warning
    line each, no traceback, and every point runs once."""
    out = tmp_path / "sweep"
    assert sweep(tmp_path, out, *GRID).returncode == 0
    table = metrics(out)
    data = (out / MERGED_FILE).read_bytes()
    (out / MERGED_FILE).write_bytes(data[: len(data) // 2])
    points = (out / POINTS_YAML).read_text()
    (out / POINTS_YAML).write_text(points[: len(points) // 2])

    run = sweep(tmp_path, out, *GRID, "hydra.sweeper.resume=true")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    warnings = [line for line in (run.stdout + run.stderr).splitlines() if "is damaged" in line]
    assert len(warnings) == 2, run.stderr[-3000:]
    assert f"{out / POINTS_YAML} is damaged (" in warnings[0]
    assert f"{out / MERGED_FILE} is damaged (" in warnings[1]
    assert warnings[1].endswith("): no row of it is kept")
    assert "sweep: 4 points, 4 ok, 0 error" in run.stdout + run.stderr
    assert metrics(out) == table
    assert (out / POINTS_YAML).read_text() == points  # rewritten whole


def test_what_a_killed_sweep_left_is_removed(tmp_path):
    """Temporaries of writes never renamed are gone once the next sweep holds the
    directory, and a log segment cut short ends on a line of its own."""
    out = tmp_path / "sweep"
    assert sweep(tmp_path, out, *GRID).returncode == 0
    left = [
        out / ".results.parquet.k1ll3d.tmp",
        out / ".hydra" / ".points.yaml.k1ll3d.tmp",
        out / ".hydra" / "shapes" / ".0.yaml.k1ll3d.tmp",
    ]
    for path in left:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half a write")
    (out / "points.log").write_text((out / "points.log").read_text() + "#3 [ok] topol")

    run = sweep(tmp_path, out, *GRID)
    assert run.returncode == 0, run.stderr[-3000:]
    assert [p for p in left if p.exists()] == []
    log = (out / "points.log").read_text()
    # The cut segment ends on a line of its own: the next sweep's lines do not run into it.
    assert "#3 [ok] topol\n# (the previous sweep's last segment was cut short)\n# sweep of" in log


@pytest.mark.parametrize("sweeper", ["kernbench", "basic"])
def test_a_directory_where_the_table_goes_is_refused_before_any_point(tmp_path, sweeper):
    out = tmp_path / "sweep"
    (out / MERGED_FILE).mkdir(parents=True)
    args = [] if sweeper == "kernbench" else ["hydra/sweeper=basic", "hydra/launcher=basic"]
    run = sweep(tmp_path, out, *GRID, *args)
    assert run.returncode == 1
    assert error_lines(run.stderr) == [
        f"kernbench: error: hydra.sweep.dir: {out / MERGED_FILE} is a directory, where the"
        " sweep writes its table; move it away or choose another directory"
    ]
    assert not (out / "points.log").exists()
    assert not list(out.glob("[0-9]*"))  # no job directory: no point ran


def test_a_points_log_write_that_fails_part_way_leaves_no_half_segment(tmp_path):
    """The disk fills while a point's lines are appended: that segment is cut back
    off, so the log ends with the last whole one (a stream point's last line)."""
    out = tmp_path / "sweep"
    run = sweep(tmp_path, out, *WIDE, file_limit=20_000)
    assert run.returncode == 1
    log = (out / "points.log").read_text()
    # It filled up (segments are ~700 B): to the byte when a segment happens to end at
    # the limit (then the next write fails whole), short of it when one was cut back.
    assert 15_000 < len(log) <= 20_000
    last = log.rsplit("\n#", 1)[1]
    assert last.startswith(tuple(f"{n} [ok] " for n in range(48))), last[:100]
    assert last.splitlines()[-1].startswith("install_bytes ") and last.endswith("\n")
    assert not (out / MERGED_FILE).exists()

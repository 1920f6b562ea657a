"""A file planted in a sweep directory runs nothing and is written through nowhere
(issue 56).

A sweep directory may be one another user can write into (a shared cluster
directory, one made under umask 002). Under ``hydra/launcher=submitit_*`` or ``ray``
the sweep unpickled ``<sweep>/.kernbench/done/<n>`` and each chunk job unpickled
``.kernbench/chunks/<n>.pkl``: a pickle planted there, or swapped in after the sweep
wrote it, ran its code as the user who swept. What must hold:

- a done mark is data (JSON): a planted pickle there is never unpickled, and a mark
  that is not a well-formed result is a point not done;
- ``.kernbench``, ``done`` and submitit's ``.submitit`` that are symbolic links, or
  another user's, are refused in one line naming them, before anything is written
  through them or read from them;
- a chunk file is loaded only if it is the one this sweep wrote (its SHA-256 travels
  in the job's own arguments): one swapped after it was written is not unpickled;
- a symbolic link planted where a sweep writes a file is not followed: the write is
  refused in one line naming it, and the link's target is untouched.

The cases that plant a pickle check a sentinel file its unpickling would create.
Another user is ``nobody`` (uid 65534) when the tests run as root (chown needs it);
without root this process takes itself for another user instead (``os.geteuid``).
``points.log`` is opened with :func:`kernbench.files.open_appending`, which does not
follow a link either.
"""

from __future__ import annotations

import os
import pathlib
import pickle
import stat
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kernbench.errors import ConfigError
from kernbench.files import UnsafePath, private_dir, write_atomic
from kernbench.sweep import MERGED_FILE, remote
from kernbench.sweep.points import PointResult
from tests.test_launchers import command, environment, run_cli

SMALL = ("topology=small", "pe_cost_model=zero", "address=pa", "workload.access_bytes=256")
TWO = (*SMALL, "workload.bytes_per_pe=256,512", "cache=false")
# One chunk job holding both points.
SUBMITIT = (
    "hydra/launcher=submitit_local",
    "hydra.launcher.timeout_min=5",
    "hydra.sweeper.chunk_size=2",
)
NOBODY = 65534


class Planted:
    """What another user plants: a pickle whose unpickling creates ``sentinel``."""

    def __init__(self, sentinel: Path) -> None:
        self.sentinel = sentinel

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.PurePosixPath(self.sentinel),))


def planted(sentinel: Path) -> bytes:
    return pickle.dumps(Planted(sentinel))


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("kernbench:")]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def listing(directory: Path) -> dict[str, bytes | None]:
    """Every entry under ``directory``: a file's bytes, None for a directory."""
    return {
        str(p.relative_to(directory)): None if p.is_dir() else p.read_bytes()
        for p in sorted(directory.rglob("*"))
    }


def test_a_planted_mark_is_never_unpickled(tmp_path):
    """A pickle where a done mark goes is not a point's result and runs nothing; a
    mark this sweep's jobs write reads back as the result it holds."""
    sentinel = tmp_path / "ran"
    done = tmp_path / ".kernbench" / "done"
    done.mkdir(parents=True, mode=0o700)
    (done / "0").write_bytes(planted(sentinel))
    assert remote.finished(tmp_path, {0}) == []
    assert not sentinel.exists(), "the planted mark's code ran"

    result = PointResult(
        1, "ok", None, "log\n", 0.25, rows=[{"job_num": 1, "x": 1.5, "s": "a", "n": None}]
    )
    remote.mark_finished(tmp_path, result)
    assert remote.finished(tmp_path, {1}) == [result]


@pytest.mark.parametrize(
    "mark",
    [
        b"",  # the stock path's empty marker
        b"{",  # cut short
        b'{"num": 2, "status": "ok"}',  # fields missing
        b'{"num": 3, "status": "ok", "error": null, "log": "", "wall_s": 0, "rows": []}',
        b'{"num": 2, "status": "ok", "error": null, "log": "", "wall_s": 0, "rows": [[1]]}',
        b'{"num": 2, "status": "ok", "error": null, "log": "", "wall_s": 0,'
        b' "rows": [{"a": {"b": 1}}]}',
        b'{"num": true, "status": "ok", "error": null, "log": "", "wall_s": 0, "rows": []}',
        b'{"num": 2, "status": "ok", "error": 1, "log": "", "wall_s": 0, "rows": []}',
        b'{"num": 2, "status": "ok", "error": null, "log": "", "wall_s": "0", "rows": []}',
    ],
    ids=["empty", "cut", "missing", "other-num", "row-list", "nested", "bool", "error", "wall"],
)
def test_a_malformed_mark_is_a_point_not_done(tmp_path, mark):
    done = tmp_path / ".kernbench" / "done"
    done.mkdir(parents=True, mode=0o700)
    (done / "2").write_bytes(mark)
    assert remote.finished(tmp_path, {2}) == []


def test_a_symlinked_done_is_refused_and_runs_nothing(tmp_path):
    """``done`` a link to another user's directory, where point 0's mark cannot be
    written (a directory is in its place) and point 1's is a pickle: the chunk job
    failed at point 0, and the sweep took point 1's result from the planted pickle,
    running it. (``rmtree(..., ignore_errors=True)`` left the link in place.)"""
    sentinel = tmp_path / "ran"
    theirs = tmp_path / "theirs"
    (theirs / "0").mkdir(parents=True)
    (theirs / "1").write_bytes(planted(sentinel))
    before = listing(theirs)
    out = tmp_path / "sweep"
    (out / ".kernbench").mkdir(parents=True, mode=0o700)
    (out / ".kernbench" / "done").symlink_to(theirs)

    proc = run_cli(tmp_path, command(out, *TWO, *SUBMITIT))
    assert not sentinel.exists(), "the planted mark's code ran"
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_error_line(proc.stderr)
    assert line.startswith(
        f"kernbench: error: hydra.sweep.dir: {out / '.kernbench' / 'done'} is a symbolic link"
    ), line
    assert listing(theirs) == before  # nothing written through the link


@pytest.mark.parametrize(
    ("name", "key"),
    [(".kernbench", "hydra.sweep.dir"), (".submitit", "hydra.launcher.submitit_folder")],
)
def test_a_symlinked_state_dir_is_refused_and_not_written_through(tmp_path, name, key):
    """``.kernbench`` (chunks, marks) or ``.submitit`` (submitit's pickled jobs and
    results: the default ``hydra.launcher.submitit_folder``) a link to elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "sweep"
    out.mkdir()
    (out / name).symlink_to(elsewhere)

    proc = run_cli(tmp_path, command(out, *TWO, *SUBMITIT))
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_error_line(proc.stderr)
    assert line.startswith(f"kernbench: error: {key}: {out / name} is a symbolic link"), line
    assert listing(elsewhere) == {}  # no chunk, mark or job written through it


def test_a_private_directory_is_made_private_and_a_link_or_file_refused(tmp_path):
    """:func:`private_dir`: made 0700; one of this user's others could write into made
    private; a link (even to a directory of this user's) or a file refused."""
    made = private_dir(tmp_path / "made")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o700
    (tmp_path / "link").symlink_to(made)
    (tmp_path / "file").write_text("")
    for name, why in [("link", "is a symbolic link"), ("file", "is not a directory")]:
        with pytest.raises(UnsafePath) as refused:
            private_dir(tmp_path / name)
        assert str(refused.value) == f"{tmp_path / name} {why}"


def test_another_users_state_directory_is_refused_and_runs_nothing(tmp_path, monkeypatch):
    """``.kernbench`` made beforehand by another user, holding pickles where the
    marks go: refused, before any of its files is read. As root the directory is
    given to ``nobody`` and a real sweep is refused; any other user cannot give a file
    away, so this process takes itself for another user (``os.geteuid``) and the
    sweep's own check (the one the sweep runs first) refuses it the same way."""
    sentinel = tmp_path / "ran"
    out = tmp_path / "sweep"
    done = out / ".kernbench" / "done"
    done.mkdir(parents=True)
    for num in (0, 1):
        (done / str(num)).write_bytes(planted(sentinel))
    state = out / ".kernbench"
    refusal = f"hydra.sweep.dir: {state} belongs to another user"
    if os.geteuid() == 0:
        for path in (state, done, done / "0", done / "1"):
            os.chown(path, NOBODY, NOBODY)
        proc = run_cli(tmp_path, command(out, *TWO, *SUBMITIT))
        assert proc.returncode == 1, proc.stderr[-3000:]
        line = one_error_line(proc.stderr)
        assert line.startswith(f"kernbench: error: {refusal}"), line
    else:
        real = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: real + 1)
        with pytest.raises(ConfigError) as refused:
            remote.ChunkJobs(None, None, None, out)
        assert str(refused.value).startswith(refusal), refused.value
        assert remote.finished(out, {0, 1}) == []
    assert not sentinel.exists(), "the planted mark's code ran"


def test_a_chunk_file_swapped_after_it_is_written_is_not_unpickled(tmp_path):
    """Chunk 0's file replaced by a pickle as soon as the sweep has written it (its
    job starts a second or more later): the job refuses it, so its points are error
    rows saying why, and the pickle never runs."""
    sentinel = tmp_path / "ran"
    out = tmp_path / "sweep"
    chunk = out / ".kernbench" / "chunks" / "0.pkl"
    proc = subprocess.Popen(
        command(out, *TWO, *SUBMITIT),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not chunk.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        swapped = chunk.with_name(".swap")
        swapped.write_bytes(planted(sentinel))
        os.replace(swapped, chunk)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert not sentinel.exists(), "the swapped chunk's code ran"
    assert proc.returncode == 1, stderr[-3000:]
    rows = pq.read_table(out / MERGED_FILE).to_pylist()
    assert [r["status"] for r in rows] == ["error", "error"], "swapped too late?"
    assert rows[0]["error"].startswith("its chunk job failed: ")
    assert f"{chunk} is not the chunk this sweep wrote" in rows[0]["error"]


def test_write_atomic_does_not_write_through_a_symlink(tmp_path):
    """A record's place holding a link (to a file of the user's, say): refused,
    naming the place; the link and what it points to are as they were."""
    target = tmp_path / "precious"
    target.write_text("mine\n")
    place = tmp_path / "sweep" / "results.parquet"
    place.parent.mkdir()
    place.symlink_to(target)
    with pytest.raises(UnsafePath) as refused:
        write_atomic(place, b"table")
    assert refused.value.filename == str(place)
    assert "symbolic link" in refused.value.strerror
    assert place.is_symlink() and target.read_text() == "mine\n"
    assert [p.name for p in place.parent.iterdir()] == ["results.parquet"]  # no temporary

    write_atomic(tmp_path / "sweep" / "other", "text")  # a regular file: written
    write_atomic(tmp_path / "sweep" / "other", "again")
    assert (tmp_path / "sweep" / "other").read_text() == "again"


def sweep_with_link(tmp_path: Path, name: str) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """A two-point sweep into a directory where ``name`` is a link to a file of the
    user's: (the sweep directory, the file, the finished process)."""
    target = tmp_path / "precious"
    target.write_text("mine\n")
    out = tmp_path / "sweep"
    out.mkdir()
    (out / name).symlink_to(target)
    return out, target, run_cli(tmp_path, [*command(out, *TWO), "hydra.launcher.n_jobs=2"])


def test_a_symlink_where_a_sweep_writes_a_record_is_refused_in_one_line(tmp_path):
    out, target, proc = sweep_with_link(tmp_path, "multirun.yaml")
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_error_line(proc.stderr)
    assert line.startswith(
        f"kernbench: error: cannot write {out / 'multirun.yaml'}: it is a symbolic link"
    ), line
    assert (out / "multirun.yaml").is_symlink() and target.read_text() == "mine\n"


def test_points_log_is_not_written_through_a_symlink(tmp_path):
    out, target, proc = sweep_with_link(tmp_path, "points.log")
    assert target.read_text() == "mine\n"
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = one_error_line(proc.stderr)
    assert line.startswith(f"kernbench: error: cannot write {out / 'points.log'}"), line


def test_the_report_is_not_written_through_a_symlink(tmp_path):
    from kernbench.report.cli import main as report

    out = tmp_path / "sweep"
    proc = run_cli(tmp_path, [*command(out, *TWO), "hydra.launcher.n_jobs=2"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    target = tmp_path / "precious"
    target.write_text("mine\n")
    (out / "report.txt").symlink_to(target)
    assert report([str(out)]) == 1
    assert target.read_text() == "mine\n"
    assert (out / "report.txt").is_symlink()

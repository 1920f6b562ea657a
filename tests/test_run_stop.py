"""Ctrl-C on a single run (not a sweep, whose stop is kernbench.sweep.stop's): one line
and the shell's status for SIGINT, 130, as the run's own long-run warning promises
("Ctrl-C stops it"); it was a 50-line KeyboardInterrupt traceback and death by SIGINT."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys

from tests.test_launchers import environment
from tests.test_stop import wait_for

# About a minute of simulation here: every PE streams 64 MiB in 256 B accesses to
# uniformly chosen PEs, so the signal always lands while the run is under way.
LONG_RUN = (
    "workload.bytes_per_pe=67108864",
    "workload.access_bytes=256",
    "traffic=uniform",
    "cache=false",
)


def as_from_a_terminal() -> None:
    """SIGINT at its default in the child, as a terminal starts a command, whatever
    this test's process was started with: a process started with SIGINT ignored (a
    script's ``cmd &``) passes that on, and Python then installs no KeyboardInterrupt
    handler, so no Ctrl-C could reach the run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_on_a_single_run_is_one_line_and_130(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.app", *LONG_RUN, f"hydra.run.dir={out}"],
        cwd=tmp_path, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True, preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    try:
        # Hydra writes config.yaml, hydra.yaml, then overrides.yaml, then runs the task.
        # A first Ctrl-C is sometimes lost even so: 1 in ~20 tries here with the signal
        # just as Hydra writes .hydra/ (the run goes on; where it is swallowed is not
        # found yet, see the closing note of 2026-12-03). A user presses it again: so
        # does this test, every 10 s, and checks what the one that lands does.
        wait_for(proc, lambda: (out / ".hydra" / "overrides.yaml").exists())
        for _ in range(6):
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                stdout, stderr = proc.communicate(timeout=10)
                break
        else:
            raise AssertionError("six Ctrl-C, 10 s apart, did not stop the run")
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("kernbench:")]
    assert lines == ["kernbench: interrupted: the run stopped; no result was written"]
    assert not (out / "result.parquet").exists()
    assert "result:" not in stdout

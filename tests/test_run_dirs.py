"""Run and sweep directories are unique even when started in the same second
(issue 14 item 2): the default paths carry microseconds and the process id."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

TINY = ["topology=small", "workload.bytes_per_pe=65536", "cache=false"]


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    cmd = [sys.executable, "-m", "kernbench.app", *args]
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_runs_and_two_sweeps_started_at_once_keep_every_row(tmp_path):
    """Four processes start together (the OS gives them one second, often one
    10-ms tick); each leaves its own directory and every row is found."""
    sweep = ["-m", "hydra/launcher=basic", "workload.access_bytes=4096,8192"]
    procs = [_start(TINY, tmp_path) for _ in range(2)]
    procs += [_start([*sweep, *TINY], tmp_path) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    runs = sorted((tmp_path / "outputs").glob("*/*/result.parquet"))
    runs = [p for p in runs if p.parent.parent.name != "multirun"]
    merged = sorted((tmp_path / "outputs" / "multirun").glob("*/results.parquet"))
    assert len({p.parent for p in runs}) == 2
    assert len({p.parent for p in merged}) == 2
    assert [pq.read_table(p).num_rows for p in runs] == [1, 1]
    access = [sorted(pq.read_table(p).column("workload.access_bytes").to_pylist()) for p in merged]
    assert access == [[4096, 8192], [4096, 8192]]


def test_directory_names_carry_microseconds_and_pid(compose_cfg):
    """Names sort by time (microseconds), and the pid settles a tie on one machine."""
    cfg = compose_cfg()
    run_dir = Path(str(cfg.paths.run_dir))
    time_part, pid = run_dir.name.rsplit("_", 1)
    assert pid == str(os.getpid())
    hms, micro = time_part.split(".")
    assert len(hms.split("-")) == 3 and len(micro) == 6
    assert str(cfg.paths.sweep_dir).endswith(f"_{os.getpid()}")

"""The same sweep on every path, and a sweep that survives being killed.

Each test runs the real ``kernbench -m`` as a subprocess in ``tmp_path`` (so the point
cache, ``outputs/cache``, is the test's own). Determinism: Hydra's stock path (basic
sweeper, one job per point, the reference), the fast path (the default) and the fast
sweeper's chunks sent through basic, joblib and submitit_local give the same merged
table apart from the columns that say how a row was obtained (``sweep_id``, ``cached``,
wall times); tests/test_ray.py checks Ray's tables against the fast path's. The grid
has two group options, a value that is an interpolation beside a plain one (so the
fast path builds points both on OmegaConf and on the shape's typed object), and
invalid points, whose error rows both paths keep.
Resumability: a sweep SIGKILLed part-way (its whole process group) and run again lists
every point once, and exactly the points that had finished come from the cache.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from kernbench.config.store import conf_dir, register_configs
from kernbench.sweep import MERGED_FILE

GRID = (
    "topology=small",
    "pe_cost_model=zero",
    "address=pa",  # the 53 ns below is PA's (VA adds its TLB time)
    "channel_mapping=n_to_one,one_to_one",
    "workload.access_bytes=256",
    # A value that is an interpolation (its points are built on OmegaConf) and a plain
    # one (its points take the typed path): both kinds in every table below.
    "workload.bytes_per_pe=${workload.access_bytes},4096",
    "topology.pes_per_cube=2,3",  # 3 does not divide 16 pseudo-channels: error rows
)
N_POINTS = 8
VOLATILE = {"sweep_id", "cached", "sim_wall_s", "wall_s"}
STOCK = ["hydra/sweeper=basic", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
# 2 shapes (channel_mappings) of 4 points, at most 3 points a chunk: 4 tasks (3+1, 3+1).
CHUNKS_OF_3 = "hydra.sweeper.chunk_size=3"
N_TASKS = 4
LAUNCHERS = {
    "fast": ["hydra.launcher.n_jobs=2"],
    "basic": ["hydra/launcher=basic", CHUNKS_OF_3],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", CHUNKS_OF_3],
    "submitit_local": [
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=5",
        CHUNKS_OF_3,
    ],
}


def command(sweep: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "kernbench.app", "-m", *overrides, f"hydra.sweep.dir={sweep}"]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["RAY_AUTH_MODE"] = "disabled"  # ray 2.5x warns about token auth on every start
    return env


def run_cli(
    cwd: Path, argv: list[str], env: dict[str, str] | None = None, **popen: Any
) -> subprocess.CompletedProcess:
    """``argv`` (as :func:`command` builds it) run from ``cwd`` as a user's shell runs
    it: its own process, the test's environment without HYDRA_FULL_ERROR (plus ``env``),
    output captured as text. One still running after 300 s fails the test with every
    thread's stack (SIGABRT, which ``PYTHONFAULTHANDLER`` turns into a traceback dump):
    a hang seen once in CI, under load, should say where it was."""
    env = {**environment(), "PYTHONFAULTHANDLER": "1", **(env or {})}
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        **popen,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate()
            pytest.fail(f"still running after 300 s: {argv}\n{out[-2000:]}\n{err[-12000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def sweep(
    tmp_path: Path, name: str, *overrides: str, returncode: int = 0
) -> tuple[list[dict], str]:
    """Run one sweep into ``tmp_path/name``; its merged rows and its stdout."""
    out = tmp_path / name
    proc = run_cli(tmp_path, command(out, *overrides))
    assert proc.returncode == returncode, proc.stdout[-2000:] + proc.stderr[-4000:]
    return pq.read_table(out / MERGED_FILE).to_pylist(), proc.stdout


def stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


@pytest.fixture(scope="module")
def stock_table(tmp_path_factory):
    """The reference: Hydra's stock path (basic sweeper, joblib, a job per point)."""
    rows, _ = sweep(
        tmp_path_factory.mktemp("stock"), "s", *GRID, *STOCK, "cache=false", returncode=1
    )
    assert len(rows) == N_POINTS
    assert [r["status"] for r in rows] == ["ok", "error"] * (N_POINTS // 2)
    return rows


@pytest.mark.parametrize("launcher", ["fast", "basic", "joblib", "submitit_local"])
def test_every_path_gives_the_stock_table(tmp_path, stock_table, launcher):
    rows, _ = sweep(tmp_path, launcher, *GRID, *LAUNCHERS[launcher], "cache=false", returncode=1)
    assert stable(rows) == stable(stock_table)
    assert [r["job_num"] for r in rows] == list(range(N_POINTS))
    assert {r["cached"] for r in rows} == {False}
    bad = rows[1]
    assert bad["error"] == (
        "topology.cube.memory_map.hbm_pseudo_channels: 16 is not divisible by "
        "topology.pes_per_cube = 3"
    )
    # n:1, 256 B in one access, a read: its request out 2 + 4 ns, the access 40 ns, its
    # bytes back 4 + 2 ns, 256 B / 256 GB/s = 53 ns (DESIGN §13.1; was 47 before the
    # way back was paid).
    assert (rows[0]["workload.bytes_per_pe"], rows[0]["sim_time_ns"]) == (256, 53.0)
    if launcher != "fast":  # one chunk job per task, not a job per point
        chunk_jobs = (tmp_path / launcher / ".kernbench" / "chunks").glob("*.pkl")
        assert len(list(chunk_jobs)) == N_TASKS
        # Each task marked each of its points as it ended (the bar's progress meanwhile).
        done = tmp_path / launcher / ".kernbench" / "done"
        assert sorted(int(f.name) for f in done.iterdir()) == list(range(N_POINTS))


# Eight points of a few tenths of a second each, one per chunk, on two workers.
SLOW_GRID = (
    "hydra.launcher.n_jobs=2",
    "hydra.sweeper.chunk_size=1",
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=2097152",
    "workload.outstanding=1,2,3,4,5,6,7,8",
)


def cached_points(root: Path) -> int:
    """Entries in the test's point cache (each written whole, by rename)."""
    return len(list((root / "outputs" / "cache").glob("*/*.json")))


@pytest.mark.slow
def test_killed_sweep_reruns_only_what_is_new(tmp_path):
    first = tmp_path / "first"
    proc = subprocess.Popen(
        command(first, *SLOW_GRID),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the parent and its workers
    )
    deadline = time.monotonic() + 120
    while cached_points(tmp_path) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    done_before = cached_points(tmp_path)
    assert 2 <= done_before < 8, "the sweep was not stopped part-way"
    assert not (first / MERGED_FILE).exists()

    rows, stdout = sweep(tmp_path, "second", *SLOW_GRID)
    assert [r["job_num"] for r in rows] == list(range(8))
    assert [r["workload.outstanding"] for r in rows] == list(range(1, 9))
    assert {r["status"] for r in rows} == {"ok"}
    assert sum(r["cached"] for r in rows) == done_before
    assert f"8 points, 8 ok, 0 error, {done_before} cached" in stdout

    # The cached rows hold exactly what a fresh simulation gives.
    fresh, _ = sweep(tmp_path, "fresh", *SLOW_GRID, "cache=false")
    assert stable(rows) == stable(fresh)


def group_size(pgid: int) -> int:
    """Processes in process group ``pgid`` (from /proc: the 5th field of stat)."""
    count = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        count += int(fields[2]) == pgid
    return count


def cluster_command(launcher: str) -> list[str]:
    """The overrides of the ``kernbench -m ...`` example for ``launcher`` on the
    documentation's cluster page (docs/how-to/cluster.md)."""
    text = (Path(__file__).resolve().parents[1] / "docs/how-to/cluster.md").read_text()
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv[:2] == ["kernbench", "-m"] and f"hydra/launcher={launcher}" in argv:
                return argv[2:]
    raise AssertionError(f"no command for {launcher} in docs/how-to/cluster.md")


def launcher_node(overrides: list[str]) -> DictConfig:
    """``hydra.launcher`` as ``kernbench`` would compose it with ``overrides``."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return cfg.hydra.launcher


def test_documented_slurm_command_composes():
    overrides = [o.replace("<partition>", "debug") for o in cluster_command("submitit_slurm")]
    launcher = launcher_node(overrides)
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.partition, launcher.timeout_min, launcher.cpus_per_task) == ("debug", 30, 1)


def test_documented_ray_command_composes():
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the ray extra is not installed")
    launcher = launcher_node(cluster_command("ray"))
    assert launcher._target_.endswith("ray_launcher.RayLauncher")
    assert launcher.ray.init.address == "auto"

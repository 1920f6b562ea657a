"""The same sweep under every launcher, and a sweep that survives being killed.

Each test runs the real ``kernbench -m`` as a subprocess in ``tmp_path`` (so the point
cache, ``outputs/cache``, is the test's own). Determinism: basic, joblib, submitit_local
and (where it is installed) ray give the same merged table apart from the columns that
say how a row was obtained (``sweep_id``, ``cached``, wall times). Resumability: a sweep
terminated part-way and run again lists every point once, and exactly the points that
had finished before the kill come from the cache.
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

import pyarrow.parquet as pq
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from kernbench.config.store import conf_dir, register_configs
from kernbench.sweep import MERGED_FILE

GRID = (
    "topology=small",
    "pe_cost_model=zero",
    "channel_mapping=n_to_one,one_to_one",
    "workload.access_bytes=256,4096",
    "workload.bytes_per_pe=65536",
)
VOLATILE = {"sweep_id", "cached", "sim_wall_s", "wall_s"}
LAUNCHERS = {
    "basic": ["hydra/launcher=basic"],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "submitit_local": ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"],
    "ray": ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"],
}


def command(sweep: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "kernbench.app", "-m", *overrides, f"hydra.sweep.dir={sweep}"]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["RAY_AUTH_MODE"] = "disabled"  # ray 2.5x warns about token auth on every start
    return env


def sweep(tmp_path: Path, name: str, *overrides: str) -> tuple[list[dict], str]:
    """Run one sweep into ``tmp_path/name``; its merged rows and its stdout."""
    out = tmp_path / name
    proc = subprocess.run(
        command(out, *overrides),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment(),
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return pq.read_table(out / MERGED_FILE).to_pylist(), proc.stdout


def stable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


@pytest.fixture(scope="module")
def joblib_table(tmp_path_factory):
    """The reference: the grid under the default launcher, cache off."""
    rows, _ = sweep(
        tmp_path_factory.mktemp("joblib"), "s", *GRID, *LAUNCHERS["joblib"], "cache=false"
    )
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}
    return rows


@pytest.mark.parametrize("launcher", ["basic", "submitit_local"])
def test_launchers_give_the_joblib_table(tmp_path, joblib_table, launcher):
    rows, _ = sweep(tmp_path, launcher, *GRID, *LAUNCHERS[launcher], "cache=false")
    assert stable(rows) == stable(joblib_table)
    assert [r["job_num"] for r in rows] == [0, 1, 2, 3]
    assert {r["cached"] for r in rows} == {False}


@pytest.mark.slow
def test_ray_gives_the_joblib_table(tmp_path, joblib_table):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install '.[ray]')")
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="hydra-ray-launcher missing")
    rows, _ = sweep(tmp_path, "ray", *GRID, *LAUNCHERS["ray"], "cache=false")
    assert stable(rows) == stable(joblib_table)


# Eight points of a few tenths of a second each, run one after another.
SLOW_GRID = (
    "hydra/launcher=basic",
    "workload.access_bytes=4096",
    "workload.bytes_per_pe=2097152",
    "workload.outstanding=1,2,3,4,5,6,7,8",
)


def finished(sweep_dir: Path) -> set[int]:
    """Job numbers whose result.parquet is in place (it is written last, atomically)."""
    return {int(p.parent.name) for p in sweep_dir.glob("*/result.parquet")}


@pytest.mark.slow
def test_killed_sweep_reruns_only_what_is_new(tmp_path):
    first = tmp_path / "first"
    proc = subprocess.Popen(
        command(first, *SLOW_GRID),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while len(finished(first)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    done_before = finished(first)
    assert 2 <= len(done_before) < 8, "the sweep was not stopped part-way"
    assert not (first / MERGED_FILE).exists()

    rows, stdout = sweep(tmp_path, "second", *SLOW_GRID)
    assert [r["job_num"] for r in rows] == list(range(8))
    assert sorted(r["workload.outstanding"] for r in rows) == list(range(1, 9))
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["job_num"] for r in rows if r["cached"]} == done_before
    n = len(done_before)
    assert f"8 points, 8 ok, 0 error, {n} cached" in stdout

    # The cached rows hold exactly what a fresh simulation gives.
    fresh, _ = sweep(tmp_path, "fresh", *SLOW_GRID, "cache=false")
    assert stable(rows) == stable(fresh)


def readme_command(launcher: str) -> list[str]:
    """The overrides of the README's ``kernbench -m ...`` example for ``launcher``."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv[:2] == ["kernbench", "-m"] and f"hydra/launcher={launcher}" in argv:
                return argv[2:]
    raise AssertionError(f"no README command for {launcher}")


def launcher_node(overrides: list[str]) -> DictConfig:
    """``hydra.launcher`` as ``kernbench`` would compose it with ``overrides``."""
    register_configs()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return cfg.hydra.launcher


def test_readme_slurm_command_composes():
    overrides = [o.replace("<partition>", "debug") for o in readme_command("submitit_slurm")]
    launcher = launcher_node(overrides)
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")
    assert (launcher.partition, launcher.timeout_min, launcher.cpus_per_task) == ("debug", 30, 1)


def test_readme_ray_command_composes():
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the ray extra is not installed")
    launcher = launcher_node(readme_command("ray"))
    assert launcher._target_.endswith("ray_launcher.RayLauncher")
    assert launcher.ray.init.address == "auto"

"""A regular (non-editable) install works from any directory.

Builds a wheel from a copy of the source, installs it into a fresh virtualenv (no pip
inside; the dependencies are borrowed from the running environment through a ``.pth``
file, so nothing is downloaded but the build backend), and runs ``kernbench`` from an
unrelated directory: the presets resolve from the installed package and the outputs
land under ``./outputs`` of that directory. About 10 s, so it runs in the default suite.
"""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from setuptools import find_packages

import kernbench

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "kernbench",
    "hydra_plugins",
    "conf",
    "experiments",
)


def _run(
    argv: list[str | Path], cwd: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDRA_FULL_ERROR")}
    env |= extra or {}
    proc = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_pyproject_lists_every_package():
    """The explicit package list (needed for the conf/experiments mapping) misses none."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = find_packages(str(ROOT), include=["kernbench", "kernbench.*"])
    assert sorted(set(found) - set(config["packages"])) == []
    # The sweep plugins: a regular package inside Hydra's namespace package.
    plugins = [f"hydra_plugins.{p}" for p in find_packages(str(ROOT / "hydra_plugins"))]
    assert plugins == ["hydra_plugins.kernbench_sweep"]
    assert "hydra_plugins.kernbench_sweep" in config["packages"]
    assert not (ROOT / "hydra_plugins" / "__init__.py").exists()  # stays a namespace
    assert config["package-dir"] == {
        "kernbench.conf": "conf",
        "kernbench.experiments": "experiments",
    }


@pytest.mark.slow
def _copy_sources(src: Path) -> None:
    """The source tree as a fresh clone has it (no build products)."""
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name,
                src / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.so", "_compiled.json"),
            )
        else:
            shutil.copy(ROOT / name, src / name)


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def test_wheel_install_runs_presets_from_anywhere(tmp_path):
    src = tmp_path / "src"
    _copy_sources(src)
    _run([*PIP, "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", src], tmp_path)
    [wheel] = (tmp_path / "dist").glob("*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    python = venv / "bin" / "python"
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path
    )
    Path(site.stdout.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([*PIP, "--python", python, "install", "-q", "--no-deps", "--no-index", wheel], tmp_path)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(
        [python, "-c", "import kernbench; print(kernbench.__file__, kernbench.build())"], elsewhere
    )
    assert where.stdout.startswith(str(venv))  # the installed copy, not this checkout
    assert where.stderr == ""  # its compiled modules match its sources (no stale line)
    if kernbench.build() == kernbench.COMPILED:  # what they were compiled from goes along
        assert "kernbench/_compiled.json" in zipfile.ZipFile(wheel).namelist()
    # Built as this checkout's install was: compiled (setup.py), or pure Python when
    # KERNBENCH_PURE=1 is set (at build time here, and at run time) or without a compiler.
    build = kernbench.build()
    assert where.stdout.split()[-1] == build

    cli = venv / "bin" / "kernbench"
    job = _run([cli, "--cfg", "job", "+experiment=bw_equivalence"], elsewhere)
    assert "sweep_name: bw_equivalence" in job.stdout
    assert "bytes_per_pe: 524288" in job.stdout

    _run(
        [cli, "topology=small", "workload.bytes_per_pe=4096", "workload.access_bytes=4096"],
        elsewhere,
    )
    [result] = (elsewhere / "outputs").rglob("result.parquet")
    [row] = pq.read_table(result).to_pylist()
    assert (row["status"], row["git_commit"], row["build"]) == ("ok", None, build)

    # Hydra discovers the installed sweep plugins: -m takes the fast path by default.
    sweep = elsewhere / "sweep"
    argv = [
        cli,
        "-m",
        "topology=small",
        "workload.bytes_per_pe=4096",
        "workload.access_bytes=4096",
    ]
    _run([*argv, "workload.outstanding=1,2", f"hydra.sweep.dir={sweep}"], elsewhere)
    assert [r["status"] for r in pq.read_table(sweep / "results.parquet").to_pylist()] == [
        "ok",
        "ok",
    ]
    assert (sweep / ".hydra" / "points.yaml").is_file()  # written by the kernbench sweeper


def test_a_pure_build_removes_what_an_earlier_compiled_build_left_in_the_tree(tmp_path):
    """An editable install compiles in place: its modules sit beside their sources, and
    a later build that compiles nothing (``KERNBENCH_PURE=1``, no compiler, mypyc
    failing) must not leave them to be imported as if compiled from today's sources."""
    src = tmp_path / "src"
    _copy_sources(src)
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    left = [
        src / "kernbench" / "sim" / f"fabric{suffix}",  # a compiled module (setup.HOT)
        src / "kernbench" / f"tl{suffix}",
        src / "kernbench" / "sim" / f"fairshare{suffix}",  # one built from C (setup.NATIVE)
        src / "kernbench" / f"_mypyc__mypyc{suffix}",  # mypyc's runtime library
        src / "kernbench" / "_compiled.json",  # what they were compiled from
    ]
    for path in left:
        path.write_bytes(b"an earlier build")
    kept = src / "kernbench" / "sim" / f"not_compiled_by_us{suffix}"
    kept.write_bytes(b"someone else's")
    build = _run(
        [*PIP, "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", src],
        tmp_path,
        {"KERNBENCH_PURE": "1"},
    )
    assert [p for p in left if p.exists()] == []
    assert kept.exists()  # only what setup.py itself builds is removed
    said = build.stdout + build.stderr  # pip -v passes on what setup.py prints
    assert "kernbench build: removed 5 file(s) an earlier compiled build left" in said
    [wheel] = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kernbench/sim/fabric.py" in names
    assert [n for n in names if n.endswith(".so") or n.endswith("_compiled.json")] == []


COMPOSE_ELSEWHERE = """
from hydra import compose, initialize_config_dir
from kernbench.config.store import conf_dir, register_configs
register_configs()
with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
    cfg = compose(config_name="config", overrides=["topology=small"], return_hydra_config=True)
print(cfg.hydra.sweeper._target_)
"""


def test_a_script_outside_the_checkout_composes_the_config(tmp_path):
    """A user's script or notebook composes kernbench's config from any directory: the
    config selects ``hydra/sweeper: kernbench``, so the plugin must be found although the
    editable install hides it from Hydra's scan unless Python runs in the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", COMPOSE_ELSEWHERE], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("KernbenchSweeper")

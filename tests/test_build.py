"""The compiled build (setup.py: mypyc) and the pure-Python one are the same model.

Both builds of one install give identical results: every metric, op log entry and trace
row of a matrix of runs (address model x channel mapping x fabric x traffic pattern, a
GQA kernel, a Triton kernel), each build in a fresh subprocess
(``tests/build_identity_driver.py``), compared as ``repr`` text so an int the compiled
build turned into a float shows. ``KERNBENCH_PURE=1`` switches a process to the pure
modules, ``kernbench.build()`` says which ran, and so do ``kernbench --version``, every
row's ``build`` column and the point cache, which never serves one build's row to the
other. In CI (``KERNBENCH_EXPECT_BUILD=compiled``, .ci/run) an install that is not
compiled fails here instead of comparing the pure build with itself.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kernbench
from kernbench.sweep import cache

ROOT = Path(__file__).resolve().parents[1]
EXPECT_ENV = "KERNBENCH_EXPECT_BUILD"


def setup_constant(name: str) -> object:
    """The value of a module-level constant of setup.py (read, not run)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    [value] = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == name
    ]
    return value


def hot_modules() -> list[str]:
    """The modules setup.py compiles (mypyc's ``HOT`` list and the hand-written C of
    ``NATIVE``), as dotted names."""
    paths = [*setup_constant("HOT"), *setup_constant("NATIVE")]  # type: ignore[misc]
    return [p.removesuffix(".py").replace("/", ".") for p in paths]


def environment(pure: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KERNBENCH_PURE", "HYDRA_FULL_ERROR")}
    if pure:
        env["KERNBENCH_PURE"] = "1"
    return env


def python(code: str, pure: bool, cwd: Path = ROOT) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=environment(pure),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def installed_build() -> str:
    """The build a fresh process of this install imports (no KERNBENCH_PURE), checked
    against what CI expects: a compiled install that fell back to pure fails here."""
    build = python("import kernbench; print(kernbench.build())", pure=False).strip()
    expected = os.environ.get(EXPECT_ENV)
    if expected is not None:
        assert build == expected, f"{EXPECT_ENV}={expected}, but this install runs {build}"
    return build


@pytest.fixture(scope="module")
def compiled() -> None:
    """Skip (a failure under KERNBENCH_NO_SKIPS) unless the install is compiled: with
    the pure build alone there is nothing to compare."""
    if installed_build() != kernbench.COMPILED:
        pytest.skip("this install is pure Python (no C compiler at build time?)")


def test_the_pe_queue_keeps_its_events_in_its_builds_heap(compiled):
    """The compiled build's PE queue holds the C ``EventHeap`` (a compiled caller makes a
    plain list of a call it knows returns ``list``: its heap would lose its keys
    silently, the results the same), the pure build's a plain list for heapq."""
    code = (
        "from kernbench.sim.events import LocalQueue, SimEnv\n"
        "print(type(LocalQueue(SimEnv()).heap).__name__)\n"
    )
    assert python(code, pure=False).split() == ["EventHeap"]
    assert python(code, pure=True).split() == ["list"]


LOADED = """
import json, sys
import kernbench
import kernbench.simulate, kernbench.runtime.context, kernbench.sim.speed
mods = {n: kernbench.is_compiled(m) for n, m in sorted(sys.modules.items())
        if n == "kernbench" or n.startswith("kernbench.")}
print(json.dumps({"build": kernbench.build(), "compiled": mods}))
"""


def test_pure_env_loads_every_module_from_source(tmp_path):
    """KERNBENCH_PURE=1: no kernbench module is a compiled one, packages and
    submodules alike, and build() says pure."""
    got = json.loads(python(LOADED, pure=True, cwd=tmp_path))
    assert got["build"] == kernbench.PURE
    assert set(hot_modules()) <= set(got["compiled"])
    assert not any(got["compiled"].values()), got["compiled"]


def test_build_says_what_was_imported(tmp_path, compiled):
    """The compiled install: exactly setup.py's hot modules are compiled (by mypyc, or
    from their C), with mypyc's
    shared runtime library inside the package (``kernbench._mypyc__mypyc``, found from
    any directory), and build() says compiled; kernbench/__init__.py stays Python."""
    got = json.loads(python(LOADED, pure=False, cwd=tmp_path))
    assert got["build"] == kernbench.COMPILED
    runtime = f"{setup_constant('GROUP')}__mypyc"
    assert runtime.startswith("kernbench.")
    compiled_modules = sorted(n for n, c in got["compiled"].items() if c)
    assert compiled_modules == sorted([*hot_modules(), runtime])


def test_bad_pure_value_is_one_error_line():
    proc = subprocess.run(
        [sys.executable, "-m", "kernbench.app", "--version"],
        env={**environment(False), "KERNBENCH_PURE": "yes"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == (
        "kernbench: error: KERNBENCH_PURE=yes: must be 1 (run the pure-Python modules)"
        " or 0 / unset\n"
    )


@pytest.mark.parametrize("pure", [False, True])
def test_version_names_the_build(tmp_path, pure):
    """``kernbench --version`` (run from elsewhere, as a user's shell does) names the
    build that runs. A compiled install whose hot modules' sources were edited since
    the build runs them pure, after the stale-source notice (its own tests below):
    expected here, so an edit to a compiled module's source does not fail this test."""
    build = kernbench.PURE if pure else installed_build()
    stale = [] if pure else kernbench.stale_sources()
    notice = f"{kernbench.stale_notice(stale)}\n" if stale else ""
    kernbench_cli = Path(sys.executable).parent / "kernbench"
    proc = subprocess.run(
        [str(kernbench_cli), "--version"], cwd=tmp_path, env=environment(pure),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, notice)
    assert proc.stdout == f"kernbench {kernbench.__version__} ({build})\n"


def run_row(tmp_path: Path, pure: bool, *overrides: str) -> dict:
    """One ``kernbench`` run from ``tmp_path`` (point cache in ``tmp_path/cache``); its row."""
    out = tmp_path / f"run_{len(list(tmp_path.glob('run_*')))}"
    proc = subprocess.run(
        [sys.executable, "-m", "kernbench.app", "topology=small", "workload.bytes_per_pe=16384",
         "workload.access_bytes=4096",
         "paths.cache_dir=cache", f"hydra.run.dir={out}", *overrides],
        cwd=tmp_path, env=environment(pure), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = pq.read_table(out / "result.parquet").to_pylist()
    return row


def test_rows_name_their_build_and_the_cache_keeps_builds_apart(tmp_path, compiled):
    """Each row's ``build`` column says which modules made it; a point cached by one
    build is simulated again by the other (whose row says so), then served to each."""
    first = run_row(tmp_path, pure=False)
    pure = run_row(tmp_path, pure=True)
    assert (first["build"], first["cached"]) == (kernbench.COMPILED, False)
    assert (pure["build"], pure["cached"]) == (kernbench.PURE, False)
    again = [run_row(tmp_path, pure=p) for p in (False, True)]
    assert [(r["build"], r["cached"]) for r in again] == [
        (kernbench.COMPILED, True),
        (kernbench.PURE, True),
    ]
    volatile = {"build", "cached", "sim_wall_s", "wall_s", "sweep_id"}
    assert {k: v for k, v in first.items() if k not in volatile} == {
        k: v for k, v in pure.items() if k not in volatile
    }


STALE_PROBE = """
import os, subprocess, sys
import kernbench, kernbench.sim.fabric as fabric
child = subprocess.run([sys.executable, "-c", "import kernbench; print(kernbench.build())"],
                       capture_output=True, text=True, check=True)
print(kernbench.build(), os.environ.get("KERNBENCH_PURE"), kernbench.is_compiled(fabric),
      child.stdout.strip(), repr(child.stderr))
"""


def test_a_compiled_module_edited_after_the_build_runs_from_its_source(tmp_path, compiled):
    """An editable install edited and not rebuilt: the compiled copy of a changed hot
    module would run the old code, so the process runs every module from source with one
    line naming the file, and the processes it starts run them too, silently. An edit
    to a module that is not compiled changes nothing; an unreadable record of the build
    is named the same way. (A copy of the installed package,
    imported through PYTHONPATH, is edited here, never the install itself.)"""
    package = tmp_path / "site" / "kernbench"
    shutil.copytree(
        Path(kernbench.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {**environment(False), "PYTHONPATH": str(tmp_path / "site")}

    def probe() -> tuple[str, str]:
        proc = subprocess.run(
            [sys.executable, "-c", STALE_PROBE], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout, proc.stderr

    assert probe() == ("compiled None True compiled ''\n", "")
    with open(package / "units.py", "a") as f:  # not a compiled module
        f.write("# edited\n")
    assert probe() == ("compiled None True compiled ''\n", "")
    with open(package / "sim" / "fabric.py", "a") as f:
        f.write("# edited\n")
    assert probe() == (
        "pure 1 False pure ''\n",
        "kernbench: kernbench/sim/fabric.py changed after the compiled build; running the"
        " .py sources (KERNBENCH_PURE=1) until it is rebuilt (pip install -e .)\n",
    )
    for name in ("address/allocator.py", "topology/routes.py"):  # the first and the last
        with open(package / name, "a") as f:
            f.write("# edited\n")
    assert probe() == (
        "pure 1 False pure ''\n",
        "kernbench: kernbench/address/allocator.py and 2 more compiled modules changed after"
        " the compiled build; running the .py sources (KERNBENCH_PURE=1) until it is rebuilt"
        " (pip install -e .)\n",
    )
    (package / "_compiled.json").write_text("{ cut short")  # the record itself unreadable
    assert probe() == (
        "pure 1 False pure ''\n",
        "kernbench: kernbench/_compiled.json changed after the compiled build; running the"
        " .py sources (KERNBENCH_PURE=1) until it is rebuilt (pip install -e .)\n",
    )


def test_stale_sources_are_the_recorded_ones_whose_content_changed(tmp_path):
    """Any build: a package directory made here, with setup.py's record of what it
    compiled (sha256 by path from the package's parent). A source is stale when its
    bytes differ from the record (a file's time is not looked at), or it is gone; a
    module the record does not hold never is; no record, nothing compiled, nothing
    stale; a record that cannot be read is itself named. The notice names the first
    stale path and counts the rest."""
    package = tmp_path / "kernbench"
    recorded = ["kernbench/address/allocator.py", "kernbench/sim/fabric.py",
                "kernbench/topology/routes.py"]  # fmt: skip
    for path in [*recorded, "kernbench/units.py"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"# {path}\n")
    assert kernbench.stale_sources(str(package)) == []  # no record: a pure install
    record = {p: hashlib.sha256((tmp_path / p).read_bytes()).hexdigest() for p in recorded}
    (package / "_compiled.json").write_text(json.dumps(record))
    assert kernbench.stale_sources(str(package)) == []
    with open(package / "units.py", "a") as f:  # not compiled
        f.write("# edited\n")
    fabric = package / "sim" / "fabric.py"
    fabric.write_text(fabric.read_text())  # written again, the same bytes
    assert kernbench.stale_sources(str(package)) == []
    with open(fabric, "a") as f:
        f.write("# edited\n")
    stale = kernbench.stale_sources(str(package))
    assert stale == ["kernbench/sim/fabric.py"]
    assert kernbench.stale_notice(stale) == (
        "kernbench: kernbench/sim/fabric.py changed after the compiled build; running the"
        " .py sources (KERNBENCH_PURE=1) until it is rebuilt (pip install -e .)"
    )
    (package / "topology" / "routes.py").unlink()
    with open(package / "address" / "allocator.py", "a") as f:
        f.write("# edited\n")
    stale = kernbench.stale_sources(str(package))
    assert stale == recorded
    assert kernbench.stale_notice(stale).startswith(
        "kernbench: kernbench/address/allocator.py and 2 more compiled modules changed"
    )
    assert "and 1 more compiled module changed" in kernbench.stale_notice(stale[:2])
    (package / "_compiled.json").write_text("{ cut short")
    assert kernbench.stale_sources(str(package)) == ["kernbench/_compiled.json"]


def test_fingerprint_covers_compiled_modules(tmp_path):
    """The cache key's code fingerprint changes with a compiled module's bytes (a
    rebuild), not only with the sources."""
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "cpu.py").write_text("x = 1\n")
    compiled_module = tmp_path / "sim" / "cpu.cpython-311-x86_64-linux-gnu.so"
    runtime = tmp_path / "_mypyc__mypyc.cpython-311-x86_64-linux-gnu.so"
    compiled_module.write_bytes(b"\x7fELF one")
    runtime.write_bytes(b"\x7fELF runtime")
    prints = [cache.code_fingerprint(tmp_path)]
    compiled_module.write_bytes(b"\x7fELF two")
    prints.append(cache.code_fingerprint(tmp_path))
    runtime.write_bytes(b"\x7fELF runtime 2")
    prints.append(cache.code_fingerprint(tmp_path))
    (tmp_path / "sim" / "cpu.py").write_text("x = 2\n")
    prints.append(cache.code_fingerprint(tmp_path))
    assert len(set(prints)) == 4


def identity_run(out: Path, pure: bool, case_names: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.build_identity_driver", str(out), *case_names],
        cwd=ROOT, env=environment(pure), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def test_builds_give_identical_results(tmp_path, compiled):
    """The matrix in two fresh processes side by side, compiled and pure: every
    metric, op log entry and trace row the same, as text."""
    from tests.build_identity_driver import cases

    names = [n for n in cases() if not n.startswith("triton")]
    if importlib.util.find_spec("triton") is not None:  # the triton extra
        names += [n for n in cases() if n.startswith("triton")]
    procs = {pure: identity_run(tmp_path / f"{pure}.json", pure, names) for pure in (False, True)}
    for proc in procs.values():
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    got = {pure: json.loads((tmp_path / f"{pure}.json").read_text()) for pure in procs}
    assert (got[False]["build"], got[True]["build"]) == (kernbench.COMPILED, kernbench.PURE)
    compiled_cases, pure_cases = got[False]["cases"], got[True]["cases"]
    assert list(compiled_cases) == names == list(pure_cases)
    for name in names:
        for part in ("metrics", "oplog", "trace"):
            assert compiled_cases[name][part] == pure_cases[name][part], (name, part)
    # Not vacuous: every case logged and traced something.
    assert all(len(c["oplog"]) > 100 and len(c["trace"]) > 100 for c in pure_cases.values())

"""The sweep plugins leave Hydra as they found it, and Hydra finds them.

- Hydra's own plugin test suites (tests/hydra_plugin_suites.py) pass in a fresh pytest
  process with nothing resetting Hydra's state, the way Hydra's launcher plugins run
  them: loading and running our plugins must not change what Hydra does for other
  apps (importing :mod:`kernbench.app` would: its ``@hydra.main`` sets the version
  base, so jobs would stop changing directory);
- a user's own Hydra app, in a directory of its own, with no ``version_base``, finds
  ``hydra/launcher=kernbench`` through the installed package (the README's editable
  install included) and runs each job in its own directory, as the basic launcher does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOREIGN_APP = """
import os

import hydra


@hydra.main(config_path=None, config_name=None)
def main(cfg):
    # A file in the directory the job runs in, not a line on stdout: two jobs running
    # at once interleave the pieces of their print()s (PYTHONUNBUFFERED writes each).
    with open("job.txt", "w") as f:
        f.write(f"{cfg.x} {os.getcwd()}")


if __name__ == "__main__":
    main()
"""


def clean_environment() -> dict[str, str]:
    """No PYTHONPATH: the plugins must be found through the installed package."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDRA_FULL_ERROR")}


@pytest.mark.slow
def test_hydras_plugin_suites_pass_in_a_fresh_process(tmp_path):
    report = tmp_path / "suites.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}",
         str(ROOT / "tests" / "hydra_plugin_suites.py")],
        cwd=ROOT, env=clean_environment(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    suite = ElementTree.parse(report).getroot().find("testsuite")
    counts = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
    # every case runs: LauncherTestSuite 9, IntegrationTestSuite 11 (ours: one flag
    # set), BatchedSweeperTestSuite 1 per launcher (basic, kernbench)
    assert counts == {"tests": 22, "failures": 0, "errors": 0, "skipped": 0}


@pytest.mark.parametrize("launcher", ["basic", "kernbench"])
def test_a_users_app_without_version_base_runs_each_job_in_its_own_directory(tmp_path, launcher):
    """Hydra's documented default with no version_base (1.1 compatibility): a job runs
    in its own output directory. The kernbench launcher must behave as the basic one,
    and be found from a directory that is not the checkout."""
    app = tmp_path / "elsewhere" / "my_app.py"
    app.parent.mkdir()
    app.write_text(FOREIGN_APP)
    sweep = tmp_path / "multirun"
    proc = subprocess.run(
        [sys.executable, str(app), "-m", f"hydra/launcher={launcher}", "+x=1,2",
         f"hydra.sweep.dir={sweep}"],
        cwd=app.parent, env=clean_environment(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = sorted(path.read_text().split() for path in sweep.glob("*/job.txt"))
    assert jobs == [["1", str(sweep / "0")], ["2", str(sweep / "1")]]
    assert not (app.parent / "job.txt").exists()  # no job ran where the app was started

"""Hydra's own test suites for plugin authors, run on ``hydra/launcher=kernbench`` and
``hydra/sweeper=kernbench`` (as Hydra's launcher plugins run them on theirs).

The suites compose Hydra's own test apps (not kernbench's config), so they exercise
the plugins' generic path: per-shape composition, the worker pool, Hydra's ``run_job``
per point with its job directory, ``.hydra/`` files and log. Every case applies; none
is skipped. The integration suite starts its apps as subprocesses from a temporary
folder: PYTHONPATH names this checkout so they find ``hydra_plugins/kernbench_sweep``
(an editable install's import hook is invisible to Hydra's plugin scan; a regular
install is checked by tests/test_install.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra.test_utils.launcher_common_tests import (
    BatchedSweeperTestSuite,
    IntegrationTestSuite,
    LauncherTestSuite,
)
from hydra.version import VersionBase

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def fresh_version_base():
    """The suites assume a fresh process, where no ``version_base`` was ever set (so
    jobs change directory, Hydra < 1.2's default); an earlier test in this process may
    have set 1.3. Start each case from an unset version base, put the old one back."""
    saved = VersionBase.instance()
    fresh = object.__new__(VersionBase)
    fresh.__init__()
    VersionBase.set_instance(fresh)
    yield
    VersionBase.set_instance(saved)


@pytest.fixture(autouse=True)
def checkout_on_path(monkeypatch):
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


@pytest.mark.parametrize("launcher_name, overrides", [("kernbench", ["hydra.launcher.n_jobs=2"])])
class TestKernbenchLauncher(LauncherTestSuite):
    pass


@pytest.mark.parametrize(
    "task_launcher_cfg, extra_flags",
    [({}, ["-m", "hydra/launcher=kernbench", "hydra.launcher.n_jobs=2"])],
)
class TestKernbenchLauncherIntegration(IntegrationTestSuite):
    pass


@pytest.mark.parametrize(
    "launcher_name, overrides",
    [
        ("basic", ["hydra/sweeper=kernbench", "hydra.sweeper.max_batch_size=2"]),
        ("kernbench", ["hydra/sweeper=kernbench", "hydra.sweeper.max_batch_size=2"]),
    ],
)
class TestKernbenchSweeper(BatchedSweeperTestSuite):
    pass

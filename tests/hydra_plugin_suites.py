"""Hydra's own test suites for plugin authors, on ``hydra/launcher=kernbench`` and
``hydra/sweeper=kernbench``, exactly as Hydra's launcher plugins run them: in a pytest
process of their own, with no fixture touching Hydra's state.

Not collected by the default run (its name does not start with ``test_``):
tests/test_sweep_plugins.py runs this file in a fresh ``python -m pytest``, because in
the main test process other tests import :mod:`kernbench.app`, whose ``@hydra.main``
sets the process's version base, and the suites assume a process where none was set.

The suites compose Hydra's own test apps (not kernbench's config), so they exercise the
plugins' generic path: per-shape composition, the worker pool, Hydra's ``run_job`` per
point with its job directory, ``.hydra/`` files and log. The integration suite starts
its apps as subprocesses from a temporary folder, where only the installed package
(an editable install included) makes ``hydra_plugins/kernbench_sweep`` visible.
"""

from __future__ import annotations

import pytest
from hydra.test_utils.launcher_common_tests import (
    BatchedSweeperTestSuite,
    IntegrationTestSuite,
    LauncherTestSuite,
)


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

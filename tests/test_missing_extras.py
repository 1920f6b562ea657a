"""A sweeper or launcher whose extra is not installed: one line with the install that
adds it (kernbench.cli.precheck), not Hydra's "Could not find 'hydra/sweeper/optuna'".

Every extra is installed where the suite runs (CI installs them all), so the run is a
user's ``kernbench`` in a subprocess whose interpreter cannot import that plugin: a
``sitecustomize`` module on its PYTHONPATH puts a finder first on ``sys.meta_path``
that refuses the plugin's package, as an interpreter without it would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_launchers import environment

BLOCKER = '''
import sys


class _Missing:
    """Finds the named packages missing, as an environment without them would."""

    def find_spec(self, name, path=None, target=None):
        if name == {module!r} or name.startswith({module!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
'''


@pytest.mark.parametrize(
    ("choice", "module", "extra"),
    [
        ("hydra/sweeper=optuna", "hydra_plugins.hydra_optuna_sweeper", "optuna"),
        ("hydra/launcher=ray", "hydra_plugins.hydra_ray_launcher", "ray"),
        ("hydra/launcher=submitit_slurm", "hydra_plugins.hydra_submitit_launcher", "slurm"),
    ],
)
def test_a_plugin_from_a_missing_extra_names_the_install(tmp_path: Path, choice, module, extra):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(module=module))
    env = {**environment(), "PYTHONPATH": str(site)}
    proc = subprocess.run(
        [sys.executable, "-m", "kernbench.app", "-m", "topology=small", choice],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1
    kind, option = choice.removeprefix("hydra/").split("=")
    assert proc.stderr.splitlines() == [
        f"kernbench: error: hydra/{kind}={option} needs the {extra} extra, which is not"
        f" installed: pip install -e '.[{extra}]' in the kernbench clone"
    ]
    assert not list(tmp_path.glob("outputs"))  # nothing ran


def test_an_installed_plugin_is_not_refused(tmp_path: Path):
    """The other side: with the plugin there, the same choice passes the pre-check."""
    from kernbench.cli.precheck import check_overrides

    check_overrides(["topology=small", "hydra/sweeper=optuna", "objective=sim_time_ns"])

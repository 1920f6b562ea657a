"""``hydra/launcher=kernbench``: local workers (:class:`kernbench.sweep.sweeper.FastLauncher`)."""

from dataclasses import dataclass

from hydra.core.config_store import ConfigStore

from kernbench.sweep.sweeper import FastLauncher


@dataclass
class KernbenchLauncherConf:
    _target_: str = "hydra_plugins.kernbench_sweep.kernbench_launcher.KernbenchLauncher"
    # Worker processes, as joblib counts them: -1 is one per core, -2 all but one.
    n_jobs: int = -1


class KernbenchLauncher(FastLauncher):
    """Registered as ``hydra/launcher=kernbench``."""


ConfigStore.instance().store(
    group="hydra/launcher", name="kernbench", node=KernbenchLauncherConf, provider="kernbench"
)

"""``hydra/launcher=kernbench``: local workers (:class:`kernbench.sweep.sweeper.FastLauncher`)."""

from hydra.core.config_store import ConfigStore

from kernbench.sweep.settings import KernbenchLauncherConf
from kernbench.sweep.sweeper import FastLauncher


class KernbenchLauncher(FastLauncher):
    """Registered as ``hydra/launcher=kernbench``."""


ConfigStore.instance().store(
    group="hydra/launcher", name="kernbench", node=KernbenchLauncherConf, provider="kernbench"
)

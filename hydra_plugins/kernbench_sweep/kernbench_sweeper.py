"""``hydra/sweeper=kernbench``: the fast multirun (:class:`kernbench.sweep.sweeper.FastSweeper`)."""

from hydra.core.config_store import ConfigStore

from kernbench.sweep.settings import KernbenchSweeperConf
from kernbench.sweep.sweeper import FastSweeper


class KernbenchSweeper(FastSweeper):
    """Registered as ``hydra/sweeper=kernbench``."""


ConfigStore.instance().store(
    group="hydra/sweeper", name="kernbench", node=KernbenchSweeperConf, provider="kernbench"
)

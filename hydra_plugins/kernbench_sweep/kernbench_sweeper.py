"""``hydra/sweeper=kernbench``: the fast multirun (:class:`kernbench.sweep.sweeper.FastSweeper`)."""

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore

from kernbench.sweep.sweeper import FastSweeper


@dataclass
class KernbenchSweeperConf:
    _target_: str = "hydra_plugins.kernbench_sweep.kernbench_sweeper.KernbenchSweeper"
    # As Hydra's basic sweeper: points per launcher batch (null: one batch), the grid.
    max_batch_size: int | None = None
    params: dict[str, str] | None = field(default=None)
    # Compose and validate every point, print the shapes and the invalid points, run none.
    dry_run: bool = False
    # Points per task: null picks ~8 chunks per local worker (at most 64 points), and
    # 100 points per task under another launcher (submitit, Ray): 10,000 points = 100 tasks.
    chunk_size: int | None = None
    # Seconds a point may run: one that runs longer is stopped and becomes an error row
    # naming this limit; the sweep goes on. null: no limit.
    point_timeout_s: float | None = None
    # Into a hydra.sweep.dir holding this same grid's results.parquet: keep its ok rows
    # (made by this code) and run only the other points. Another grid is refused.
    resume: bool = False


class KernbenchSweeper(FastSweeper):
    """Registered as ``hydra/sweeper=kernbench``."""


ConfigStore.instance().store(
    group="hydra/sweeper", name="kernbench", node=KernbenchSweeperConf, provider="kernbench"
)

"""The settings of ``hydra/sweeper=kernbench`` and ``hydra/launcher=kernbench``, as
Hydra's schemas: ``hydra_plugins/kernbench_sweep`` registers them in Hydra's
ConfigStore, and the override pre-check (:mod:`kernbench.cli.precheck`) types
``hydra.sweeper.*`` values against them before Hydra runs. Bounds are checked by the
sweeper (:meth:`kernbench.sweep.sweeper.FastSweeper.check_settings`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class KernbenchSweeperConf:
    _target_: str = "hydra_plugins.kernbench_sweep.kernbench_sweeper.KernbenchSweeper"
    # As Hydra's basic sweeper: points per launcher batch (null: one batch), the grid.
    max_batch_size: int | None = None
    params: dict[str, str] | None = field(default=None)
    # Compose and validate every point, print the shapes and the invalid points, run none.
    dry_run: bool = False
    # Points per task, >= 1; null or auto picks ~8 chunks per local worker (at most 64
    # points), and 100 points per task under another launcher (submitit, Ray): 10,000
    # points = 100 tasks. (Any: an integer or the word auto.)
    chunk_size: Any = None
    # Seconds a point may run: one that runs longer is stopped and becomes an error row
    # naming this limit; the sweep goes on. null: no limit.
    point_timeout_s: float | None = None
    # Into a hydra.sweep.dir holding this same grid's results.parquet: keep its ok rows
    # (made by this code) and run only the other points. Another grid is refused.
    resume: bool = False
    # With a list objective (objective=[a,b]): minimize (the default) or maximize, one
    # word for every objective or a list of one per objective, as Optuna's sweeper takes
    # it; the Pareto front of the sweep's last line and of kernbench-report follows it.
    direction: Any = None


@dataclass
class KernbenchLauncherConf:
    _target_: str = "hydra_plugins.kernbench_sweep.kernbench_launcher.KernbenchLauncher"
    # Worker processes, as joblib counts them: -1 is one per core, -2 all but one.
    n_jobs: int = -1

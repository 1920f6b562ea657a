"""The settings of ``hydra/sweeper=kernbench`` and ``hydra/launcher=kernbench``, as
Hydra's schemas: ``hydra_plugins/kernbench_sweep`` registers them in Hydra's
ConfigStore, and the override pre-check (:mod:`kernbench.cli.precheck`) types
``hydra.sweeper.*`` values against them before Hydra runs. Bounds are checked by the
sweeper (:meth:`kernbench.sweep.sweeper.FastSweeper.check_settings`).

Each field carries what it means and its limit in words (:func:`setting`), which
``kernbench --keys`` and the documentation's key reference print
(:func:`kernbench.cli.keys.setting_keys`): the one place they are written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernbench.config.schema import MEANING

LIMIT = "limit"
# The longest hydra.sweeper.point_timeout_s: a week, setitimer's range and beyond any
# point (the sweeper applies it; --keys and the key reference state it).
MAX_TIMEOUT_S = 7 * 24 * 3600.0


def setting(default: Any, meaning: str, limit: str = "") -> Any:
    """A sweeper or launcher field: its default, what it means and its limit."""
    return field(default=default, metadata={MEANING: meaning, LIMIT: limit})


@dataclass
class KernbenchSweeperConf:
    _target_: str = "hydra_plugins.kernbench_sweep.kernbench_sweeper.KernbenchSweeper"
    max_batch_size: int | None = setting(
        None,
        "points per launcher batch, as Hydra's basic sweeper (null: one batch)",
        ">= 1",
    )
    params: dict[str, str] | None = setting(
        None,
        "the grid: each swept key's values (hydra.sweeper.params.workload.access_bytes=512,4096)",
    )
    dry_run: bool = setting(
        False, "compose and validate every point, print the shapes and the invalid points, run none"
    )
    chunk_size: Any = setting(
        None,
        "points per task; null or auto picks ~8 chunks per local worker (at most 64 points),"
        " and 100 points per task under another launcher (submitit, Ray): 10,000 points ="
        " 100 tasks",
        "an integer >= 1, or auto",
    )
    point_timeout_s: float | None = setting(
        None,
        "seconds a point may run: one that runs longer is stopped and becomes an error row"
        " naming this limit; the sweep goes on (null: no limit)",
        f"> 0, <= {MAX_TIMEOUT_S:g} (a week)",
    )
    resume: bool = setting(
        False,
        "into a hydra.sweep.dir holding this same grid's results.parquet: keep its ok rows"
        " (made by this code) and run only the other points; another grid is refused",
    )
    direction: Any = setting(
        None,
        "with a list objective (objective=[a,b]): minimize (null: for every objective) or"
        " maximize, as Optuna's sweeper takes it; the Pareto front of the sweep's last line"
        " and of kernbench-report follows it",
        "minimize or maximize: one word, or a list of one per objective",
    )


@dataclass
class KernbenchLauncherConf:
    _target_: str = "hydra_plugins.kernbench_sweep.kernbench_launcher.KernbenchLauncher"
    n_jobs: int = setting(
        -1,
        "worker processes, as joblib counts them: -1 is one per core, -2 all but one",
        "1 to 4 per core, or -1 to -cores (cores + 1 + n_jobs workers)",
    )

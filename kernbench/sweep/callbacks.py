"""The Hydra callback that merges a sweep's rows when the multirun ends.

``conf/config.yaml`` lists :class:`MergeResults` under ``hydra.callbacks``. Hydra runs
``on_multirun_end`` in the main process after every job has returned, so the merge
reads the job directories from disk (job events run inside the launcher's workers,
whose state never reaches this process). The outcome is kept in this module for
:func:`kernbench.app.main`, which turns a failed point into a non-zero exit status:
Hydra's multirun itself returns normally when jobs report errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from kernbench.sweep.merge import MergeOutcome, merge_sweep

_outcomes: list[MergeOutcome] = []


class MergeResults(Callback):
    """Write ``results.parquet`` in the sweep directory at the end of a multirun."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        outcome = merge_sweep(Path(str(config.hydra.sweep.dir)))
        _outcomes.append(outcome)


def pop_outcome() -> MergeOutcome | None:
    """The last merge's outcome in this process, cleared so it is reported once."""
    outcome = _outcomes[-1] if _outcomes else None
    _outcomes.clear()
    return outcome

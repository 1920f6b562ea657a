"""A stream row simulated again with some keys changed, from the row alone.

A verdict can rest on an artefact of the sweep rather than on the model: a 512 KiB
stream's last access, waited for by one PE while the others have finished, moves its
bandwidth by a few percent. The bandwidth study reruns a failing claim's worst
configuration with a longer stream to tell the two apart (issue 55). A row's dotted
columns are its whole resolved config (:func:`kernbench.results.config_columns`), so
the configuration is rebuilt from them on the stream's schema and validated as any
run is; nothing is read from the sweep directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from kernbench import simulate
from kernbench.config.schema import KernBenchConfig, StreamWorkloadConfig


def stream_metrics(row: pd.Series, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics of the stream configuration ``row`` holds, with ``changes`` (dotted
    key -> value) applied, simulated now. Raises KernBenchError if the changed
    configuration is refused (e.g. a longer stream that no longer fits in HBM)."""
    cfg = OmegaConf.structured(KernBenchConfig)
    cfg.workload = OmegaConf.structured(StreamWorkloadConfig)
    given = {k: v for k, v in row.items() if "." in str(k) and not _missing(v)}
    for key, value in {**given, **changes}.items():
        OmegaConf.update(cfg, str(key), _plain(value), merge=False)
    return simulate.run(OmegaConf.to_object(cfg)).metrics


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value))


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value OmegaConf takes."""
    return value.item() if hasattr(value, "item") else value

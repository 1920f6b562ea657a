"""Loading a result table, and the column names and helpers the studies share.

Each study keeps its table in its own module (:mod:`~kernbench.report.study`).

A study table has one row per *configuration* (every swept config value except the
one the study compares across) and the compared metric side by side with its ratio.
Which columns are configuration is read off the data: the config columns (dotted
keys) whose value varies among the ok rows, so a sweep with an extra axis keeps it as
an extra index column instead of averaging it away. Only ``status == "ok"`` rows
enter a table; error rows are counted by :func:`status_counts`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernbench.config.columns import RENAMED
from kernbench.sweep import MERGED_FILE

MAPPING = "topology.cube.memory_map.hbm_mapping_mode"
CHANNELS_PER_PE = "topology.cube.memory_map.hbm_channels_per_pe"
GRANULE = "topology.cube.memory_map.interleave_bytes"
ACCESS = "workload.access_bytes"
ALIGN = "workload.align_offset_bytes"
FIXED = "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles"
RECIP = "topology.pe.attrs.pe_cost_model.byte_cycles_recip"
WORKLOAD = "workload.name"
WORK = "workload.bytes_per_pe"
OPT2, OPT3 = "gqa_opt2", "gqa_opt3"
# Cost per access is compared from this much work up (smaller runs pay set-up).
LINEAR_FROM = 10_000


def load_results(where: str | Path) -> pd.DataFrame:
    """The merged table of a sweep directory, or of a Parquet file given directly."""
    path = Path(where)
    if path.is_dir():
        path = path / MERGED_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {MERGED_FILE} at {path} (is it a sweep directory?)")
    return read(path)


def read(path: Path) -> pd.DataFrame:
    """A results table, columns renamed since it was written under their names now
    (:data:`~kernbench.config.columns.RENAMED`), so an older sweep reports as a new one."""
    df = pd.read_parquet(path)
    return df.rename(columns={k: v for k, v in RENAMED.items() if v not in df})


def status_counts(df: pd.DataFrame) -> dict[str, int]:
    """Rows per status, e.g. ``{"ok": 95, "error": 1}``."""
    return {str(k): int(v) for k, v in df["status"].value_counts().items()}


def varying_config(df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Config columns (dotted keys) that take more than one value, in table order."""
    keys = [c for c in df.columns if "." in c and c not in exclude]
    return [c for c in keys if df[c].nunique(dropna=False) > 1]


def speed_sweep(df: pd.DataFrame) -> bool:
    """Whether the rows measure the simulator (``sim_speed``), not the model."""
    return "speed_ratio" in df and bool(df["speed_ratio"].notna().any())

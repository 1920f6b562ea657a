"""Study tables: the rows of a sweep, paired up the way each study compares them.

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

from kernbench.results import STATUS_OK
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
GQA_METRICS = (
    "commands_per_tile",
    "logical_bytes_per_tile",
    "dispatch_cycles_per_tile",
    "kernel_latency_ns",
)


def load_results(where: str | Path) -> pd.DataFrame:
    """The merged table of a sweep directory, or of a Parquet file given directly."""
    path = Path(where)
    if path.is_dir():
        path = path / MERGED_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {MERGED_FILE} at {path} (is it a sweep directory?)")
    return pd.read_parquet(path)


def status_counts(df: pd.DataFrame) -> dict[str, int]:
    """Rows per status, e.g. ``{"ok": 95, "error": 1}``."""
    return {str(k): int(v) for k, v in df["status"].value_counts().items()}


def varying_config(df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Config columns (dotted keys) that take more than one value, in table order."""
    keys = [c for c in df.columns if "." in c and c not in exclude]
    return [c for c in keys if df[c].nunique(dropna=False) > 1]


def dispatch_ratio_table(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per (FIXED, R): each GQA variant's per-tile figures and opt3/opt2 dispatch.

    None when the table does not hold ok rows of both variants.
    """
    if WORKLOAD not in df:
        return None
    ok = df[(df["status"] == STATUS_OK) & df[WORKLOAD].isin([OPT2, OPT3])]
    if ok.empty or set(ok[WORKLOAD]) != {OPT2, OPT3}:
        return None
    keys = varying_config(ok, exclude=(WORKLOAD,)) or [FIXED, RECIP]
    metrics = [m for m in GQA_METRICS if m in ok.columns]
    wide = ok.pivot_table(index=keys, columns=WORKLOAD, values=metrics).dropna()
    wide.columns = [f"{metric}_{variant.removeprefix('gqa_')}" for metric, variant in wide.columns]
    table = wide.reset_index()
    d2, d3 = table["dispatch_cycles_per_tile_opt2"], table["dispatch_cycles_per_tile_opt3"]
    table["dispatch_ratio_opt3_opt2"] = (d3 / d2).where(d2 > 0)
    return table


def _speed_sweep(df: pd.DataFrame) -> bool:
    """Whether the rows measure the simulator (``sim_speed``), not the model."""
    return "speed_ratio" in df and bool(df["speed_ratio"].notna().any())


def sim_speed_table(df: pd.DataFrame) -> pd.DataFrame | None:
    """Per configuration and amount of work: accesses, wall time, cost per access,
    accesses per second against SimPy's bare rate, and the cost per access relative
    to the same configuration at its smallest point of at least 10^4 accesses.

    None when the table holds no speed measurements (``sim.measure_speed``).
    """
    if not _speed_sweep(df):
        return None
    ok = df[(df["status"] == STATUS_OK) & df["speed_ratio"].notna()]
    if ok.empty:
        return None
    keys = varying_config(ok, exclude=(WORK,))
    table = ok[[*keys, "sim_accesses", "sim_wall_s", "accesses_per_s"]].copy()
    table["us_per_access"] = table["sim_wall_s"] / table["sim_accesses"] * 1e6
    table["bare_simpy_events_per_s"] = ok["bare_simpy_events_per_s"]
    table["speed_ratio"] = ok["speed_ratio"]
    table = table.sort_values([*keys, "sim_accesses"]).reset_index(drop=True)
    big = table[table["sim_accesses"] >= LINEAR_FROM]
    first = big.groupby(keys)["us_per_access"].first() if keys else big["us_per_access"][:1]
    ref = table[keys].merge(first.reset_index(), how="left")["us_per_access"] if keys else first
    table["cost_vs_1e4"] = table["us_per_access"] / ref.to_numpy()
    return table


def short_names(table: pd.DataFrame) -> pd.DataFrame:
    """The table with each dotted column named by its last part, for printing."""
    names = {c: c.rsplit(".", 1)[-1] for c in table.columns}
    if len(set(names.values())) < len(names):  # two keys end alike: keep them dotted
        return table
    return table.rename(columns=names)

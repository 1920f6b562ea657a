"""The columns a row has beyond its config, per workload, and which of them hold numbers.

The workloads make their metrics at run time (:mod:`kernbench.workloads`); this table
says, before anything runs, which columns a row of each workload will have, so a
setting that names a column (``objective``, :mod:`kernbench.objective`) is checked up
front, in one line. tests/test_objective.py runs each workload and checks that its row
has exactly these metric columns, of these kinds, so the table cannot drift from them.
"""

from __future__ import annotations

import functools
from typing import Any

from kernbench.config.schema import (
    DecoderLayerWorkloadConfig,
    GqaPairWorkloadConfig,
    GqaWorkloadConfig,
    StreamWorkloadConfig,
    TritonWorkloadConfig,
)
from kernbench.config.store import conf_dir

NUMBER = "number"
TEXT = "text"

_STREAM = {
    "active_pe_count": NUMBER,
    "accesses": NUMBER,
    "sim_time_ns": NUMBER,
    "bytes_moved": NUMBER,
    "mean_pe_bw_gbs": NUMBER,
    "aggregate_bw_gbs": NUMBER,
    "min_pe_bw_gbs": NUMBER,
    "max_pe_bw_gbs": NUMBER,
    "bw_fairness": NUMBER,
    "peak_bw_per_pe_gbs": NUMBER,
    "peak_aggregate_bw_gbs": NUMBER,
    "peak_pattern_bw_gbs": NUMBER,
    "bw_efficiency": NUMBER,
    "busiest_link": TEXT,
    "busiest_link_utilization": NUMBER,
    "cpu_utilization": NUMBER,
    "bottleneck": TEXT,
    "install_latency_ns": NUMBER,
    "install_bytes": NUMBER,
}
# What every kernel's run reports of its PEs' engines (kernbench.sim.metrics).
_ENGINE_USE = {
    "dispatch_cycles_total": NUMBER,
    "cpu_utilization": NUMBER,
    "gemm_utilization": NUMBER,
    "math_utilization": NUMBER,
    "dma_utilization": NUMBER,
    "bottleneck": TEXT,
}
_GQA = {
    "n_tiles": NUMBER,
    "active_pe_count": NUMBER,
    "hbm_channels_used": NUMBER,
    "commands_per_tile": NUMBER,
    "logical_bytes_per_tile": NUMBER,
    "dispatch_cycles_per_tile": NUMBER,
    "kernel_latency_ns": NUMBER,
    "sim_time_ns": NUMBER,
    **_ENGINE_USE,
}
# gqa_pair: the comparison first, then each variant's figure beside the other's (the
# gqa_opt2 / gqa_opt3 column under the variant's name), then what both runs share.
_GQA_PAIR = {
    "opt3_over_opt2_latency": NUMBER,
    "latency_winner": TEXT,
    "opt3_opt2_latency_gap": NUMBER,
    "opt2_kernel_latency_ns": NUMBER,
    "opt3_kernel_latency_ns": NUMBER,
    "opt2_bottleneck": TEXT,
    "opt3_bottleneck": TEXT,
    "opt2_dispatch_cycles_per_tile": NUMBER,
    "opt3_dispatch_cycles_per_tile": NUMBER,
    "opt2_commands_per_tile": NUMBER,
    "opt3_commands_per_tile": NUMBER,
    "opt2_logical_bytes_per_tile": NUMBER,
    "opt3_logical_bytes_per_tile": NUMBER,
    "n_tiles": NUMBER,
    "active_pe_count": NUMBER,
    "hbm_channels_used": NUMBER,
    "sim_time_ns": NUMBER,
}
_TRITON = {
    "kernel_latency_ns": NUMBER,
    "sim_time_ns": NUMBER,
    "bytes_moved": NUMBER,
    "commands": NUMBER,
    "dma_commands": NUMBER,
    "gemm_commands": NUMBER,
    "math_commands": NUMBER,
    **_ENGINE_USE,
    "programs": NUMBER,
    "active_pe_count": NUMBER,
    "max_abs_error": NUMBER,
}

# What a launch of several kernels reports per launch and sums over them.
_LAUNCHES = {
    "commands": NUMBER,
    "dma_commands": NUMBER,
    "gemm_commands": NUMBER,
    "math_commands": NUMBER,
    "bytes_moved": NUMBER,
    "dispatch_cycles_total": NUMBER,
    "flops": NUMBER,
    "math_elements": NUMBER,
}
_UTILIZATION = {
    "cpu_utilization": NUMBER,
    "gemm_utilization": NUMBER,
    "math_utilization": NUMBER,
    "dma_utilization": NUMBER,
    "bottleneck": TEXT,
}
_DECODER = {
    "kernel_latency_ns": NUMBER,
    "sim_time_ns": NUMBER,
    "kernels": NUMBER,
    **_LAUNCHES,
    **_UTILIZATION,
    "cpu_bound_kernels": NUMBER,
    "roofline_bound_ns": NUMBER,
    "roofline_efficiency": NUMBER,
    "dominant_kernel": TEXT,
    "dominant_kernel_share": NUMBER,
    "install_latency_ns": NUMBER,
    "install_bytes": NUMBER,
    "max_abs_error": NUMBER,
}

# Workload schema -> its metric columns (in row order) and their kinds.
METRICS: dict[type, dict[str, str]] = {
    StreamWorkloadConfig: _STREAM,
    GqaWorkloadConfig: _GQA,
    GqaPairWorkloadConfig: _GQA_PAIR,
    TritonWorkloadConfig: _TRITON,
    DecoderLayerWorkloadConfig: _DECODER,
}

# Workloads that also write one row per kernel launch (``kernels.parquet``,
# :mod:`kernbench.results.kernels`), after the point's identity columns: those columns.
KERNEL_COLUMNS: dict[type, dict[str, str]] = {
    DecoderLayerWorkloadConfig: {
        "launch": NUMBER,
        "kernel": TEXT,
        "triton_kernel": TEXT,
        "kernel_latency_ns": NUMBER,
        "programs": NUMBER,
        "active_pe_count": NUMBER,
        **_LAUNCHES,
        **_UTILIZATION,
        "memory_bound_ns": NUMBER,
        "gemm_bound_ns": NUMBER,
        "math_bound_ns": NUMBER,
        "roofline_bound_ns": NUMBER,
        "roofline_limit": TEXT,
        "busiest_resource": TEXT,
        "roofline_efficiency": NUMBER,
    },
}

# The number columns that always hold an int (a count, bytes, a launch's index), in every
# workload that has them: a float there (a forged 256.5) turns a table's whole column to
# double, and an int past 64 bits (|x| >= 2^63) turns it to text. The point cache and
# resume hold them to exactly that (kernbench.sweep.cache.check_declared);
# tests/test_resume_cache_forged.py checks each workload's row against this set.
INTEGERS: frozenset[str] = frozenset(
    {
        "active_pe_count",
        "accesses",
        "bytes_moved",
        "install_bytes",
        "n_tiles",
        "hbm_channels_used",
        "commands_per_tile",
        "logical_bytes_per_tile",
        "opt2_commands_per_tile",
        "opt3_commands_per_tile",
        "opt2_logical_bytes_per_tile",
        "opt3_logical_bytes_per_tile",
        "commands",
        "dma_commands",
        "gemm_commands",
        "math_commands",
        "programs",
        "kernels",
        "flops",
        "math_elements",
        "cpu_bound_kernels",
        "launch",
    }
)
# A launch row's index (0 to n-1, in launch order) and the metric of its point that
# says n: a point of a workload with launch rows has at least one, each index once.
LAUNCH_INDEX = "launch"
LAUNCH_COUNT = "kernels"

# Wall-clock columns every row has (null when served from the point cache), and those
# sim.measure_speed adds (kernbench.sim.speed).
TIMINGS: dict[str, str] = {"sim_wall_s": NUMBER, "wall_s": NUMBER}
SPEED_TIMINGS: dict[str, str] = {
    "sim_accesses": NUMBER,
    "accesses_per_s": NUMBER,
    "bare_simpy_events_per_s": NUMBER,
    "speed_ratio": NUMBER,
}


# Columns renamed since tables were first written: old name -> name now. A report of an
# older results.parquet reads them under the new names (kernbench.report.tables.read);
# resume and the point cache never meet them (they keep only rows and entries of this
# code). effective_bw_*: the per-PE figures' mean, least and most, named so the mean
# is not read as the launch's aggregate (aggregate_bw_gbs).
RENAMED: dict[str, str] = {
    "effective_bw_gbs": "mean_pe_bw_gbs",
    "effective_bw_min_gbs": "min_pe_bw_gbs",
    "effective_bw_max_gbs": "max_pe_bw_gbs",
}

# The config groups a user composes a run from (``channel_mapping=one_to_one``,
# ``traffic=hotspot``, ``+experiment=...``): each row names the option chosen in a
# column of the group's name, null where none was (``traffic`` by default). What they
# set is in the config columns too; these say it as the user typed it. They are not
# part of the config hash or the point cache's key: two compositions of one config are
# one point. ``paths`` says where outputs go, not what was simulated.
NOT_GROUPS = ("paths",)
EXPERIMENT = "experiment"


@functools.cache
def group_names() -> tuple[str, ...]:
    """The group columns, in the order a row holds them: conf/'s groups, then
    ``experiment``."""
    found = sorted(p.name for p in conf_dir().iterdir() if p.is_dir() and p.name not in NOT_GROUPS)
    return (*found, EXPERIMENT)


def group_columns(choices: Any) -> dict[str, str | None]:
    """The group columns of a row from Hydra's ``hydra.runtime.choices`` (a mapping of
    group to option, ``None`` for a group left empty)."""
    known = dict(choices or {})
    return {name: _option(known.get(name)) for name in group_names()}


def _option(value: Any) -> str | None:
    return None if value is None or str(value) == "None" else str(value)


def metric_columns(workload: object, measure_speed: bool = False) -> dict[str, str]:
    """The metric and timing columns of a row of ``workload`` (a workload config
    object, or its schema class), with their kinds; {} for an unknown workload."""
    schema = workload if isinstance(workload, type) else type(workload)
    columns = dict(METRICS.get(schema, {}))
    columns |= TIMINGS
    if measure_speed:
        columns |= SPEED_TIMINGS
    return columns

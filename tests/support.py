"""Test helpers that build typed configs directly (no Hydra), for simulator-level tests,
run a snippet in a fresh interpreter, and build stream result rows for the report's
tests."""

from __future__ import annotations

import subprocess
import sys

from kernbench.config.schema import (
    AddressConfig,
    AddressModel,
    FabricModel,
    HbmMappingMode,
    KernBenchConfig,
    PeCostModelConfig,
    StreamOp,
    StreamWorkloadConfig,
)
from kernbench.config.validate import validate
from kernbench.results import make_row
from kernbench.runtime import RuntimeContext
from kernbench.sim.system import System

ZERO_COST = PeCostModelConfig(fixed_per_cmd_cycles=0.0, byte_cycles_recip=0.0)


def make_cfg(
    one_to_one: bool = False,
    zero_cost: bool = True,
    model: str = "pa",
    fabric: str = "fair",
    **stream: object,
) -> KernBenchConfig:
    """The default topology; dispatch cost off unless asked, so fabric times stand alone.
    The PA model unless asked (the run's default is VA): these timing tests state
    physical paths with no translation cost and no install time."""
    if "op" in stream:
        stream["op"] = StreamOp(stream["op"])
    cfg = KernBenchConfig(workload=StreamWorkloadConfig(**stream))  # type: ignore[arg-type]
    cfg.address = AddressConfig(AddressModel(model))
    mm = cfg.topology.cube.memory_map
    mm.hbm_mapping_mode = HbmMappingMode.one_to_one if one_to_one else HbmMappingMode.n_to_one
    if zero_cost:
        cfg.topology.pe.attrs.pe_cost_model = ZERO_COST
    cfg.sim.fabric = FabricModel(fabric)
    return validate(cfg)


def make_system(cfg: KernBenchConfig | None = None, **kw: object) -> tuple[System, RuntimeContext]:
    system = System(cfg or make_cfg(), **kw)  # type: ignore[arg-type]
    return system, RuntimeContext(system)


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``code`` run by a fresh interpreter with ``args`` (``sys.argv[1:]``), output
    captured as text: a test of what a process meets as it starts, handles a signal or
    exits, without touching this one's state."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


MM = "topology.cube.memory_map."  # the memory map's columns in a result table


def stream_columns(
    mapping: str,
    access: int,
    *,
    pes: int = 8,
    pseudo: int = 64,
    topology: str | None = "default",
    interleave: int | None = None,
    align: int | None = None,
    active: int | str | None = None,
    pattern: str | None = None,
    op: str | None = None,
    fabric: str | None = None,
) -> dict[str, object]:
    """A stream point's config columns, in the order a run writes them; a key given
    None is no column (a table from before it, or one a test leaves out). Channels per
    PE follow from the pseudo-channels and PEs, as the config derives them."""
    columns = {
        "topology.name": topology,
        "topology.pes_per_cube": pes,
        MM + "hbm_mapping_mode": mapping,
        MM + "hbm_pseudo_channels": pseudo,
        MM + "hbm_channels_per_pe": pseudo // pes,
        MM + "interleave_bytes": interleave,
        "workload.name": "stream",
        "workload.access_bytes": access,
        "workload.align_offset_bytes": align,
        "workload.active_pes": active,
        "workload.pattern": pattern,
        "workload.op": op,
        "sim.fabric": fabric,
    }
    return {key: value for key, value in columns.items() if value is not None}


def stream_row(
    mapping: str, access: int, metrics: dict[str, object], **columns: object
) -> dict[str, object]:
    """An ok result row of a stream point: :func:`stream_columns` and ``metrics``."""
    return make_row(
        stream_columns(mapping, access, **columns),  # type: ignore[arg-type]
        status="ok",
        metrics=metrics,
    )

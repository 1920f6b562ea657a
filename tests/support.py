"""Test helpers that build typed configs directly (no Hydra), for simulator-level tests,
and run a snippet in a fresh interpreter."""

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

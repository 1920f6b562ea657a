"""Test helpers that build typed configs directly (no Hydra), for simulator-level tests,
and run a snippet in a fresh interpreter."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import kernbench
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
from kernbench.sim.engines import Engine, Stage
from kernbench.sim.events import LocalQueue
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


class Outcome(NamedTuple):
    """What became of one stage a test drove a fabric with."""

    end: float  # when its last part completed (-1: never)
    calls: int  # completion calls the fabric made for it (one per event)
    parts: int
    flowing: int


class Stages:
    """DMA stages to drive a fabric with directly, and what their completions saw. The
    fabric completes the simulator's own :class:`~kernbench.sim.engines.Stage` (the
    compiled build reads its fields where they are and refuses a stand-in class)."""

    def __init__(self, events: LocalQueue) -> None:
        self.events = events
        self.engine = Engine(events, "dma", 1, lambda stage, now: None)
        self.ends: dict[Stage, float] = {}
        self.calls: dict[Stage, int] = {}

    def new(self) -> Stage:
        return Stage(self.engine, None)

    def finish(self, stage: Stage) -> None:
        """One part of ``stage`` completed now; it ends with its last."""
        self.calls[stage] = self.calls.get(stage, 0) + 1
        stage.parts -= 1
        if not stage.parts:
            self.ends[stage] = self.events.now

    def outcome(self, stage: Stage) -> Outcome:
        end = self.ends.get(stage, -1.0)
        return Outcome(end, self.calls.get(stage, 0), stage.parts, stage.flowing)


SIM = Path(kernbench.__file__).resolve().parent / "sim"


def sim_source(name: str) -> ModuleType:
    """``kernbench/sim/<name>.py`` loaded from source, whichever build this process
    imported (the specification a hand-written C module follows: setup.NATIVE)."""
    spec = importlib.util.spec_from_file_location(f"{name}_source", SIM / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sim_native(name: str) -> ModuleType | None:
    """The C module the compiled build put beside ``kernbench/sim/<name>.py``, loaded
    from its file (under ``KERNBENCH_PURE=1`` too), or None on a pure-Python install."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = SIM / f"{name}{suffix}"
        if path.exists():
            full = f"kernbench.sim.{name}"
            loader = importlib.machinery.ExtensionFileLoader(full, str(path))
            spec = importlib.util.spec_from_file_location(full, path, loader=loader)
            assert spec is not None
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module
    return None

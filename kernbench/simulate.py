"""One simulation run: typed config in, deterministic metrics out.

This is the only door between the Hydra application and the simulator; it never
sees a DictConfig. It validates (:func:`run`; the app, which has validated already,
calls :func:`run_validated`), builds the SimPy system, runs the selected workload and
returns its metrics (DESIGN §8 names) and, if asked, the op log.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernbench.config.schema import KernBenchConfig
from kernbench.config.validate import validate
from kernbench.errors import ConfigError, KernBenchError
from kernbench.results.kernels import WithKernels
from kernbench.results.trace import TraceWriter
from kernbench.sim.collector import fewer_collections
from kernbench.sim.oplog import OpLogEntry
from kernbench.sim.speed import bare_timeout_rate, speed_timings
from kernbench.sim.system import RunObserver, System
from kernbench.workloads import WORKLOADS


@dataclass
class RunResult:
    """What one run produced. Every value in ``metrics`` is deterministic; wall-clock
    measurements (never deterministic) live apart in ``timings``."""

    metrics: dict[str, Any]
    oplog: list[OpLogEntry] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    # One row per kernel launch, for workloads that report them (kernels.parquet).
    kernels: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        """A short human summary, one metric per line."""
        width = max(len(k) for k in self.metrics)
        return "\n".join(f"{k:<{width}}  {_fmt(v)}" for k, v in self.metrics.items())


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _check_finite(metrics: dict[str, Any]) -> None:
    """A metric that overflowed (inputs in range whose products are not) is an error,
    never an ok row."""
    for key, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise KernBenchError(
                f"metric {key} = {value}: the configuration's values overflow the model"
            )


def run(
    cfg: KernBenchConfig, trace_path: Path | None = None, observer: RunObserver | None = None
) -> RunResult:
    """Validate ``cfg`` and simulate it (:func:`run_validated`). Raises a
    KernBenchError subclass on bad input."""
    return run_validated(validate(cfg), trace_path, observer)


def run_validated(
    cfg: KernBenchConfig, trace_path: Path | None = None, observer: RunObserver | None = None
) -> RunResult:
    """Simulate one configuration that :func:`~kernbench.config.validate.validate`
    returned (its derived values filled in). The app validates a point once, itself:
    it needs the validated columns for the cache key before deciding to simulate.

    With ``sim.trace`` on and a ``trace_path``, every physical request is also written
    to that Parquet file (:mod:`kernbench.results.trace`); it appears only on success.
    ``observer`` watches the kernel launches (a progress bar); it changes no result.
    With ``sim.measure_speed`` the timings also hold the run's speed against SimPy's
    bare event rate, measured just before (:mod:`kernbench.sim.speed`).
    """
    workload = WORKLOADS.get(cfg.workload.name)
    if workload is None:
        known = sorted(WORKLOADS)
        raise ConfigError("workload.name", f"{cfg.workload.name!r} is not one of {known}")
    trace = None
    if cfg.sim.trace and trace_path is not None:
        trace = TraceWriter(trace_path, cfg.address.model.value)
    ok = False
    bare = bare_timeout_rate() if cfg.sim.measure_speed else 0.0
    try:
        start = time.perf_counter()
        # The whole point collected as a run is: building the system and the report
        # after the run make long-lived objects too (16,384 PEs, 1:1 hotspot: the
        # collector took 0.80-0.85 of 2.4 s with only the run and the runtime's
        # calls held, 0.47-0.50 with the point).
        with fewer_collections():
            system = System(cfg, trace=trace)
            system.observer = observer
            out = workload(system, cfg.workload)
        sim_wall_s = time.perf_counter() - start
        metrics, kernels = (out.metrics, out.kernels) if isinstance(out, WithKernels) else (out, [])
        _check_finite(metrics)
        ok = True
    finally:
        if trace is not None:
            trace.close(keep=ok)
    oplog = system.oplog.entries if system.oplog is not None else []
    timings = {"sim_wall_s": sim_wall_s}
    if cfg.sim.measure_speed:
        accesses = sum(pe.dma.stages_done for pe in system.pes)
        timings |= speed_timings(accesses, sim_wall_s, bare)
    return RunResult(metrics, oplog, timings, kernels)

"""One simulation run: typed config in, deterministic metrics out.

This is the only door between the Hydra application and the simulator; it never
sees a DictConfig. It builds the topology graph and the SimPy system, runs the
selected workload and returns its metrics (DESIGN §8 names).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernbench.config.schema import KernBenchConfig


@dataclass
class RunResult:
    """What one run produced. Every value in ``metrics`` is deterministic."""

    metrics: dict[str, Any]
    oplog: list[tuple[Any, ...]] = field(default_factory=list)

    def summary(self) -> str:
        """A short human summary, one metric per line."""
        width = max(len(k) for k in self.metrics)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.metrics.items())


def run(cfg: KernBenchConfig) -> RunResult:
    """Simulate one configuration. Raises a KernBenchError subclass on bad input."""
    raise NotImplementedError("simulator core is being written")

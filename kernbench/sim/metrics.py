"""Per-PE measurements a workload turns into result columns (DESIGN §3.4, §8).

This module owns how utilisation and per-command dispatch are *measured* from a run:
utilisation is a component's busy time over the kernel latency, and dispatch figures
are what PE_CPU actually paid, observed at the point of payment. It must not compute
anything from the ADR-0064 formula itself: tests check the measurements against the
formula, which only means something if the two are independent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernbench.commands import PeCommand
from kernbench.sim.cost_model import DispatchCostModel

if TYPE_CHECKING:
    from kernbench.sim.system import PeUnit

ENGINES = ("gemm", "math", "dma")


class DispatchRecorder:
    """Stands in for a PE's cost model and remembers, per command in issue order, the
    logical bytes and dispatch cycles PE_CPU paid, so a workload can read off the
    figures of any stretch of its kernel (e.g. the KV-tile loop)."""

    def __init__(self, inner: DispatchCostModel) -> None:
        self.inner = inner
        self.logical_bytes: list[int] = []
        self.cycles: list[float] = []

    def price(self, cmd: PeCommand) -> tuple[float, float]:
        """What the inner model charges; remembered (PE_CPU prices each command once)."""
        cycles, ns = self.inner.price(cmd)
        self.logical_bytes.append(cmd.logical_bytes)
        self.cycles.append(cycles)
        return cycles, ns

    @property
    def commands(self) -> int:
        return len(self.cycles)


def record_dispatch(pe: PeUnit) -> DispatchRecorder:
    """Install a recorder on ``pe``'s CPU (before launch) and return it."""
    inner = pe.cpu.cost
    if isinstance(inner, DispatchRecorder):
        return inner
    recorder = DispatchRecorder(inner)
    pe.cpu.cost = recorder  # type: ignore[assignment]
    return recorder


def utilization(pe: PeUnit, latency_ns: float) -> dict[str, float]:
    """Busy time / ``latency_ns`` of the PE's CPU and each engine.

    Busy times are cumulative since the system was built, so this is the utilisation
    over one launch only when the launch is the system's only activity and starts at 0.
    """
    if latency_ns <= 0:
        return {f"{name}_utilization": 0.0 for name in ("cpu", *ENGINES)}
    row = {"cpu_utilization": pe.cpu.busy_ns / latency_ns}
    for name in ENGINES:
        row[f"{name}_utilization"] = pe.engines[name].busy_ns / latency_ns
    return row


def mean_utilization(pes: list[PeUnit], latency_ns: float) -> dict[str, float]:
    """Utilisation per component, averaged over ``pes``."""
    rows = [utilization(pe, latency_ns) for pe in pes]
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def bottleneck(row: dict[str, float]) -> str:
    """The component with the highest utilisation (``cpu``, ``gemm``, ``math`` or ``dma``)."""
    keys = [f"{name}_utilization" for name in ("cpu", *ENGINES)]
    return max(keys, key=lambda k: row[k]).removesuffix("_utilization")

"""The metrics row of one launch (the columns docs/how-to/triton.md lists).

A system may run several launches, so every figure is a difference of cumulative
per-PE counters taken before and after it: bytes the DMA engines moved, dispatch
cycles PE_CPU paid, busy time of the CPU and each engine (utilisation = mean busy
time over the active PEs / kernel latency). Command counts by kind are what the
lowering issued.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernbench.sim.metrics import ENGINES, bottleneck
from kernbench.sim.system import System
from kernbench.topology.names import PeId
from kernbench.triton.lowering import Lowering

UNITS = ("cpu", *ENGINES)


@dataclass(frozen=True)
class LaunchWork:
    """What one launch asked of the machine, whatever the timing: GEMM flops and MATH
    elements per PE (by PE index, as the lowering issued them) and the bytes each link
    carried (by link id, as the fabric counted them): the inputs of its roofline
    (:mod:`kernbench.triton.roofline`)."""

    flops: dict[int, int]
    elements: dict[int, int]
    link_bytes: dict[int, int]

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    @property
    def total_elements(self) -> int:
        return sum(self.elements.values())


def snapshot(system: System, pes: list[PeId]) -> dict[str, float]:
    """Cumulative per-PE counters before a launch (a system may run several)."""
    units = [system.pes[p.index] for p in pes]
    snap = {"bytes_moved": float(sum(u.dma.bytes_moved for u in units))}
    snap["dispatch_cycles_total"] = float(sum(u.cpu.dispatch_cycles for u in units))
    snap["cpu"] = float(sum(u.cpu.busy_ns for u in units))
    for name in ENGINES:
        snap[name] = float(sum(u.engines[name].busy_ns for u in units))
    return snap


def launch_row(
    system: System, pes: list[PeId], before: dict[str, float], latency: float, low: Lowering
) -> dict[str, Any]:
    """The launch's row: latency, bytes, commands, dispatch, mean utilisation per unit."""
    after = snapshot(system, pes)
    row: dict[str, Any] = {"kernel_latency_ns": latency, "sim_time_ns": latency}
    row["bytes_moved"] = int(after["bytes_moved"] - before["bytes_moved"])
    row["commands"] = sum(low.commands.values())
    for kind, label in (("dma", "Dma"), ("gemm", "Gemm"), ("math", "Math")):
        row[f"{kind}_commands"] = sum(n for k, n in low.commands.items() if k.startswith(label))
    row["dispatch_cycles_total"] = after["dispatch_cycles_total"] - before["dispatch_cycles_total"]
    for unit in UNITS:
        busy = (after[unit] - before[unit]) / len(pes)
        row[f"{unit}_utilization"] = busy / latency if latency > 0 else 0.0
    row["bottleneck"] = bottleneck(row)
    return row

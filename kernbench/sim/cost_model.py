"""The PE_CPU dispatch cost model (ADR-0064 D1/D3/D5), in one place.

``dispatch_cycles(cmd) = fixed_per_cmd_cycles + cmd.logical_bytes * byte_cycles_recip``,
converted to ns at ``clock_freq_ghz``. ``PeCpuOverheadCmd`` bypasses the formula and
costs exactly its cycles. Stages PE_SCHEDULER generates never reach this model.
Commands whose logical size is fixed by their kind are priced once per kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernbench.commands import DmaReadCmd, DmaWriteCmd, GemmCmd, PeCommand, PeCpuOverheadCmd
from kernbench.config.schema import PeCostModelConfig
from kernbench.timebase import on_grid
from kernbench.units import cycles_to_ns

# Kinds whose logical_bytes is a constant (no variable-length tuples in them).
FIXED_SIZE = (DmaReadCmd, DmaWriteCmd, GemmCmd)


@dataclass(frozen=True)
class DispatchCostModel:
    fixed_per_cmd_cycles: float
    byte_cycles_recip: float
    clock_freq_ghz: float
    _by_kind: dict[type, tuple[float, float]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @staticmethod
    def from_config(cfg: PeCostModelConfig) -> DispatchCostModel:
        return DispatchCostModel(
            cfg.fixed_per_cmd_cycles, cfg.byte_cycles_recip, cfg.clock_freq_ghz
        )

    def dispatch_cycles(self, cmd: PeCommand) -> float:
        """CPU cycles spent before ``cmd`` reaches PE_SCHEDULER."""
        return self.price(cmd)[0]

    def dispatch_ns(self, cmd: PeCommand) -> float:
        return self.price(cmd)[1]

    def price(self, cmd: PeCommand) -> tuple[float, float]:
        """``(dispatch cycles, dispatch ns)`` of ``cmd``, what PE_CPU pays."""
        kind = type(cmd)
        known = self._by_kind.get(kind)
        if known is not None:
            return known
        if kind is PeCpuOverheadCmd:
            cycles = cmd.cycles  # type: ignore[union-attr]
        else:
            cycles = self.fixed_per_cmd_cycles + cmd.logical_bytes * self.byte_cycles_recip
        known = (cycles, on_grid(cycles_to_ns(cycles, self.clock_freq_ghz)))
        if kind in FIXED_SIZE:
            self._by_kind[kind] = known
        return known

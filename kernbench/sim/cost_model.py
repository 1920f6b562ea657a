"""The PE_CPU dispatch cost model (ADR-0064 D1/D3/D5), in one place.

``dispatch_cycles(cmd) = fixed_per_cmd_cycles + cmd.logical_bytes * byte_cycles_recip``,
converted to ns at ``clock_freq_ghz``. ``PeCpuOverheadCmd`` bypasses the formula and
costs exactly its cycles. Stages PE_SCHEDULER generates never reach this model.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.commands import PeCommand, PeCpuOverheadCmd
from kernbench.config.schema import PeCostModelConfig
from kernbench.units import cycles_to_ns


@dataclass(frozen=True)
class DispatchCostModel:
    fixed_per_cmd_cycles: float
    byte_cycles_recip: float
    clock_freq_ghz: float

    @staticmethod
    def from_config(cfg: PeCostModelConfig) -> DispatchCostModel:
        return DispatchCostModel(
            cfg.fixed_per_cmd_cycles, cfg.byte_cycles_recip, cfg.clock_freq_ghz
        )

    def dispatch_cycles(self, cmd: PeCommand) -> float:
        """CPU cycles spent before ``cmd`` reaches PE_SCHEDULER."""
        if isinstance(cmd, PeCpuOverheadCmd):
            return cmd.cycles
        return self.fixed_per_cmd_cycles + cmd.logical_bytes * self.byte_cycles_recip

    def dispatch_ns(self, cmd: PeCommand) -> float:
        return cycles_to_ns(self.dispatch_cycles(cmd), self.clock_freq_ghz)

"""The host-side runtime: tensors, placement policies, kernel launch."""

from kernbench.runtime.context import DPPolicy, RuntimeContext, Tensor

__all__ = ["DPPolicy", "RuntimeContext", "Tensor"]

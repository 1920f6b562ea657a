"""``workload=triton`` (DESIGN §10): a ``@triton.jit`` kernel on the model.

The work is in :mod:`kernbench.triton.workload`; this entry imports it only when the
workload runs, so KernBench without the ``[triton]`` extra loads and runs every other
workload, and this one fails with one line saying what to install.
"""

from __future__ import annotations

from typing import Any

from kernbench.config.schema import TritonWorkloadConfig
from kernbench.errors import ConfigError
from kernbench.sim.system import System


def run(system: System, w: TritonWorkloadConfig) -> dict[str, Any]:
    try:
        from kernbench.triton import workload
    except ImportError as exc:
        raise ConfigError("workload", str(exc)) from None
    return workload.run(system, w)

"""Workloads: each builds tensors, launches kernels and returns its metrics row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernbench.sim.system import System
from kernbench.workloads import gqa, stream, triton

Workload = Callable[[System, Any], dict[str, Any]]

WORKLOADS: dict[str, Workload] = {
    "stream": stream.run,
    "gqa_opt2": gqa.run,
    "gqa_opt3": gqa.run,
    "triton": triton.run,
}

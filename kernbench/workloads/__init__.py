"""Workloads: each builds tensors, launches kernels and returns its metrics row (or,
when it launches several kernels, the row and one row per launch:
:class:`~kernbench.results.kernels.WithKernels`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernbench.results.kernels import WithKernels
from kernbench.sim.system import System
from kernbench.workloads import decoder_layer, gqa, gqa_pair, stream, triton

Workload = Callable[[System, Any], dict[str, Any] | WithKernels]

WORKLOADS: dict[str, Workload] = {
    "stream": stream.run,
    "gqa_opt2": gqa.run,
    "gqa_opt3": gqa.run,
    "gqa_pair": gqa_pair.run,
    "triton": triton.run,
    "decoder_layer": decoder_layer.run,
}

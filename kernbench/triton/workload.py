"""``workload=triton``: one kernel case on the run's system, checked against torch.

``workload.kernel`` is a shipped kernel's name (:data:`kernbench.triton.cases.CASES`)
or ``pkg.module:fn``, a user's ``@triton.jit`` kernel imported from the user's own
environment (nothing is fetched) with its case function ``fn_case`` beside it. The
row is the launch's metrics plus ``max_abs_error``: the largest absolute difference
between any output element and the torch reference.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from triton.runtime.jit import KernelInterface

from kernbench.config.schema import TritonWorkloadConfig
from kernbench.errors import ConfigError
from kernbench.runtime.context import POLICIES, DPPolicy
from kernbench.sim.system import System
from kernbench.triton.accelerator import Accelerator
from kernbench.triton.cases import CASES, Case
from kernbench.triton.grid import MAPPINGS

CaseFn = Callable[[Accelerator, TritonWorkloadConfig], Case]
# An importable module's name: dotted identifiers (never a path).
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def case_function(kernel: str) -> CaseFn:
    """The case function of a shipped kernel, or of a user's ``pkg.module:fn``."""
    if kernel in CASES:
        return CASES[kernel]
    module_name, sep, fn_name = kernel.partition(":")
    if not sep or not _MODULE.fullmatch(module_name) or not fn_name.isidentifier():
        raise ConfigError(
            "workload.kernel", f"{kernel!r} is not one of {sorted(CASES)} nor 'pkg.module:fn'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError("workload.kernel", f"cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module fails as it runs (SyntaxError, ...)
        raise ConfigError(
            "workload.kernel",
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}",
        ) from None
    kernel_fn, case = getattr(module, fn_name, None), getattr(module, f"{fn_name}_case", None)
    if kernel_fn is None or case is None:
        raise ConfigError(
            "workload.kernel",
            f"{module_name} must define both {fn_name!r} and its case function {fn_name}_case",
        )
    if not isinstance(kernel_fn, KernelInterface):  # @triton.jit (or autotune) gives one
        raise ConfigError(
            "workload.kernel",
            f"{kernel}: {fn_name!r} is a {type(kernel_fn).__name__}, not a @triton.jit function",
        )
    if not callable(case):
        raise ConfigError(
            "workload.kernel", f"{module_name}.{fn_name}_case is not a function (the kernel's case)"
        )
    return case


# Keys that become a tl.arange length or a block shape: Triton needs powers of two.
POWER_OF_TWO = ("block_size", "block_m", "block_n", "block_k")
# Tensor sizes: a tensor of no element (or fewer) is not a kernel's input.
SIZES = ("size", "rows", "cols", "m", "n", "k", "num_heads", "num_kv_heads", "seq_len", "head_dim")


def check(w: TritonWorkloadConfig, n_pes: int) -> None:
    """The Triton workload's own keys (one error naming the key and the allowed values)."""
    for key in SIZES:
        value = getattr(w, key)
        if value < 1:
            raise ConfigError(f"workload.{key}", f"{value} is not >= 1 (a tensor size)")
    for key in POWER_OF_TWO:
        value = getattr(w, key)
        if value < 1 or value & (value - 1):
            raise ConfigError(f"workload.{key}", f"{value} is not a power of two")
    if w.mapping not in MAPPINGS:
        raise ConfigError("workload.mapping", f"{w.mapping!r} is not one of {MAPPINGS}")
    if w.placement not in POLICIES:
        raise ConfigError("workload.placement", f"{w.placement!r} is not one of {POLICIES}")
    if w.pes != "all" and (not str(w.pes).isdigit() or not 1 <= int(w.pes) <= n_pes):
        raise ConfigError("workload.pes", f"{w.pes!r} is not 'all' nor a count in [1, {n_pes}]")


def run(system: System, w: TritonWorkloadConfig) -> dict[str, Any]:
    """Deploy the case's inputs, launch, and measure; the row with ``max_abs_error``."""
    return run_case(system, w)[0]


def run_case(system: System, w: TritonWorkloadConfig) -> tuple[dict[str, Any], Accelerator, Case]:
    """:func:`run`, also returning the accelerator and the case (to inspect outputs)."""
    check(w, len(system.graph.pes))
    pes = w.pes if w.pes == "all" else int(w.pes)
    acc = Accelerator(system=system, pes=pes, mapping=w.mapping)
    acc.policy = DPPolicy(w.placement, pes)
    try:
        case = case_function(w.kernel)(acc, w)
    except ValueError as exc:
        key, _, msg = str(exc).partition(": ")
        raise ConfigError(key, msg) from None
    res = acc.run(case.kernel, case.grid, *case.args, **case.kwargs)
    return res.metrics | {"max_abs_error": max_abs_error(acc, case)}, acc, case


def max_abs_error(acc: Accelerator, case: Case) -> float:
    """Largest |device - torch| over every expected output (0.0 if none)."""
    errors = [
        (acc.to_torch(t).double() - ref.double()).abs().max().item() for t, ref in case.expected
    ]
    return float(max(errors, default=0.0))

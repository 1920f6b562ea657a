"""A launch's roofline: the least time its work can take on this configuration.

DESIGN §13.2: ``max(bytes / peak bandwidth of the links the traffic crosses, FLOPs /
GEMM rate, elements / MATH rate)``, from the configuration and the launch's work alone
(:class:`~kernbench.triton.metrics.LaunchWork`), never from a simulated time. Each term
is the busiest unit's:

- memory: every link resource (an HBM channel or aggregate link, both ways; a PE's
  link to its NOC; NOC to NOC ...) carries at most its bandwidth, so the resource
  with the most bytes per GB/s needs at least that long (:func:`~kernbench.sim.
  metrics.resource_busy_ns`). A GEMV whose weights are spread evenly and read
  locally gets ``weight bytes / (PEs x HBM bandwidth per PE)``;
- GEMM and MATH: a PE's engine does ``flops x gemm_ns_per_flop`` and ``elements x
  math_ns_per_elem`` of work one command after another (the rates PE_SCHEDULER
  times them with), so the PE with the most needs at least that long.

Dispatch (PE_CPU) is not a term: a launch slower than its roofline because its CPU
issues commands slower than the engines retire them shows as a low efficiency with
``bottleneck = cpu``. Latency is never below the bound (tests/test_decoder_roofline.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.sim.metrics import busiest_resource, resource_busy_ns, resource_name
from kernbench.sim.system import System
from kernbench.triton.metrics import LaunchWork

LIMITS = ("memory", "gemm", "math")


@dataclass(frozen=True)
class Roofline:
    """The three lower bounds of one launch (ns), and the busiest link resource."""

    memory_ns: float
    gemm_ns: float
    math_ns: float
    resource: str

    @property
    def bound_ns(self) -> float:
        return max(self.memory_ns, self.gemm_ns, self.math_ns)

    @property
    def limit(self) -> str:
        """Which term sets the bound (``memory``, ``gemm`` or ``math``; ties: that order)."""
        terms = (self.memory_ns, self.gemm_ns, self.math_ns)
        return LIMITS[terms.index(max(terms))]


def roofline(system: System, work: LaunchWork) -> Roofline:
    """The launch's bounds on ``system`` (every PE has the same engines)."""
    busy = resource_busy_ns(system.graph, system.fabric.bw, work.link_bytes)
    best = busiest_resource(system.graph, busy)
    memory_ns = busy.get(best, 0.0)
    scheduler = system.pes[0].scheduler
    flops = max(work.flops.values(), default=0)
    elements = max(work.elements.values(), default=0)
    return Roofline(
        memory_ns=memory_ns,
        gemm_ns=flops * scheduler.gemm_ns_per_flop,
        math_ns=elements * scheduler.math_ns_per_elem,
        resource=resource_name(system.graph, best) if memory_ns > 0 else "",
    )


def columns(bound: Roofline, latency_ns: float) -> dict[str, float | str]:
    """The roofline columns of a kernel row."""
    return {
        "memory_bound_ns": bound.memory_ns,
        "gemm_bound_ns": bound.gemm_ns,
        "math_bound_ns": bound.math_ns,
        "roofline_bound_ns": bound.bound_ns,
        "roofline_limit": bound.limit,
        "busiest_resource": bound.resource,
        "roofline_efficiency": bound.bound_ns / latency_ns if latency_ns > 0 else 0.0,
    }

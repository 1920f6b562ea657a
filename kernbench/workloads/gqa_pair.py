"""``workload=gqa_pair``: both GQA variants on one configuration, and which is faster
(issue 55).

"At which FIXED and R does opt3 stop beating opt2 in latency?" compares two runs, and a
row, an objective or a sweep point is one run. This workload runs ``gqa_opt2`` on the
system it is given and ``gqa_opt3`` on a fresh one built from the same config (so
neither sees the other's memory, time or queues: each run's figures are those of a
``gqa_optN`` run of that config, to the bit), and makes one row: the comparison
(:func:`compare`), then each variant's figures of :data:`EACH` under its name
(``opt3_kernel_latency_ns``), then what the two share (the shape's tiles, PEs and
channels). ``sim_time_ns`` is both launches' simulated time summed.

The kernels, their metrics and the shape rules are :mod:`kernbench.workloads.gqa`'s;
this module only pairs them. The op log (``sim.oplog``) holds opt2's run only; a trace
(``sim.trace``) holds opt2's requests, then opt3's (its times start again at 0).
"""

from __future__ import annotations

from typing import Any

from kernbench.config.schema import GqaWorkloadConfig
from kernbench.sim.system import System
from kernbench.workloads import gqa

# The variants, as the columns name them (opt2_...), in the order they run.
VARIANTS = ("opt2", "opt3")
# Each variant's figures the row holds: the dispatch study's per-tile figures and the
# outcome (its latency and what bounds it).
EACH = (
    "kernel_latency_ns",
    "bottleneck",
    "dispatch_cycles_per_tile",
    "commands_per_tile",
    "logical_bytes_per_tile",
)
# The same in both runs (the shape and the memory it reaches), taken from opt2's row.
SHARED = ("n_tiles", "active_pe_count", "hbm_channels_used")
TIE = "tie"


def run(system: System, w: GqaWorkloadConfig) -> dict[str, Any]:
    """Run opt2 on ``system`` and opt3 on a fresh system of its config; one row."""
    fresh = System(system.cfg, trace=system.trace)
    fresh.observer = system.observer
    rows = {
        variant: gqa.run_variant(on, w, f"gqa_{variant}")
        for variant, on in zip(VARIANTS, (system, fresh), strict=True)
    }
    return pair_row(rows["opt2"], rows["opt3"])


def pair_row(opt2: dict[str, Any], opt3: dict[str, Any]) -> dict[str, Any]:
    """The pair's row from the two variants' rows (kernbench.config.columns' order)."""
    row = compare(opt2["kernel_latency_ns"], opt3["kernel_latency_ns"])
    for name in EACH:
        row |= {f"{variant}_{name}": r[name] for variant, r in (("opt2", opt2), ("opt3", opt3))}
    row |= {name: opt2[name] for name in SHARED}
    row["sim_time_ns"] = opt2["sim_time_ns"] + opt3["sim_time_ns"]
    return row


def compare(opt2_ns: float, opt3_ns: float) -> dict[str, Any]:
    """opt3's latency over opt2's (below 1: opt3 is faster), the faster variant (``tie``
    only when the two are equal: simulated times are exact on their time grid, so
    equal is equal), and the distance from a tie, ``|ratio - 1|``: 0 exactly where the
    winner changes, which is what a search for the boundary minimises."""
    ratio = opt3_ns / opt2_ns
    winner = "opt3" if opt3_ns < opt2_ns else "opt2" if opt2_ns < opt3_ns else TIE
    return {
        "opt3_over_opt2_latency": ratio,
        "latency_winner": winner,
        "opt3_opt2_latency_gap": abs(ratio - 1.0),
    }

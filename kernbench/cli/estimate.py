"""A warning, with an estimate of its wall time, before a very long run (issue 14 item 8).

A stream run of ``workload.access_bytes=1`` over 64 MiB per PE is 67 million DMA
accesses: hours of simulation that used to start without a word. Before a run whose
access (stream) or command (GQA) count passes :data:`WARN_FROM`, ``kernbench`` prints
the count and the wall time it should take at the cost per access measured here.
"""

from __future__ import annotations

import sys
from typing import Any

from kernbench.workloads.gqa import EPILOGUE_COMMANDS, PROLOGUE_COMMANDS, GqaShape

WARN_FROM = 10**7
# Simulation wall time per unit of work, measured on the 2-core development machine
# under load (issue 14: 10^5 accesses of 2 KiB on one PE; GQA opt3 with 2048 KV tiles on
# 2 PEs): 4.9 us per access under n:1, 13.4 us under 1:1 (8 channels: 8 requests per
# access), 11 us per GQA command (each expands into ~5 pipeline stages).
SECONDS_PER_ACCESS = {"n_to_one": 4.9e-6, "one_to_one": 13.4e-6}
SECONDS_PER_COMMAND = 11e-6
# Commands per KV tile (DESIGN §5: opt3 10, opt2 2).
COMMANDS_PER_TILE = {"gqa_opt3": 10, "gqa_opt2": 2}


def work(cfg: Any) -> tuple[int, str, float] | None:
    """(count, what is counted, seconds each) for a validated config; None for a
    workload without an estimate."""
    w, topo = cfg.workload, cfg.topology
    total_pes = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    if w.name == "stream":
        pes = total_pes if str(w.active_pes) == "all" else int(w.active_pes)
        per_pe = -(-w.bytes_per_pe // w.access_bytes) * (2 if w.op.value == "copy" else 1)
        mode = topo.cube.memory_map.hbm_mapping_mode.value
        return per_pe * pes, "DMA accesses", SECONDS_PER_ACCESS[mode]
    if w.name in COMMANDS_PER_TILE:
        tiles = GqaShape.of(w).n_tiles
        per_pe = tiles * COMMANDS_PER_TILE[w.name] + PROLOGUE_COMMANDS + EPILOGUE_COMMANDS
        return per_pe * w.kv_heads, "commands", SECONDS_PER_COMMAND
    return None


def warning(cfg: Any) -> str | None:
    """The warning line for a run past :data:`WARN_FROM`, else None."""
    found = work(cfg)
    if found is None or found[0] < WARN_FROM:
        return None
    count, what, each = found
    return (
        f"kernbench: warning: {count:,} {what} to simulate, about {_duration(count * each)}"
        f" of wall time at ~{each * 1e6:.1f} us each (Ctrl-C stops it)"
    )


def warn_if_long(cfg: Any) -> None:
    """Print :func:`warning` to stderr, if there is one."""
    line = warning(cfg)
    if line:
        print(line, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

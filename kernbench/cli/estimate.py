"""Estimates before a run: a warning before a very long one (issue 14 item 8), and a
warning or a refusal before one that would not fit in memory (issue 39).

A stream run of ``workload.access_bytes=1`` over 64 MiB per PE is 67 million DMA
accesses: hours of simulation that used to start without a word. Before a run whose
access (stream) or command (GQA; a ``gqa_pair`` point runs both variants, so theirs
summed) count passes :data:`WARN_FROM`, or whose time at the cost per access measured
here passes :data:`WARN_AFTER_S`, ``kernbench`` prints the count and that time. The
cost per access is flat but for one case: a ``uniform`` stream under the fair fabric,
whose solver component is every request in flight, so each recomputation of rates
costs what the whole run has in flight (:func:`fair_uniform_s`): 64 accesses of 256 B
on each of 1,024 PEs take over a minute, and so do 64 accesses of 64 KiB 1:1 on each
of 64 PEs.

A stream run's peak memory grows with the PEs it runs on and the routes each uses,
with the targets ``uniform`` draws and with the op log (:func:`memory_terms`). Past
half the machine's memory (:func:`machine_bytes`) the run is preceded by a warning;
past all of it, it is refused, one error naming the keys that set the largest term,
before anything is built (:func:`check`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from kernbench.errors import ConfigError
from kernbench.workloads.gqa import EPILOGUE_COMMANDS, PROLOGUE_COMMANDS, GqaShape

WARN_FROM = 10**7
# Simulation wall time per unit of work, measured on the 2-core development machine
# under load (issue 14: 10^5 accesses of 2 KiB on one PE; GQA opt3 with 2048 KV tiles on
# 2 PEs): 4.9 us per access under n:1, 13.4 us under 1:1 (8 channels: 8 requests per
# access), 11 us per GQA command (each expands into ~5 pipeline stages).
SECONDS_PER_ACCESS = {"n_to_one": 4.9e-6, "one_to_one": 13.4e-6}
SECONDS_PER_COMMAND = 11e-6
# A `uniform` stream under `sim.fabric=fair`: once its PEs span cubes every request in
# flight shares a link with the others, so each recomputation fills the whole system.
# Measured (compiled, 256 B, 4 in flight; docs/explanation/speed.md), per access, the
# slope from 8 to 24 accesses per PE: 1:1 180 us on 256 PEs and 1,309 us on 1,024
# (n:1 168 and 1,077); a whole run of 8 accesses per PE on 1,024, 359 us. Added to
# the flat cost: FAIR_UNIFORM_S x PEs^1.5 (164 and 1,311 us), scaled down over a PE's
# first FAIR_RAMP_ACCESSES (328 us at 8).
FAIR_UNIFORM_S = 0.04e-6
FAIR_RAMP_ACCESSES = 32
# And what an access's size adds (docs/explanation/speed.md, measured the same way on 16
# to 256 PEs, 1 to 64 KiB): a recomputation costs about 0.1 us per queue it covers
# (FAIR_QUEUE_SOLVE_S; 0.09-0.21 before components were kept across entries and exits,
# issue 54: 16, 64 and 256 PEs at 64 KiB now measure 0.36-0.46, 1.6-2.0 and 5.6 ms an
# access against 0.43, 1.67 and 6.73 here), it covers about every queue in flight (a
# PE's accesses in flight x the queues each spreads over: a 1:1 access, a queue per
# channel it touches), and an access spread over several queues costs up to a
# recomputation per queue (its descriptors drain apart); an access in one queue, one.
# VA's pages add none: an access's requests on one channel are one descriptor (DESIGN
# §3.2, issue 54; before, each page's request reordered its PE's queues: 128
# recomputations for a 64 KiB 1:1 access, 12.9x PA's CPU). An access under
# FAIR_FULL_BYTES spends most of its life in latency, not draining, so it is in fewer
# recomputations, in proportion.
FAIR_QUEUE_SOLVE_S = 0.1e-6
FAIR_FULL_BYTES = 16 << 10
WARN_AFTER_S = 60.0
# Commands per KV tile (DESIGN §5: opt3 10, opt2 2).
COMMANDS_PER_TILE = {"gqa_opt3": 10, "gqa_opt2": 2}
# A workload that runs GQA variants one after the other (kernbench/workloads/gqa_pair.py):
# its point simulates each variant's commands, so its count is theirs summed.
GQA_VARIANTS = {
    **{name: (name,) for name in COMMANDS_PER_TILE},
    "gqa_pair": ("gqa_opt2", "gqa_opt3"),
}

# Peak resident memory, measured with the compiled build on stream runs (issue 39,
# tests/test_bench_scale.py): `kernbench` before it simulates (Python, Hydra, pandas,
# pyarrow) about 136 MB; each PE a stream runs on 16-18 KB with its first route
# (its components, allocator, MMU or BAAW, route, fabric state), about 2 KB more per
# further route (a `uniform` PE reaches a PE per access, a 1:1 access a route per
# channel it touches); each PE an install reaches (every PE of the SIPs holding
# shards, D-VA3) under 2 KB; each target `uniform` draws 36 B; each op-log entry
# 420 B. The figures here are rounded up.
BASE_BYTES = 140 << 20
PE_BYTES = 24 << 10
ROUTE_BYTES = 2 << 10
RECEIVER_BYTES = 2 << 10
DRAW_BYTES = 40
OPLOG_BYTES = 420
PES = "topology.n_sips x topology.cubes_per_sip x topology.pes_per_cube"
ACCESSES = "workload.bytes_per_pe / workload.access_bytes"


def work(cfg: Any) -> tuple[int, str, float] | None:
    """(count, what is counted, seconds each) for a validated config; None for a
    workload without an estimate."""
    w, topo = cfg.workload, cfg.topology
    total_pes = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    if w.name == "stream":
        pes = total_pes if str(w.active_pes) == "all" else int(w.active_pes)
        per_pe = -(-w.bytes_per_pe // w.access_bytes) * (2 if w.op.value == "copy" else 1)
        each = SECONDS_PER_ACCESS[topo.cube.memory_map.hbm_mapping_mode.value]
        if w.pattern.value == "uniform" and cfg.sim.fabric.value == "fair":
            each += fair_uniform_s(cfg, pes, per_pe)
        return per_pe * pes, "DMA accesses", each
    if w.name in GQA_VARIANTS:
        commands = sum(gqa_commands(w, variant) for variant in GQA_VARIANTS[w.name])
        return commands, "commands", SECONDS_PER_COMMAND
    return None


def gqa_commands(w: Any, variant: str) -> int:
    """The commands one GQA variant (``gqa_opt2``, ``gqa_opt3``) issues on ``w``'s shape:
    per KV head (a PE each), its tiles' and the prologue's and epilogue's."""
    tiles = GqaShape.of(w).n_tiles
    per_pe = tiles * COMMANDS_PER_TILE[variant] + PROLOGUE_COMMANDS + EPILOGUE_COMMANDS
    return per_pe * w.kv_heads


def fair_uniform_s(cfg: Any, pes: int, per_pe: int) -> float:
    """What the fair solver adds per access of a ``uniform`` stream on ``pes`` PEs,
    ``per_pe`` accesses each: the system's size (:data:`FAIR_UNIFORM_S`, ramped over a
    PE's first accesses) and the access's (:data:`FAIR_QUEUE_SOLVE_S` x the
    recomputations an access causes x the queues each covers)."""
    w = cfg.workload
    system = FAIR_UNIFORM_S * pes**1.5 * min(1.0, per_pe / FAIR_RAMP_ACCESSES)
    queues = _channels_per_access(cfg)  # one per channel (1:1), else one
    solves = queues  # one per descriptor, at most
    in_flight = pes * min(w.outstanding, per_pe) * queues
    draining = min(1.0, w.access_bytes / FAIR_FULL_BYTES)
    return system + FAIR_QUEUE_SOLVE_S * solves * in_flight * draining


def warning(cfg: Any) -> str | None:
    """The warning line for a run past :data:`WARN_FROM` or :data:`WARN_AFTER_S`,
    else None."""
    found = work(cfg)
    if found is None:
        return None
    count, what, each = found
    if count < WARN_FROM and count * each < WARN_AFTER_S:
        return None
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


def memory_terms(cfg: Any) -> list[tuple[int, str, str]] | None:
    """What a validated stream config's run holds at its peak: ``(bytes, what, the
    keys that set it)`` per term; None for another workload (GQA and Triton runs use a
    few PEs)."""
    w, topo = cfg.workload, cfg.topology
    if w.name != "stream":
        return None
    per_sip = topo.cubes_per_sip * topo.pes_per_cube
    total = topo.n_sips * per_sip
    active = total if str(w.active_pes) == "all" else int(w.active_pes)
    accesses = -(-w.bytes_per_pe // w.access_bytes)
    uniform = w.pattern.value == "uniform"
    routes = _routes_per_pe(cfg, accesses, total)
    holders = total if uniform else min(total, max(active, w.hotspot_pe + 1, per_sip))
    terms = [
        (BASE_BYTES, "the process", ""),
        (active * (PE_BYTES + ROUTE_BYTES * (routes - 1)),
         f"{active:,} PEs x {routes:,} route{'s' if routes > 1 else ''}",
         f"{PES}, workload.active_pes, workload.pattern, {ACCESSES}"),
        (-(-holders // per_sip) * per_sip * RECEIVER_BYTES, "installs", PES),
    ]  # fmt: skip
    if uniform:
        terms.append((active * accesses * DRAW_BYTES, f"{active * accesses:,} draws", ACCESSES))
    if cfg.sim.oplog:
        commands = active * accesses * (2 if w.op.value == "copy" else 1)
        terms.append((commands * OPLOG_BYTES, f"{commands:,} op-log entries", "sim.oplog"))
    return terms


def _routes_per_pe(cfg: Any, accesses: int, total: int) -> int:
    """Routes a PE's DMA uses: one per channel an access touches (1:1) or one (n:1),
    to each PE it targets (every access a new one under ``uniform``), both ways for a
    copy; at most the topology's routers."""
    w, mm = cfg.workload, cfg.topology.cube.memory_map
    n = mm.hbm_channels_per_pe or 1
    channels = _channels_per_access(cfg)
    targets = min(accesses, total) if w.pattern.value == "uniform" else 1
    ways = 2 if w.op.value == "copy" else 1
    routers = total * (n if mm.hbm_mapping_mode.value == "one_to_one" else 1)
    return ways * min(targets * channels, routers)


def _channels_per_access(cfg: Any) -> int:
    """The HBM channels one access touches: under 1:1, those its bytes (from its
    offset in a granule) spread over, at most a PE's; under n:1, one."""
    w, mm = cfg.workload, cfg.topology.cube.memory_map
    if mm.hbm_mapping_mode.value != "one_to_one":
        return 1
    spread = w.access_bytes + w.align_offset_bytes % mm.interleave_bytes
    return min(mm.hbm_channels_per_pe or 1, -(-spread // mm.interleave_bytes))


def machine_bytes() -> int:
    """The memory this process may use: the machine's, or its cgroup's limit if lower."""
    found = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            found = min(found, int(text))
    return found


def check(cfg: Any, have: int | None = None) -> None:
    """Before a run: :func:`warn_if_long`; then, if its memory estimate passes
    ``have`` (default :func:`machine_bytes`), refuse it (a ConfigError naming the keys
    of the largest term), or past half of it, warn."""
    warn_if_long(cfg)
    terms = memory_terms(cfg)
    if terms is None:
        return
    need = sum(t[0] for t in terms)
    have = machine_bytes() if have is None else have
    if need <= have // 2:
        return
    parts = ", ".join(f"{what}: {_size(n)}" for n, what, _ in terms)
    if need > have:
        keys = max(terms, key=lambda t: t[0])[2] or PES
        raise ConfigError(
            keys,
            f"the run needs about {_size(need)} of memory ({parts}), more than the "
            f"{_size(have)} this machine has: fewer PEs or accesses",
        )
    print(
        f"kernbench: warning: the run needs about {_size(need)} of memory ({parts}), "
        f"more than half the {_size(have)} this machine has",
        file=sys.stderr,
        flush=True,
    )


def _size(nbytes: int) -> str:
    if nbytes < 1 << 30:
        return f"{nbytes / (1 << 20):,.0f} MB"
    return f"{nbytes / (1 << 30):,.1f} GB"

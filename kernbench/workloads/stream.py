"""The bandwidth stream (DESIGN §5): every active PE walks a shard chosen by a pattern.

Each PE reads (or writes, or copies) ``bytes_per_pe`` in accesses of ``access_bytes``
starting ``align_offset_bytes`` into the shard of the PE its pattern targets
(:mod:`kernbench.workloads.patterns`; ``local``, its own, is the default), keeping
``outstanding`` accesses in flight by rotating that many local buffers (a DMA owns its
buffer until it completes). Remote shards are reached over the graph's real routes,
so PEs contend for routers, HBM links, PE<->NOC, NOC<->NOC and PCIe links.

Every figure of the row is measured (:class:`~kernbench.sim.metrics.LaunchUsage`):
bytes moved are what reached HBM, per-PE bandwidth is what each PE's DMA moved over
its own time, and the busiest link is the most utilised link of the launch. The
analytic peaks are the PE's N channels at the channel bandwidth
(``peak_bw_per_pe_gbs``), that times the PEs whose memory the pattern targets
(``peak_aggregate_bw_gbs``: one PE's under ``hotspot``), and the most the run's
traffic can reach over the links it crosses (``peak_pattern_bw_gbs``,
:func:`pattern_peak_gbs`), against which ``bw_efficiency`` is measured.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from kernbench import tl
from kernbench.commands import DmaReadCmd, DmaWriteCmd
from kernbench.config.schema import StreamOp, StreamWorkloadConfig
from kernbench.runtime.context import DPPolicy, RuntimeContext, Tensor
from kernbench.sim.metrics import (
    LaunchUsage,
    jain_index,
    mean_utilization,
    spread,
    stream_bottleneck,
)
from kernbench.sim.system import System
from kernbench.topology.names import PeId
from kernbench.workloads import patterns


def stream_kernel(
    src: Tensor,
    dst: Tensor | None,
    op: StreamOp,
    access_bytes: int,
    total_bytes: int,
    align_offset: int,
    outstanding: int,
    owners: patterns.Owners,
) -> None:
    """Program ``pid`` walks the shard of ``owners[pid]`` (one PE index for every
    access, or a list with one per access); copies write the same owner's ``dst``.

    ``outstanding`` bounds the accesses in flight because they rotate over that many
    buffers and a DMA owns its buffer until it completes: access ``i`` waits for access
    ``i - outstanding`` (PE_SCHEDULER's hazards on a reused tile). The tail (the last
    ``total_bytes % access_bytes`` bytes) is one more access of the rotation, in its
    slot's buffer, so it is held like the others."""
    pid = tl.program_id(0)
    mine = owners[pid]
    per_access = isinstance(mine, list)
    # Every shard's pointer, listed once per tensor (not per program: 16,384 programs
    # each listing 16,384 shards was 268 million additions); the offset is added per
    # access, the same sum.
    src_at = src.shard_ptrs()
    dst_at = dst.shard_ptrs() if dst is not None else src_at
    full, tail = divmod(total_bytes, access_bytes)
    # One buffer per access at most: more are never used (and a huge ``outstanding``
    # over a short stream cost gigabytes of buffers).
    accesses = full + (1 if tail else 0)
    bufs = [tl.zeros((access_bytes,), dtype_bytes=1) for _ in range(min(outstanding, accesses))]
    reads, copies = op is not StreamOp.write, op is StreamOp.copy
    shape = (access_bytes,)
    for i in range(full):  # the hot loop of every stream run: kept minimal
        owner = mine[i] if per_access else mine
        offset = align_offset + i * access_bytes
        buf = bufs[i % outstanding]
        if reads:
            tl.load(src_at[owner] + offset, shape, 1, buf)
            if copies:
                tl.store(dst_at[owner] + offset, buf)
        else:
            tl.store(src_at[owner] + offset, buf)
    if tail:
        # Access ``full``, in its slot's buffer: it moves ``tail`` bytes, the front of
        # the buffer (tl.load and tl.store move a whole tile, so the commands are built
        # here).
        owner = mine[full] if per_access else mine
        offset = align_offset + full * access_bytes
        buf = bufs[full % outstanding]
        if reads:
            tl.emit(DmaReadCmd(src_at[owner] + offset, tail, buf))
            if copies:
                tl.emit(DmaWriteCmd(buf, dst_at[owner] + offset, tail))
        else:
            tl.emit(DmaWriteCmd(buf, src_at[owner] + offset, tail))


def active_pe_count(w: StreamWorkloadConfig, total: int) -> int:
    return total if w.active_pes == "all" else int(w.active_pes)


def pattern_peak_gbs(
    system: System, w: StreamWorkloadConfig, active: list[PeId], owners: patterns.Owners
) -> float:
    """The aggregate bandwidth (GB/s) the active PEs' traffic can reach at most: the
    bytes it moves over the time its busiest link resource needs to carry its share.

    Each access's bytes load every link of their way (DESIGN §13.1): a write's from
    the PE's DMA to the target's HBM, a read's back from the target's HBM to the DMA,
    a copy's both; split evenly over the target's routers (its N channels under 1:1,
    the aggregate router under n:1: either way N x the channel bandwidth). Links
    load their resource (``Link.resource``: HBM's two ways are one, so a copy's read
    and write both load it). A resource carrying L bytes at ``bw`` is busy at least
    ``L / bw`` ns, so no run ends before the largest of these, ``T``, and
    ``bytes / T`` bounds ``aggregate_bw_gbs``: ``bw_efficiency`` is at most 1, short of
    it by the routes' latency and any idle time. From the config and the pattern's
    targets (``uniform``: the run's own draws), not measured.
    """
    graph = system.graph
    reads = w.op in (StreamOp.read, StreamOp.copy)
    writes = w.op in (StreamOp.write, StreamOp.copy)
    load: defaultdict[int, float] = defaultdict(float)
    total = 0
    for pe, mine in zip(active, owners, strict=True):
        dma = system.pes[pe.index].dma  # its route tables: the routes the run took
        ways = ([dma.reads] if reads else []) + ([dma.writes] if writes else [])
        to: dict[int, int]
        if isinstance(mine, list):  # an owner per access
            full, tail = divmod(w.bytes_per_pe, w.access_bytes)
            sizes = [w.access_bytes] * full + ([tail] if tail else [])
            to = Counter()
            for target, size in zip(mine, sizes, strict=True):
                to[target] += size
        else:  # one owner: every byte goes there (no walk over the accesses)
            to = {mine: w.bytes_per_pe}
        for target, nbytes in to.items():
            routers = graph.routers(graph.pes[target])
            for hbm_router in routers:
                for way in ways:
                    # The run's route, or one made for the bound and dropped: under 1:1
                    # an access narrower than the interleave takes one of the N routers,
                    # and the others' routes, kept, were 370 MB of the peak of 1:1
                    # `uniform` on 1,024 PEs with 64 accesses each (1.33 -> 0.96 GB).
                    route = way.get(hbm_router)
                    if route is None:
                        route = way.made(hbm_router)
                    for link in route.resources:
                        load[link] += nbytes / len(routers)
            total += nbytes * len(ways)
    bandwidth = graph.layout.bandwidth
    busiest = max(n / bandwidth(link) for link, n in load.items())
    return total / busiest


def run(system: System, w: StreamWorkloadConfig) -> dict[str, Any]:
    """Deploy the tensors over every PE the pattern touches, launch, measure."""
    graph = system.graph
    n_pes = active_pe_count(w, len(graph.pes))
    active = graph.pes[:n_pes]
    accesses = -(-w.bytes_per_pe // w.access_bytes)
    owners = patterns.owners(w, system.cfg.topology, active, accesses)
    span = patterns.holders(owners, n_pes)
    with RuntimeContext(system) as ctx:
        shard = w.bytes_per_pe + w.align_offset_bytes
        policy = DPPolicy("column_wise", span)
        src = ctx.deploy(shard * span, policy, "src")
        dst = ctx.deploy(shard * span, policy, "dst") if w.op is StreamOp.copy else None
        usage = LaunchUsage(system)
        start = system.env.now
        ends = ctx.launch(
            stream_kernel,
            n_pes,
            src,
            dst,
            w.op,
            w.access_bytes,
            w.bytes_per_pe,
            w.align_offset_bytes,
            w.outstanding,
            owners,
        )
    sim_time = max(ends.values()) - start
    per_pe = [usage.pe_bytes(pe) / (ends[pe.index] - start) for pe in active]
    low, mean, high = spread(per_pe)
    moved = usage.memory_bytes()
    link, link_util = usage.busiest_link(sim_time)
    cpu = mean_utilization([system.pes[pe.index] for pe in active], sim_time)["cpu_utilization"]
    mm = system.cfg.topology.cube.memory_map
    peak = graph.channels_per_pe * mm.hbm_channel_bw_gbs
    pattern_peak = pattern_peak_gbs(system, w, active, owners)
    return {
        "active_pe_count": n_pes,
        "accesses": usage.accesses(),
        "sim_time_ns": sim_time,
        "bytes_moved": moved,
        "mean_pe_bw_gbs": mean,
        "aggregate_bw_gbs": moved / sim_time,
        "min_pe_bw_gbs": low,
        "max_pe_bw_gbs": high,
        "bw_fairness": jain_index(per_pe),
        "peak_bw_per_pe_gbs": peak,
        "peak_aggregate_bw_gbs": peak * len(patterns.targeted(owners)),
        "peak_pattern_bw_gbs": pattern_peak,
        "bw_efficiency": moved / sim_time / pattern_peak,
        "busiest_link": link,
        "busiest_link_utilization": link_util,
        "cpu_utilization": cpu,
        "bottleneck": stream_bottleneck(cpu, link, link_util),
        # VA/LA: measured time for the source tensor's mappings to land (0 under PA).
        "install_latency_ns": src.install_latency_ns,
        # ... and the bytes of the install messages the host sent for it (0 under PA).
        "install_bytes": src.install_bytes,
    }

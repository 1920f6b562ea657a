"""The bandwidth stream (DESIGN §5): every active PE walks its own shard.

Each PE reads (or writes, or copies) ``bytes_per_pe`` in accesses of
``access_bytes`` starting ``align_offset_bytes`` into its shard, keeping
``outstanding`` accesses in flight by rotating that many local buffers (a DMA owns
its buffer until it completes). The analytic peak is the PE's N channels at the
channel bandwidth.
"""

from __future__ import annotations

from typing import Any

from kernbench import tl
from kernbench.config.schema import StreamOp, StreamWorkloadConfig
from kernbench.runtime.context import DPPolicy, RuntimeContext, Tensor
from kernbench.sim.system import System


def stream_kernel(
    src: Tensor,
    dst: Tensor | None,
    op: StreamOp,
    access_bytes: int,
    total_bytes: int,
    align_offset: int,
    outstanding: int,
) -> None:
    pid = tl.program_id(0)
    src_base = src.shard_ptr(pid) + align_offset
    dst_base = dst.shard_ptr(pid) + align_offset if dst is not None else 0
    bufs = [tl.zeros((access_bytes,), dtype_bytes=1) for _ in range(outstanding)]
    reads, copies = op is not StreamOp.write, op is StreamOp.copy
    shape = (access_bytes,)
    full, tail = divmod(total_bytes, access_bytes)
    for i in range(full):  # the hot loop of every stream run: kept minimal
        offset = i * access_bytes
        buf = bufs[i % outstanding]
        if reads:
            tl.load(src_base + offset, shape, 1, buf)
            if copies:
                tl.store(dst_base + offset, buf)
        else:
            tl.store(src_base + offset, buf)
    if tail:
        offset = full * access_bytes
        buf = tl.zeros((tail,), dtype_bytes=1)
        if reads:
            tl.load(src_base + offset, (tail,), 1, buf)
            if copies:
                tl.store(dst_base + offset, buf)
        else:
            tl.store(src_base + offset, buf)


def active_pe_count(w: StreamWorkloadConfig, total: int) -> int:
    return total if w.active_pes == "all" else int(w.active_pes)


def run(system: System, w: StreamWorkloadConfig) -> dict[str, Any]:
    topo = system.cfg.topology
    mm = topo.cube.memory_map
    n_pes = active_pe_count(w, len(system.graph.pes))
    with RuntimeContext(system) as ctx:
        shard = w.bytes_per_pe + w.align_offset_bytes
        policy = DPPolicy("column_wise", n_pes)
        src = ctx.deploy(shard * n_pes, policy, "src")
        dst = ctx.deploy(shard * n_pes, policy, "dst") if w.op is StreamOp.copy else None
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
        )
    per_pe_bytes = w.bytes_per_pe * (2 if w.op is StreamOp.copy else 1)
    sim_time = max(ends.values()) - start
    per_pe_bw = [per_pe_bytes / (end - start) for end in ends.values()]
    peak = system.graph.channels_per_pe * mm.hbm_channel_bw_gbs
    effective = sum(per_pe_bw) / len(per_pe_bw)
    accesses = -(-w.bytes_per_pe // w.access_bytes) * (2 if w.op is StreamOp.copy else 1)
    return {
        "active_pe_count": n_pes,
        "accesses": accesses * n_pes,
        "sim_time_ns": sim_time,
        "bytes_moved": per_pe_bytes * n_pes,
        "effective_bw_gbs": effective,
        "aggregate_bw_gbs": per_pe_bytes * n_pes / sim_time,
        "peak_bw_gbs": peak,
        "bw_efficiency": effective / peak,
        # VA/LA: measured time for the source tensor's mappings to land (0 under PA).
        "install_latency_ns": src.install_latency_ns,
    }

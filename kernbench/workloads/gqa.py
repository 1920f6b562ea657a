"""GQA fused attention, ``gqa_opt3`` and ``gqa_opt2`` (DESIGN §5; ADR-0060/0064/0065).

One PE (program) per KV head. It loads its group's Q once, then walks the KV sequence
``tile_tokens`` at a time with an online softmax, and finally normalises and stores O.
Per KV tile both variants issue the S = Q·Kᵀ composite (DMA K -> GEMM); then

- opt3 (hybrid) issues the eight softmax-merge steps as primitive ``tl`` math ops and
  a composite acc += P·V (DMA V -> GEMM): 10 commands;
- opt2 (Option Y) issues one flat-ops composite carrying the same eight steps as
  OpSpecs, state (m, l, acc) in its ``rw_handles``, then the P·V GEMM: 2 commands.

The eight steps are built once (:func:`merge_ops`), so both variants carry the same
operands op for op and their logical bytes differ only by framing and composite
headers (ADR-0064 D2). This module owns the kernels and their metrics row; it must
not price commands itself: dispatch figures are what PE_CPU paid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernbench import tl
from kernbench.commands import OpSpec, Tile
from kernbench.config.schema import GqaWorkloadConfig
from kernbench.runtime.context import DPPolicy, RuntimeContext, Tensor
from kernbench.sim.metrics import (
    DispatchRecorder,
    LaunchUsage,
    bottleneck,
    mean_utilization,
    record_dispatch,
)
from kernbench.sim.system import System

# Commands the kernel issues outside the KV-tile loop: load Q; divide by l, store O.
PROLOGUE_COMMANDS = 1
EPILOGUE_COMMANDS = 2


@dataclass(frozen=True)
class GqaShape:
    """What one program works on: ``rows`` = query heads per group x query tokens."""

    rows: int
    head_dim: int
    tile_tokens: int
    n_tiles: int
    dtype_bytes: int
    sub_tiles: int

    @staticmethod
    def of(w: GqaWorkloadConfig) -> GqaShape:
        group = w.query_heads // w.kv_heads
        n_tiles = w.seq_tokens // w.tile_tokens
        return GqaShape(
            group * w.query_tokens, w.head_dim, w.tile_tokens, n_tiles, w.dtype_bytes, w.sub_tiles
        )

    @property
    def kv_tile_bytes(self) -> int:
        return self.tile_tokens * self.head_dim * self.dtype_bytes


@dataclass(frozen=True)
class MergeState:
    """The online-softmax tiles: running max, its update, the rescale factor, l, acc."""

    m_old: Tile
    m_new: Tile
    m_tile: Tile
    alpha: Tile
    l_sum: Tile
    acc: Tile

    @staticmethod
    def zeros(shp: GqaShape) -> MergeState:
        col, b = (shp.rows, 1), shp.dtype_bytes
        vecs = [tl.zeros(col, b) for _ in range(5)]
        return MergeState(*vecs, acc=tl.zeros((shp.rows, shp.head_dim), b))


def merge_ops(st: MergeState, s: Tile, p: Tile) -> list[OpSpec]:
    """DESIGN §5's eight softmax-merge steps, every operand named."""
    return [
        tl.op("max", x=s, out=st.m_tile, axis=1),  # 1 m_tile = rowmax(S)
        tl.op("maximum", a=st.m_old, b=st.m_tile, out=st.m_new),  # 2
        tl.op("sub", a=s, b=st.m_new, out=s),  # 3 S -= m_new
        tl.op("exp", x=s, out=p),  # 4 P = exp(S)
        tl.op("exp_diff", a=st.m_old, b=st.m_new, out=st.alpha),  # 5 exp(m_old - m_new)
        tl.op("scaled_rowsum", acc=st.l_sum, scale=st.alpha, x=p, out=st.l_sum, axis=1),  # 6
        tl.op("mul", a=st.acc, b=st.alpha, out=st.acc),  # 7 acc = alpha * acc
        tl.op("copy", x=st.m_new, out=st.m_old),  # 8 m_old = m_new
    ]


def merge_primitives(st: MergeState, s: Tile, p: Tile) -> None:
    """The same eight steps, one primitive ``tl`` math op (one command) each."""
    tl.max(s, axis=1, out=st.m_tile)
    tl.maximum(st.m_old, st.m_tile, out=st.m_new)
    tl.sub(s, st.m_new, out=s)
    tl.exp(s, out=p)
    tl.exp_diff(st.m_old, st.m_new, out=st.alpha)
    tl.scaled_rowsum(st.l_sum, st.alpha, p, axis=1, out=st.l_sum)
    tl.mul(st.acc, st.alpha, out=st.acc)
    tl.copy(st.m_new, out=st.m_old)


def score_op(q: Tile, k_ptr: int, s: Tile, shp: GqaShape) -> OpSpec:
    """S = Q·Kᵀ with K a block of device memory (read by the composite's DMA)."""
    k = tl.block(k_ptr, (shp.tile_tokens, shp.head_dim), shp.dtype_bytes)
    return tl.op("gemm", a=q, b=k, out=s, m=shp.rows, n=shp.tile_tokens, k=shp.head_dim)


def pv_op(p: Tile, v_ptr: int, acc: Tile, shp: GqaShape) -> OpSpec:
    """acc += P·V with V a block of device memory."""
    v = tl.block(v_ptr, (shp.tile_tokens, shp.head_dim), shp.dtype_bytes)
    return tl.op("gemm", a=p, b=v, out=acc, m=shp.rows, n=shp.head_dim, k=shp.tile_tokens)


def opt3_tile(
    st: MergeState, q: Tile, s: Tile, p: Tile, kv: tuple[int, int], shp: GqaShape
) -> None:
    """Hybrid: GEMMs as composites, the merge as 8 primitives (10 commands)."""
    tl.composite(score_op(q, kv[0], s, shp), tiles=shp.sub_tiles)
    merge_primitives(st, s, p)
    tl.composite(pv_op(p, kv[1], st.acc, shp), rw=(st.acc,), tiles=shp.sub_tiles)


def opt2_tile(
    st: MergeState, q: Tile, s: Tile, p: Tile, kv: tuple[int, int], shp: GqaShape
) -> None:
    """Option Y: the merge and P·V in one stateful flat-ops composite (2 commands)."""
    tl.composite(score_op(q, kv[0], s, shp), tiles=shp.sub_tiles)
    ops = [*merge_ops(st, s, p), pv_op(p, kv[1], st.acc, shp)]
    tl.composite(*ops, rw=(st.m_old, st.l_sum, st.acc), tiles=shp.sub_tiles)


TileStep = Callable[[MergeState, Tile, Tile, Tile, tuple[int, int], GqaShape], None]
VARIANTS: dict[str, TileStep] = {"gqa_opt2": opt2_tile, "gqa_opt3": opt3_tile}


def gqa_kernel(variant: str, q: Tensor, k: Tensor, v: Tensor, o: Tensor, shp: GqaShape) -> None:
    """One KV head: S and P are double-buffered so tile t+1's K load overlaps tile t."""
    pid = tl.program_id(0)
    step = VARIANTS[variant]
    b = shp.dtype_bytes
    q_tile = tl.load(q.shard_ptr(pid), (shp.rows, shp.head_dim), b)
    st = MergeState.zeros(shp)
    s = [tl.zeros((shp.rows, shp.tile_tokens), b) for _ in range(2)]
    p = [tl.zeros((shp.rows, shp.tile_tokens), b) for _ in range(2)]
    for t in range(shp.n_tiles):
        off = t * shp.kv_tile_bytes
        kv = (k.shard_ptr(pid) + off, v.shard_ptr(pid) + off)
        step(st, q_tile, s[t % 2], p[t % 2], kv, shp)
    tl.store(o.shard_ptr(pid), tl.div(st.acc, st.l_sum))


def run(system: System, w: GqaWorkloadConfig) -> dict[str, Any]:
    """``workload=gqa_opt2`` or ``gqa_opt3``: the variant is the workload's name."""
    return run_variant(system, w, w.name)


def run_variant(system: System, w: GqaWorkloadConfig, variant: str) -> dict[str, Any]:
    """Deploy Q, K, V, O one shard per KV head, launch ``variant`` (a key of
    :data:`VARIANTS`), and measure (DESIGN §8 names). Apart from :func:`run` so that
    ``gqa_pair`` (:mod:`kernbench.workloads.gqa_pair`) runs both variants on one shape."""
    shp = GqaShape.of(w)
    pes = [system.pes[pe.index] for pe in system.graph.pes[: w.kv_heads]]
    recorders = [record_dispatch(pe) for pe in pes]
    q_bytes = shp.rows * shp.head_dim * shp.dtype_bytes * w.kv_heads
    kv_bytes = shp.kv_tile_bytes * shp.n_tiles * w.kv_heads
    with RuntimeContext(system) as ctx:
        policy = DPPolicy("column_wise", w.kv_heads)
        q, o = ctx.deploy(q_bytes, policy, "q"), ctx.deploy(q_bytes, policy, "o")
        k, v = ctx.deploy(kv_bytes, policy, "k"), ctx.deploy(kv_bytes, policy, "v")
        usage = LaunchUsage(system)
        start = system.env.now
        ends = ctx.launch(gqa_kernel, w.kv_heads, variant, q, k, v, o, shp)
    latency = max(ends.values()) - start
    row: dict[str, Any] = {"n_tiles": shp.n_tiles, "active_pe_count": w.kv_heads}
    # The pseudo-channels the kernel's loads and stores reached (LaunchUsage).
    row["hbm_channels_used"] = usage.hbm_channels_used()
    row |= loop_dispatch(recorders[0], shp.n_tiles)
    # As in the stream: simulated time of the launch (not of deploy/free messages).
    row |= {"kernel_latency_ns": latency, "sim_time_ns": latency}
    row |= {"dispatch_cycles_total": pes[0].cpu.dispatch_cycles}
    row |= mean_utilization(pes, latency)
    row["bottleneck"] = bottleneck(row)
    return row


def loop_dispatch(rec: DispatchRecorder, n_tiles: int) -> dict[str, int | float]:
    """Per-tile commands, logical bytes and dispatch cycles, as PE_CPU paid them in the
    KV-tile loop (the prologue and epilogue commands left out). Every tile issues the
    same commands, so the first two are whole numbers (integer columns)."""
    lo, hi = PROLOGUE_COMMANDS, rec.commands - EPILOGUE_COMMANDS
    return {
        "commands_per_tile": (hi - lo) // n_tiles,
        "logical_bytes_per_tile": sum(rec.logical_bytes[lo:hi]) // n_tiles,
        "dispatch_cycles_per_tile": sum(rec.cycles[lo:hi]) / n_tiles,
    }

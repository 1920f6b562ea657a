"""PE_SCHEDULER: a finite queue of jobs, dependence tracking, composite expansion.

A command pushed by PE_CPU becomes a :class:`Job` holding one queue slot until every
stage of it has finished (``scheduler_queue_depth`` = commands in flight); a full
queue makes the CPU wait. Dependences between commands are tracked per local tile:
read-after-write, write-after-write, write-after-read, and one DMA at a time per
tile (a DMA descriptor owns its tile until it completes). Tile hazards gate the
stages that touch tiles; a composite's DMA reads of device memory fill its own staging
buffers, touch no tile, and so prefetch as soon as it is queued. A ``CompositeCmd`` is
expanded into per-tile DMA reads, its ops in order and DMA writes, software-
pipelined over ``composite_buffers`` staging buffers so DMA overlaps compute.
Stages the scheduler generates pay no dispatch cost (ADR-0064 D5).
"""

from __future__ import annotations

from collections.abc import Callable

from kernbench.commands import (
    CompositeCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GemmCmd,
    MathCmd,
    MemRef,
    OpSpec,
    PeCommand,
    Tile,
)
from kernbench.sim.engines import READ, WRITE, Engine, Stage
from kernbench.sim.oplog import OpLog


class Job:
    """One command in flight: its stages left, and stages of later jobs waiting on it."""

    __slots__ = ("id", "cmd", "stages_left", "waiters", "retired")

    def __init__(self, job_id: int, cmd: PeCommand) -> None:
        self.id = job_id
        self.cmd = cmd
        self.stages_left = 0
        self.waiters: list[Stage] = []
        self.retired = False


class PeScheduler:
    """Turns commands into engine stages and retires them in any order."""

    def __init__(
        self,
        pe_index: int,
        engines: dict[str, Engine],
        depth: int,
        composite_buffers: int,
        gemm_ns_per_flop: float,
        math_ns_per_elem: float,
        oplog: OpLog | None,
        now: Callable[[], float],
    ) -> None:
        self.pe_index = pe_index
        self.engines = engines
        self.depth = depth
        self.buffers = composite_buffers
        self.gemm_ns_per_flop = gemm_ns_per_flop
        self.math_ns_per_elem = math_ns_per_elem
        self.oplog = oplog
        self.now = now
        self.in_flight = 0
        self.jobs_submitted = 0
        self.on_slot_free: Callable[[], None] | None = None
        self._last_writer: dict[int, Job] = {}
        self._readers: dict[int, list[Job]] = {}
        self._last_dma: dict[int, Job] = {}

    @property
    def full(self) -> bool:
        return self.in_flight >= self.depth

    @property
    def idle(self) -> bool:
        return self.in_flight == 0

    def submit(self, cmd: PeCommand) -> Job:
        """Accept a command now (the caller checked ``full``) and start what is ready."""
        job = Job(self.jobs_submitted, cmd)
        self.jobs_submitted += 1
        self.in_flight += 1
        stages = self._expand(cmd, job)
        job.stages_left = len(stages)
        blockers = self._hazards(cmd, job)
        for st in stages:
            if _gated(cmd, st):
                for b in blockers:
                    st.deps_left += 1
                    b.waiters.append(st)
            st.engine.enqueue(st)
        if self.oplog is not None:
            self.oplog.add(self.now(), self.pe_index, "submit", job.id, type(cmd).__name__)
        for eng in self.engines.values():
            eng.pump()
        return job

    def stage_done(self, stage: Stage) -> None:
        """Engine callback: release dependents; retire the job when its last stage ends."""
        for dep in stage.dependents:
            dep.deps_left -= 1
            if dep.deps_left == 0:
                dep.engine.pump()
        job = stage.job
        job.stages_left -= 1
        if job.stages_left == 0:
            self._retire(job)

    def _retire(self, job: Job) -> None:
        job.retired = True
        self.in_flight -= 1
        if self.oplog is not None:
            self.oplog.add(self.now(), self.pe_index, "retire", job.id, type(job.cmd).__name__)
        for st in job.waiters:
            st.deps_left -= 1
            if st.deps_left == 0:
                st.engine.pump()
        job.waiters = []
        wake, self.on_slot_free = self.on_slot_free, None
        if wake is not None:
            wake()

    # -- dependences -------------------------------------------------------------
    def _hazards(self, cmd: PeCommand, job: Job) -> list[Job]:
        reads, writes, dma = _tile_access(cmd)
        found: dict[int, Job] = {}
        for t in reads + writes:
            w = self._last_writer.get(t)
            if w is not None and not w.retired:
                found[w.id] = w
        for t in writes:
            for r in self._readers.get(t, ()):
                if not r.retired:
                    found[r.id] = r
        for t in dma:
            d = self._last_dma.get(t)
            if d is not None and not d.retired:
                found[d.id] = d
        for t in reads:
            self._readers.setdefault(t, []).append(job)
        for t in writes:
            self._last_writer[t] = job
            self._readers[t] = []
        for t in dma:
            self._last_dma[t] = job
        return [found[k] for k in sorted(found)]

    # -- expansion ---------------------------------------------------------------
    def _expand(self, cmd: PeCommand, job: Job) -> list[Stage]:
        e = self.engines
        if isinstance(cmd, DmaReadCmd):
            return [Stage(e["dma"], job, direction=READ, addr=cmd.src_addr, nbytes=cmd.nbytes)]
        if isinstance(cmd, DmaWriteCmd):
            return [Stage(e["dma"], job, direction=WRITE, addr=cmd.dst_addr, nbytes=cmd.nbytes)]
        if isinstance(cmd, GemmCmd):
            return [Stage(e["gemm"], job, duration_ns=cmd.flops * self.gemm_ns_per_flop)]
        if isinstance(cmd, MathCmd):
            return [Stage(e["math"], job, duration_ns=cmd.elements * self.math_ns_per_elem)]
        if isinstance(cmd, CompositeCmd):
            return self._expand_composite(cmd, job)
        raise TypeError(f"PE_SCHEDULER cannot run {type(cmd).__name__}")

    def _op_stage(self, op: OpSpec, job: Job, tiles: int) -> Stage:
        if op.kind == "gemm":
            x = op.extra
            flops = 2 * int(x["m"]) * int(x["n"]) * int(x["k"])
            ns = flops * self.gemm_ns_per_flop / tiles
            return Stage(self.engines["gemm"], job, duration_ns=ns)
        ns = max(h.elements for h in op.handles) * self.math_ns_per_elem / tiles
        return Stage(self.engines["math"], job, duration_ns=ns)

    def _expand_composite(self, cmd: CompositeCmd, job: Job) -> list[Stage]:
        """Per tile: DMA reads -> ops in order -> DMA writes, over B staging buffers."""
        n, b = cmd.tiles, self.buffers
        ins, outs = _memory_operands(cmd)
        reads, ops, writes = [], [], []
        for t in range(n):
            r = [self._chunk_stage(m, READ, n, t, job) for m in ins]
            chain: list[Stage] = []
            for op in cmd.ops:
                st = self._op_stage(op, job, n)
                for p in chain[-1:] or r:
                    st.after(p)
                chain.append(st)
            w = [self._chunk_stage(m, WRITE, n, t, job) for m in outs]
            for st in w:
                st.after(chain[-1])
            if t >= b:  # staging buffer reuse: wait until tile t-B's compute is done
                for st in r:
                    st.after(ops[t - b][-1])
            reads.append(r)
            ops.append(chain)
            writes.append(w)
        # Engine-FIFO order: reads of the first B tiles, then per tile t its ops, its
        # writes and the reads of tile t+B, so tile t+1's data moves while t computes.
        order = [st for t in range(min(b, n)) for st in reads[t]]
        for t in range(n):
            order += ops[t] + writes[t] + (reads[t + b] if t + b < n else [])
        return order

    def _chunk_stage(self, m: MemRef, direction: str, tiles: int, t: int, job: Job) -> Stage:
        lo, hi = _chunk(m.nbytes, tiles, t), _chunk(m.nbytes, tiles, t + 1)
        return Stage(
            self.engines["dma"], job, direction=direction, addr=m.addr + lo, nbytes=hi - lo
        )


def _gated(cmd: PeCommand, stage: Stage) -> bool:
    """Whether tile hazards gate ``stage``. A composite's DMA reads fill its own staging
    buffers from memory and touch no tile, so they prefetch as soon as the command is
    queued; every stage that touches a tile waits. Other commands are one stage."""
    if isinstance(cmd, CompositeCmd):
        return stage.direction != READ
    return stage.deps_left == 0


def _chunk(nbytes: int, tiles: int, t: int) -> int:
    """Start offset of tile ``t``: exact integer split, so the chunks sum to nbytes."""
    return nbytes * t // tiles


def _memory_operands(cmd: CompositeCmd) -> tuple[list[MemRef], list[MemRef]]:
    ins: list[MemRef] = []
    outs: list[MemRef] = []
    for op in cmd.ops:
        for h in op.operands.values():
            if isinstance(h, MemRef) and h not in ins:
                ins.append(h)
        if isinstance(op.out, MemRef) and op.out not in outs:
            outs.append(op.out)
    return ins, outs


def _tile_access(cmd: PeCommand) -> tuple[list[int], list[int], list[int]]:
    """Tile ids a command reads, writes, and holds as a DMA endpoint."""
    if isinstance(cmd, DmaReadCmd):
        return [], [cmd.dst.id], [cmd.dst.id]
    if isinstance(cmd, DmaWriteCmd):
        return [cmd.src.id], [], [cmd.src.id]
    if isinstance(cmd, GemmCmd):
        reads = [cmd.a.id, cmd.b.id] + ([cmd.out.id] if cmd.accumulate else [])
        return reads, [cmd.out.id], []
    if isinstance(cmd, MathCmd):
        return [t.id for t in cmd.operands], [cmd.out.id], []
    if isinstance(cmd, CompositeCmd):
        reads = [h.id for op in cmd.ops for h in op.operands.values() if isinstance(h, Tile)]
        writes = [op.out.id for op in cmd.ops if isinstance(op.out, Tile)]
        rw = [h.id for h in cmd.rw_handles if isinstance(h, Tile)]
        return reads + rw, writes + rw, []
    return [], [], []

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
    DmaStridedReadCmd,
    DmaStridedWriteCmd,
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
from kernbench.timebase import on_grid


class Job:
    """One command in flight: its stages left, and stages of later jobs waiting on it."""

    __slots__ = ("id", "cmd", "stages_left", "waiters", "retired")

    def __init__(self, job_id: int, cmd: PeCommand) -> None:
        self.id = job_id
        self.cmd = cmd
        self.stages_left = 0
        self.waiters: list[Stage] = []
        self.retired = False


class DmaOp(Stage):
    """A primitive DMA command in flight (the fast path, ``sim.fast_dma``): its Job and
    its one Stage in one record. Engines, fabrics and the trace read it as the stage it
    is; the tile hazards of later commands read it as a
    job (``id``, ``cmd``, ``waiters``, ``retired``, as :class:`Job` has them). Its
    ``job`` is None, not itself: a record that refers to itself is a reference cycle,
    which only the cyclic GC frees (a gen-0 collection every few hundred accesses)."""

    __slots__ = ("id", "cmd", "waiters", "retired")

    def __init__(
        self, op_id: int, cmd: PeCommand, engine: Engine, direction: str, addr: int, nbytes: int
    ) -> None:
        # Stage's fields set here, not through Stage.__init__: one of these is made per
        # stream access, and the extra call was a tenth of the access's cost.
        self.engine = engine
        self.job = None  # it is its own job
        self.duration_ns = 0.0
        self.direction = direction
        self.addr = addr
        self.nbytes = nbytes
        self.deps_left = 0
        self.dependents: list[Stage] = []  # nothing is generated after a primitive DMA
        self.parts = 1
        self.flowing = 0
        self.id = op_id
        self.cmd = cmd
        self.waiters: list[Stage] = []
        self.retired = False


# What tile hazards hold: a command still in flight, general or fast path.
InFlight = Job | DmaOp


class TileUse:
    """Who touched one local tile last: its writer, its readers since, its DMA."""

    __slots__ = ("writer", "readers", "dma")

    def __init__(self) -> None:
        self.writer: InFlight | None = None
        self.readers: list[InFlight] = []
        self.dma: InFlight | None = None


class PeScheduler:
    """Turns commands into engine stages and retires them in any order."""

    dma: Engine  # the PE's DMA engine, from ``connect``

    def __init__(
        self,
        pe_index: int,
        depth: int,
        composite_buffers: int,
        gemm_ns_per_flop: float,
        math_ns_per_elem: float,
        oplog: OpLog | None,
        fast_dma: bool = True,
    ) -> None:
        self.pe_index = pe_index
        self.engines: dict[str, Engine] = {}
        self.depth = depth
        self.buffers = composite_buffers
        self.gemm_ns_per_flop = gemm_ns_per_flop
        self.math_ns_per_elem = math_ns_per_elem
        self.oplog = oplog
        self.in_flight = 0
        self.jobs_submitted = 0
        # Called with the time of the next retirement (PE_CPU waiting for a slot).
        self.on_slot_free: Callable[[float], None] | None = None
        self._tiles: dict[int, TileUse] = {}
        self.fast_dma = fast_dma  # false: every command takes the general path

    def connect(self, engines: dict[str, Engine]) -> None:
        """The PE's engines (built after the scheduler: they report to ``stage_done``)."""
        self.engines = engines
        self.dma = engines["dma"]

    @property
    def idle(self) -> bool:
        return self.in_flight == 0

    def submit(self, cmd: PeCommand, now: float) -> InFlight:
        """Accept a command at ``now`` (the caller checked that ``in_flight < depth``)
        and start what is ready."""
        # The DMA kinds (one per stream access) are spelled out: this is the
        # simulator's hottest path.
        if self.fast_dma:
            if type(cmd) is DmaReadCmd:
                op = DmaOp(self.jobs_submitted, cmd, self.dma, READ, cmd.src_addr, cmd.nbytes)
                return self._submit_dma(op, cmd.dst.id, True, now)
            if type(cmd) is DmaWriteCmd:
                op = DmaOp(self.jobs_submitted, cmd, self.dma, WRITE, cmd.dst_addr, cmd.nbytes)
                return self._submit_dma(op, cmd.src.id, False, now)
        job = Job(self.jobs_submitted, cmd)
        self.jobs_submitted += 1
        self.in_flight += 1
        if isinstance(cmd, CompositeCmd):
            self._submit_composite(cmd, job, now)
            return job
        if isinstance(cmd, (DmaStridedReadCmd, DmaStridedWriteCmd)):
            self._submit_strided(cmd, job, now)
            return job
        # A primitive command is one stage, gated by its hazards.
        if type(cmd) is DmaReadCmd:
            stage = Stage(self.dma, job, 0.0, READ, cmd.src_addr, cmd.nbytes)
            stage.deps_left = self._dma_hazards(cmd.dst.id, job, (stage,), True)
        elif type(cmd) is DmaWriteCmd:
            stage = Stage(self.dma, job, 0.0, WRITE, cmd.dst_addr, cmd.nbytes)
            stage.deps_left = self._dma_hazards(cmd.src.id, job, (stage,), False)
        else:
            stage = self._compute_stage(cmd, job)
            for b in self._hazards(cmd, job):
                stage.deps_left += 1
                b.waiters.append(stage)
        job.stages_left = 1
        if self.oplog is not None:
            self.oplog.add(now, self.pe_index, "submit", job.id, type(cmd).__name__)
        # Only the engine that got the stage can have something new to issue: every
        # other head waits for a dependence or a slot, and is pumped when released.
        engine = stage.engine
        engine.fifo.append(stage)
        engine.pump(now)
        return job

    def _submit_dma(self, op: DmaOp, tile: int, writes: bool, now: float) -> DmaOp:
        """The fast path of a primitive DMA command: one record, and issued at once
        when the DMA engine would issue it first (nothing queued, a slot free, no
        hazard)."""
        self.jobs_submitted += 1
        self.in_flight += 1
        op.deps_left = deps = self._dma_hazards(tile, op, (op,), writes)
        if self.oplog is not None:
            self.oplog.add(now, self.pe_index, "submit", op.id, type(op.cmd).__name__)
        dma = self.dma
        fifo = dma.fifo
        if deps or fifo or dma.in_flight >= dma.slots:
            fifo.append(op)
            dma.pump(now)
        else:
            dma.issue(op, now)
        return op

    def _dma_hazards(
        self, tile: int, job: InFlight, waiters: tuple[Stage, ...], writes: bool
    ) -> int:
        """The tile hazards of a DMA command, which reads or writes one tile and holds
        it as its DMA endpoint: ``waiters`` (its stages) wait on each unretired blocker
        — the tile's writer; its readers when the command writes the tile; the tile's
        DMA — counted once each; returns how many there are. Records ``job``'s use."""
        use = self._tiles.get(tile)
        if use is None:
            use = self._tiles[tile] = TileUse()
        deps = 0
        writer = use.writer
        if writer is not None and not writer.retired:
            writer.waiters += waiters
            deps = 1
        else:
            writer = None
        readers = use.readers
        if writes:
            if readers:
                seen: list[InFlight] = [writer] if writer is not None else []
                for r in readers:
                    if not r.retired and r not in seen:
                        seen.append(r)
                        r.waiters += waiters
                        deps += 1
                use.readers = []
            use.writer = job
        elif readers:
            # Retired readers never block again: drop them so the list stays short.
            use.readers = [r for r in readers if not r.retired]
            use.readers.append(job)
        else:
            use.readers = [job]
        d = use.dma
        if d is not None and not d.retired and d is not writer and not (writes and d in readers):
            d.waiters += waiters
            deps += 1
        use.dma = job
        return deps

    def _submit_composite(self, cmd: CompositeCmd, job: Job, now: float) -> None:
        stages = self._expand_composite(cmd, job)
        job.stages_left = len(stages)
        blockers = self._hazards(cmd, job)
        for st in stages:
            # A composite's memory reads fill its own staging buffers and touch no
            # tile: they prefetch at once. Every stage that touches a tile waits.
            if st.direction != READ:
                for b in blockers:
                    st.deps_left += 1
                    b.waiters.append(st)
            st.engine.fifo.append(st)
        if self.oplog is not None:
            self.oplog.add(now, self.pe_index, "submit", job.id, type(cmd).__name__)
        for eng in self.engines.values():
            eng.pump(now)

    def _submit_strided(
        self, cmd: DmaStridedReadCmd | DmaStridedWriteCmd, job: Job, now: float
    ) -> None:
        """A 2-D DMA descriptor: one DMA stage per row (generated, so no dispatch cost),
        all gated by the tile hazards of the one tile it reads or writes."""
        if isinstance(cmd, DmaStridedReadCmd):
            direction, base, tile = READ, cmd.src_addr, cmd.dst
        else:
            direction, base, tile = WRITE, cmd.dst_addr, cmd.src
        job.stages_left = cmd.rows
        dma = self.dma
        rows = tuple(
            Stage(dma, job, 0.0, direction, base + r * cmd.stride_bytes, cmd.row_bytes)
            for r in range(cmd.rows)
        )
        deps = self._dma_hazards(tile.id, job, rows, direction == READ)
        for stage in rows:
            stage.deps_left = deps
        dma.fifo.extend(rows)
        if self.oplog is not None:
            self.oplog.add(now, self.pe_index, "submit", job.id, type(cmd).__name__)
        dma.pump(now)

    def stage_done(self, stage: Stage, now: float) -> None:
        """Engine callback: release dependents; retire the job when its last stage ends."""
        if type(stage) is DmaOp:
            job: InFlight = stage  # its own job, and its only stage
        else:
            if stage.dependents:
                _release(stage.dependents, now)
            owner: Job = stage.job
            owner.stages_left -= 1
            if owner.stages_left:
                return
            job = owner
        job.retired = True
        self.in_flight -= 1
        if self.oplog is not None:
            self.oplog.add(now, self.pe_index, "retire", job.id, type(job.cmd).__name__)
        if job.waiters:
            _release(job.waiters, now)
            job.waiters = []
        wake = self.on_slot_free
        if wake is not None:
            self.on_slot_free = None
            wake(now)

    # -- dependences -------------------------------------------------------------
    def _hazards(self, cmd: PeCommand, job: Job) -> list[InFlight]:
        """Unretired jobs a compute or composite ``job`` must wait for (each once);
        record its accesses. RAW and WAW: the last writer of any tile it reads or
        writes; WAR: the readers of a tile it writes (DMA commands: ``_dma_hazards``)."""
        reads, writes = _tile_access(cmd)
        found: list[InFlight] = []
        for t in (*reads, *writes):
            _add(found, self._use(t).writer)
        for t in writes:
            for r in self._use(t).readers:
                _add(found, r)
        for t in reads:
            self._read_by(self._use(t), job)
        for t in writes:
            use = self._use(t)
            use.writer, use.readers = job, []
        return found

    def _use(self, tile: int) -> TileUse:
        use = self._tiles.get(tile)
        if use is None:
            use = self._tiles[tile] = TileUse()
        return use

    @staticmethod
    def _read_by(use: TileUse, job: InFlight) -> None:
        # Retired readers never block again: drop them so the list stays short.
        use.readers = [r for r in use.readers if not r.retired]
        use.readers.append(job)

    # -- expansion ---------------------------------------------------------------
    def _compute_stage(self, cmd: PeCommand, job: Job) -> Stage:
        """The one stage of a primitive compute command."""
        if type(cmd) is GemmCmd:
            return Stage(self.engines["gemm"], job, on_grid(cmd.flops * self.gemm_ns_per_flop))
        if type(cmd) is MathCmd:
            return Stage(self.engines["math"], job, on_grid(cmd.elements * self.math_ns_per_elem))
        raise TypeError(f"PE_SCHEDULER cannot run {type(cmd).__name__}")

    def _op_work(self, op: OpSpec, tiles: int) -> tuple[Engine, float]:
        """The engine of one of a composite's ops, and its duration on one tile."""
        if op.kind == "gemm":
            x = op.extra
            flops = 2 * int(x["m"]) * int(x["n"]) * int(x["k"])
            return self.engines["gemm"], on_grid(flops * self.gemm_ns_per_flop / tiles)
        ns = max(h.elements for h in op.handles) * self.math_ns_per_elem / tiles
        return self.engines["math"], on_grid(ns)

    def _expand_composite(self, cmd: CompositeCmd, job: Job) -> list[Stage]:
        """Per tile: DMA reads -> ops in order -> DMA writes, over B staging buffers."""
        n, b = cmd.tiles, self.buffers
        ins, outs = _memory_operands(cmd)
        work = [self._op_work(op, n) for op in cmd.ops]  # the same on every tile
        reads: list[list[Stage]] = []
        ops: list[list[Stage]] = []
        writes: list[list[Stage]] = []
        for t in range(n):
            r = [self._chunk_stage(m, READ, n, t, job) for m in ins]
            chain: list[Stage] = []
            for engine, ns in work:
                st = Stage(engine, job, duration_ns=ns)
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
        return Stage(self.dma, job, direction=direction, addr=m.addr + lo, nbytes=hi - lo)


def _release(waiting: list[Stage], now: float) -> None:
    """One dependence of each stage is met; issue those with none left."""
    for st in waiting:
        st.deps_left -= 1
        if st.deps_left == 0:
            st.engine.pump(now)


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


def _add(found: list[InFlight], job: InFlight | None) -> None:
    """Add ``job`` to the blockers if it is still in flight and not there yet."""
    if job is not None and not job.retired and job not in found:
        found.append(job)


def _tile_access(cmd: PeCommand) -> tuple[list[int], list[int]]:
    """Tile ids a compute command reads and writes (DMA commands: ``_dma_hazards``)."""
    if isinstance(cmd, GemmCmd):
        reads = [cmd.a.id, cmd.b.id] + ([cmd.out.id] if cmd.accumulate else [])
        return reads, [cmd.out.id]
    if isinstance(cmd, MathCmd):
        return [t.id for t in cmd.operands], [cmd.out.id]
    if isinstance(cmd, CompositeCmd):
        reads = [h.id for op in cmd.ops for h in op.operands.values() if isinstance(h, Tile)]
        writes = [op.out.id for op in cmd.ops if isinstance(op.out, Tile)]
        rw = [h.id for h in cmd.rw_handles if isinstance(h, Tile)]
        return reads + rw, writes + rw
    return [], []

"""PE_SCHEDULER's fast path for primitive DMA commands (``sim.fast_dma``) is exact.

A run with the fast path and the same run forced onto the general Job/Stage path must
agree on every row metric, every op log entry and every trace row: a matrix of
address models x channel mappings x fabric models x stream traffic patterns, with
read, write and copy on aligned, misaligned and tiny accesses, with and without
dispatch cost; both GQA kernels; and a kernel whose DMA commands meet every tile
hazard (RAW, WAW, WAR, one DMA per tile) with compute in between.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from kernbench import simulate, tl
from kernbench.config.schema import ExecPath, KernBenchConfig, StreamPattern
from kernbench.config.validate import validate
from kernbench.runtime.context import DPPolicy
from kernbench.sim.scheduler import DmaOp, Job
from kernbench.sim.system import System
from tests.support import make_cfg, make_system
from tests.test_cost_model import gqa_cfg

MODELS = ("pa", "va", "la")
MAPPINGS = (False, True)  # one_to_one
FABRICS = ("fair", "reservation")
PATTERNS = ("local", "neighbor", "hotspot", "uniform", "cross_cube")
OPS = ("read", "write", "copy")
SHAPES = {  # access size, accesses (plus a tail when misaligned), alignment offset
    "aligned": dict(access_bytes=2048, bytes_per_pe=2048 * 24),
    "misaligned": dict(access_bytes=3000, bytes_per_pe=3000 * 10 + 500, align_offset_bytes=100),
    "tiny": dict(access_bytes=64, bytes_per_pe=64 * 40),
}


def stream_rows() -> list[tuple[Any, ...]]:
    """Every model x mapping x fabric x pattern x op x shape. Three switches rotate
    over the rows: dispatch cost (free dispatch puts many events at one instant), the
    trace (it takes the DMA engine's general issue) and a DMA engine with fewer slots
    than the scheduler's queue (the fast path must respect both; the stream then keeps
    as many accesses in flight as the engine takes, since a deeper ``outstanding`` is
    refused: DMA slots fewer than ready accesses are
    :func:`test_dma_slots_fewer_than_ready_accesses`'s)."""
    rows = itertools.product(MODELS, MAPPINGS, FABRICS, PATTERNS, OPS, SHAPES)
    return [(*row, k % 2 == 0, k % 4 < 2, k % 3 == 0) for k, row in enumerate(rows)]


def run_both(cfg: KernBenchConfig, tmp_path: Path, trace: bool) -> list[tuple[Any, ...]]:
    """(metrics, op log, trace rows or None) of ``cfg`` with the fast path on, then off."""
    out = []
    for fast in (True, False):
        run_cfg = dataclasses.replace(cfg)
        run_cfg.sim = dataclasses.replace(cfg.sim, fast_dma=fast, oplog=True, trace=trace)
        tmp_path.mkdir(parents=True, exist_ok=True)
        path = tmp_path / f"trace_{fast}.parquet"
        result = simulate.run(run_cfg, path)
        rows = pq.read_table(path).to_pylist() if trace else None
        out.append((result.metrics, result.oplog, rows))
    return out


def assert_same(fast: tuple[Any, ...], general: tuple[Any, ...]) -> None:
    metrics, oplog, trace = fast
    assert oplog, "the op log is on"
    assert trace is None or trace, "a traced run has trace rows"
    assert metrics == general[0]
    assert oplog == general[1]
    assert trace == general[2]


@pytest.mark.parametrize(
    "model,one_to_one,fabric,pattern,op,shape,zero_cost,trace,few_slots", stream_rows(), ids=str
)
def test_stream_fast_path_equals_general_path(
    tmp_path, model, one_to_one, fabric, pattern, op, shape, zero_cost, trace, few_slots
):
    cfg = make_cfg(
        one_to_one=one_to_one,
        zero_cost=zero_cost,
        model=model,
        fabric=fabric,
        op=op,
        outstanding=2 if few_slots else 4,
        pattern=StreamPattern(pattern),
        active_pes=1 if pattern == "local" else 4,
        **SHAPES[shape],
    )
    if few_slots:
        cfg.topology.pe.dma_max_outstanding = 2
    assert_same(*run_both(validate(cfg), tmp_path, trace))


def fresh_tiles_kernel(pointers: list[list[int]], nbytes: int) -> None:
    """Program p reads ``nbytes`` at each of ``pointers[p]``, each into a tile of its
    own: no buffer holds an access back, so only the DMA engine's slots do."""
    for ptr in pointers[tl.program_id(0)]:
        tl.load(ptr, (nbytes,), dtype_bytes=1)


@pytest.mark.parametrize("trace", [False, True])
@pytest.mark.parametrize("zero_cost", [True, False])
@pytest.mark.parametrize("fabric", FABRICS)
@pytest.mark.parametrize("one_to_one", MAPPINGS)
@pytest.mark.parametrize("model", MODELS)
def test_dma_slots_fewer_than_ready_accesses(tmp_path, model, one_to_one, fabric, zero_cost, trace):
    """4 PEs each with 12 reads ready at once and 2 DMA slots: the fast path issues
    only into a free slot, as the general path does. Reads alternate over the PE's own
    shard, the next PE's and the other cube's (contention on the shared links)."""
    got = []
    for fast in (True, False):
        cfg = make_cfg(one_to_one=one_to_one, zero_cost=zero_cost, model=model, fabric=fabric)
        cfg.topology.pe.dma_max_outstanding = 2
        cfg.sim = dataclasses.replace(cfg.sim, fast_dma=fast, exec_path=ExecPath.replay)
        rows: list[tuple[Any, ...]] = []

        def sink(pe, stage, issue, req, begin, done, rows=rows):  # noqa: ANN001 (a TraceSink)
            rows.append((pe.index, stage.addr, issue, req, begin, done))

        system, ctx = make_system(cfg, oplog=True, trace=sink if trace else None)
        src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
        owners = [(p, (p + 1) % 8, p + 8) for p in range(4)]
        pointers = [
            [src.shard_ptr(mine[i % 3]) + (i // 3) * 2048 for i in range(12)] for mine in owners
        ]
        ends = ctx.launch(fresh_tiles_kernel, system.graph.pes[:4], pointers, 2048)
        got.append((ends, system.oplog.entries, rows))  # type: ignore[union-attr]
    assert not trace or got[0][2]
    assert got[0][1]
    assert got[0] == got[1]


@pytest.mark.parametrize("trace", [False, True])
@pytest.mark.parametrize("fabric", FABRICS)
@pytest.mark.parametrize("exec_path", ["replay", "greenlet"])
@pytest.mark.parametrize("name", ["gqa_opt2", "gqa_opt3"])
def test_gqa_fast_path_equals_general_path(tmp_path, name, exec_path, fabric, trace):
    cfg = gqa_cfg(name, seq_tokens=512, exec_path=exec_path)
    cfg.sim.fabric = type(cfg.sim.fabric)(fabric)
    assert_same(*run_both(validate(cfg), tmp_path, trace))


def hazards_kernel(ptr: int) -> None:
    """DMA commands meeting every hazard: a load into a tile compute reads (RAW), a
    store of a tile compute writes (RAW), a load into a tile a store still reads (WAR),
    loads into one tile back to back (WAW, one DMA per tile), a store of a tile read
    twice by one command, and loads beside unrelated compute."""
    a, b, c = tl.zeros((32, 32)), tl.zeros((32, 32)), tl.zeros((32, 32))
    for i in range(6):
        at = ptr + i * 4096
        tl.load(at, (32, 32), 2, a)
        tl.load(at + 2048, (32, 32), 2, a)  # WAW on a, and its DMA
        tl.add(a, a, out=b)  # reads a twice (one reader listed twice)
        tl.store(at + 8192, b)  # RAW on b
        tl.load(at + 16384, (32, 32), 2, b)  # WAR on b (the store reads it)
        tl.store(at + 24576, a)
        tl.store(at + 28672, a)  # two readers of a
        tl.load(at, (32, 32), 2, a)  # WAR on both stores
        tl.exp(c, out=c)  # compute on a tile no DMA touches
        tl.load(at + 32768, (16, 16), 2, c)  # WAW on c behind the exp
        tl.dot(a, c, acc=b)


@pytest.mark.parametrize("slots", [1, 16])
@pytest.mark.parametrize("fabric", FABRICS)
@pytest.mark.parametrize("zero_cost", [True, False])
def test_tile_hazards_fast_path_equals_general_path(fabric, zero_cost, slots):
    got = []
    for fast in (True, False):
        cfg = make_cfg(zero_cost=zero_cost, fabric=fabric)
        cfg.topology.pe.dma_max_outstanding = slots
        cfg.sim = dataclasses.replace(cfg.sim, fast_dma=fast, exec_path=ExecPath.replay)
        system, ctx = make_system(cfg, oplog=True)
        src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
        pes = system.graph.pes[:3]
        ends = ctx.launch(hazards_kernel, pes, src.shard_ptr(0))
        got.append((ends, system.oplog.entries))  # type: ignore[union-attr]
        kinds = {type(use.dma) for use in system.pes[0].scheduler._tiles.values()}
        assert kinds == ({DmaOp} if fast else {Job})  # the path asked for was taken
    assert got[0][1]
    assert got[0] == got[1]


@pytest.mark.parametrize("fabric", FABRICS)
def test_fast_path_is_deterministic(tmp_path, fabric):
    """Identical inputs give identical rows, op logs and traces on the fast path."""
    cfg = make_cfg(
        one_to_one=True,
        zero_cost=False,
        model="la",
        fabric=fabric,
        op="copy",
        outstanding=4,
        pattern=StreamPattern.uniform,
        active_pes=4,
        **SHAPES["misaligned"],
    )
    first = run_both(cfg, tmp_path / "a", trace=True)[0]
    second = run_both(cfg, tmp_path / "b", trace=True)[0]
    assert_same(first, second)


@pytest.mark.parametrize("override,fast", [((), True), (("sim.fast_dma=false",), False)])
def test_the_switch_reaches_every_pe_scheduler(compose_cfg, override, fast):
    """On by default; ``sim.fast_dma=false`` forces every PE onto the general path."""
    cfg = OmegaConf.to_object(compose_cfg("topology=small", *override))
    system = System(validate(cfg))
    units = [system.pes[pe.index] for pe in system.graph.pes]  # each PE, built
    assert [unit.scheduler.fast_dma for unit in units] == [fast] * len(units)

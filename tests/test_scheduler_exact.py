"""PE_SCHEDULER dependences whose end times alone do not show them (issue 12).

Default PE, PA, dispatch free: GEMM 4096 flop/ns, MATH 64 elements/ns. A local 16 KiB
read on the aggregate path is a round trip (DESIGN §13.1): its request goes out over
6 ns of links with no payload, the HBM pays its 40 ns access, the bytes come back over
6 ns of links and drain for 64 ns (256 GB/s): 116 ns. A write pays its 6 ns of links,
its drain, then the 40 ns access.
"""

from __future__ import annotations

from kernbench import tl
from kernbench.commands import DmaStridedWriteCmd
from kernbench.runtime import DPPolicy, RuntimeContext
from kernbench.sim.system import System
from tests.support import make_cfg, make_system

GEMM_FLOPS_PER_NS, MATH_ELEMS_PER_NS = 4096, 64


def exp_then_gemm_overwrites_its_input():
    x, y = tl.zeros((64, 128)), tl.zeros((64, 128))
    tl.exp(x, out=y)  # reads x on the MATH engine
    a, b = tl.zeros((64, 16)), tl.zeros((16, 128))
    tl.dot(a, b, acc=x)  # writes x on the GEMM engine: must wait for the read (WAR)


def test_a_gemm_writing_a_tile_waits_for_the_math_op_reading_it():
    system, ctx = make_system()
    end = ctx.launch(exp_then_gemm_overwrites_its_input, [system.graph.pes[0]])[0]
    exp_ns = 64 * 128 / MATH_ELEMS_PER_NS  # 128 ns
    gemm_ns = 2 * 64 * 128 * 16 / GEMM_FLOPS_PER_NS  # 64 ns
    assert end == exp_ns + gemm_ns == 192  # side by side (no WAR) they would end at 128


def composite(kref_ptr):
    q, s = tl.zeros((64, 128)), tl.zeros((64, 256))
    k = tl.block(kref_ptr, (256, 128))
    tl.composite(tl.op("gemm", a=q, b=k, out=s, m=64, n=256, k=128), tiles=4)


def test_staging_buffers_are_reused_only_after_their_tile_is_computed():
    """4 tiles over the default 2 staging buffers: tile t's read may start only when
    tile t-2's GEMM is done. End times hide this (the GEMM engine is the bottleneck);
    the reads' issue times show it."""
    issued: list[float] = []
    cfg = make_cfg()
    system = System(cfg, trace=lambda pe, st, issue, req, begin, done: issued.append(issue))
    ctx = RuntimeContext(system)
    t = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    end = ctx.launch(composite, [system.graph.pes[0]], t.shard_ptr(0))[0]
    assert cfg.topology.pe.composite_buffers == 2
    way = 2 + 4  # dma->router->hbm, and back on the twin links
    read = way + 40 + way + (256 * 128 * 2 / 4) / 256  # one 16 KiB chunk: 116 ns
    gemm = 2 * 64 * 256 * 128 / 4 / GEMM_FLOPS_PER_NS  # per tile: 256 ns
    # tiles 0 and 1 read at once; tile 2 when tile 0's GEMM ends, tile 3 after tile 1's
    assert issued == [0, 0, read + gemm, read + 2 * gemm] == [0, 0, 372, 628]
    assert end == read + 4 * gemm


def dma_issues(kernel) -> tuple[list[tuple[str, float]], float]:
    """``kernel`` run on PE 0 with a pointer into a 1 MiB tensor: each DMA stage's
    direction and issue time, in order, and the kernel's end."""
    issued: list[tuple[str, float]] = []
    system = System(
        make_cfg(),
        trace=lambda pe, st, issue, req, begin, done: issued.append((st.direction, issue)),
    )
    ctx = RuntimeContext(system)
    t = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    end = ctx.launch(kernel, [system.graph.pes[0]], t.shard_ptr(0))[0]
    return issued, end


def load_then_strided_store_then_load(ptr):
    t = tl.load(ptr, (8192,), 2)  # 16 KiB from HBM into t
    # 4 rows of 4 KiB from t, 8 KiB apart: read t, so wait for the load (RAW)
    tl.emit(DmaStridedWriteCmd(t, ptr + (1 << 16), 4, 4096, 8192))
    tl.load(ptr, (8192,), 2, out=t)  # overwrites t: waits for every row (WAR)


def test_a_strided_descriptor_waits_on_its_tile_and_holds_it_for_every_row():
    """The load ends at 116 ns (16 KiB, a round trip: 6 ns out, 40 of HBM access,
    6 back, 64 of drain); the 4 rows may issue only then, side by side (16 DMA slots);
    they share the PE's 256 GB/s path, so they drain one after another, 16 ns each, and
    the last write ends at 116 + 6 + 4 x 16 + 40 = 226 ns, when the second load may
    issue."""
    issued, _ = dma_issues(load_then_strided_store_then_load)
    assert issued == [("read", 0)] + [("write", 116)] * 4 + [("read", 226)]


def load_exp_store_load(ptr):
    t = tl.load(ptr, (8192,), 2)  # 16 KiB from HBM into t
    tl.exp(t, out=tl.zeros((8192,), 2))  # reads t on the MATH engine (RAW on the load)
    tl.store(ptr + (1 << 16), t)  # a DMA that reads t too: t now has two readers
    tl.load(ptr, (8192,), 2, out=t)  # overwrites t: waits for both readers (WAR)


def test_a_load_into_a_tile_waits_for_every_reader_not_only_the_last():
    """A store (a DMA reading t) joins the exp still reading t; it does not replace it.
    The load ends at 116 ns (a round trip, as above). The exp reads t from then for
    8192 / 64 = 128 ns, to 244; the store, gated only by the load (two readers do not
    wait on each other), issues at 116 and ends at 116 + 6 + 64 + 40 = 226. The second
    load overwrites t, so it waits for both: it issues at 244, when the exp ends, and
    ends 116 ns later. Were the exp forgotten it would issue at 226 (end 342)."""
    issued, end = dma_issues(load_exp_store_load)
    load = 6 + 40 + 6 + 16384 / 256  # 116 ns
    exp_ns = 8192 / MATH_ELEMS_PER_NS  # 128 ns
    store = 6 + 16384 / 256 + 40  # 110 ns
    assert issued == [("read", 0), ("write", load), ("read", load + exp_ns)]
    assert issued == [("read", 0), ("write", 116), ("read", 244)]
    assert load + store == 226 < load + exp_ns  # the store alone would release it at 226
    assert end == load + exp_ns + load == 360

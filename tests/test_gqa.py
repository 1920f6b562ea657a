"""GQA fused attention opt2/opt3 (DESIGN §5) and what its metrics row must show (§8).

Default shape: 8 query heads over 2 KV heads (4 rows per PE, decode), head dim 128,
2048 KV tokens in 16 tiles of 128. Per tile: K and V are 32 KiB each (a 180 ns local
read, a round trip (DESIGN §13.1): its request out over 6 ns of links, the 40 ns HBM
access, the bytes back over 6 ns of links and 128 ns of drain at 256 GB/s), each GEMM is
2 x 4 x 128 x 128 / 4096 = 32 ns, a full-width math op 4 x 128 / 64 = 8 ns.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from kernbench import tl
from kernbench.commands import CompositeCmd, MathCmd
from kernbench.config.schema import GqaWorkloadConfig
from kernbench.errors import ConfigError
from kernbench.runtime import DPPolicy
from kernbench.runtime.exec_paths import ReplaySource
from kernbench.simulate import run
from kernbench.workloads import gqa
from tests.support import make_system
from tests.test_cost_model import gqa_cfg, run_gqa

COLUMNS = (
    "commands_per_tile",
    "logical_bytes_per_tile",
    "dispatch_cycles_per_tile",
    "kernel_latency_ns",
    "sim_time_ns",
    "cpu_utilization",
    "gemm_utilization",
    "math_utilization",
    "dma_utilization",
)


def trace(variant: str) -> list:
    """The commands program 0 issues with the default shape (no simulation)."""
    system, ctx = make_system()
    shp = gqa.GqaShape.of(GqaWorkloadConfig(name=variant))
    t = [ctx.deploy(1 << 20, DPPolicy("column_wise", 2)) for _ in range(4)]
    return ReplaySource(gqa.gqa_kernel, (variant, *t, shp), (0,), (2,)).commands


def test_commands_per_tile_are_ten_and_two():
    opt3, opt2 = trace("gqa_opt3"), trace("gqa_opt2")
    assert len(opt3) == 1 + 16 * 10 + 2  # load Q; 16 tiles; divide, store O
    assert len(opt2) == 1 + 16 * 2 + 2
    kinds = [type(c).__name__ for c in opt3[1:11]]
    assert kinds == ["CompositeCmd"] + ["MathCmd"] * 8 + ["CompositeCmd"]


def test_opt2_carries_the_same_eight_steps_as_opt3():
    """Op for op the same kind, operands, out and extras: only the framing differs."""
    opt3, opt2 = trace("gqa_opt3"), trace("gqa_opt2")
    prims: list[MathCmd] = opt3[2:10]
    flat: CompositeCmd = opt2[2]
    assert [p.op for p in prims] == [op.kind for op in flat.ops[:8]] == [
        "max", "maximum", "sub", "exp", "exp_diff", "scaled_rowsum", "mul", "copy",
    ]  # fmt: skip
    for prim, spec in zip(prims, flat.ops[:8], strict=True):
        assert prim.operands == tuple(spec.operands.values())
        assert (prim.out, prim.extra) == (spec.out, spec.extra)
        assert prim.logical_bytes == spec.logical_bytes + 4
    assert flat.ops[8] == opt3[10].ops[0]  # the P.V GEMM, V a block of memory
    assert len(flat.rw_handles) == 3  # m, l, acc


def test_pv_composite_is_the_anchor():
    """opt3's acc += P.V is the typical one-op composite of ADR-0064 D3: 54 bytes."""
    pv = trace("gqa_opt3")[10]
    assert pv.logical_bytes == 4 + (1 + 40) + (1 + 8) == 54


def test_row_has_the_design_columns():
    row, system = run_gqa("gqa_opt3")
    assert [c for c in COLUMNS if c not in row] == []
    latency = row["kernel_latency_ns"]
    cpus = [system.pes[i].cpu.busy_ns / latency for i in (0, 1)]
    assert row["cpu_utilization"] == sum(cpus) / 2
    assert all(0 <= row[c] <= 1 for c in COLUMNS if c.endswith("_utilization"))


def test_opt3_is_cpu_bound_at_the_default_calibration():
    row, _ = run_gqa("gqa_opt3")
    # The CPU issues everything back to back: load Q (28 B: 39 ns), 16 tiles x 407.
    # The engines keep up, so the end is the last P.V composite's issue, its V read
    # (6 + 40 + 6 + 128 = 180) and GEMM (32), the division (8) and the 1 KiB store
    # (a write: 6 + 4 + 40 = 50).
    assert row["kernel_latency_ns"] == 39 + 16 * 407 + 180 + 32 + 8 + 50 == 6821
    assert row["bottleneck"] == "cpu"


def test_opt2_is_engine_bound_and_faster_at_the_default_calibration():
    opt2, _ = run_gqa("gqa_opt2")
    opt3, _ = run_gqa("gqa_opt3")
    assert opt2["bottleneck"] == "dma"
    assert opt2["cpu_utilization"] < opt2["dma_utilization"]
    # DMA-bound floor: 32 reads of 32 KiB back to back on the 256 GB/s path = 4096 ns.
    assert 4096 < opt2["kernel_latency_ns"] < opt3["kernel_latency_ns"]


def test_free_dispatch_makes_both_variants_dma_bound():
    for name in ("gqa_opt2", "gqa_opt3"):
        row, _ = run_gqa(name, fixed=0, recip=0)
        assert row["dispatch_cycles_per_tile"] == 0
        assert row["bottleneck"] == "dma"


def test_shape_is_configurable():
    row, system = run_gqa("gqa_opt3", query_heads=16, kv_heads=4, seq_tokens=1024, tile_tokens=256)
    assert (row["n_tiles"], row["active_pe_count"]) == (4, 4)
    # The bytes of a command do not depend on the shape (handles, not data)...
    assert row["logical_bytes_per_tile"] == 348
    # ...the engine times do: P.V is 2 x 4 rows x 128 x 256 / 4096 = 64 ns per tile.
    assert system.pes[3].engines["gemm"].stages_done == 2 * 4


def test_runs_through_the_composed_config(compose_cfg):
    cfg = OmegaConf.to_object(compose_cfg("workload=gqa_opt2", "workload.seq_tokens=512"))
    assert isinstance(cfg.workload, GqaWorkloadConfig)
    metrics = run(cfg).metrics
    assert (metrics["n_tiles"], metrics["commands_per_tile"]) == (4, 2)


BAD_SHAPES = [
    ({"seq_tokens": 1000}, "workload.seq_tokens", "1000 is not divisible by workload.tile_tokens"),
    ({"query_heads": 6, "kv_heads": 4}, "workload.query_heads", "6 is not divisible by"),
    ({"query_heads": 32, "kv_heads": 32}, "workload.kv_heads", "32 exceeds the topology's 16 PEs"),
    ({"head_dim": 0}, "workload.head_dim", "0 is not >= 1"),
    ({"sub_tiles": 256}, "workload.sub_tiles", "256 exceeds workload.tile_tokens = 128"),
]


@pytest.mark.parametrize(("shape", "key", "text"), BAD_SHAPES)
def test_bad_shape_names_the_key(shape, key, text):
    with pytest.raises(ConfigError) as info:
        gqa_cfg("gqa_opt3", **shape)
    assert info.value.key == key
    assert text in str(info.value)


def test_composite_memory_reads_prefetch_past_tile_hazards():
    """A composite's DMA read of device memory touches no tile: it starts at once, while
    the op that reads tile x still waits for x's writer (free dispatch)."""
    system, ctx = make_system()
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))

    def kernel(ptr: int) -> None:
        x, y = tl.zeros((64, 64)), tl.zeros((64, 64))
        tl.exp(x, out=x)  # 4096 elements / 64 per ns = 64 ns on MATH
        tl.composite(tl.op("add", a=x, b=tl.block(ptr, (64, 64)), out=y))

    end = ctx.launch(kernel, [system.graph.pes[0]], src.shard_ptr(0))[0]
    read = 6 + 40 + 6 + 8192 / 256  # a round trip: 84 ns, from t = 0, beside the exp
    assert end == max(read, 64) + 64 == 148  # not 64 + 84 + 64 = 212

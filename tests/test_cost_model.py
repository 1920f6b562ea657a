"""ADR-0064 Revision 2: one test per test requirement, named after it, figures by hand.

D2 sizes used throughout: framing 4, opcode 1, enum (scope) 1, handle 8, scalar 4,
tuple-length marker 1. An op body (OpSpec, or the body of a primitive command) is
opcode + scope + operand tuple + out handle + extra-scalar tuple:

    GEMM (a, b -> out; m, n, k):  1 + 1 + (1 + 2*8) + 8 + (1 + 3*4) = 40 bytes.
"""

from __future__ import annotations

import dataclasses

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from kernbench import tl
from kernbench.commands import (
    CompositeCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GemmCmd,
    MathCmd,
    MemRef,
    OpSpec,
    PeCpuOverheadCmd,
    Tile,
)
from kernbench.config import validate
from kernbench.config.schema import (
    AddressConfig,
    AddressModel,
    ExecPath,
    GqaWorkloadConfig,
    KernBenchConfig,
    PeCostModelConfig,
)
from kernbench.errors import ConfigError
from kernbench.runtime import DPPolicy
from kernbench.sim.cost_model import DispatchCostModel
from kernbench.sim.system import System
from kernbench.workloads import gqa
from tests.support import make_cfg, make_system

DEFAULT = DispatchCostModel(32, 0.25, 1.0)
ADR_BYTES_PER_TILE = {"gqa_opt3": 232, "gqa_opt2": 380}


def gqa_cfg(name: str, fixed: float = 32, recip: float = 0.25, **kw: object) -> KernBenchConfig:
    """A validated GQA config (default shape unless ``kw`` says otherwise)."""
    path = ExecPath(kw.pop("exec_path", "replay"))
    cfg = KernBenchConfig(workload=GqaWorkloadConfig(name=name, **kw))  # type: ignore[arg-type]
    cfg.address = AddressConfig(AddressModel.pa)  # the figures below: no TLB, no install
    cfg.topology.pe.attrs.pe_cost_model = PeCostModelConfig(fixed, recip, 1.0)
    cfg.sim.exec_path = path
    return validate(cfg)


def run_gqa(name: str, fixed: float = 32, recip: float = 0.25, **kw: object):
    """(metrics row, system) of one GQA run with the op log on."""
    system = System(gqa_cfg(name, fixed, recip, **kw), oplog=True)
    return gqa.run(system, system.cfg.workload), system


def anchor_composite() -> CompositeCmd:
    """The typical one-op DMA -> GEMM -> DMA composite: acc += Q . K with K in memory."""
    q, acc = Tile(0, (64, 128)), Tile(1, (64, 256))
    k = MemRef(0x1000, (256, 128))
    op = OpSpec("gemm", {"a": q, "b": k}, acc, {"m": 64, "n": 256, "k": 128})
    return CompositeCmd((op,), rw_handles=(acc,), tiles=4)


def test_logical_bytes_follow_the_d2_table():
    t, u = Tile(0, (64, 1)), Tile(1, (64, 1))
    assert DmaReadCmd(0, 128, t).logical_bytes == 4 + (1 + 1 + (1 + 8) + 8 + (1 + 4)) == 28
    assert DmaWriteCmd(t, 0, 128).logical_bytes == 28
    assert GemmCmd(t, u, t, 1, 1, 1).logical_bytes == 4 + 40 == 44
    assert MathCmd("exp", (t,), u).logical_bytes == 4 + (1 + 1 + (1 + 8) + 8 + 1) == 24
    assert MathCmd("max", (t,), u, {"axis": 1}).logical_bytes == 24 + 4 == 28
    assert MathCmd("add", (t, u), u).logical_bytes == 24 + 8 == 32
    # Composite: framing + ops tuple + ops + rw tuple + rw handles, recursively.
    two = CompositeCmd(anchor_composite().ops * 2, rw_handles=(t, u, t))
    assert two.logical_bytes == 4 + (1 + 2 * 40) + (1 + 3 * 8) == 110
    assert PeCpuOverheadCmd(7).logical_bytes == 0


# 1. Anchor preservation -------------------------------------------------------------
def test_anchor_preservation():
    """54 bytes, 45.5 ns: D2 makes a one-op composite 2 mod 4 bytes, so 52 is not reachable."""
    cmd = anchor_composite()
    assert cmd.logical_bytes == 4 + (1 + 40) + (1 + 8) == 54
    assert DEFAULT.dispatch_ns(cmd) == 32 + 54 * 0.25 == 45.5
    assert abs(DEFAULT.dispatch_ns(cmd) - 45) <= 1
    # Through PE_CPU: the CPU is busy 45.5 ns, then the composite runs as with free
    # dispatch (1140 ns: one 16 KiB chunk read, a round trip of 6 ns out + 40 ns HBM
    # access + 6 ns back + 64 ns of bytes = 116 ns, then 4 x 256 ns of GEMM, the later
    # chunks' reads hidden under them).
    system, ctx = make_system(make_cfg(zero_cost=False))
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))

    def kernel(ptr: int) -> None:
        q, acc = tl.zeros((64, 128)), tl.zeros((64, 256))
        gemm = tl.op("gemm", a=q, b=tl.block(ptr, (256, 128)), out=acc, m=64, n=256, k=128)
        tl.composite(gemm, rw=(acc,), tiles=4)

    end = ctx.launch(kernel, [system.graph.pes[0]], src.shard_ptr(0))[0]
    cpu = system.pes[0].cpu
    assert (cpu.busy_ns, cpu.dispatch_cycles) == (45.5, 45.5)
    assert end == 45.5 + 1140


# 2. Structural ratio ------------------------------------------------------------------
def test_structural_ratio():
    rows = {name: run_gqa(name)[0] for name in ("gqa_opt2", "gqa_opt3")}
    for name, row in rows.items():
        print(
            f"{name}: {row['logical_bytes_per_tile']:.0f} B/tile (ADR: "
            f"{ADR_BYTES_PER_TILE[name]}), {row['dispatch_cycles_per_tile']:.1f} cycles/tile"
        )
    # opt3: S composite 46; steps 1..8 = 28+32+32+24+32+44+32+24 = 248; P.V composite 54.
    assert rows["gqa_opt3"]["logical_bytes_per_tile"] == 46 + 248 + 54 == 348
    # opt2: S composite 46; the flat composite 4 + (1 + 8 steps' OpSpecs 216 + GEMM 40)
    # + (1 + 3 rw handles x 8) = 286.
    assert rows["gqa_opt2"]["logical_bytes_per_tile"] == 46 + 286 == 332
    assert rows["gqa_opt3"]["dispatch_cycles_per_tile"] == 10 * 32 + 348 * 0.25 == 407
    assert rows["gqa_opt2"]["dispatch_cycles_per_tile"] == 2 * 32 + 332 * 0.25 == 147
    ratio = (
        rows["gqa_opt3"]["dispatch_cycles_per_tile"] / rows["gqa_opt2"]["dispatch_cycles_per_tile"]
    )
    print(f"opt3/opt2 dispatch per tile: {ratio:.3f} (ADR: ~2.4)")
    assert ratio == (10 * 32 + 348 * 0.25) / (2 * 32 + 332 * 0.25)  # 2.77


def test_fixed_zero_ratio_is_the_byte_ratio():
    """With FIXED = 0 only bytes count; the test reports who wins rather than assuming."""
    opt2, opt3 = run_gqa("gqa_opt2", fixed=0)[0], run_gqa("gqa_opt3", fixed=0)[0]
    ratio = opt3["dispatch_cycles_per_tile"] / opt2["dispatch_cycles_per_tile"]
    assert ratio == opt3["logical_bytes_per_tile"] / opt2["logical_bytes_per_tile"] == 348 / 332
    winner = "opt2" if ratio > 1 else "opt3"
    print(f"FIXED=0: opt3/opt2 = {ratio:.4f}; fewer dispatch cycles: {winner}")
    print(f"latency opt2 {opt2['kernel_latency_ns']} ns, opt3 {opt3['kernel_latency_ns']} ns")


# 3. Override path ---------------------------------------------------------------------
def _one_load_busy_ns(cfg: KernBenchConfig) -> float:
    system, ctx = make_system(cfg)
    src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
    ctx.launch(
        lambda p: tl.load(p, (4096,), dtype_bytes=1), [system.graph.pes[1]], src.shard_ptr(0)
    )
    return system.pes[1].cpu.busy_ns


def _write_topology(tmp_path, block: str) -> str:
    (tmp_path / "topology").mkdir(exist_ok=True)
    text = f"defaults:\n  - default\n  - _self_\nname: custom\npe:\n  attrs:\n{block}"
    (tmp_path / "topology" / "custom.yaml").write_text(text)
    return f"hydra.searchpath=[file://{tmp_path}]"


def test_override_path(compose_cfg, tmp_path):
    block = "    pe_cost_model:\n      fixed_per_cmd_cycles: 8\n"
    search = _write_topology(tmp_path, block)
    custom = validate(OmegaConf.to_object(compose_cfg(search, "topology=custom")))
    # Only FIXED given: R and the clock fall back to the defaults.
    assert custom.topology.pe.attrs.pe_cost_model == PeCostModelConfig(8, 0.25, 1.0)
    system = System(custom)
    every = {system.pes[pe.index].cpu.cost for pe in system.graph.pes}  # each PE, built
    assert every == {DispatchCostModel(8, 0.25, 1.0)}
    assert _one_load_busy_ns(custom) == 8 + 28 * 0.25 == 15  # a DmaReadCmd is 28 bytes
    # No block: the default returns.
    plain = validate(OmegaConf.to_object(compose_cfg()))
    assert plain.topology.pe.attrs.pe_cost_model == PeCostModelConfig()
    assert _one_load_busy_ns(plain) == 32 + 28 * 0.25 == 39
    # The group still overrides, and a key=value override wins over the topology's block.
    zero = OmegaConf.to_object(compose_cfg(search, "topology=custom", "pe_cost_model=zero"))
    assert _one_load_busy_ns(validate(zero)) == 0
    key = "topology.pe.attrs.pe_cost_model.byte_cycles_recip=1"
    one = OmegaConf.to_object(compose_cfg(search, "topology=custom", key))
    assert _one_load_busy_ns(validate(one)) == 8 + 28 * 1.0


# 4. PeCpuOverheadCmd bypass ---------------------------------------------------------
def test_pe_cpu_overhead_bypass():
    system, ctx = make_system(make_cfg(zero_cost=False))
    end = ctx.launch(lambda: tl.cycles(100), [system.graph.pes[0]])[0]
    cpu = system.pes[0].cpu
    assert (end, cpu.busy_ns, cpu.dispatch_cycles) == (100, 100, 100)  # not 100 + 32 + ...
    # At 2 GHz the same 100 cycles are 50 ns, still with no formula on top.
    cfg = make_cfg(zero_cost=False)
    model = dataclasses.replace(cfg.topology.pe.attrs.pe_cost_model, clock_freq_ghz=2.0)
    cfg.topology.pe.attrs.pe_cost_model = model
    system, ctx = make_system(cfg)
    assert ctx.launch(lambda: tl.cycles(100), [system.graph.pes[0]])[0] == 50


# 5. No double count -------------------------------------------------------------------
def _engine_times(fixed: float, recip: float) -> dict[str, object]:
    """Each DMA request's time on the fabric (start of transfer to completion), in issue
    order, and per compute engine the stages it ran and the time it was busy (one slot:
    the sum of their durations). A read's transfer starts when its bytes leave HBM
    (DESIGN §13.1: after its request's way out and the access), a write's when they
    leave the DMA."""
    times: dict[str, object] = {}
    dma: list[float] = []

    def trace(pe, stage, issue, request, begin, done) -> None:
        if pe.index == 0:
            dma.append(done - begin)

    system = System(gqa_cfg("gqa_opt3", fixed, recip), trace=trace)
    gqa.run(system, system.cfg.workload)
    times["dma"] = dma
    for name in ("gemm", "math"):
        engine = system.pes[0].engines[name]
        times[name] = (engine.stages_done, engine.busy_ns)
    return times


def test_no_double_count():
    zero, default = _engine_times(0, 0), _engine_times(32, 0.25)
    assert zero == default
    # 16 tiles x 2 GEMMs of 2 x 4 x 128 x 128 flops at 4096 flops/ns = 32 ns each.
    assert zero["gemm"] == (32, 32 * 32.0)
    assert zero["math"][0] == 16 * 8 + 1
    # Reads from their bytes leaving HBM: 6 ns of links back + the drain at 256 GB/s,
    # nothing after. Q (4 x 128 fp16 = 1 KiB): 6 + 4; then per tile K and V
    # (128 x 128 fp16 = 32 KiB): 6 + 128. The write of O (1 KiB): 6 ns of links out +
    # 4 ns drain + 40 ns HBM access.
    assert zero["dma"] == [10.0] + [134.0] * 32 + [50.0]


# 6. Determinism -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gqa_opt2", "gqa_opt3"])
def test_determinism(name):
    (row_a, sys_a), (row_b, sys_b) = run_gqa(name), run_gqa(name)
    assert row_a == row_b
    assert sys_a.oplog.entries == sys_b.oplog.entries
    assert len(sys_a.oplog.entries) > 0


# 7. Path parity -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gqa_opt2", "gqa_opt3"])
def test_path_parity(name):
    (replay, sys_r), (glet, sys_g) = run_gqa(name), run_gqa(name, exec_path="greenlet")
    assert replay == glet
    cpu_r, cpu_g = sys_r.pes[0].cpu, sys_g.pes[0].cpu
    assert cpu_r.dispatch_cycles == cpu_g.dispatch_cycles
    assert cpu_r.commands == cpu_g.commands
    # Per command, in order: its logical bytes and cycles (the workload's recorder),
    # and in the op log its kind and dispatch time.
    assert cpu_r.cost.logical_bytes == cpu_g.cost.logical_bytes
    assert cpu_r.cost.cycles == cpu_g.cost.cycles
    assert sys_r.oplog.entries == sys_g.oplog.entries


def test_path_parity_with_overhead_and_back_pressure():
    """tl.cycles and a full scheduler queue take the same path through both sources."""

    def kernel(ptr: int) -> None:
        tl.cycles(10)
        for i in range(6):
            tl.load(ptr + i * 4096, (4096,), dtype_bytes=1)

    ends = {}
    for path in ExecPath:
        cfg = make_cfg(zero_cost=False)
        cfg.sim.exec_path = path
        cfg.topology.pe = dataclasses.replace(cfg.topology.pe, scheduler_queue_depth=2)
        system, ctx = make_system(cfg)
        src = ctx.deploy(1 << 20, DPPolicy("column_wise", "all"))
        ends[path] = ctx.launch(kernel, [system.graph.pes[0]], src.shard_ptr(0))[0]
        assert system.pes[0].cpu.dispatch_cycles == 10 + 6 * 39
    assert ends[ExecPath.replay] == ends[ExecPath.greenlet]


# Bad input ---------------------------------------------------------------------------
KEY = "topology.pe.attrs.pe_cost_model"
BAD_VALUES = [
    (f"{KEY}.fixed_per_cmd_cycles=-1", f"{KEY}.fixed_per_cmd_cycles", "-1.0 is not >= 0"),
    (f"{KEY}.byte_cycles_recip=-0.25", f"{KEY}.byte_cycles_recip", "-0.25 is not >= 0"),
    (f"{KEY}.clock_freq_ghz=0", f"{KEY}.clock_freq_ghz", "0.0 is not > 0"),
    (
        f"+{KEY}.fixed_cycles=1",
        f"{KEY}.fixed_cycles",
        "no such key in topology.pe.attrs.pe_cost_model (its keys: ",
    ),
]


@pytest.mark.parametrize(("override", "key", "text"), BAD_VALUES)
def test_bad_cost_model_names_the_key(compose_cfg, override, key, text):
    with pytest.raises(ConfigError) as info:
        validate(OmegaConf.to_object(compose_cfg(override)))
    assert info.value.key == key
    assert text in str(info.value)


def test_unknown_cost_model_key_in_yaml_names_it(compose_cfg, tmp_path):
    search = _write_topology(tmp_path, "    pe_cost_model:\n      fixed_cycles: 8\n")
    with pytest.raises(ConfigCompositionException) as info:
        compose_cfg(search, "topology=custom")
    message = f"{info.value} {info.value.__cause__}"
    assert "fixed_cycles" in message and "PeCostModelConfig" in message

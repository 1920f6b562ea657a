"""Roofline bounds of kernel launches, derived by hand from the configuration, and the
decode step's bottlenecks (DESIGN §13.2).

topology=small: 1 SIP x 2 cubes x 2 PEs = 4 PEs; 16 pseudo-channels per cube at 32 GB/s,
so 8 channels and 8 x 32 = 256 GB/s of HBM per PE (n:1: one aggregate link, which reads
and writes share); GEMM 4096 flop/ns and MATH 64 elements/ns per PE (1 GHz).
"""

from __future__ import annotations

import pytest
import torch

from kernbench.runtime.context import DPPolicy
from kernbench.sim.system import System
from kernbench.triton import Accelerator, decoder, roofline
from kernbench.triton import kernels as k
from kernbench.triton.accelerator import compose_config

PES = 4
HBM_GBS = 8 * 32.0  # per PE: channels x channel bandwidth (bytes/ns)
GEMM_FLOP_PER_NS = 4096.0
MATH_ELEM_PER_NS = 64.0
F32 = 4


@pytest.fixture
def acc():
    with Accelerator(["topology=small", "address=la"], mapping="block") as a:
        yield a


def test_config_gives_the_rates_used_here(acc):
    topo = acc.system.cfg.topology
    mm, pe = topo.cube.memory_map, topo.pe
    assert len(acc.system.graph.pes) == PES
    assert mm.hbm_channels_per_pe * mm.hbm_channel_bw_gbs == HBM_GBS
    assert pe.gemm_flops_per_cycle * pe.clock_ghz == GEMM_FLOP_PER_NS
    assert pe.math_elems_per_cycle * pe.clock_ghz == MATH_ELEM_PER_NS


def test_gemv_projection_bound_is_its_weight_bytes_over_the_pes_hbm(acc):
    # y (1, 64) = x (1, 256) @ W.T with W (64, 256) fp32 split by rows over the 4 PEs:
    # 4 programs of 16 output rows (block mapping: program i on PE i, its rows local),
    # each reading all of x (64 elements from each PE) in K blocks of 64.
    n, kk, block_n = 64, 256, 16
    x = acc.tensor(torch.randn(1, kk))
    w = acc.tensor(torch.randn(n, kk))
    y = acc.empty((1, n), torch.float32)
    programs = n // block_n
    acc.pes = programs
    blocks = {"BLOCK_SIZE_M": 1, "BLOCK_SIZE_N": block_n, "BLOCK_SIZE_K": 64}
    res = acc.run(
        k.matmul, (programs,), x, w, y, 1, n, kk, kk, 1, 1, kk, n, 1, **blocks, GROUP_SIZE_M=8
    )
    bound = roofline.roofline(acc.system, res.work)
    # One PE's HBM carries its weight rows, its quarter of x once per program, and
    # its quarter of y; every PE the same, so the busiest is any one.
    weights = n // PES * kk * F32  # 16 KiB
    x_reads = programs * (kk // PES) * F32  # 1 KiB
    y_writes = n // PES * F32  # 64 B
    assert bound.memory_ns == (weights + x_reads + y_writes) / HBM_GBS  # 68.25 ns
    # ... of which the weights: all their bytes over the 4 PEs' aggregate bandwidth
    assert weights / HBM_GBS == n * kk * F32 / (PES * HBM_GBS) == 64.0
    assert bound.gemm_ns == 2 * 1 * block_n * kk / GEMM_FLOP_PER_NS  # one program per PE
    assert bound.math_ns == 0  # fp32 accumulator stored as fp32: no cast
    assert (bound.limit, bound.bound_ns) == ("memory", bound.memory_ns)
    assert bound.resource == "sip0.cube0.pe0.agg_router<->sip0.cube0.hbm_ctrl"
    assert res.kernel_latency_ns >= bound.bound_ns


def test_residual_add_bound_is_three_shards_over_one_pes_hbm(acc):
    # x += y over 4096 fp32 split over the 4 PEs, blocks of 1024 = one shard each: each
    # PE reads its shards of x and y and writes its shard of x (3 x 4 KiB), and adds
    # 1024 elements.
    n, block = 4096, 1024
    x = acc.tensor(torch.randn(n), DPPolicy("column_wise", PES))
    y = acc.tensor(torch.randn(n), DPPolicy("column_wise", PES))
    acc.pes = PES
    res = acc.run(k.residual_add, (n // block,), x, y, n, BLOCK_SIZE=block)
    bound = roofline.roofline(acc.system, res.work)
    assert bound.memory_ns == 3 * (n // PES) * F32 / HBM_GBS == 48.0
    assert bound.math_ns == (n // PES) / MATH_ELEM_PER_NS == 16.0  # one add per element
    assert bound.gemm_ns == 0
    assert bound.limit == "memory"
    assert res.kernel_latency_ns >= bound.bound_ns


def test_batch_one_decode_is_memory_bound_in_every_projection():
    # the decoder_small preset (default topology and dispatch cost), one sequence
    cfg = compose_config(["workload=decoder_layer", "workload.batch=1"])
    launches = decoder.run(System(cfg), cfg.workload).kernels
    projections = [r for r in launches if r["kernel"].endswith("_proj")]
    assert [r["kernel"] for r in projections] == [
        "qkv_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ]
    for r in projections:
        assert r["bottleneck"] == "dma", r
        assert r["roofline_limit"] == "memory", r
    for r in launches:
        assert r["kernel_latency_ns"] >= r["roofline_bound_ns"] > 0

"""``workload=decoder_layer``: one decode step of a Llama-style layer from Triton kernels.

DESIGN §13.2. The step is 14 launches of plain ``@triton.jit`` kernels
(:mod:`kernbench.triton.kernels`), every intermediate a device tensor:

    attn_norm (rms_norm) -> qkv_proj (matmul) -> rotary_q, rotary_k (rotary: Q to its
    buffer, K into the cache's new slot) -> v_append (kv_append) -> attention
    (decode_attention) -> o_proj (matmul) -> attn_residual (residual_add, in place) ->
    mlp_norm (rms_norm) -> gate_proj, up_proj (matmul) -> silu_mul -> down_proj
    (matmul) -> mlp_residual (residual_add)

Where tensors live (``workload.placement``, docs/explanation/studies.md, "Decoder
layer"): a projection's weight, ``(out_features, in_features)``, is split by rows over
the PEs that run its programs, and its programs go to those PEs in blocks
(``mapping="block"``), so a program reads the rows it needs from its own PE when the
blocks divide evenly; the KV cache likewise over the attention's PEs, one
``(sequence, KV head)`` slab per program; activations over every PE.

The row (:func:`layer_row`) sums the launches and names the one that took longest; the
per-launch rows (:func:`kernel_row`, with their roofline) go to ``kernels.parquet``.
Inputs and the torch reference are in :mod:`kernbench.triton.decoder_reference`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
import triton

from kernbench.config.schema import DecoderLayerWorkloadConfig
from kernbench.results.kernels import WithKernels
from kernbench.runtime.context import DPPolicy
from kernbench.sim.metrics import bottleneck
from kernbench.sim.system import System
from kernbench.triton import hook, kernels, roofline
from kernbench.triton.accelerator import Accelerator, DeviceTensor, TritonRun
from kernbench.triton.decoder_reference import HostLayer, dtype_of, inputs, reference
from kernbench.triton.metrics import UNITS

# Counts a launch row carries that the layer row sums.
SUMMED = ("commands", "dma_commands", "gemm_commands", "math_commands", "bytes_moved")


@dataclass
class Step:
    """One launch: ``kernel[grid](*args, **kwargs)`` on the first ``pes`` PEs."""

    name: str
    kernel: Any
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    pes: int = 1


class Layer:
    """The layer's device tensors on one accelerator, and its steps in order."""

    def __init__(self, acc: Accelerator, w: DecoderLayerWorkloadConfig, host: HostLayer):
        self.acc, self.w = acc, w
        self.n_pes = len(acc.system.graph.pes)
        self.block_m = triton.next_power_of_2(w.batch)  # the batch: one block of rows
        self.attn_pes = min(w.batch * w.kv_heads, self.n_pes)
        self.deployed: list[DeviceTensor] = []
        self._deploy_inputs(host)
        self._allocate_intermediates()

    def _deploy_inputs(self, host: HostLayer) -> None:
        """Weights over their projections' PEs, caches over the attention's, the rest
        over every PE (``workload.placement``)."""
        w, p = self.w, self.w.placement
        self.x = self._put(host.x, p.activations)
        self.attn_norm = self._put(host.attn_norm, p.activations)
        self.mlp_norm = self._put(host.mlp_norm, p.activations)
        self.cos = self._put(host.cos, p.activations)
        self.sin = self._put(host.sin, p.activations)
        self.w_qkv = self._put(host.w_qkv, p.weights, self._proj_pes(self.qkv_cols))
        self.w_o = self._put(host.w_o, p.weights, self._proj_pes(w.hidden))
        self.w_gate = self._put(host.w_gate, p.weights, self._proj_pes(w.ffn))
        self.w_up = self._put(host.w_up, p.weights, self._proj_pes(w.ffn))
        self.w_down = self._put(host.w_down, p.weights, self._proj_pes(w.hidden))
        self.k_cache = self._put(host.k_cache, p.kv_cache, self.attn_pes)
        self.v_cache = self._put(host.v_cache, p.kv_cache, self.attn_pes)

    def _allocate_intermediates(self) -> None:
        w = self.w
        self.h, self.h2, self.o, self.down = (self._empty(w.hidden) for _ in range(4))
        self.qkv = self._empty(self.qkv_cols)
        self.q, self.attn = self._empty(self.q_cols), self._empty(self.q_cols)
        self.gate, self.up, self.act = (self._empty(w.ffn) for _ in range(3))

    @property
    def q_cols(self) -> int:
        return self.w.heads * self.w.head_dim

    @property
    def qkv_cols(self) -> int:
        return (self.w.heads + 2 * self.w.kv_heads) * self.w.head_dim

    # -- tensors ---------------------------------------------------------------------
    def _put(self, data: Any, cube: str, pes: int | None = None) -> DeviceTensor:
        t = self.acc.tensor(data, DPPolicy(cube, pes or "all"))
        self.deployed.append(t)
        return t

    def _empty(self, features: int) -> DeviceTensor:
        """An activation ``(batch, features)`` in the layer's dtype, over every PE."""
        policy = DPPolicy(self.w.placement.activations, "all")
        t = self.acc.empty((self.w.batch, features), dtype_of(self.w), policy)
        self.deployed.append(t)
        return t

    def _proj_programs(self, out_features: int) -> int:
        return triton.cdiv(self.w.batch, self.block_m) * triton.cdiv(out_features, self.w.block_n)

    def _proj_pes(self, out_features: int) -> int:
        """The PEs a projection with ``out_features`` runs on: one per program at most."""
        return min(self._proj_programs(out_features), self.n_pes)

    # -- steps -----------------------------------------------------------------------
    def steps(self) -> list[Step]:
        w, q_cols = self.w, self.q_cols
        return [
            self._norm("attn_norm", self.x, self.attn_norm, self.h),
            self._proj("qkv_proj", self.h, self.w_qkv, self.qkv, self.qkv_cols, w.hidden),
            *self._rotary_and_append(),
            self._attention(),
            self._proj("o_proj", self.attn, self.w_o, self.o, w.hidden, q_cols),
            self._residual("attn_residual", self.o),
            self._norm("mlp_norm", self.x, self.mlp_norm, self.h2),
            self._proj("gate_proj", self.h2, self.w_gate, self.gate, w.ffn, w.hidden),
            self._proj("up_proj", self.h2, self.w_up, self.up, w.ffn, w.hidden),
            self._elementwise("silu_mul", kernels.silu_mul, (self.gate, self.up, self.act)),
            self._proj("down_proj", self.act, self.w_down, self.down, w.hidden, w.ffn),
            self._residual("mlp_residual", self.down),
        ]

    def _norm(self, name: str, x: DeviceTensor, weight: DeviceTensor, out: DeviceTensor) -> Step:
        w = self.w
        args = (x, weight, out, w.hidden, w.hidden, w.rms_eps)
        block = {"BLOCK_SIZE": triton.next_power_of_2(w.hidden)}
        return Step(name, kernels.rms_norm, (w.batch,), args, block, min(w.batch, self.n_pes))

    def _proj(
        self, name: str, x: DeviceTensor, weight: DeviceTensor, out: DeviceTensor, n: int, k: int
    ) -> Step:
        """``out = x @ weight.T`` by Triton's tutorial matmul, the weight read as a
        ``(k, n)`` matrix through its strides."""
        w = self.w
        grid = (self._proj_programs(n),)
        strides = (k, 1, 1, k, n, 1)  # x (batch, k); weight (n, k) as (k, n); out (batch, n)
        blocks = {"BLOCK_SIZE_M": self.block_m, "BLOCK_SIZE_N": w.block_n}
        blocks |= {"BLOCK_SIZE_K": w.block_k, "GROUP_SIZE_M": 8}
        args = (x, weight, out, w.batch, n, k, *strides)
        return Step(name, kernels.matmul, grid, args, blocks, self._proj_pes(n))

    def _rotary_and_append(self) -> list[Step]:
        """Rotary on Q (into its buffer) and K (into the cache's new slot), V copied to
        its slot; each program one sequence's block of ``block_heads`` heads."""
        w = self.w
        half = w.head_dim // 2
        rot = {"BLOCK_H": w.block_heads, "BLOCK": triton.next_power_of_2(half)}
        copy = {"BLOCK_H": w.block_heads, "BLOCK": triton.next_power_of_2(w.head_dim)}
        q_out = (0, self.q_cols, w.head_dim)  # offset, token stride, head stride
        q_grid = (w.batch, triton.cdiv(w.heads, w.block_heads))
        kv_grid = (w.batch, triton.cdiv(w.kv_heads, w.block_heads))
        q_args = (self.qkv, self.q, self.cos, self.sin, 0, self.qkv_cols, *q_out, w.heads, half)
        k_args = (self.qkv, self.k_cache, self.cos, self.sin, self.q_cols, self.qkv_cols)
        k_args += (*self._new_slot(), w.kv_heads, half)
        v_args = (self.qkv, self.v_cache, self.q_cols + w.kv_heads * w.head_dim, self.qkv_cols)
        v_args += (*self._new_slot(), w.kv_heads, w.head_dim)
        return [
            Step("rotary_q", kernels.rotary, q_grid, q_args, rot, self._pes(q_grid)),
            Step("rotary_k", kernels.rotary, kv_grid, k_args, rot, self._pes(kv_grid)),
            Step("v_append", kernels.kv_append, kv_grid, v_args, copy, self._pes(kv_grid)),
        ]

    def _new_slot(self) -> tuple[int, int, int]:
        """Where the step's token goes in a KV cache (elements): the slot's offset in a
        head, a sequence's stride and a head's."""
        w = self.w
        slots = w.context_tokens + 1
        return w.context_tokens * w.head_dim, w.kv_heads * slots * w.head_dim, slots * w.head_dim

    def _attention(self) -> Step:
        """One program per (sequence, KV head) over its cache slab, which is on its PE."""
        w = self.w
        scale = 1.0 / math.sqrt(w.head_dim)
        args = (self.q, self.k_cache, self.v_cache, self.attn, w.context_tokens + 1, scale)
        consts = {"GROUP": w.heads // w.kv_heads, "HEAD_DIM": w.head_dim}
        consts["BLOCK_N"] = w.attn_block_n
        grid = (w.batch * w.kv_heads,)
        return Step("attention", kernels.decode_attention, grid, args, consts, self.attn_pes)

    def _residual(self, name: str, y: DeviceTensor) -> Step:
        n = self.w.batch * self.w.hidden
        grid = (triton.cdiv(n, self.w.block_size),)
        return Step(
            name, kernels.residual_add, grid, (self.x, y, n), self._block(), self._pes(grid)
        )

    def _elementwise(self, name: str, kernel: Any, tensors: tuple[DeviceTensor, ...]) -> Step:
        n = self.w.batch * self.w.ffn
        grid = (triton.cdiv(n, self.w.block_size),)
        return Step(name, kernel, grid, (*tensors, n), self._block(), self._pes(grid))

    def _block(self) -> dict[str, int]:
        return {"BLOCK_SIZE": self.w.block_size}

    def _pes(self, grid: tuple[int, ...]) -> int:
        return min(math.prod(grid), self.n_pes)


@dataclass
class Outcome:
    """A step's result, with the layer's output as the device holds it and as torch
    computes it (tests compare the two within the dtype's tolerance)."""

    result: WithKernels
    output: torch.Tensor
    expected: torch.Tensor


def run(system: System, w: DecoderLayerWorkloadConfig) -> WithKernels:
    """Deploy the layer, run its steps in order, check the output against torch."""
    return run_step(system, w).result


def run_step(system: System, w: DecoderLayerWorkloadConfig) -> Outcome:
    """:func:`run`, also returning the output and the torch reference."""
    host = inputs(w)
    acc = Accelerator(system=system, mapping="block")
    layer = Layer(acc, w, host)
    rows = []
    for i, step in enumerate(layer.steps()):
        acc.pes = step.pes
        res = acc.run(step.kernel, step.grid, *step.args, **step.kwargs)
        rows.append(kernel_row(system, i, step, res))
    output, expected = acc.to_torch(layer.x), reference(host, w)
    row = layer_row(rows)
    row["install_latency_ns"] = sum(t.runtime.install_latency_ns for t in layer.deployed)
    row["install_bytes"] = sum(t.runtime.install_bytes for t in layer.deployed)
    row["max_abs_error"] = float((output.double() - expected.double()).abs().max().item())
    return Outcome(WithKernels(row, rows), output, expected)


def kernel_row(system: System, launch: int, step: Step, res: TritonRun) -> dict[str, Any]:
    """One launch's row of ``kernels.parquet``: its metrics, work and roofline."""
    m, work = res.metrics, res.work
    assert work is not None  # Accelerator.run always measures it
    row: dict[str, Any] = {"launch": launch, "kernel": step.name}
    row["triton_kernel"] = hook.python_function(step.kernel).__name__
    row["kernel_latency_ns"] = res.kernel_latency_ns
    for key in ("programs", "active_pe_count", *SUMMED, "dispatch_cycles_total"):
        row[key] = m[key]
    row["flops"] = work.total_flops
    row["math_elements"] = work.total_elements
    for unit in UNITS:
        row[f"{unit}_utilization"] = m[f"{unit}_utilization"]
    row["bottleneck"] = m["bottleneck"]
    return row | roofline.columns(roofline.roofline(system, work), res.kernel_latency_ns)


def layer_row(kernel_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The step's row: the launches' sums (they run one after another, so latencies
    add up), utilisations weighted by latency, and the launch that took longest."""
    latency = sum(r["kernel_latency_ns"] for r in kernel_rows)
    row: dict[str, Any] = {"kernel_latency_ns": latency, "sim_time_ns": latency}
    row["kernels"] = len(kernel_rows)
    for key in (*SUMMED, "dispatch_cycles_total", "flops", "math_elements"):
        row[key] = sum(r[key] for r in kernel_rows)
    for unit in UNITS:
        busy = sum(r[f"{unit}_utilization"] * r["kernel_latency_ns"] for r in kernel_rows)
        row[f"{unit}_utilization"] = busy / latency if latency > 0 else 0.0
    row["bottleneck"] = bottleneck(row)
    row["cpu_bound_kernels"] = sum(r["bottleneck"] == "cpu" for r in kernel_rows)
    bound = sum(r["roofline_bound_ns"] for r in kernel_rows)
    row["roofline_bound_ns"] = bound
    row["roofline_efficiency"] = bound / latency if latency > 0 else 0.0
    top = max(kernel_rows, key=lambda r: r["kernel_latency_ns"])
    row["dominant_kernel"] = top["kernel"]
    row["dominant_kernel_share"] = top["kernel_latency_ns"] / latency if latency > 0 else 0.0
    return row

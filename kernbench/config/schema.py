"""Structured-config schemas: every key a user can type, with its type and default.

This module owns the *shape* of the configuration (DESIGN §2, §8). YAML files under
``conf/`` hold values only and are checked against these dataclasses by OmegaConf,
so an unknown key or a wrong type is an error naming the key. Cross-field rules
(divisibility, positivity) live in :mod:`kernbench.config.validate`; registration
with Hydra's ConfigStore lives in :mod:`kernbench.config.store`.

Units are part of every name: ``_ns`` nanoseconds, ``_gbs`` GB/s (= bytes/ns),
``_bytes`` bytes, ``_cycles`` cycles, ``_ghz`` GHz.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING


class HbmMappingMode(Enum):
    """How a PE's pseudo-channels are modelled (ADR-0011 D-LA2)."""

    one_to_one = "one_to_one"
    n_to_one = "n_to_one"


class AddressModel(Enum):
    """Which address space kernels see (ADR-0011)."""

    pa = "pa"
    va = "va"
    la = "la"


class TlbCharge(Enum):
    """When the VA model charges ``tlb_overhead_ns`` (ADR-0011 D-VA2: per access)."""

    per_access = "per_access"
    per_page = "per_page"


class ExecPath(Enum):
    """How kernel code is driven (DESIGN §3.5)."""

    replay = "replay"
    greenlet = "greenlet"


class FabricModel(Enum):
    """How links are shared under contention (DESIGN §3.2)."""

    fair = "fair"  # max-min fair between requesters, age priority within one
    reservation = "reservation"  # the first design: book every link from one start


class StreamOp(Enum):
    read = "read"
    write = "write"
    copy = "copy"


class StreamPattern(Enum):
    """Whose memory each stream access targets (DESIGN §5, traffic patterns)."""

    local = "local"  # each PE its own shard
    neighbor = "neighbor"  # the next PE in its cube
    hotspot = "hotspot"  # every PE the one PE workload.hotspot_pe
    cross_cube = "cross_cube"  # the PE with the same index in the next cube
    uniform = "uniform"  # a PE drawn per access (workload.seed)


@dataclass
class MemoryMapConfig:
    """HBM organisation of one cube (ADR-0011 D-LA2); `channel_mapping` lands here."""

    hbm_mapping_mode: HbmMappingMode = HbmMappingMode.n_to_one
    hbm_pseudo_channels: int = 64
    # Derived as hbm_pseudo_channels / pes_per_cube; a given value must agree.
    hbm_channels_per_pe: int | None = None
    hbm_channel_bw_gbs: float = 32.0
    hbm_channel_bytes: int = 256 * 1024 * 1024
    interleave_bytes: int = 256
    hbm_access_latency_ns: float = 40.0


@dataclass
class CubeConfig:
    memory_map: MemoryMapConfig = field(default_factory=MemoryMapConfig)


@dataclass
class PeCostModelConfig:
    """ADR-0064 D1/D3: cycles = fixed_per_cmd_cycles + logical_bytes * byte_cycles_recip."""

    fixed_per_cmd_cycles: float = 32.0
    byte_cycles_recip: float = 0.25
    clock_freq_ghz: float = 1.0


@dataclass
class PeAttrsConfig:
    pe_cost_model: PeCostModelConfig = field(default_factory=PeCostModelConfig)


@dataclass
class PeConfig:
    """One processing element: engine rates, scheduler queue, local memory."""

    attrs: PeAttrsConfig = field(default_factory=PeAttrsConfig)
    clock_ghz: float = 1.0
    gemm_flops_per_cycle: int = 4096
    math_elems_per_cycle: int = 64
    scheduler_queue_depth: int = 16
    dma_max_outstanding: int = 16
    composite_buffers: int = 2
    tcm_bytes: int = 8 * 1024 * 1024


@dataclass
class PeMmuConfig:
    """VA-model MMU (ADR-0011 D-VA2/D-VA5). ``tlb_charge``: ``per_access`` pays
    ``tlb_overhead_ns`` once per DMA access (the ADR); ``per_page`` once per page it
    touches (an access crossing page boundaries is split there either way)."""

    page_size: int = 4096
    tlb_overhead_ns: float = 2.0
    tlb_charge: TlbCharge = TlbCharge.per_access


@dataclass
class LinksConfig:
    """Bandwidth and latency of every link class of the topology graph (DESIGN §3.1).

    The DMA-to-router and router-to-HBM links take their bandwidth from the memory map
    (one channel, or N channels aggregated); only their latencies are set here.
    """

    dma_router_latency_ns: float = 2.0
    router_hbm_latency_ns: float = 4.0
    pe_noc_bw_gbs: float = 128.0
    pe_noc_latency_ns: float = 5.0
    noc_router_latency_ns: float = 3.0
    noc_noc_bw_gbs: float = 64.0
    noc_noc_latency_ns: float = 20.0
    pcie_bw_gbs: float = 32.0
    pcie_latency_ns: float = 500.0
    ctrl_bw_gbs: float = 8.0
    ctrl_latency_ns: float = 50.0


@dataclass
class ControlConfig:
    """The control plane (DESIGN §3.3, §13.1): each component's processing time per
    message, and what an install message weighs, so that a hop's ``size / bandwidth``
    grows with what the message carries (:mod:`kernbench.sim.control`).

    A message is ``msg_header_bytes`` plus one entry per page it maps or unmaps
    (``pte_bytes``: ``MmuMapMsg``, ``MmuUnmapMsg``) or per segment it installs or
    removes (``baaw_segment_bytes``: ``BaawSegment*Msg``). The defaults' reasons are
    in ``conf/topology/default.yaml``.
    """

    pcie_ep_processing_ns: float = 40.0
    io_cpu_processing_ns: float = 200.0
    m_cpu_processing_ns: float = 100.0
    mmu_processing_ns: float = 10.0
    dma_processing_ns: float = 10.0
    msg_header_bytes: int = 16
    pte_bytes: int = 16
    baaw_segment_bytes: int = 32


@dataclass
class TopologyConfig:
    name: str = "default"
    n_sips: int = 1
    cubes_per_sip: int = 2
    pes_per_cube: int = 8
    cube: CubeConfig = field(default_factory=CubeConfig)
    pe: PeConfig = field(default_factory=PeConfig)
    pe_mmu: PeMmuConfig = field(default_factory=PeMmuConfig)
    links: LinksConfig = field(default_factory=LinksConfig)
    control: ControlConfig = field(default_factory=ControlConfig)


def hbm_alignment(topology: TopologyConfig) -> int:
    """Where every HBM allocation starts (the allocator, :mod:`kernbench.address.
    pa_model`, and the validation rules that check tensors fit): whole pages and whole
    interleave stripes (g x N), so an LA 1:1 segment starts on channel 0 and covers
    whole stripes. Their least common multiple: with N not a power of two (17 channels
    per PE) the larger of the two is not a multiple of the page."""
    mm = topology.cube.memory_map
    stripe = mm.interleave_bytes * (mm.hbm_channels_per_pe or 1)
    return math.lcm(topology.pe_mmu.page_size, stripe)


@dataclass
class AddressConfig:
    # ADR-0011: VA is the default; PA stays as PE_DMA's PageFault fallback.
    model: AddressModel = AddressModel.va


@dataclass
class WorkloadConfig:
    """Fields every workload has; each workload option extends it."""

    name: str = MISSING


@dataclass
class StreamWorkloadConfig(WorkloadConfig):
    """Bandwidth stream (DESIGN §5): each active PE walks a shard chosen by ``pattern``."""

    name: str = "stream"
    op: StreamOp = StreamOp.read
    access_bytes: int = 65536
    bytes_per_pe: int = 4 * 1024 * 1024
    align_offset_bytes: int = 0
    # A count of PEs ("1", "16"; written 1 or "1" alike) or "all": text either way, so
    # the result column has one type in every table (validation checks the count).
    active_pes: str = "all"
    outstanding: int = 4
    pattern: StreamPattern = StreamPattern.local
    # hotspot: the global index (sip, cube, pe order) of the PE every access targets.
    hotspot_pe: int = 0
    # uniform: seed of the generator that draws each access's target PE.
    seed: int = 0


@dataclass
class GqaWorkloadConfig(WorkloadConfig):
    """GQA fused attention (DESIGN §5): one PE per KV head, online softmax over KV tiles.

    ``name`` picks the variant: ``gqa_opt2`` (2 commands per tile) or ``gqa_opt3`` (10).
    Each PE computes ``query_heads / kv_heads`` heads x ``query_tokens`` rows against
    ``seq_tokens`` keys and values, ``tile_tokens`` at a time; ``sub_tiles`` is how many
    pieces PE_SCHEDULER cuts each composite into to overlap its DMA and compute.
    """

    name: str = "gqa_opt3"
    query_heads: int = 8
    kv_heads: int = 2
    head_dim: int = 128
    seq_tokens: int = 2048
    tile_tokens: int = 128
    # Decode: one new token per query head.
    query_tokens: int = 1
    dtype_bytes: int = 2
    sub_tiles: int = 1


@dataclass
class TritonWorkloadConfig(WorkloadConfig):
    """A ``@triton.jit`` kernel on the model (DESIGN §10; needs the ``[triton]`` extra).

    ``kernel`` names a shipped kernel (``vector_add``, ``softmax``, ``matmul``,
    ``layer_norm``, ``decode_attention``) or a user's ``pkg.module:fn``, with its input
    maker ``fn_case`` beside it. Each kernel reads the size keys it needs: ``size``
    (vector_add); ``rows``, ``cols`` (softmax, layer_norm; one program per row);
    ``m``, ``n``, ``k`` and ``block_m/n/k`` (matmul); ``num_heads``, ``num_kv_heads``,
    ``seq_len``, ``head_dim`` (decode_attention, its KV tile is ``block_n`` tokens).
    ``block_size`` is vector_add's block. Programs go to the first ``pes`` PEs by ``mapping``
    (``cyclic`` | ``block``); tensors are placed by ``placement`` (the runtime's
    ``DPPolicy.cube``: ``column_wise``, ``row_wise``, ``replicate``).
    """

    name: str = "triton"
    kernel: str = "vector_add"
    dtype: str = "float32"
    size: int = 98432
    block_size: int = 1024
    rows: int = 64
    cols: int = 1000
    m: int = 256
    n: int = 256
    k: int = 256
    block_m: int = 64
    block_n: int = 64
    block_k: int = 32
    num_heads: int = 8
    num_kv_heads: int = 2
    seq_len: int = 1024
    head_dim: int = 64
    # A count of PEs, or the string "all".
    pes: Any = "all"
    mapping: str = "cyclic"
    placement: str = "column_wise"
    seed: int = 0


@dataclass
class DecoderPlacementConfig:
    """How each tensor class of ``workload=decoder_layer`` is split over PEs: the
    runtime's ``DPPolicy.cube`` (``column_wise``, ``row_wise``: one copy split into
    contiguous shards; ``replicate``: a copy per cube, split over its PEs). Over which
    PEs: a projection's weight over the PEs that run its programs, the KV cache over
    the attention's, activations over every PE (README, "Decoder layer"). The KV cache
    and activations are written by the step, so they must be one copy."""

    weights: str = "column_wise"
    kv_cache: str = "column_wise"
    activations: str = "column_wise"


@dataclass
class DecoderLayerWorkloadConfig(WorkloadConfig):
    """One decode step of a pre-norm grouped-query-attention decoder layer (Llama-style,
    DESIGN §13.2) from ``@triton.jit`` kernels (needs the ``[triton]`` extra).

    ``batch`` sequences each add one token after ``context_tokens`` in the KV cache;
    ``heads`` query heads and ``kv_heads`` KV heads of ``head_dim``; ``hidden`` model
    width, ``ffn`` the MLP's. Blocks: ``block_n`` x ``block_k`` weight tiles of the
    projections (their rows: the batch, padded to a power of two), ``attn_block_n`` KV
    tokens per attention tile, ``block_heads`` heads per rotary / KV-append program,
    ``block_size`` elements per SiLU·up and residual-add program. The defaults are the
    ``decoder_small`` preset, which ``workload=decoder_layer`` runs; ``+experiment=decoder_8b``
    is the other (``experiments/decoder_8b.yaml``).
    """

    name: str = "decoder_layer"
    batch: int = 1
    context_tokens: int = 256
    hidden: int = 512
    heads: int = 8
    kv_heads: int = 2
    head_dim: int = 64
    ffn: int = 1536
    dtype: str = "float16"
    rms_eps: float = 1e-5
    rope_theta: float = 500000.0
    block_n: int = 32
    block_k: int = 512
    attn_block_n: int = 128
    block_heads: int = 8
    block_size: int = 1024
    placement: DecoderPlacementConfig = field(default_factory=DecoderPlacementConfig)
    seed: int = 0


@dataclass
class SimConfig:
    """How the simulation is driven and what it records (not part of the model)."""

    exec_path: ExecPath = ExecPath.replay
    fabric: FabricModel = FabricModel.fair
    oplog: bool = False
    trace: bool = False
    # Measure simulator speed (wall-clock, so never a metric): SimPy's bare timeout
    # rate just before the run, then accesses per second and their ratio (timings).
    measure_speed: bool = False
    # Primitive DMA commands take PE_SCHEDULER's fast path (one record per command,
    # no Job/Stage pair); false forces the general path. Results are identical.
    fast_dma: bool = True


@dataclass
class KernBenchConfig:
    """The root of the composed configuration.

    Which group options compose it (the defaults list) lives in ``conf/config.yaml``.
    """

    topology: TopologyConfig = field(default_factory=TopologyConfig)
    address: AddressConfig = field(default_factory=AddressConfig)
    workload: Any = MISSING
    sim: SimConfig = field(default_factory=SimConfig)

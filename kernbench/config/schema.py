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

# The dataclass field metadata entry holding what a key means, in a phrase:
# ``kernbench --help`` and the documentation's key reference print it (one source).
MEANING = "meaning"


def key(default: Any, meaning: str) -> Any:
    """A leaf key's field: its default, and what it means for ``--help`` and the docs."""
    return field(default=default, metadata={MEANING: meaning})


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

    hbm_mapping_mode: HbmMappingMode = key(
        HbmMappingMode.n_to_one,
        "how a PE's pseudo-channels are modelled: one_to_one (a router and link per channel, "
        "accesses interleaved) or n_to_one (one aggregate link); set by channel_mapping=",
    )
    hbm_pseudo_channels: int = key(64, "HBM pseudo-channels per cube, shared equally by its PEs")
    hbm_channels_per_pe: int | None = key(
        None,
        "pseudo-channels per PE (N); derived as hbm_pseudo_channels / pes_per_cube, a given value "
        "must agree",
    )
    hbm_channel_bw_gbs: float = key(
        32.0,
        "bandwidth of one pseudo-channel; a PE's HBM is N times this",
    )
    hbm_channel_bytes: int = key(256 * 1024 * 1024, "capacity of one pseudo-channel")
    interleave_bytes: int = key(
        256,
        "granule g of the 1:1 interleave: consecutive g-byte pieces go to consecutive channels (a "
        "stripe is N x g)",
    )
    hbm_access_latency_ns: float = key(
        40.0,
        "time the memory takes to serve an access, paid once per request",
    )


@dataclass
class CubeConfig:
    memory_map: MemoryMapConfig = field(default_factory=MemoryMapConfig)


@dataclass
class PeCostModelConfig:
    """ADR-0064 D1/D3: cycles = fixed_per_cmd_cycles + logical_bytes * byte_cycles_recip."""

    fixed_per_cmd_cycles: float = key(
        32.0,
        "PE_CPU cycles every command costs to dispatch (ADR-0064 FIXED)",
    )
    byte_cycles_recip: float = key(
        0.25,
        "PE_CPU cycles per logical byte of a command's descriptor (ADR-0064 R)",
    )
    clock_freq_ghz: float = key(1.0, "clock that turns dispatch cycles into time")


@dataclass
class PeAttrsConfig:
    pe_cost_model: PeCostModelConfig = field(default_factory=PeCostModelConfig)


@dataclass
class PeConfig:
    """One processing element: engine rates, scheduler queue, local memory."""

    attrs: PeAttrsConfig = field(default_factory=PeAttrsConfig)
    clock_ghz: float = key(
        1.0,
        "engine clock: turns GEMM and MATH rates per cycle into rates per ns",
    )
    gemm_flops_per_cycle: int = key(4096, "GEMM engine throughput")
    math_elems_per_cycle: int = key(64, "MATH (element-wise) engine throughput")
    scheduler_queue_depth: int = key(16, "commands PE_SCHEDULER holds before PE_CPU waits")
    dma_max_outstanding: int = key(16, "DMA requests a PE keeps in flight at most")
    composite_buffers: int = key(
        2,
        "composite commands PE_SCHEDULER runs at once (double buffering)",
    )
    tcm_bytes: int = key(8 * 1024 * 1024, "tightly coupled memory of a PE (tiles live there)")


@dataclass
class PeMmuConfig:
    """VA-model MMU (ADR-0011 D-VA2/D-VA5). ``tlb_charge``: ``per_access`` pays
    ``tlb_overhead_ns`` once per DMA access (the ADR); ``per_page`` once per page it
    touches (an access crossing page boundaries is split there either way)."""

    page_size: int = key(4096, "VA page size (a power of two); VA shards are whole pages")
    tlb_overhead_ns: float = key(2.0, "time the VA model charges per translation")
    tlb_charge: TlbCharge = key(
        TlbCharge.per_access,
        "when tlb_overhead_ns is paid: per_access (once per DMA access, ADR-0011) or per_page "
        "(once per page it touches)",
    )


@dataclass
class LinksConfig:
    """Bandwidth and latency of every link class of the topology graph (DESIGN §3.1).

    The DMA-to-router and router-to-HBM links take their bandwidth from the memory map
    (one channel, or N channels aggregated); only their latencies are set here.
    """

    dma_router_latency_ns: float = key(
        2.0,
        "latency of a PE's direct link from its DMA to its own HBM routers",
    )
    router_hbm_latency_ns: float = key(4.0, "latency of a router's link to the HBM controller")
    pe_noc_bw_gbs: float = key(128.0, "bandwidth of a PE's link to the cube NOC, each direction")
    pe_noc_latency_ns: float = key(5.0, "latency of a PE's link to the cube NOC")
    noc_router_latency_ns: float = key(3.0, "latency of the NOC's link to a PE's HBM routers")
    noc_noc_bw_gbs: float = key(
        64.0,
        "bandwidth of the link between two cubes' NOCs, each direction",
    )
    noc_noc_latency_ns: float = key(20.0, "latency of the link between two cubes' NOCs")
    pcie_bw_gbs: float = key(32.0, "bandwidth of a SIP's PCIe link to the host")
    pcie_latency_ns: float = key(500.0, "latency of a SIP's PCIe link to the host")
    ctrl_bw_gbs: float = key(
        8.0,
        "bandwidth of the control-plane links (PCIE_EP to IO_CPU to M_CPU to NOC)",
    )
    ctrl_latency_ns: float = key(50.0, "latency of each control-plane link")


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

    pcie_ep_processing_ns: float = key(40.0, "time the PCIe endpoint spends on one control message")
    io_cpu_processing_ns: float = key(200.0, "time a SIP's IO_CPU spends on one control message")
    m_cpu_processing_ns: float = key(100.0, "time a cube's M_CPU spends on one control message")
    mmu_processing_ns: float = key(10.0, "time a PE's MMU spends installing one message (VA)")
    dma_processing_ns: float = key(10.0, "time a PE's DMA spends installing one message (LA)")
    msg_header_bytes: int = key(16, "size of an install message's header")
    pte_bytes: int = key(16, "size of one page-table entry in a VA install message")
    baaw_segment_bytes: int = key(32, "size of one BAAW segment in an LA install message")


@dataclass
class TopologyConfig:
    name: str = key("default", "the topology's name (set by topology=)")
    n_sips: int = key(1, "SIPs (chips) on the host's PCIe")
    cubes_per_sip: int = key(2, "cubes per SIP, joined by NOC-to-NOC links")
    pes_per_cube: int = key(8, "PEs per cube; they share the cube's pseudo-channels")
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
    model: AddressModel = key(
        AddressModel.va,
        "the address space kernels see: pa (physical), va (pages through a PE MMU) or la (segments"
        " through BAAW); set by address=",
    )


@dataclass
class WorkloadConfig:
    """Fields every workload has; each workload option extends it."""

    name: str = key(MISSING, "the workload (set by workload=)")


@dataclass
class StreamWorkloadConfig(WorkloadConfig):
    """Bandwidth stream (DESIGN §5): each active PE walks a shard chosen by ``pattern``."""

    name: str = key("stream", "the workload (set by workload=)")
    op: StreamOp = key(
        StreamOp.read,
        "what each access does: read, write, or copy (read then write the same target)",
    )
    access_bytes: int = key(
        65536,
        "bytes one DMA access moves (the last one of a PE may be shorter)",
    )
    bytes_per_pe: int = key(4 * 1024 * 1024, "bytes each active PE streams in all")
    align_offset_bytes: int = key(
        0,
        "where in its target's shard a PE starts (misaligns accesses when not a multiple of the "
        "stripe)",
    )
    # A count of PEs ("1", "16"; written 1 or "1" alike) or "all": text either way, so
    # the result column has one type in every table (validation checks the count).
    active_pes: str = key("all", "how many PEs stream: a count or all (text in every row)")
    outstanding: int = key(4, "accesses each PE keeps in flight, the tail included")
    pattern: StreamPattern = key(
        StreamPattern.local,
        "whose memory each access targets: local, neighbor, hotspot, cross_cube or uniform (see "
        "traffic=)",
    )
    hotspot_pe: int = key(
        0,
        "hotspot: the global index (sip, cube, pe order) of the PE every access targets",
    )
    seed: int = key(0, "uniform: seed of the generator that draws each access's target PE")


@dataclass
class GqaWorkloadConfig(WorkloadConfig):
    """GQA fused attention (DESIGN §5): one PE per KV head, online softmax over KV tiles.

    ``name`` picks the variant: ``gqa_opt2`` (2 commands per tile) or ``gqa_opt3`` (10).
    Each PE computes ``query_heads / kv_heads`` heads x ``query_tokens`` rows against
    ``seq_tokens`` keys and values, ``tile_tokens`` at a time; ``sub_tiles`` is how many
    pieces PE_SCHEDULER cuts each composite into to overlap its DMA and compute.
    """

    name: str = key("gqa_opt3", "the workload (set by workload=): gqa_opt2 or gqa_opt3")
    query_heads: int = key(8, "query heads in all")
    kv_heads: int = key(2, "KV heads, one PE each")
    head_dim: int = key(128, "elements per head")
    seq_tokens: int = key(2048, "keys and values each PE attends over")
    tile_tokens: int = key(128, "tokens per KV tile (one loop iteration)")
    query_tokens: int = key(1, "query rows per head (1: decode)")
    dtype_bytes: int = key(2, "bytes per element")
    sub_tiles: int = key(
        1,
        "pieces PE_SCHEDULER cuts each composite into to overlap DMA and compute",
    )


@dataclass
class GqaPairWorkloadConfig(GqaWorkloadConfig):
    """Both GQA variants on one configuration (issue 55): ``gqa_opt2``, then ``gqa_opt3``,
    each on a fresh system, with the shape keys of :class:`GqaWorkloadConfig`.

    Which variant is faster is a comparison of two runs, so no single run's column can
    say it; this row holds both runs and their comparison (``opt3_over_opt2_latency``,
    ``latency_winner``), so a sweep or an optimizing sweeper can ask where it changes.
    """

    name: str = key("gqa_pair", "the workload (set by workload=)")


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

    name: str = key("triton", "the workload (set by workload=)")
    kernel: str = key(
        "vector_add",
        "the kernel: vector_add, softmax, matmul, layer_norm, decode_attention, or pkg.module:fn "
        "of your own",
    )
    dtype: str = key("float32", "element type of the kernel's tensors (a torch dtype name)")
    size: int = key(98432, "vector_add: elements per vector")
    block_size: int = key(1024, "vector_add: elements per program")
    rows: int = key(64, "softmax, layer_norm: rows (one program each)")
    cols: int = key(1000, "softmax, layer_norm: elements per row")
    m: int = key(256, "matmul: rows of A and C")
    n: int = key(256, "matmul: columns of B and C")
    k: int = key(256, "matmul: columns of A, rows of B")
    block_m: int = key(64, "matmul: rows per program's tile")
    block_n: int = key(64, "matmul: columns per tile; decode_attention: KV tokens per tile")
    block_k: int = key(32, "matmul: reduction elements per step")
    num_heads: int = key(8, "decode_attention: query heads")
    num_kv_heads: int = key(2, "decode_attention: KV heads")
    seq_len: int = key(1024, "decode_attention: tokens in the KV cache")
    head_dim: int = key(64, "decode_attention: elements per head")
    pes: Any = key("all", "how many PEs run programs: a count or all")
    mapping: str = key(
        "cyclic",
        "how programs go to PEs: cyclic (program l on PE l mod N) or block (contiguous ranges)",
    )
    placement: str = key(
        "column_wise",
        "how tensors are split over PEs: column_wise, row_wise or replicate (DPPolicy.cube)",
    )
    seed: int = key(0, "seed of the random input values")


@dataclass
class DecoderPlacementConfig:
    """How each tensor class of ``workload=decoder_layer`` is split over PEs: the
    runtime's ``DPPolicy.cube`` (``column_wise``, ``row_wise``: one copy split into
    contiguous shards; ``replicate``: a copy per cube, split over its PEs). Over which
    PEs: a projection's weight over the PEs that run its programs, the KV cache over
    the attention's, activations over every PE (docs/how-to/triton.md). The KV cache
    and activations are written by the step, so they must be one copy."""

    weights: str = key(
        "column_wise",
        "how each projection's weight is placed: column_wise, row_wise (split over the PEs that "
        "run its programs) or replicate (a copy per cube)",
    )
    kv_cache: str = key(
        "column_wise",
        "how the K and V caches are placed: column_wise or row_wise (one copy, split over the "
        "attention's PEs)",
    )
    activations: str = key(
        "column_wise",
        "how the layer input and intermediates are placed: column_wise or row_wise (one copy, "
        "split over every PE)",
    )


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

    name: str = key("decoder_layer", "the workload (set by workload=)")
    batch: int = key(1, "sequences, each adding one token this step")
    context_tokens: int = key(
        256,
        "tokens already in each sequence's KV cache (the step writes slot context_tokens)",
    )
    hidden: int = key(512, "model width")
    heads: int = key(8, "query heads")
    kv_heads: int = key(2, "KV heads")
    head_dim: int = key(64, "elements per head")
    ffn: int = key(1536, "MLP width")
    dtype: str = key("float16", "element type: float16 or float32")
    rms_eps: float = key(1e-5, "RMSNorm epsilon")
    rope_theta: float = key(500000.0, "rotary embedding base")
    block_n: int = key(32, "a projection's weight rows per tile")
    block_k: int = key(512, "a projection's weight columns per tile")
    attn_block_n: int = key(128, "KV tokens per attention tile")
    block_heads: int = key(8, "heads per rotary and KV-append program")
    block_size: int = key(1024, "elements per SiLU-mul and residual-add program")
    placement: DecoderPlacementConfig = field(default_factory=DecoderPlacementConfig)
    seed: int = key(0, "seed of the random weights, cache and input")


@dataclass
class SimConfig:
    """How the simulation is driven and what it records (not part of the model)."""

    exec_path: ExecPath = key(
        ExecPath.replay,
        "how kernel code is driven: replay (traced into a command list first) or greenlet (run "
        "live); identical results",
    )
    fabric: FabricModel = key(
        FabricModel.fair,
        "how links are shared under contention: fair (max-min fair between PEs, oldest request "
        "first within one) or reservation (the first design, for comparison)",
    )
    oplog: bool = key(False, "record every operation in an op log")
    trace: bool = key(False, "write trace.parquet: one row per physical request")
    # Measure simulator speed (wall-clock, so never a metric): SimPy's bare timeout
    # rate just before the run, then accesses per second and their ratio (timings).
    measure_speed: bool = key(
        False,
        "time the simulator against SimPy's bare event rate (wall-clock columns, never metrics)",
    )
    # Primitive DMA commands take PE_SCHEDULER's fast path (one record per command,
    # no Job/Stage pair); false forces the general path. Results are identical.
    fast_dma: bool = key(
        True,
        "primitive DMA commands take PE_SCHEDULER's fast path; false forces the general path "
        "(identical results)",
    )


@dataclass
class KernBenchConfig:
    """The root of the composed configuration.

    Which group options compose it (the defaults list) lives in ``conf/config.yaml``.
    """

    topology: TopologyConfig = field(default_factory=TopologyConfig)
    address: AddressConfig = field(default_factory=AddressConfig)
    workload: Any = MISSING
    sim: SimConfig = field(default_factory=SimConfig)

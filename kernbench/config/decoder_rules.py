"""The rules of ``workload=decoder_layer`` (DESIGN §13.2), run by
:mod:`kernbench.config.validate` with the others: what its kernels need of the shape
(powers of two where a size becomes a ``tl.arange``, whole query groups, Triton's
largest block), placements the runtime has and that keep written tensors coherent, a
dtype the interpreter computes in, and tensors that fit in the machine's HBM. Each
failure is one :class:`~kernbench.errors.ConfigError` naming the key. Rules skip every
other workload (they read ``workload.ffn``, which only this one has).
"""

from __future__ import annotations

from typing import Any

from kernbench.config.limits import ABSENT, get_key
from kernbench.config.schema import KernBenchConfig
from kernbench.errors import ConfigError

# Sizes of at least one (context_tokens may be 0: the new token alone).
AT_LEAST_ONE = ("batch", "hidden", "heads", "kv_heads", "head_dim", "ffn")
# Block sizes (tl.arange lengths), and head_dim, which decode_attention's arange spans.
POWER_OF_TWO = ("block_n", "block_k", "attn_block_n", "block_heads", "block_size", "head_dim")
# Dtypes the interpreter computes in (numpy has no bfloat16 arithmetic).
DTYPES = {"float16": 2, "float32": 4}
# Placements the runtime has (kernbench.runtime.context.POLICIES), and those of tensors
# the step writes: one copy (a replicated copy a kernel stores to is not kept coherent).
PLACEMENTS = ("column_wise", "row_wise", "replicate")
ONE_COPY = ("kv_cache", "activations")
# triton.language.TRITON_MAX_TENSOR_NUMEL (as kernbench.config.validate's TRITON_MAX_BLOCK).
MAX_BLOCK = 1 << 20

# The limits above in words, per key, for ``kernbench --keys`` (kernbench.cli.keys).
LIMITS: dict[str, str] = {
    **{f"workload.{k}": ">= 1 [decoder]" for k in AT_LEAST_ONE if k not in ("head_dim",)},
    **{f"workload.{k}": "a power of two [decoder]" for k in POWER_OF_TWO},
    "workload.context_tokens": ">= 0",
    "workload.heads": "divisible by kv_heads, the quotient a power of two [decoder]",
    "workload.dtype": f"{' | '.join(DTYPES)} [decoder]",
    **{f"workload.placement.{k}": "column_wise | row_wise" for k in ONE_COPY},
    "workload.placement.weights": " | ".join(PLACEMENTS),
}


def decoder_layer(cfg: KernBenchConfig) -> None:
    """Every rule of the decoder layer's keys, in order."""
    if get_key(cfg, "workload.ffn") is ABSENT:
        return
    w = cfg.workload
    _sizes(w)
    _choices(w)
    _blocks(w)
    _fits(cfg)


def _sizes(w: Any) -> None:
    for key in AT_LEAST_ONE:
        if getattr(w, key) < 1:
            raise ConfigError(f"workload.{key}", f"{getattr(w, key)} is not >= 1")
    if w.context_tokens < 0:
        raise ConfigError("workload.context_tokens", f"{w.context_tokens} is not >= 0")
    for key in POWER_OF_TWO:
        value = getattr(w, key)
        if value < 1 or value & (value - 1):
            raise ConfigError(f"workload.{key}", f"{value} is not a power of two (a block)")
    if w.heads % w.kv_heads:
        raise ConfigError(
            "workload.heads", f"{w.heads} is not divisible by workload.kv_heads = {w.kv_heads}"
        )
    group = w.heads // w.kv_heads
    if group & (group - 1):
        raise ConfigError(
            "workload.heads",
            f"{w.heads} / workload.kv_heads {w.kv_heads} = {group} query heads per KV head,"
            " not a power of two (decode_attention's rows are a tl.arange)",
        )
    for key in ("rms_eps", "rope_theta"):
        if not getattr(w, key) > 0:
            raise ConfigError(f"workload.{key}", f"{getattr(w, key)} is not > 0")


def _choices(w: Any) -> None:
    if w.dtype not in DTYPES:
        raise ConfigError("workload.dtype", f"{w.dtype!r} is not one of {sorted(DTYPES)}")
    for key in ("weights", *ONE_COPY):
        value = getattr(w.placement, key)
        if value not in PLACEMENTS:
            raise ConfigError(f"workload.placement.{key}", f"{value!r} is not one of {PLACEMENTS}")
        if key in ONE_COPY and value == "replicate":
            raise ConfigError(
                f"workload.placement.{key}",
                "'replicate' keeps a copy per cube, but the step writes this tensor and"
                " copies are not kept coherent: use column_wise or row_wise",
            )


def _blocks(w: Any) -> None:
    """Every block the kernels make within Triton's largest."""
    block_m = 1 << max(w.batch - 1, 0).bit_length()
    half = 1 << max(w.head_dim // 2 - 1, 0).bit_length()
    blocks = (
        ("hidden", 1 << max(w.hidden - 1, 0).bit_length()),  # rms_norm's row
        ("block_k", max(block_m, w.block_n) * w.block_k),  # a projection's tiles
        ("attn_block_n", w.attn_block_n * w.head_dim),  # a K or V tile
        ("block_heads", w.block_heads * max(half * 2, w.head_dim)),  # rotary, kv_append
        ("block_size", w.block_size),
    )
    for key, elements in blocks:
        if elements > MAX_BLOCK:
            raise ConfigError(
                f"workload.{key}",
                f"{getattr(w, key)} makes a block of {elements} elements, more than"
                f" Triton's largest, {MAX_BLOCK}",
            )


def tensor_bytes(w: Any) -> tuple[int, int]:
    """Bytes of the layer's weights, and of its KV caches, activations and tables."""
    q, kv = w.heads * w.head_dim, w.kv_heads * w.head_dim
    weights = (q + 2 * kv) * w.hidden + w.hidden * q + 3 * w.ffn * w.hidden + 2 * w.hidden
    caches = 2 * w.batch * w.kv_heads * (w.context_tokens + 1) * w.head_dim
    acts = w.batch * (5 * w.hidden + 3 * q + 2 * kv + 3 * w.ffn)
    tables = 2 * w.batch * (w.head_dim // 2) * 4  # fp32 cos and sin
    elem = DTYPES[w.dtype]
    return weights * elem, (caches + acts) * elem + tables


def _fits(cfg: KernBenchConfig) -> None:
    """The layer's tensors within the HBM of every PE (the runtime's allocator still
    refuses a shard that one PE cannot hold, naming it)."""
    topo, mm = cfg.topology, cfg.topology.cube.memory_map
    pes = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    capacity = pes * (mm.hbm_channels_per_pe or 0) * mm.hbm_channel_bytes
    weights, rest = tensor_bytes(cfg.workload)
    if weights + rest > capacity:
        key = "workload.hidden" if weights >= rest else "workload.context_tokens"
        raise ConfigError(
            key,
            f"the layer's tensors need {weights} bytes of weights and {rest} of caches and"
            f" activations, more than the HBM of all {pes} PEs, {capacity} bytes",
        )

"""Cross-field rules on the typed configuration, checked before anything is simulated.

OmegaConf already rejects a wrong type, and an unknown key typed without ``+``; this
module owns every rule a single field's type cannot express (DESIGN §2, §7): finite
numbers, positive bandwidths, upper limits, divisible channel counts, powers of two,
what fits in the 51-bit PA layout, and keys added with ``+`` that the schema does not
know. It also derives
``hbm_channels_per_pe``. Each failure is one :class:`~kernbench.errors.ConfigError`
naming the dotted key, the value given and the limit. It must not read YAML or Hydra
state: it sees only the object ``OmegaConf.to_object`` produced.

The rules form a table (:data:`RULES`) run in order; a rule may fill in a derived value
that later rules read. Rules about a workload key skip workloads without that key.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Iterator
from typing import Any

from kernbench.address.pa import MAX_CUBES, MAX_PES, MAX_SIPS, OFFSET_BITS
from kernbench.config.schema import KernBenchConfig
from kernbench.errors import ConfigError

Rule = Callable[[KernBenchConfig], None]

# What get_key answers for a key the config does not have (e.g. another workload's).
ABSENT = object()

# What the 51-bit physical address can name (kernbench.address.pa owns the layout).
PA_FIELD_LIMITS: dict[str, tuple[int, str]] = {
    "topology.n_sips": (MAX_SIPS, "its SIP field"),
    "topology.cubes_per_sip": (MAX_CUBES, "its cube field"),
    "topology.pes_per_cube": (MAX_PES, "its PE field"),
}

# The largest values the model takes: beyond them drains and cycles vanish below the
# float resolution of simulated times, and products of them overflow to inf.
MAX_BW_GBS = 1e6  # 1 PB/s: 1 KiB drains in about 1 ps
MAX_TIME_NS = 1e12  # 1000 s of simulated time
MAX_CLOCK_GHZ = 1e3  # 1 THz

# Key suffix -> (test, the limit as the message states it). Applies to every leaf.
SUFFIX_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("_bw_gbs", lambda v: v > 0, "is not > 0 (a bandwidth in GB/s)"),
    ("_bw_gbs", lambda v: v <= MAX_BW_GBS, f"exceeds {MAX_BW_GBS:g} GB/s (1 PB/s)"),
    ("_ns", lambda v: v >= 0, "is not >= 0 (a time in ns)"),
    ("_ns", lambda v: v <= MAX_TIME_NS, f"exceeds {MAX_TIME_NS:g} ns (1000 s)"),
    ("_ghz", lambda v: v > 0, "is not > 0 (a clock in GHz)"),
    ("_ghz", lambda v: v <= MAX_CLOCK_GHZ, f"exceeds {MAX_CLOCK_GHZ:g} GHz"),
)

AT_LEAST_ONE: tuple[str, ...] = (
    "topology.n_sips",
    "topology.cubes_per_sip",
    "topology.pes_per_cube",
    "topology.cube.memory_map.hbm_pseudo_channels",
    "topology.cube.memory_map.hbm_channel_bytes",
    "topology.pe.gemm_flops_per_cycle",
    "topology.pe.math_elems_per_cycle",
    "topology.pe.scheduler_queue_depth",
    "topology.pe.dma_max_outstanding",
    "topology.pe.composite_buffers",
    "topology.pe.tcm_bytes",
    "workload.access_bytes",
    "workload.bytes_per_pe",
    "workload.outstanding",
)

NON_NEGATIVE: tuple[str, ...] = (
    "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles",
    "topology.pe.attrs.pe_cost_model.byte_cycles_recip",
    "workload.align_offset_bytes",
    "workload.seed",
)

# Keys without a unit suffix the suffix limits cover, and their largest value.
AT_MOST: dict[str, tuple[float, str]] = {
    "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles": (MAX_TIME_NS, "cycles"),
    "topology.pe.attrs.pe_cost_model.byte_cycles_recip": (1e6, "cycles per byte"),
}

POWER_OF_TWO: tuple[str, ...] = (
    "topology.pe_mmu.page_size",
    "topology.cube.memory_map.interleave_bytes",
)


def validate(cfg: KernBenchConfig) -> KernBenchConfig:
    """Check every rule and return a copy with derived values filled in.

    Raises ConfigError for the first rule broken, so the user sees one clear line.
    """
    cfg = copy.deepcopy(cfg)
    for rule in RULES:
        rule(cfg)
    return cfg


def get_key(cfg: Any, dotted: str) -> Any:
    """The value at a dotted key, or ``ABSENT`` when some part does not exist."""
    node = cfg
    for part in dotted.split("."):
        node = getattr(node, part, ABSENT)
        if node is ABSENT:
            return ABSENT
    return node


def leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every non-dataclass value under ``node``, with its dotted key."""
    for name, value in vars(node).items():
        key = f"{prefix}{name}"
        if dataclasses.is_dataclass(value):
            yield from leaves(value, key + ".")
        else:
            yield key, value


def _present(cfg: KernBenchConfig, keys: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    for key in keys:
        value = get_key(cfg, key)
        if value is not ABSENT and value is not None:
            yield key, value


def _no_unknown_keys(cfg: KernBenchConfig) -> None:
    """Keys added with ``+key=value`` bypass OmegaConf's struct check; catch them here."""
    if not dataclasses.is_dataclass(cfg.workload):
        raise ConfigError(
            "workload",
            f"has no schema ({type(cfg.workload).__name__}); a workload YAML must start "
            "with `defaults: [base_<name>, _self_]`",
        )
    for key, node in _dataclass_nodes(cfg, ""):
        known = [f.name for f in dataclasses.fields(node)]
        for name in vars(node):
            if name not in known:
                where = f"{key}.{name}" if key else name
                raise ConfigError(
                    where, f"is not a key of {type(node).__name__} (known: {', '.join(known)})"
                )


def _dataclass_nodes(node: Any, key: str) -> Iterator[tuple[str, Any]]:
    yield key, node
    for name, value in vars(node).items():
        if dataclasses.is_dataclass(value):
            yield from _dataclass_nodes(value, f"{key}.{name}" if key else name)


def _finite(cfg: KernBenchConfig) -> None:
    """No inf or nan anywhere: every later rule and every formula assumes real numbers."""
    for key, value in leaves(cfg):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(key, f"{value} is not a finite number")


def _suffix_rules(cfg: KernBenchConfig) -> None:
    for key, value in leaves(cfg):
        for suffix, ok, limit in SUFFIX_RULES:
            if key.endswith(suffix) and value is not None and not ok(value):
                raise ConfigError(key, f"{value} {limit}")


def _at_least_one(cfg: KernBenchConfig) -> None:
    for key, value in _present(cfg, AT_LEAST_ONE):
        if value < 1:
            raise ConfigError(key, f"{value} is not >= 1")


def _non_negative(cfg: KernBenchConfig) -> None:
    for key, value in _present(cfg, NON_NEGATIVE):
        if value < 0:
            raise ConfigError(key, f"{value} is not >= 0")


def _at_most(cfg: KernBenchConfig) -> None:
    for key, (limit, unit) in AT_MOST.items():
        value = get_key(cfg, key)
        if value is not ABSENT and value > limit:
            raise ConfigError(key, f"{value} exceeds {limit:g} {unit}")


def _powers_of_two(cfg: KernBenchConfig) -> None:
    for key, value in _present(cfg, POWER_OF_TWO):
        if value < 1:
            raise ConfigError(key, f"{value} is not a power of two (1, 2, 4, ...)")
        if value & (value - 1):
            lower = 1 << (value.bit_length() - 1)
            raise ConfigError(
                key, f"{value} is not a power of two (nearest: {lower} or {lower * 2})"
            )


def _pa_field_limits(cfg: KernBenchConfig) -> None:
    for key, (limit, field_bits) in PA_FIELD_LIMITS.items():
        value = get_key(cfg, key)
        if value > limit:
            raise ConfigError(
                key, f"{value} exceeds {limit}, the most the 51-bit PA can address ({field_bits})"
            )


def _channels_per_pe(cfg: KernBenchConfig) -> None:
    """Derive hbm_channels_per_pe = hbm_pseudo_channels / pes_per_cube (DESIGN §2)."""
    mm = cfg.topology.cube.memory_map
    pes = cfg.topology.pes_per_cube
    if mm.hbm_pseudo_channels % pes:
        raise ConfigError(
            "topology.cube.memory_map.hbm_pseudo_channels",
            f"{mm.hbm_pseudo_channels} is not divisible by topology.pes_per_cube = {pes}",
        )
    derived = mm.hbm_pseudo_channels // pes
    if mm.hbm_channels_per_pe is not None and mm.hbm_channels_per_pe != derived:
        raise ConfigError(
            "topology.cube.memory_map.hbm_channels_per_pe",
            f"{mm.hbm_channels_per_pe} disagrees with hbm_pseudo_channels / pes_per_cube"
            f" = {mm.hbm_pseudo_channels} / {pes} = {derived} (leave it unset to derive it)",
        )
    mm.hbm_channels_per_pe = derived


def pe_hbm_bytes(cfg: KernBenchConfig) -> int:
    """Bytes of HBM one PE owns (after ``hbm_channels_per_pe`` is derived)."""
    mm = cfg.topology.cube.memory_map
    return (mm.hbm_channels_per_pe or 0) * mm.hbm_channel_bytes


def _pe_hbm_fits_pa(cfg: KernBenchConfig) -> None:
    mm = cfg.topology.cube.memory_map
    limit = 1 << OFFSET_BITS
    if pe_hbm_bytes(cfg) > limit:
        raise ConfigError(
            "topology.cube.memory_map.hbm_channel_bytes",
            f"{mm.hbm_channels_per_pe} channels x {mm.hbm_channel_bytes} bytes ="
            f" {pe_hbm_bytes(cfg)} bytes per PE exceeds 2**{OFFSET_BITS} = {limit},"
            " the PE offset field of the 51-bit PA",
        )


def _active_pes(cfg: KernBenchConfig) -> None:
    """``workload.active_pes`` is "all" or a count of the topology's PEs, kept as text
    (a test may build the dataclass with an int: it is normalised here)."""
    value = get_key(cfg, "workload.active_pes")
    if value is ABSENT or value == "all":
        return
    topo = cfg.topology
    total = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or not 1 <= int(text) <= total:
        raise ConfigError(
            "workload.active_pes",
            f"{value} is neither 'all' nor a count in 1..{total} (the topology's PEs:"
            f" {topo.n_sips} SIP x {topo.cubes_per_sip} cubes x {topo.pes_per_cube} PEs)",
        )
    cfg.workload.active_pes = str(int(text))


def _access_fits_shard(cfg: KernBenchConfig) -> None:
    """A stream access must fit in the bytes a PE walks (else it would be cut short)."""
    access, total = get_key(cfg, "workload.access_bytes"), get_key(cfg, "workload.bytes_per_pe")
    if access is not ABSENT and total is not ABSENT and access > total:
        raise ConfigError(
            "workload.access_bytes",
            f"{access} exceeds workload.bytes_per_pe = {total} (an access must fit in the"
            " bytes each PE streams)",
        )


def _bytes_per_pe_fits(cfg: KernBenchConfig) -> None:
    value = get_key(cfg, "workload.bytes_per_pe")
    if value is not ABSENT and value > pe_hbm_bytes(cfg):
        mm = cfg.topology.cube.memory_map
        raise ConfigError(
            "workload.bytes_per_pe",
            f"{value} exceeds a PE's HBM: {mm.hbm_channels_per_pe} channels x"
            f" {mm.hbm_channel_bytes} bytes = {pe_hbm_bytes(cfg)}",
        )


def _interleave_fits_channel(cfg: KernBenchConfig) -> None:
    """The 1:1 interleave (and LA segments) need whole granules in every channel."""
    mm = cfg.topology.cube.memory_map
    if mm.hbm_channel_bytes % mm.interleave_bytes:
        raise ConfigError(
            "topology.cube.memory_map.hbm_channel_bytes",
            f"{mm.hbm_channel_bytes} is not a multiple of interleave_bytes ="
            f" {mm.interleave_bytes} (each channel must hold whole interleave granules)",
        )


# GQA attention shape keys (DESIGN §5); skipped for workloads without them.
GQA_AT_LEAST_ONE: tuple[str, ...] = (
    "workload.query_heads",
    "workload.kv_heads",
    "workload.head_dim",
    "workload.seq_tokens",
    "workload.tile_tokens",
    "workload.query_tokens",
    "workload.dtype_bytes",
    "workload.sub_tiles",
)


def _gqa_at_least_one(cfg: KernBenchConfig) -> None:
    for key, value in _present(cfg, GQA_AT_LEAST_ONE):
        if value < 1:
            raise ConfigError(key, f"{value} is not >= 1")


def _gqa_shape(cfg: KernBenchConfig) -> None:
    """GQA: whole KV tiles, whole query groups, one PE per KV head (DESIGN §5)."""
    w = cfg.workload
    if get_key(cfg, "workload.kv_heads") is ABSENT:
        return
    if w.seq_tokens % w.tile_tokens:
        raise ConfigError(
            "workload.seq_tokens",
            f"{w.seq_tokens} is not divisible by workload.tile_tokens = {w.tile_tokens}",
        )
    if w.query_heads % w.kv_heads:
        raise ConfigError(
            "workload.query_heads",
            f"{w.query_heads} is not divisible by workload.kv_heads = {w.kv_heads}",
        )
    topo = cfg.topology
    total = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    if w.kv_heads > total:
        raise ConfigError(
            "workload.kv_heads",
            f"{w.kv_heads} exceeds the topology's {total} PEs (one per KV head)",
        )
    if w.sub_tiles > w.tile_tokens:
        raise ConfigError(
            "workload.sub_tiles", f"{w.sub_tiles} exceeds workload.tile_tokens = {w.tile_tokens}"
        )


def _stream_pattern(cfg: KernBenchConfig) -> None:
    """A pattern's target must exist: the hotspot PE, another PE in the cube, a next cube."""
    pattern = get_key(cfg, "workload.pattern")
    if pattern is ABSENT:
        return
    topo, w = cfg.topology, cfg.workload
    total = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    if not 0 <= w.hotspot_pe < total:
        raise ConfigError(
            "workload.hotspot_pe", f"{w.hotspot_pe} is not a PE index in 0..{total - 1}"
        )
    if pattern.value == "neighbor" and topo.pes_per_cube < 2:
        raise ConfigError(
            "workload.pattern", "neighbor needs topology.pes_per_cube >= 2 (a next PE)"
        )
    if pattern.value == "cross_cube" and topo.n_sips * topo.cubes_per_sip < 2:
        raise ConfigError(
            "workload.pattern", "cross_cube needs 2 or more cubes (n_sips x cubes_per_sip)"
        )


RULES: tuple[Rule, ...] = (
    _no_unknown_keys,
    _finite,
    _suffix_rules,
    _at_least_one,
    _non_negative,
    _at_most,
    _powers_of_two,
    _pa_field_limits,
    _channels_per_pe,
    _pe_hbm_fits_pa,
    _interleave_fits_channel,
    _active_pes,
    _bytes_per_pe_fits,
    _access_fits_shard,
    _gqa_at_least_one,
    _gqa_shape,
    _stream_pattern,
)

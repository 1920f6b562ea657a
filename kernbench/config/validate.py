"""Rules on the typed configuration, checked before anything is simulated.

OmegaConf already rejects a wrong type, and an unknown key typed without ``+``; this
module owns every rule a single field's type cannot express (DESIGN §2, §7): first
the limits on single keys (:mod:`kernbench.config.limits`: finite numbers, positive
bandwidths, upper limits, powers of two, the 51-bit PA layout), then the rules that
relate keys (divisible channel counts, what fits in a PE's memory, workload shapes)
and keys added with ``+`` that the schema does not know. It also derives
``hbm_channels_per_pe``. Each failure is one :class:`~kernbench.errors.ConfigError`
naming the dotted key, the value given and the limit. It must not read YAML or Hydra
state: it sees only the object ``OmegaConf.to_object`` produced.

The rules form a table (:data:`RULES`) run in order; a rule may fill in a derived value
that later rules read. Rules about a workload key skip workloads without that key.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from kernbench.address.pa import OFFSET_BITS
from kernbench.config.decoder_rules import decoder_layer as _decoder_layer
from kernbench.config.flatten import Scalar, Tree, column_value, scalars, walk
from kernbench.config.limits import ABSENT, KEY_RULES, get_key, leaf_limits, present
from kernbench.config.objective import check as _objective
from kernbench.config.schema import KernBenchConfig, StreamOp, hbm_alignment
from kernbench.errors import ConfigError

Rule = Callable[[KernBenchConfig], None]


# The keys rules write: derived (hbm_channels_per_pe) or normalised (active_pes).
DERIVED: tuple[str, ...] = (
    "topology.cube.memory_map.hbm_channels_per_pe",
    "workload.active_pes",
)


def validate(
    cfg: KernBenchConfig, *, in_place: bool = False, tree: Tree | None = None
) -> KernBenchConfig:
    """Check every rule and return a copy with derived values filled in; with
    ``in_place``, fill them into ``cfg`` itself and return it (for a caller that made
    ``cfg`` for this run alone: the copy is a quarter of the checks' cost, paid on
    every sweep point). A config that fails is left as it was given, so its error row
    shows what was asked for, whichever path built it. ``tree`` is ``cfg``'s walk, if
    the caller has it (:func:`validate_and_flatten` flattens from the same walk).

    Raises ConfigError for the first rule broken, so the user sees one clear line.
    """
    if not in_place:
        cfg = copy.deepcopy(cfg)
        tree = None
    given = [(key, get_key(cfg, key)) for key in DERIVED]
    try:
        tree = tree or walk(cfg)
        _no_unknown_keys(cfg, tree.nodes)
        leaf_limits(tree.leaves)
        for rule in RULES:
            rule(cfg)
    except Exception:
        for key, value in given:
            if value is not ABSENT:
                parent, _, name = key.rpartition(".")
                setattr(get_key(cfg, parent), name, value)
        raise
    return cfg


def validate_and_flatten(cfg: KernBenchConfig) -> tuple[KernBenchConfig, dict[str, Scalar]]:
    """Validate ``cfg`` in place (a config made for this run alone) and flatten it,
    from one walk: the walk's leaves hold the values as given, so the keys the rules
    wrote (:data:`DERIVED`) are read again."""
    tree = walk(cfg)
    validate(cfg, in_place=True, tree=tree)
    flat = scalars(tree.leaves)
    for key in DERIVED:
        if key in flat:
            flat[key] = column_value(get_key(cfg, key))
    return cfg, flat


def _no_unknown_keys(cfg: KernBenchConfig, nodes: list[tuple[str, Any]]) -> None:
    """Keys added with ``+key=value`` bypass OmegaConf's struct check; catch them here."""
    if not dataclasses.is_dataclass(cfg.workload):
        raise ConfigError(
            "workload",
            f"has no schema ({type(cfg.workload).__name__}); a workload YAML must start "
            "with `defaults: [base_<name>, _self_]`",
        )
    for key, node in nodes:
        names = vars(node).keys()
        if names == _field_set(type(node)):  # the usual case, checked in one comparison
            continue
        known = _field_names(type(node))
        for name in names:
            if name not in known:
                where = f"{key}.{name}" if key else name
                owner = f"workload={cfg.workload.name}" if key == "workload" else key or "config"
                raise ConfigError(
                    where,
                    f"no such key in {owner} (its keys: {', '.join(known)}); kernbench --help"
                    " lists every key",
                )


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _field_set(cls: type) -> frozenset[str]:
    return frozenset(_field_names(cls))


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


MM = "topology.cube.memory_map"
# The keys a PE's HBM is made of, for the messages of rules that compare against it.
PE_HBM_KEYS = f"{MM}.hbm_pseudo_channels / topology.pes_per_cube x {MM}.hbm_channel_bytes"
TOTAL_PES_KEYS = "topology.n_sips x topology.cubes_per_sip x topology.pes_per_cube"


def _total_pes(cfg: KernBenchConfig) -> tuple[int, str]:
    """The topology's PE count and how it is made, naming the keys."""
    topo = cfg.topology
    total = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
    return total, (
        f"{topo.n_sips} SIP x {topo.cubes_per_sip} cubes x {topo.pes_per_cube} PEs:"
        f" {TOTAL_PES_KEYS}"
    )


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
            f" the PE offset field of the 51-bit PA ({PE_HBM_KEYS})",
        )


def _active_pes(cfg: KernBenchConfig) -> None:
    """``workload.active_pes`` is "all" or a count of the topology's PEs, kept as text
    (a test may build the dataclass with an int: it is normalised here)."""
    value = get_key(cfg, "workload.active_pes")
    if value is ABSENT or value == "all":
        return
    total, made_of = _total_pes(cfg)
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or not 1 <= int(text) <= total:
        raise ConfigError(
            "workload.active_pes",
            f"{value} is neither 'all' nor a count in 1..{total} (the topology's PEs: {made_of})",
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


def _outstanding_fits_dma(cfg: KernBenchConfig) -> None:
    """A stream cannot keep more accesses in flight than its PE's DMA takes at once: a
    deeper ``outstanding`` was capped silently, so 16, 32 and 64 gave the same time
    while their rows said otherwise."""
    outstanding = get_key(cfg, "workload.outstanding")
    slots = cfg.topology.pe.dma_max_outstanding
    if outstanding is not ABSENT and outstanding > slots:
        raise ConfigError(
            "workload.outstanding",
            f"{outstanding} exceeds topology.pe.dma_max_outstanding = {slots} (the accesses"
            " a PE's DMA runs at once: raise it, or keep workload.outstanding within it)",
        )


def _aligned(nbytes: int, align: int) -> int:
    return -(-nbytes // align) * align


# What sets the HBM allocator's alignment (kernbench.config.schema.hbm_alignment), named
# wherever an error counts it: a huge page or stripe can be the reason a tensor does
# not fit, and the error must name the key to change.
ALIGNMENT_KEYS = (
    "whole topology.pe_mmu.page_size pages and"
    " topology.cube.memory_map.interleave_bytes x channels-per-PE stripes"
)


def _bytes_per_pe_fits(cfg: KernBenchConfig) -> None:
    """A stream's tensors must fit in the HBM of the PE that holds them: per PE, each
    tensor (src; and dst for ``op=copy``) is ``bytes_per_pe + align_offset_bytes``,
    placed on the HBM allocator's alignment (whole pages and whole interleave stripes,
    :func:`kernbench.config.schema.hbm_alignment`)."""
    value = get_key(cfg, "workload.bytes_per_pe")
    if value is ABSENT:
        return
    offset = get_key(cfg, "workload.align_offset_bytes")
    offset = 0 if offset is ABSENT else offset
    tensors = 2 if get_key(cfg, "workload.op") is StreamOp.copy else 1
    mm = cfg.topology.cube.memory_map
    align = hbm_alignment(cfg.topology)
    need = tensors * _aligned(value + offset, align)
    if need > pe_hbm_bytes(cfg):
        what = f"{value}" if not offset else f"{value} + workload.align_offset_bytes {offset}"
        copies = " x 2 tensors (op=copy: src and dst)" if tensors == 2 else ""
        placed = (
            f"{what}{copies}, on {align}-byte alignment ({ALIGNMENT_KEYS}) = {need},"
            if need != value
            else what
        )
        raise ConfigError(
            "workload.bytes_per_pe",
            f"{placed} exceeds a PE's HBM: {mm.hbm_channels_per_pe} channels x"
            f" {mm.hbm_channel_bytes} bytes ="
            f" {pe_hbm_bytes(cfg)} ({PE_HBM_KEYS})",
        )


def _interleave_fits_channel(cfg: KernBenchConfig) -> None:
    """The 1:1 interleave (and LA segments) need whole granules in every channel."""
    mm = cfg.topology.cube.memory_map
    if mm.hbm_channel_bytes % mm.interleave_bytes:
        raise ConfigError(
            "topology.cube.memory_map.hbm_channel_bytes",
            f"{mm.hbm_channel_bytes} is not a multiple of {MM}.interleave_bytes ="
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
    for key, value in present(cfg, GQA_AT_LEAST_ONE):
        if value < 1:
            raise ConfigError(key, f"{value} is not >= 1")


def _gqa_shape(cfg: KernBenchConfig) -> None:
    """GQA: whole KV tiles, whole query groups, one PE per KV head (DESIGN §5)."""
    w = cfg.workload
    if get_key(cfg, "workload.query_heads") is ABSENT:  # GQA only
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
    total, made_of = _total_pes(cfg)
    if w.kv_heads > total:
        raise ConfigError(
            "workload.kv_heads",
            f"{w.kv_heads} exceeds the topology's {total} PEs ({made_of}; one per KV head)",
        )
    if w.sub_tiles > w.tile_tokens:
        raise ConfigError(
            "workload.sub_tiles", f"{w.sub_tiles} exceeds workload.tile_tokens = {w.tile_tokens}"
        )


def _gqa_fits(cfg: KernBenchConfig) -> None:
    """GQA's tensors must fit in the HBM of each PE that holds a KV head's shard: Q and
    O (the group's query rows), K and V (every KV token), each on the allocator's
    alignment (:func:`kernbench.workloads.gqa.run`)."""
    if get_key(cfg, "workload.query_heads") is ABSENT:  # GQA only
        return
    w, mm = cfg.workload, cfg.topology.cube.memory_map
    rows = w.query_heads // w.kv_heads * w.query_tokens
    q_bytes = rows * w.head_dim * w.dtype_bytes
    kv_bytes = w.seq_tokens * w.head_dim * w.dtype_bytes
    align = hbm_alignment(cfg.topology)
    need = 2 * _aligned(q_bytes, align) + 2 * _aligned(kv_bytes, align)
    if need > pe_hbm_bytes(cfg):
        key = "workload.query_tokens" if q_bytes > kv_bytes else "workload.seq_tokens"
        raise ConfigError(
            key,
            f"Q and O ({rows} rows x {w.head_dim} x {w.dtype_bytes} B = {q_bytes} B each) and"
            f" K and V ({w.seq_tokens} tokens x {w.head_dim} x {w.dtype_bytes} B = {kv_bytes}"
            f" B each), on {align}-byte alignment ({ALIGNMENT_KEYS}) = {need} B, exceed a"
            " PE's HBM:"
            f" {mm.hbm_channels_per_pe} channels x {mm.hbm_channel_bytes} bytes ="
            f" {pe_hbm_bytes(cfg)} (rows: workload.query_heads / workload.kv_heads x"
            " workload.query_tokens; tokens: workload.seq_tokens; each x workload.head_dim"
            " x workload.dtype_bytes)",
        )


def _stream_pattern(cfg: KernBenchConfig) -> None:
    """A pattern's target must exist: the hotspot PE, another PE in the cube, a next cube."""
    pattern = get_key(cfg, "workload.pattern")
    if pattern is ABSENT:
        return
    topo, w = cfg.topology, cfg.workload
    total, made_of = _total_pes(cfg)
    if not 0 <= w.hotspot_pe < total:
        raise ConfigError(
            "workload.hotspot_pe",
            f"{w.hotspot_pe} is not a PE index in 0..{total - 1} ({made_of})",
        )
    if pattern.value == "neighbor" and topo.pes_per_cube < 2:
        raise ConfigError(
            "workload.pattern", "neighbor needs topology.pes_per_cube >= 2 (a next PE)"
        )
    if pattern.value == "cross_cube" and topo.n_sips * topo.cubes_per_sip < 2:
        raise ConfigError(
            "workload.pattern",
            "cross_cube needs 2 or more cubes (topology.n_sips x topology.cubes_per_sip)",
        )


# Triton workload (DESIGN §10): tensor sizes, and what the kernel's tensors need.
TRITON_SIZES: tuple[str, ...] = tuple(
    f"workload.{k}"
    for k in ("size", "rows", "cols", "m", "n", "k", "num_heads", "num_kv_heads", "seq_len")
)  # head_dim is one of GQA_AT_LEAST_ONE (both workloads have it)
# Triton's largest block (triton.language.TRITON_MAX_TENSOR_NUMEL): a larger one was a
# ValueError traceback from the interpreter.
TRITON_MAX_BLOCK = 1 << 20
# Bytes per element of torch's floating dtypes, by the name workload.dtype gives.
DTYPE_BYTES = {
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "float32": 4,
    "float": 4,
    "float64": 8,
    "double": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}


def _triton_sizes(cfg: KernBenchConfig) -> None:
    for key, value in present(cfg, TRITON_SIZES):
        if value < 1:
            raise ConfigError(key, f"{value} is not >= 1 (a tensor size)")


def _next_power_of_2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _triton_blocks(w: Any) -> list[tuple[tuple[str, ...], int]]:
    """(the keys, elements) of each block a shipped kernel makes from its keys."""
    if w.kernel == "vector_add":
        return [(("block_size",), w.block_size)]
    if w.kernel in ("softmax", "layer_norm"):  # a row's block: cols to a power of 2
        return [(("cols",), _next_power_of_2(w.cols))]
    if w.kernel == "matmul":
        m, n, k = w.block_m, w.block_n, w.block_k
        return [(("block_m", "block_k"), m * k), (("block_k", "block_n"), k * n)] + [
            (("block_m", "block_n"), m * n)
        ]
    if w.kernel == "decode_attention":
        group = w.num_heads // max(w.num_kv_heads, 1)
        return [(("block_n", "head_dim"), w.block_n * w.head_dim)] + [
            (("num_heads", "num_kv_heads", "head_dim"), group * w.head_dim)
        ]
    return []


def _triton_tensors(w: Any) -> tuple[str, int, str] | None:
    """(the largest size key, elements of every tensor, how) of a shipped kernel."""
    if w.kernel == "vector_add":
        return "workload.size", 3 * w.size, "3 x size (x, y, out)"
    if w.kernel == "softmax":
        return _largest(w, "rows", "cols"), 2 * w.rows * w.cols, "2 x rows x cols"
    if w.kernel == "layer_norm":
        elements = 2 * w.rows * w.cols + 2 * w.cols
        return _largest(w, "rows", "cols"), elements, "2 x rows x cols + 2 x cols"
    if w.kernel == "matmul":
        elements = w.m * w.k + w.k * w.n + w.m * w.n
        return _largest(w, "m", "n", "k"), elements, "m x k + k x n + m x n"
    if w.kernel == "decode_attention":
        elements = 2 * w.num_heads * w.head_dim + 2 * w.num_kv_heads * w.seq_len * w.head_dim
        key = _largest(w, "num_kv_heads", "seq_len", "head_dim")
        return key, elements, "2 x num_heads x head_dim + 2 x num_kv_heads x seq_len x head_dim"
    return None  # a user's kernel: its case function says what it allocates


def _largest(w: Any, *names: str) -> str:
    return "workload." + max(names, key=lambda n: getattr(w, n))


def _triton_fits(cfg: KernBenchConfig) -> None:
    """A shipped kernel's blocks within Triton's limit, and its tensors within the HBM
    of the PEs they are placed on (``workload.pes`` of them; under ``replicate`` every
    cube holds a copy: one cube's PEs), before anything is allocated: a size past it
    was a torch traceback, or host memory exhausted."""
    w = cfg.workload
    if get_key(cfg, "workload.kernel") is ABSENT:
        return
    for names, elements in _triton_blocks(w):
        if elements > TRITON_MAX_BLOCK:
            given = ", ".join(f"workload.{n} = {getattr(w, n)}" for n in names)
            raise ConfigError(
                _largest(w, *names),
                f"makes a block of {elements} elements ({given}), more than Triton's"
                f" largest block, {TRITON_MAX_BLOCK} elements",
            )
    found, elem = _triton_tensors(w), DTYPE_BYTES.get(str(w.dtype))
    topo = cfg.topology
    total, _ = _total_pes(cfg)
    pes = total if w.pes == "all" else w.pes
    if found is None or elem is None or not str(pes).isdigit() or not 1 <= int(pes) <= total:
        return  # an unknown dtype or PE count: the workload's own check names it
    placed = topo.pes_per_cube if w.placement == "replicate" else int(pes)
    capacity = placed * pe_hbm_bytes(cfg)
    key, elements, how = found
    if elements * elem > capacity:
        where = "one cube's PEs (replicate)" if w.placement == "replicate" else "workload.pes"
        raise ConfigError(
            key,
            f"{getattr(w, key.removeprefix('workload.'))}: {w.kernel}'s tensors hold {how}"
            f" = {elements} elements of {elem} B = {elements * elem} bytes, more than the"
            f" HBM of the {placed} PEs they are placed on ({where}): {placed} x"
            f" {pe_hbm_bytes(cfg)} = {capacity} bytes ({PE_HBM_KEYS})",
        )


# After the unknown-key check and the leaf limits, which read the config's walk.
RULES: tuple[Rule, ...] = (
    *KEY_RULES,
    _channels_per_pe,
    _pe_hbm_fits_pa,
    _interleave_fits_channel,
    _active_pes,
    _bytes_per_pe_fits,
    _access_fits_shard,
    _outstanding_fits_dma,
    _gqa_at_least_one,
    _gqa_shape,
    _gqa_fits,
    _stream_pattern,
    _triton_sizes,
    _triton_fits,
    _decoder_layer,
    _objective,  # last: it reads the derived values as the row will hold them
)

"""Limits on single keys: the tables and the rules that apply them (DESIGN §2, §7).

Each table names keys and the range their values must lie in (finite numbers,
positive bandwidths and clocks, upper limits, counts of at least one, powers of two,
what the 51-bit PA layout can name); :data:`KEY_RULES` applies them in order. The
tables are also what ``kernbench --keys`` prints as each key's limit
(:mod:`kernbench.cli.keys`), so a limit is written once. Rules that relate two keys
live in :mod:`kernbench.config.validate`, which runs these first.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any

from kernbench.address.pa import MAX_CUBES, MAX_PES, MAX_SIPS
from kernbench.config.schema import KernBenchConfig
from kernbench.errors import ConfigError
from kernbench.units import INT64_MAX, INT64_MIN

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
MIN_BW_GBS = 1e-3  # 1 MB/s: 1 GiB drains in about 1000 s, the longest time a run states
MAX_TIME_NS = 1e12  # 1000 s of simulated time
MAX_CLOCK_GHZ = 1e3  # 1 THz
# 1 MHz: a cycle is 1000 ns, so the most cycles a key takes (1e12) stay 1e15 ns, below
# 2^53 ns, where a float still holds every nanosecond exactly.
MIN_CLOCK_GHZ = 1e-3

# Key suffix -> (test, the limit as the message states it). Applies to every leaf.
SUFFIX_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("_bw_gbs", lambda v: v > 0, "is not > 0 (a bandwidth in GB/s)"),
    ("_bw_gbs", lambda v: v <= MAX_BW_GBS, f"exceeds {MAX_BW_GBS:g} GB/s (1 PB/s)"),
    ("_bw_gbs", lambda v: v >= MIN_BW_GBS, f"is below {MIN_BW_GBS:g} GB/s (1 MB/s)"),
    ("_ns", lambda v: v >= 0, "is not >= 0 (a time in ns)"),
    ("_ns", lambda v: v <= MAX_TIME_NS, f"exceeds {MAX_TIME_NS:g} ns (1000 s)"),
    ("_ghz", lambda v: v > 0, "is not > 0 (a clock in GHz)"),
    ("_ghz", lambda v: v <= MAX_CLOCK_GHZ, f"exceeds {MAX_CLOCK_GHZ:g} GHz"),
    ("_ghz", lambda v: v >= MIN_CLOCK_GHZ, f"is below {MIN_CLOCK_GHZ:g} GHz (1 MHz)"),
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
    # What control messages weigh (a header, an entry): 0 would make their size vanish.
    "topology.control.msg_header_bytes",
    "topology.control.pte_bytes",
    "topology.control.baaw_segment_bytes",
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

# A control message's header or one of its entries: 16, 8 and 32 B by default. Past
# 1 MiB, an install's many entries on the slowest link allowed push simulated time past
# the 2^53 ns a float holds exactly (a 2^63 B header: a run whose time stood still).
MAX_MESSAGE_PART_BYTES = 1 << 20

# Keys without a unit suffix the suffix limits cover, and their largest value.
AT_MOST: dict[str, tuple[float, str]] = {
    "topology.pe.attrs.pe_cost_model.fixed_per_cmd_cycles": (MAX_TIME_NS, "cycles"),
    "topology.pe.attrs.pe_cost_model.byte_cycles_recip": (1e6, "cycles per byte"),
    "topology.control.msg_header_bytes": (MAX_MESSAGE_PART_BYTES, "bytes"),
    "topology.control.pte_bytes": (MAX_MESSAGE_PART_BYTES, "bytes"),
    "topology.control.baaw_segment_bytes": (MAX_MESSAGE_PART_BYTES, "bytes"),
}

POWER_OF_TWO: tuple[str, ...] = (
    "topology.pe_mmu.page_size",
    "topology.cube.memory_map.interleave_bytes",
)


def get_key(cfg: Any, dotted: str) -> Any:
    """The value at a dotted key, or ``ABSENT`` when some part does not exist."""
    node = cfg
    for part in _parts(dotted):
        node = getattr(node, part, ABSENT)
        if node is ABSENT:
            return ABSENT
    return node


@functools.cache
def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(dotted.split("."))


def present(cfg: KernBenchConfig, keys: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """(key, value) of each of ``keys`` this config has and sets (another workload's
    keys, and derived values not yet filled, are skipped)."""
    for key in keys:
        value = get_key(cfg, key)
        if value is not ABSENT and value is not None:
            yield key, value


def leaf_limits(leaves: list[tuple[str, Any]]) -> None:
    """No inf or nan anywhere (every later rule and every formula assumes real
    numbers), no integer beyond 64 bits (a result column's: a larger one would stop the
    whole table from being written), then the unit suffix limits (:data:`SUFFIX_RULES`),
    over a config's leaves (:attr:`kernbench.config.flatten.Tree.leaves`)."""
    for key, value in leaves:
        kind = type(value)
        if kind is float and not math.isfinite(value):
            raise ConfigError(key, f"{value} is not a finite number")
        if kind is int and not INT64_MIN <= value <= INT64_MAX:  # a result column's
            raise ConfigError(
                key, f"{value} is outside the 64-bit integers a result holds (|x| < 2^63)"
            )
    for key, value in leaves:
        for ok, limit in _suffix_rules_of(key):
            if value is not None and not ok(value):
                raise ConfigError(key, f"{value} {limit}")


@functools.cache
def _suffix_rules_of(key: str) -> tuple[tuple[Callable[[Any], bool], str], ...]:
    """The :data:`SUFFIX_RULES` whose suffix ``key`` ends with, in their order."""
    return tuple((ok, limit) for suffix, ok, limit in SUFFIX_RULES if key.endswith(suffix))


def at_least_one(cfg: KernBenchConfig) -> None:
    for key, value in present(cfg, AT_LEAST_ONE):
        if value < 1:
            raise ConfigError(key, f"{value} is not >= 1")


def non_negative(cfg: KernBenchConfig) -> None:
    for key, value in present(cfg, NON_NEGATIVE):
        if value < 0:
            raise ConfigError(key, f"{value} is not >= 0")


def at_most(cfg: KernBenchConfig) -> None:
    for key, (limit, unit) in AT_MOST.items():
        value = get_key(cfg, key)
        if value is not ABSENT and value > limit:
            shown = str(limit) if isinstance(limit, int) else f"{limit:g}"
            raise ConfigError(key, f"{value} exceeds {shown} {unit}")


def powers_of_two(cfg: KernBenchConfig) -> None:
    for key, value in present(cfg, POWER_OF_TWO):
        if value < 1:
            raise ConfigError(key, f"{value} is not a power of two (1, 2, 4, ...)")
        if value & (value - 1):
            lower = 1 << (value.bit_length() - 1)
            raise ConfigError(
                key, f"{value} is not a power of two (nearest: {lower} or {lower * 2})"
            )


def pa_field_limits(cfg: KernBenchConfig) -> None:
    for key, (limit, field_bits) in PA_FIELD_LIMITS.items():
        value = get_key(cfg, key)
        if value > limit:
            raise ConfigError(
                key, f"{value} exceeds {limit}, the most the 51-bit PA can address ({field_bits})"
            )


# The rules on named keys, run after leaf_limits (which reads the walk of the config).
KEY_RULES: tuple[Callable[[KernBenchConfig], None], ...] = (
    at_least_one,
    non_negative,
    at_most,
    powers_of_two,
    pa_field_limits,
)

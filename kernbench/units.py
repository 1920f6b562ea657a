"""Units, in one place.

Simulated time is in nanoseconds. Bandwidth is in GB/s, and 1 GB/s = 10^9 B/s is
exactly 1 byte/ns, so ``nbytes / bw_gbs`` is a time in ns with no conversion factor
(the fabric divides by bandwidth directly, on its hot path).
"""

# The integers a result column holds (Arrow int64).
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def cycles_to_ns(cycles: float, clock_ghz: float) -> float:
    """A cycle count at ``clock_ghz`` GHz, in ns."""
    return cycles / clock_ghz


# The unit a key or column name carries (STYLE: units are part of every name). Names
# whose unit is not a suffix are listed by their last part; the first suffix that
# matches wins, so the longer suffixes come first.
UNITS_BY_NAME: dict[str, str] = {
    "page_size": "B",
    "bytes_per_pe": "B",
    "bytes_moved": "B",
    "byte_cycles_recip": "cycles/B",
    "gemm_flops_per_cycle": "flop/cycle",
    "math_elems_per_cycle": "elements/cycle",
    "us_per_access": "µs",
    "speed_ratio": "× bare SimPy rate",
}
UNITS_BY_SUFFIX: tuple[tuple[str, str], ...] = (
    ("_bytes_per_tile", "B/tile"),
    ("_cycles_per_tile", "cycles/tile"),
    ("_per_tile", "per tile"),
    ("_per_s", "1/s"),
    ("_gbs", "GB/s"),
    ("_ns", "ns"),
    ("_bytes", "B"),
    ("_cycles", "cycles"),
    ("_ghz", "GHz"),
    ("_wall_s", "s"),
    ("wall_s", "s"),
    ("_utilization", "fraction of the time"),
    ("_efficiency", "fraction of peak"),
)


def unit_of(name: str) -> str:
    """The unit of a dotted key or column (``workload.access_bytes`` -> ``B``), or ""
    for a count, a ratio or a choice."""
    last = name.rsplit(".", 1)[-1]
    if last in UNITS_BY_NAME:
        return UNITS_BY_NAME[last]
    return next((unit for suffix, unit in UNITS_BY_SUFFIX if last.endswith(suffix)), "")


# Axis labels: a name's last part in words, its unit once, in brackets. The suffix
# that spells the unit is dropped (``kernel_latency_ns`` -> ``kernel latency (ns)``);
# names whose words would repeat the unit get words of their own.
LABEL_WORDS: dict[str, str] = {
    "access_bytes": "access size",
    "bytes_per_pe": "work per PE",
    "pes_per_cube": "PEs per cube",
    "byte_cycles_recip": "R, cost per byte",
    "logical_bytes_per_tile": "logical data",
    "dispatch_cycles_per_tile": "dispatch cost",
    "sim_wall_s": "simulation wall time",
    "wall_s": "wall time",
    "mean_pe_bw_gbs": "mean per-PE bandwidth",
    "min_pe_bw_gbs": "lowest per-PE bandwidth",
    "max_pe_bw_gbs": "highest per-PE bandwidth",
    "aggregate_bw_gbs": "aggregate bandwidth",
    "hbm_channels_used": "HBM channels used",
}
UNIT_SUFFIXES = (
    "_bytes_per_tile",
    "_cycles_per_tile",
    "_per_tile",
    "_per_s",
    "_gbs",
    "_ns",
    "_bytes",
    "_cycles",
    "_ghz",
    "_wall_s",
)


def axis_label(name: str) -> str:
    """A short axis label: ``workload.access_bytes`` -> ``access size (B)``,
    ``kernel_latency_ns`` -> ``kernel latency (ns)``, ``workload.name`` -> ``workload``;
    a name without a unit in words."""
    parts = name.split(".")
    last = parts[-1]
    unit = unit_of(last)
    words = LABEL_WORDS.get(last) or (parts[-2] if last == "name" and len(parts) > 1 else None)
    if words is None:
        suffix = next((s for s in UNIT_SUFFIXES if last.endswith(s) and last != s), "")
        words = last.removesuffix(suffix).replace("_", " ") if unit else last.replace("_", " ")
    return f"{words} ({unit})" if unit else words

"""Units, in one place.

Simulated time is in nanoseconds. Bandwidth is in GB/s, and 1 GB/s = 10^9 B/s is
exactly 1 byte/ns, so ``nbytes / bw_gbs`` is a time in ns with no conversion factor
(the fabric divides by bandwidth directly, on its hot path).
"""


def cycles_to_ns(cycles: float, clock_ghz: float) -> float:
    """A cycle count at ``clock_ghz`` GHz, in ns."""
    return cycles / clock_ghz

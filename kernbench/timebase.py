"""Simulated time on a grid: why a run gives the same answer whenever it starts.

Simulated time is in ns (:mod:`kernbench.units`), held in floats. A float sum rounds
by the magnitude of its terms, so the same durations added to a launch at 0 ns and to
one at 1117.625 ns (LA's installs) round differently, ties between events that are
simultaneous in exact arithmetic break either way, and max-min sharing among many
short flows amplifies the difference: PA and LA, whose data planes are identical,
ended 0.9% apart. So every duration the simulator adds to a time is first put on a
grid of ``TICK_NS`` = 2^-16 ns (about 15 fs; :func:`on_grid`, to the nearest tick).
Every time is then a multiple of the tick, and below 2^37 ns (137 s of simulated
time; a run here lasts micro- to milliseconds) a float holds every such multiple
exactly: sums and differences of times are exact, and a run shifted by any whole
number of ticks (any whole ns, any install time the control plane produces) gives
the same times shifted by exactly that amount, in both fabrics and both builds.

The grid moves a duration by at most half a tick (7.6e-6 ns): closed forms hold with
``on_grid`` around each term that is not a multiple of the tick (``n / bw`` with
``bw`` not a power of two, ``cycles / GHz``), and a term that is (4096 B at 32 GB/s
is 128 ns) is unchanged.
"""

from __future__ import annotations

import math
from typing import Final

TICKS_PER_NS: Final = 65536.0  # 2^16: scaling by it is exact
TICK_NS: Final = 1.0 / TICKS_PER_NS


def on_grid(ns: float) -> float:
    """``ns`` to the nearest tick (half a tick up): a duration every time can be
    added to exactly."""
    return math.floor(ns * TICKS_PER_NS + 0.5) / TICKS_PER_NS

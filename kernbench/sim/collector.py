"""CPython's garbage collector during a run: young collections less often.

A run's in-flight state (flows, transfers, event tuples, a DMA's commands) lives
a few simulated hops and is then freed by reference counting; none of it needs the
collector. With CPython's default young threshold (700 allocations) a young
collection finds most of it still alive and promotes it, so the older generations
fill with objects that die soon after and their walks, full collections included,
run again and again over a state as large as the PEs in flight. At 1,024 PEs
streaming ``neighbor`` 1:1 (compiled build, 64 accesses of 256 B each) the collector
took 11.7 of 34.2 us per access (764 young, 69 middle and 6 full collections); with a
young threshold of 50,000, 0.3 of 19.3 us (5 young collections, none older). The
cyclic garbage a run makes is its PEs' kernel contexts (about one object per
command), so collecting later holds little memory. The threshold is restored when
the run ends, so a user's process sees its own settings around the simulator. The
runtime's deploys, frees and launches hold it around what they do outside the run
too (``kernbench.runtime.context``): a tensor's mappings live until it is freed, a
traced kernel's commands until the run retires them. At 16,384 PEs (one read each,
1:1, ``hotspot``) doing so in deploy and free as well as in the launch took the
collector from 0.92 of 3.97 s to 0.65 of 3.22.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

YOUNG_THRESHOLD: Final = 50_000  # allocations between young collections during a run


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect young objects at most every :data:`YOUNG_THRESHOLD` allocations inside
    the block (never more often than the process asked), then restore the thresholds."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)

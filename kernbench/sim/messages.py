"""Control-plane messages (DESIGN §3.3, §13.1): what an install or unmap carries.

A message is for a set of PEs (D-VA3's ``target_sips``, narrowed by cubes or PEs) and
has a size (:meth:`ControlMsg.size_bytes`): ``msg_header_bytes`` plus one entry per
page it maps or unmaps (``pte_bytes``) or per segment it installs or removes
(``baaw_segment_bytes``). What it *does* on landing is the address model's business
(the ``apply`` callback it carries); moving it is :mod:`kernbench.sim.control`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import simpy

from kernbench.config.schema import ControlConfig
from kernbench.topology.names import PeId


@dataclass(eq=False)
class ControlMsg:
    """A message for a set of PEs. ``apply(pe)`` runs when it lands on a PE.

    ``target_sips`` limits SIP-level routing (D-VA3); ``target_cubes`` (pairs of
    sip, cube) and ``target_pes`` (global PE indices) narrow it further; None = all.
    ``entries`` is how many table entries it carries (pages or segments, by kind),
    which with the header makes its size; ``sent_bytes`` is that size, set when the
    host sends it.
    """

    target_sips: tuple[int, ...]
    apply: Callable[[PeId], None]
    target_cubes: frozenset[tuple[int, int]] | None = None
    target_pes: frozenset[int] | None = None
    entries: int = 0
    sent_bytes: int = 0
    sent_ns: float = 0.0
    landed_ns: float = 0.0
    pending: int = 0
    landed_on: set[int] = field(default_factory=set, repr=False)
    done: simpy.Event | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return type(self).__name__

    @property
    def latency_ns(self) -> float:
        """Measured end to end: sent by the host until it landed on its last PE."""
        return self.landed_ns - self.sent_ns

    def entry_bytes(self, ctl: ControlConfig) -> int:
        """Bytes of one of its entries. A bare message has no table behind it: it
        carries none (its size is its header), and a count of them is a bug."""
        if self.entries:
            raise TypeError(f"a bare {self.kind} carries no entries ({self.entries} given)")
        return 0

    def size_bytes(self, ctl: ControlConfig) -> int:
        """What it weighs on every link (DESIGN §13.1): the header and its entries."""
        return ctl.msg_header_bytes + self.entries * self.entry_bytes(ctl)


class MmuMapMsg(ControlMsg):
    """Install VA -> PA page mappings in the target PEs' MMUs (D-VA3): one page-table
    entry per page it maps."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.pte_bytes


class MmuUnmapMsg(ControlMsg):
    """Remove a tensor's VA mappings (D-VA4): one page-table entry per page it unmaps."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.pte_bytes


class BaawSegmentInstallMsg(ControlMsg):
    """Register LA segments in the target PEs' BAAW tables (D-LA3): one entry each."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.baaw_segment_bytes


class BaawSegmentUninstallMsg(ControlMsg):
    """Remove LA segments from the target PEs' BAAW tables (D-LA3 step 3): one entry
    each, as installed (the table is the install's, read back)."""

    def entry_bytes(self, ctl: ControlConfig) -> int:
        return ctl.baaw_segment_bytes

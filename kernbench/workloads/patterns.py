"""Stream traffic patterns (DESIGN §5): whose memory each access of each PE targets.

A pattern maps each active PE (program ``i`` runs on global PE ``i``) to the global
index of the PE whose shard it reads or writes: one index for every access of that PE
(``local``, ``neighbor``, ``hotspot``, ``cross_cube``) or one per access (``uniform``).
The stream deploys its tensors over enough PEs to hold every target and then follows
the graph's real routes to them, so this module only decides *who*, never *how*.
Global order is (sip, cube, pe), as :attr:`TopologyGraph.pes`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernbench.config.schema import StreamPattern, StreamWorkloadConfig, TopologyConfig
from kernbench.topology.names import PeId

# Per program: one target PE for all its accesses, or one per access.
Owners = list[int] | list[list[int]]


def _neighbor(pe: PeId, topo: TopologyConfig) -> int:
    """The next PE of the same cube (wrapping round)."""
    return pe.index - pe.pe + (pe.pe + 1) % topo.pes_per_cube


def _cross_cube(pe: PeId, topo: TopologyConfig) -> int:
    """The PE with the same index in the next cube (global cube order, wrapping round;
    from a SIP's last cube that is the next SIP's first, over PCIe)."""
    cubes = topo.n_sips * topo.cubes_per_sip
    cube = (pe.sip * topo.cubes_per_sip + pe.cube + 1) % cubes
    return cube * topo.pes_per_cube + pe.pe


FIXED: dict[StreamPattern, Callable[[PeId, TopologyConfig, StreamWorkloadConfig], int]] = {
    StreamPattern.local: lambda pe, topo, w: pe.index,
    StreamPattern.neighbor: lambda pe, topo, w: _neighbor(pe, topo),
    StreamPattern.hotspot: lambda pe, topo, w: w.hotspot_pe,
    StreamPattern.cross_cube: lambda pe, topo, w: _cross_cube(pe, topo),
}


def owners(
    w: StreamWorkloadConfig, topo: TopologyConfig, active: list[PeId], accesses: int
) -> Owners:
    """The target PE of each active PE (fixed patterns) or of each of its ``accesses``
    (``uniform``: drawn from every PE of the topology by ``numpy``'s default generator
    seeded with ``workload.seed``, one row per PE in order, so a seed fixes the run)."""
    if w.pattern is StreamPattern.uniform:
        total = topo.n_sips * topo.cubes_per_sip * topo.pes_per_cube
        draws = np.random.default_rng(w.seed).integers(0, total, size=(len(active), accesses))
        return draws.tolist()
    target = FIXED[w.pattern]
    return [target(pe, topo, w) for pe in active]


def targeted(targets: Owners) -> set[int]:
    """The PEs whose memory some access targets."""
    return {t for row in targets for t in (row if isinstance(row, list) else (row,))}


def holders(targets: Owners, active: int) -> int:
    """How many PEs (the first ones, in global order) the tensors must span: every
    target, and every active PE, so a VA/LA mapping reaches each requester's SIP."""
    return max(active, 1 + max(targeted(targets), default=0))

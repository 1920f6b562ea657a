"""An LA segment (ADR-0011 D-LA3): one shard's HBM range as the LA model maps it.

A :class:`Segment` maps ``[la_base, la_base+la_size)`` onto one shard's HBM range
``[A, A+S)`` of its owner PE (A aligned to g·N, the allocation behind it whole
stripes, S any size: segments are byte-granular, so a tensor's shards sit back to
back in its LA range and ``la_base + k`` is byte k of the tensor). Under 1:1 channel
``c`` holds channel space ``[A/N, (A+S)/N)``, starts at PA ``pe_base + A + c·g`` and LA
offset ``o`` lives where PE offset ``A + o`` does in the interleave of DESIGN §4 — so
1:1 and n:1 move the same bytes, and aligned accesses drain in the same time. Under
n:1 the whole access goes to the owner's aggregate router (D-LA7).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernbench.address import interleave
from kernbench.address.pa import pe_base
from kernbench.errors import AddressFault
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId


@dataclass(frozen=True, slots=True)
class Segment:
    """D-LA3 fields; ``routers[c]`` is channel c's node ``{owner}.ch_r{channel_ids[c]}``."""

    la_base: int
    la_size: int
    one_to_one: bool
    granule: int = 0
    channel_count: int = 0
    pa_bases: tuple[int, ...] = ()
    channel_ids: tuple[int, ...] = ()
    channel_size: int = 0
    routers: tuple[str, ...] = ()
    agg_pa_base: int = 0
    agg_node_id: str = ""
    # Derived: the end, and (router, PA base, channel id) per channel under 1:1.
    la_end: int = field(init=False, repr=False, compare=False)
    channels: tuple[tuple[str, int, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "la_end", self.la_base + self.la_size)
        chans = tuple(zip(self.routers, self.pa_bases, self.channel_ids, strict=True))
        object.__setattr__(self, "channels", chans)

    def resolve(self, o: int, nbytes: int) -> list[PhysicalRequest]:
        """Requests for segment offsets ``[o, o+nbytes)`` (inside the segment)."""
        if not self.one_to_one:
            return [(self.agg_node_id, self.agg_pa_base + o, nbytes, -1)]
        g, n = self.granule, self.channel_count
        if interleave.whole_stripes(o, nbytes, g, n):
            each = nbytes // n
            return [(r, base + o, each, ch) for r, base, ch in self.channels]
        return self.split(o, nbytes)

    def split(self, o: int, nbytes: int) -> list[PhysicalRequest]:
        """The 1:1 requests of any range (the general case)."""
        g, n, bases = self.granule, self.channel_count, self.pa_bases
        return [
            (self.routers[ch], bases[ch] + (co // g) * g * n + co % g, nb, self.channel_ids[ch])
            for ch, co, nb in interleave.split(o, nbytes, g, n)
        ]


def make_segment(graph: TopologyGraph, owner: PeId, la_base: int, pa: int, size: int) -> Segment:
    """The segment for an owner's HBM range ``[pa, pa+size)``. Under 1:1 the range must
    start on a stripe (g·N) so that it starts on channel 0; its size is free (the HBM
    allocation behind it is whole stripes), and ``channel_size`` is each channel's
    share of those stripes."""
    if not graph.one_to_one:
        return Segment(la_base, size, False, agg_pa_base=pa, agg_node_id=owner.agg_router)
    g, n = graph.config.cube.memory_map.interleave_bytes, graph.channels_per_pe
    if (pa - pe_base(owner.sip, owner.cube, owner.pe)) % (g * n):
        raise AddressFault(f"segment PA {pa:#x}+{size} is not aligned to a stripe of {g * n}")
    ids = tuple(owner.pe * n + c for c in range(n))
    return Segment(
        la_base,
        size,
        True,
        granule=g,
        channel_count=n,
        pa_bases=tuple(pa + c * g for c in range(n)),
        channel_ids=ids,
        channel_size=-(-size // (g * n)) * g,
        routers=tuple(owner.channel_router(i) for i in ids),
    )

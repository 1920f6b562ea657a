"""The PA model (ADR-0011 D-PA1/D-PA2): kernels use physical addresses directly.

PE_DMA decodes the PA to its owner PE; under n:1 the whole access goes to the
owner's aggregate router, under 1:1 it is split over the owner's channels by the
interleave of :mod:`kernbench.address.interleave`. This is also the physical layer
the VA and LA models resolve into.
"""

from __future__ import annotations

from typing import Final, NoReturn

from kernbench.address import interleave
from kernbench.address.models import AddressModelPolicy, Copies, TensorMap
from kernbench.address.pa import OFFSET_BITS, PhysAddr, owner_fields
from kernbench.config import schema
from kernbench.errors import AddressFault
from kernbench.sim.control import ControlMsg
from kernbench.sim.fabric import PhysicalRequest
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId

_OWNER_SHIFT: Final = OFFSET_BITS + 1  # sip|cube|pe sit above the region bit
_OFFSET_MASK: Final = (1 << OFFSET_BITS) - 1


class PhysicalLayer:
    """Resolves PA ranges into per-router physical requests. What it keeps per PE (its
    routers, under 1:1 its channels) is made the first time an address of that PE is
    resolved: a PE no access reaches costs nothing."""

    def __init__(self, graph: TopologyGraph) -> None:
        mm = graph.config.cube.memory_map
        self.graph = graph
        self.n_channels = graph.channels_per_pe
        self.granule = mm.interleave_bytes
        self.capacity = self.n_channels * mm.hbm_channel_bytes
        self.one_to_one = graph.one_to_one
        # by owner key (a PA's sip|cube|pe bits): the PE, its routers, and under 1:1
        # (router, PA offset of its first granule, channel id) per channel
        self._owner: dict[int, PeId] = {}
        self._routers: dict[int, list[str]] = {}
        self._channels: dict[int, tuple[tuple[str, int, int], ...]] = {}

    def _known(self, key: int) -> list[str] | None:
        """The routers of the PE whose owner key is ``key`` (made on first use), or
        None if no PE of the topology has that key."""
        routers = self._routers.get(key)
        if routers is not None:
            return routers
        top = self.graph.config
        s, c, p = owner_fields(key << _OWNER_SHIFT)
        if not 0 <= s < top.n_sips or c >= top.cubes_per_sip or p >= top.pes_per_cube:
            return None
        pe = self._owner[key] = self.graph.layout.pe_id(s, c, p)
        self._routers[key] = routers = self.graph.routers(pe)
        if self.one_to_one:
            self._channels[key] = tuple(
                (r, c * self.granule, pe.pe * self.n_channels + c) for c, r in enumerate(routers)
            )
        return routers

    def owner(self, pa: int) -> PeId:
        key = pa >> _OWNER_SHIFT
        if self._known(key) is None or (pa >> OFFSET_BITS) & 1:
            raise AddressFault(f"PA {pa:#x} is not in the HBM of any PE ({PhysAddr.decode(pa)})")
        return self._owner[key]

    def resolve(self, pa: int, nbytes: int) -> list[PhysicalRequest]:
        """Physical requests for ``[pa, pa+nbytes)``, which must lie in one PE's HBM."""
        key = pa >> _OWNER_SHIFT
        routers = self._routers.get(key)
        if routers is None:
            routers = self._known(key)
        offset = pa & _OFFSET_MASK
        if routers is None or (pa >> OFFSET_BITS) & 1 or offset + nbytes > self.capacity:
            self._fault(pa, nbytes)
        if not self.one_to_one:
            return [(routers[0], pa, nbytes, -1)]
        g, n = self.granule, self.n_channels
        if interleave.whole_stripes(offset, nbytes, g, n):
            each = nbytes // n
            return [(r, pa + delta, each, ch) for r, delta, ch in self._channels[key]]
        return self.split(key, pa, offset, nbytes)

    def split(self, key: int, pa: int, offset: int, nbytes: int) -> list[PhysicalRequest]:
        """The 1:1 requests of any range of the PE keyed ``key`` (the general case)."""
        base, g, n = pa - offset, self.granule, self.n_channels
        routers, first_id = self._routers[key], self._owner[key].pe * n
        return [
            (routers[ch], base + _pe_offset(co, ch, g, n), nb, first_id + ch)
            for ch, co, nb in interleave.split(offset, nbytes, g, n)
        ]

    def _fault(self, pa: int, nbytes: int) -> NoReturn:
        self.owner(pa)
        raise AddressFault(
            f"PA range {pa:#x}+{nbytes} ends past the PE's HBM capacity of {self.capacity} bytes"
        )


def _pe_offset(channel_offset: int, channel: int, granule: int, n: int) -> int:
    """Inverse interleave: the PE-space offset of a channel's byte."""
    return (channel_offset // granule) * granule * n + channel * granule + channel_offset % granule


def hbm_alignment(graph: TopologyGraph) -> int:
    """Alignment of every HBM allocation (:func:`kernbench.config.schema.hbm_alignment`)."""
    return schema.hbm_alignment(graph.config)


class PaModel(AddressModelPolicy):
    """Kernels see PAs: a tensor shard's pointer is its PA; nothing to install."""

    layout_unit = 1  # offsets are bookkeeping only: a shard's pointer is its PA

    def __init__(self, graph: TopologyGraph, physical: PhysicalLayer) -> None:
        self.physical = physical

    def resolve(self, pe: PeId, addr: int, nbytes: int) -> tuple[list[PhysicalRequest], float]:
        return self.physical.resolve(addr, nbytes), 0.0

    def map_tensor(
        self, copies: Copies, sharded: bool, name: str = ""
    ) -> tuple[TensorMap, list[ControlMsg]]:
        return TensorMap(None, 0, copies, sharded, name), []

    def unmap_tensor(self, tmap: TensorMap) -> list[ControlMsg]:
        return []

"""The address-model interface and its registry (ADR-0011: exactly one model per run).

An address model is a small policy chosen by name (``address.model``). PE_DMA asks
it to ``resolve(pe, addr, nbytes)`` into physical requests; the runtime asks it to
map a deployed tensor (returning the tensor's base pointer, if the model has one,
and the control messages that install the mapping) and to unmap it again. This
module owns that contract and the mapping strategies of D-VA3 shared by VA and LA;
it does not move messages (that is :mod:`kernbench.sim.control`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from kernbench.sim.control import ControlMsg, targets
from kernbench.sim.dma import AddressFrontEnd
from kernbench.topology.graph import TopologyGraph
from kernbench.topology.names import PeId


@dataclass(frozen=True, slots=True)
class Piece:
    """One shard as an address model sees it: owner, place in the tensor's range, its
    bytes (0 for the empty shard of a tensor smaller than its PEs), PA."""

    pe: PeId
    offset_bytes: int
    nbytes: int
    pa: int


def shard_offsets(sizes: Sequence[int], unit: int) -> list[int]:
    """Where each shard starts in its tensor's address range (ADR-0011 D-VA1).

    Back to back (shard i at the sum of the sizes before it) when every size is a
    multiple of ``unit``, the model's layout unit: then ``base + k`` is byte ``k`` of
    the tensor, as kernel pointer arithmetic expects. Otherwise shard i starts at
    i x (the largest size rounded up to ``unit``), and the bytes between one shard's
    end and the next shard's start are a hole (an access there is a fault).
    """
    if all(size % unit == 0 for size in sizes):
        return list(accumulate(sizes[:-1], initial=0))
    stride = -(-max(sizes) // unit) * unit
    return [i * stride for i in range(len(sizes))]


Copies = Sequence[Sequence[Piece]]


@dataclass
class TensorMap:
    """What an address model remembers about a mapped tensor, to unmap it later."""

    base: int | None
    span: int
    copies: Copies
    sharded: bool
    name: str = ""


def tensor_span(copies: Copies) -> int:
    """Bytes of a tensor's address range: up to the end of its last shard."""
    return max(p.offset_bytes + p.nbytes for copy in copies for p in copy)


class AddressModelPolicy(AddressFrontEnd):
    """What PE_DMA (``resolve``) and the runtime ask of an address model: the base of
    the PA, VA and LA models."""

    # The granule of the tensor's range (VA: a page, LA and PA: a byte). Shards are laid
    # out by :func:`shard_offsets`; pointers are ``base + offset_bytes`` under VA and LA.
    layout_unit: int

    def map_tensor(
        self, copies: Copies, sharded: bool, name: str = ""
    ) -> tuple[TensorMap, list[ControlMsg]]:
        """Reserve the tensor's address range; the messages that install its mapping
        (``name`` is the tensor's, for faults)."""
        raise NotImplementedError

    def unmap_tensor(self, tmap: TensorMap) -> list[ControlMsg]:
        """Return the address range; the messages that remove the mapping."""
        raise NotImplementedError


Cubes = frozenset[tuple[int, int]] | None
MsgFactory = Callable[[tuple[int, ...], Cubes, list[Piece]], ControlMsg]


def strategy_messages(copies: Copies, sharded: bool, make: MsgFactory) -> list[ControlMsg]:
    """D-VA3: sharded -> one message broadcast to every cube of the SIPs holding shards;
    replicate -> one message per copy, to that copy's own cube only."""
    if sharded:
        sips = tuple(sorted({p.pe.sip for copy in copies for p in copy}))
        return [make(sips, None, [p for copy in copies for p in copy])]
    out = []
    for copy in copies:
        cubes = frozenset((p.pe.sip, p.pe.cube) for p in copy)
        out.append(make(tuple(sorted({s for s, _ in cubes})), cubes, list(copy)))
    return out


def visible_pes(graph: TopologyGraph, msg: ControlMsg) -> list[PeId]:
    """The PEs a strategy message reaches (the control plane's fan-out)."""
    return targets(graph, msg)

"""Read-only views of a topology that make each item when asked (DESIGN §3.1).

A 16,384-PE topology has 16,384 PEs, about 130,000 HBM routers and 800,000 links; a
run touches what its traffic reaches. These views give the whole as a sequence or a
mapping (the tests walk every link of small topologies, the PA layer finds a PE by
index) while holding nothing but the layout: an item is made from its coordinates or
its id (:mod:`kernbench.topology.layout`) each time it is asked for. Left out of the
compiled build (setup.py): they are not on any access's path, and as pure Python
they can be the ``collections.abc`` types their users expect.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import overload

from kernbench.topology.layout import Link, LinkLayout
from kernbench.topology.names import PeId


class PeIds(Sequence[PeId]):
    """Every PE in global order (sip, cube, pe): ``index`` is the position."""

    def __init__(self, layout: LinkLayout) -> None:
        self._layout = layout
        self._count = layout.sips * layout.cubes * layout.pes

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> PeId: ...

    @overload
    def __getitem__(self, i: slice) -> list[PeId]: ...

    def __getitem__(self, i: int | slice) -> PeId | list[PeId]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._count))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(f"no PE {i}: the topology has {self._count}")
        cube, p = divmod(i, self._layout.pes)
        s, c = divmod(cube, self._layout.cubes)
        return PeId(s, c, p, i)

    def __iter__(self) -> Iterator[PeId]:
        return (self[i] for i in range(self._count))

    def in_cube(self, s: int, c: int) -> list[PeId]:
        """The PEs of cube ``c`` of SIP ``s``, in order."""
        return [self._layout.pe_id(s, c, p) for p in range(self._layout.pes)]


class Links(Sequence[Link]):
    """Every link by id, each made from its id (:meth:`LinkLayout.link`)."""

    def __init__(self, layout: LinkLayout) -> None:
        self._layout = layout

    def __len__(self) -> int:
        return self._layout.count

    @overload
    def __getitem__(self, i: int) -> Link: ...

    @overload
    def __getitem__(self, i: slice) -> list[Link]: ...

    def __getitem__(self, i: int | slice) -> Link | list[Link]:
        if isinstance(i, slice):
            return [self._layout.link(k) for k in range(*i.indices(len(self)))]
        return self._layout.link(i + len(self) if i < 0 else i)

    def __iter__(self) -> Iterator[Link]:
        return (self._layout.link(i) for i in range(len(self)))


class HbmLinks(Mapping[str, Link]):
    """Router node -> its link into the cube's HBM controller, in id order."""

    def __init__(self, layout: LinkLayout, pes: PeIds) -> None:
        self._layout = layout
        self._pes = pes

    def __getitem__(self, router: str) -> Link:
        place = self._layout.router_place(router)
        if place is None:
            raise KeyError(router)
        s, c, p, r = place
        return self._layout.link(self._layout.router_to_hbm(s, c, p, r))

    def __iter__(self) -> Iterator[str]:
        layout = self._layout
        return (layout.router_node(pe, r) for pe in self._pes for r in range(layout.routers))

    def __len__(self) -> int:
        return len(self._pes) * self._layout.routers


class Twins(Mapping[int, int]):
    """Data link id -> the id of the link between the same nodes the other way."""

    def __init__(self, layout: LinkLayout) -> None:
        self._layout = layout

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self._layout.count or self._layout.twin(i) < 0:
            raise KeyError(i)
        return self._layout.twin(i)

    def __iter__(self) -> Iterator[int]:
        return (i for i in range(self._layout.count) if self._layout.twin(i) >= 0)

    def __len__(self) -> int:
        return sum(1 for _ in self)

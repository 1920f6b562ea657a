"""Node names: one place for the naming scheme of DESIGN §3.1."""

from __future__ import annotations

from dataclasses import dataclass

HOST = "host"


@dataclass(frozen=True, slots=True)
class PeId:
    """A PE's place in the hierarchy; ``index`` is its global rank (sip, cube, pe order)."""

    sip: int
    cube: int
    pe: int
    index: int

    @property
    def prefix(self) -> str:
        return f"sip{self.sip}.cube{self.cube}.pe{self.pe}"

    def node(self, part: str) -> str:
        return f"{self.prefix}.{part}"

    def channel_router(self, channel_id: int) -> str:
        """Router of a cube-global channel id (PE p owns p*N ... p*N+N-1)."""
        return f"{self.prefix}.ch_r{channel_id}"

    @property
    def agg_router(self) -> str:
        return f"{self.prefix}.agg_router"


def sip_node(sip: int, part: str) -> str:
    return f"sip{sip}.{part}"


def cube_node(sip: int, cube: int, part: str) -> str:
    return f"sip{sip}.cube{cube}.{part}"


def pe_part(node: str) -> tuple[int, int, int, str] | None:
    """``(sip, cube, pe, part)`` of a PE's node ``sip{s}.cube{c}.pe{p}.{part}``
    (``part`` may hold dots); None for any other name."""
    fields = node.split(".", 3)
    if len(fields) != 4:
        return None
    sip, cube, pe = fields[0][3:], fields[1][4:], fields[2][2:]
    if not (sip.isdigit() and cube.isdigit() and pe.isdigit()):
        return None
    s, c, p = int(sip), int(cube), int(pe)
    if node != f"sip{s}.cube{c}.pe{p}.{fields[3]}":  # a prefix spelled another way
        return None
    return s, c, p, fields[3]

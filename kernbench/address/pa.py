"""The 51-bit device physical address (ADR-0011 D-PA1/D-PA2).

Layout, most significant first::

    [50:47] sip  (4 bits)   [46:43] cube (4 bits)   [42:37] pe (6 bits)
    [36]    region (0 = HBM, 1 = TCM)               [35:0]  offset (36 bits, 64 GiB)

A PA names one byte of one PE's local memory; decoding it is all a resolver needs
to find the node that serves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from kernbench.errors import AddressFault

PA_BITS: Final = 51
OFFSET_BITS: Final = 36
_REGION_SHIFT: Final = OFFSET_BITS
_PE_SHIFT: Final = _REGION_SHIFT + 1
_CUBE_SHIFT: Final = _PE_SHIFT + 6
_SIP_SHIFT: Final = _CUBE_SHIFT + 4
MAX_SIPS: Final = 1 << 4
MAX_CUBES: Final = 1 << 4
MAX_PES: Final = 1 << 6
MAX_OFFSET: Final = 1 << OFFSET_BITS


class Region(IntEnum):
    HBM = 0
    TCM = 1


@dataclass(frozen=True, slots=True)
class PhysAddr:
    """The decoded fields of a PA."""

    sip: int
    cube: int
    pe: int
    region: Region
    offset: int

    def encode(self) -> int:
        """Pack the fields into a 51-bit integer; out-of-range fields are a fault."""
        for name, value, limit in (
            ("sip", self.sip, MAX_SIPS),
            ("cube", self.cube, MAX_CUBES),
            ("pe", self.pe, MAX_PES),
            ("offset", self.offset, MAX_OFFSET),
        ):
            if not 0 <= value < limit:
                raise AddressFault(f"PA field {name}={value} outside [0, {limit})")
        return (
            (self.sip << _SIP_SHIFT)
            | (self.cube << _CUBE_SHIFT)
            | (self.pe << _PE_SHIFT)
            | (int(self.region) << _REGION_SHIFT)
            | self.offset
        )

    @staticmethod
    def decode(pa: int) -> PhysAddr:
        """Split a 51-bit PA into its fields."""
        if not 0 <= pa < (1 << PA_BITS):
            raise AddressFault(f"address {pa:#x} is not a {PA_BITS}-bit PA")
        return PhysAddr(
            sip=(pa >> _SIP_SHIFT) & (MAX_SIPS - 1),
            cube=(pa >> _CUBE_SHIFT) & (MAX_CUBES - 1),
            pe=(pa >> _PE_SHIFT) & (MAX_PES - 1),
            region=Region((pa >> _REGION_SHIFT) & 1),
            offset=pa & (MAX_OFFSET - 1),
        )


def owner_fields(pa: int) -> tuple[int, int, int]:
    """The (sip, cube, pe) fields of a PA, its region and offset ignored; the sip
    field unmasked, so an address past the 51 bits names no SIP of any topology."""
    return (
        pa >> _SIP_SHIFT,
        (pa >> _CUBE_SHIFT) & (MAX_CUBES - 1),
        (pa >> _PE_SHIFT) & (MAX_PES - 1),
    )


def pe_base(sip: int, cube: int, pe: int, region: Region = Region.HBM) -> int:
    """The PA of byte 0 of a PE's region."""
    return PhysAddr(sip, cube, pe, region, 0).encode()

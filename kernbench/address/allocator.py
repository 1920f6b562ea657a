"""Free-list allocators with coalescing (ADR-0011 D-VA4/D-VA5).

One first-fit free list serves every address space that hands out ranges: a PE's
HBM and TCM (:class:`PEMemAllocator`), the device VA space and each PE's LA space.
Freed blocks merge with free neighbours, so freeing everything returns one block.
"""

from __future__ import annotations

import bisect

from kernbench.errors import AddressFault, AllocationError


def align_up(value: int, align: int) -> int:
    return -(-value // align) * align


class FreeListAllocator:
    """First-fit allocation of ``[base, base+size)`` with coalescing on free."""

    def __init__(self, name: str, base: int, size: int, align: int = 1) -> None:
        self.name = name
        self.base = base
        self.size = size
        self.align = align
        self._starts: list[int] = [base]  # sorted starts of free blocks
        self._sizes: dict[int, int] = {base: size}
        self._live: dict[int, int] = {}  # allocated start -> size

    @property
    def free_bytes(self) -> int:
        return sum(self._sizes.values())

    @property
    def free_blocks(self) -> list[tuple[int, int]]:
        return [(s, self._sizes[s]) for s in self._starts]

    def alloc(self, nbytes: int, align: int | None = None) -> int:
        """Reserve ``nbytes`` (rounded up to the alignment); return the start address."""
        if nbytes <= 0:
            raise AllocationError(f"{self.name}: allocation of {nbytes} bytes; must be > 0")
        align = max(align or 1, self.align)
        need = align_up(nbytes, self.align)
        for start in self._starts:
            size = self._sizes[start]
            addr = align_up(start, align)
            if addr + need <= start + size:
                self._take(start, size, addr, need)
                return addr
        raise AllocationError(
            f"{self.name}: cannot allocate {nbytes} bytes: largest free block is "
            f"{max(self._sizes.values(), default=0)} bytes of {self.free_bytes} free "
            f"(capacity {self.size})"
        )

    def free(self, addr: int) -> None:
        """Return the block starting at ``addr`` and merge it with free neighbours."""
        size = self._live.pop(addr, None)
        if size is None:
            raise AddressFault(f"{self.name}: free of {addr:#x}, which is not allocated")
        i = bisect.bisect_left(self._starts, addr)
        if i < len(self._starts) and addr + size == self._starts[i]:
            size += self._sizes.pop(self._starts.pop(i))
        if i > 0 and self._starts[i - 1] + self._sizes[self._starts[i - 1]] == addr:
            self._sizes[self._starts[i - 1]] += size
        else:
            self._starts.insert(i, addr)
            self._sizes[addr] = size

    def size_of(self, addr: int) -> int:
        return self._live[addr]

    def find_fit(self, at_least: int, nbytes: int, align: int | None = None) -> int | None:
        """The lowest aligned start ``>= at_least`` where ``nbytes`` would fit, or None.

        With :meth:`reserve` this lets several allocators agree on one common range
        (a tensor's LA range must be the same in every PE that sees it)."""
        align = max(align or 1, self.align)
        need = align_up(nbytes, self.align)
        for start in self._starts:
            size = self._sizes[start]
            addr = align_up(max(start, at_least), align)
            if addr + need <= start + size:
                return addr
        return None

    def reserve(self, addr: int, nbytes: int) -> None:
        """Allocate exactly ``[addr, addr+nbytes)`` (rounded up); it must be free."""
        need = align_up(nbytes, self.align)
        i = bisect.bisect_right(self._starts, addr) - 1
        start = self._starts[i] if i >= 0 else None
        if start is None or addr + need > start + self._sizes[start]:
            raise AllocationError(f"{self.name}: range {addr:#x}+{need} is not free")
        self._take(start, self._sizes[start], addr, need)

    def _take(self, start: int, size: int, addr: int, need: int) -> None:
        i = bisect.bisect_left(self._starts, start)
        self._starts.pop(i)
        del self._sizes[start]
        tail = start + size - (addr + need)
        if tail:
            self._starts.insert(i, addr + need)
            self._sizes[addr + need] = tail
        if addr > start:
            self._starts.insert(i, start)
            self._sizes[start] = addr - start
        self._live[addr] = need


class PEMemAllocator:
    """One PE's local memories: its HBM share and its TCM, as offsets in each region."""

    def __init__(self, pe_name: str, hbm_bytes: int, tcm_bytes: int, align: int) -> None:
        self.hbm = FreeListAllocator(f"{pe_name} HBM", 0, hbm_bytes, align)
        self.tcm = FreeListAllocator(f"{pe_name} TCM", 0, tcm_bytes, 1)

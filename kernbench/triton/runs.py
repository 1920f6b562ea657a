"""Pointer blocks -> contiguous runs -> DMA descriptors (DESIGN §10).

A Triton load or store names one device address per element. The DMA engine moves
byte ranges, so the unmasked elements' addresses are sorted, de-duplicated (a
broadcast load reads a byte once) and merged into contiguous runs; runs of equal
length at a constant stride (the rows of a matrix tile) become one 2-D descriptor
(:class:`~kernbench.commands.DmaStridedReadCmd`), a single run a plain DMA command.
A block whose runs change length or stride (a wrapped index, a ragged mask) is cut
greedily into the fewest such pieces, one command each. Masked-off elements are not
in the input, so they move nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernbench.commands import (
    DmaReadCmd,
    DmaStridedReadCmd,
    DmaStridedWriteCmd,
    DmaWriteCmd,
    PeCommand,
    Tile,
)


@dataclass(frozen=True)
class Descriptor:
    """``rows`` runs of ``row_bytes`` starting ``stride_bytes`` apart from ``start``."""

    start: int
    rows: int
    row_bytes: int
    stride_bytes: int

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes


def contiguous_runs(addrs: np.ndarray, elem_bytes: int) -> list[tuple[int, int]]:
    """``(start, nbytes)`` of each maximal contiguous run covering the elements at
    ``addrs`` (any order, duplicates allowed), in address order."""
    if addrs.size == 0:
        return []
    starts = addrs.astype(np.int64, copy=False).reshape(-1)
    steps = np.diff(starts)
    if (steps == elem_bytes).all():  # one run in address order: the usual block
        return [(int(starts[0]), starts.size * elem_bytes)]
    if not (steps > 0).all():  # else already sorted and unique
        starts = np.unique(starts)
    breaks = np.flatnonzero(np.diff(starts) != elem_bytes) + 1
    firsts = np.concatenate(([0], breaks))
    lasts = np.concatenate((breaks - 1, [starts.size - 1]))
    return [
        (int(starts[f]), int(starts[la] - starts[f]) + elem_bytes)
        for f, la in zip(firsts, lasts, strict=True)
    ]


def descriptors(runs: list[tuple[int, int]]) -> list[Descriptor]:
    """Cut ``runs`` (in address order) greedily into strided descriptors: a run joins
    the current descriptor if it has its row length and continues its stride."""
    out: list[Descriptor] = []
    for start, nbytes in runs:
        cur = out[-1] if out else None
        if cur is not None and nbytes == cur.row_bytes:
            stride = start - cur.start if cur.rows == 1 else cur.stride_bytes
            if start == cur.start + cur.rows * stride:
                out[-1] = Descriptor(cur.start, cur.rows + 1, nbytes, stride)
                continue
        out.append(Descriptor(start, 1, nbytes, nbytes))
    return out


def dma_commands(descs: list[Descriptor], tile: Tile, read: bool) -> list[PeCommand]:
    """One command per descriptor: plain DMA for one row, a 2-D descriptor for more."""
    cmds: list[PeCommand] = []
    for d in descs:
        if d.rows == 1 and read:
            cmds.append(DmaReadCmd(d.start, d.row_bytes, tile))
        elif d.rows == 1:
            cmds.append(DmaWriteCmd(tile, d.start, d.row_bytes))
        elif read:
            cmds.append(DmaStridedReadCmd(d.start, d.rows, d.row_bytes, d.stride_bytes, tile))
        else:
            cmds.append(DmaStridedWriteCmd(tile, d.start, d.rows, d.row_bytes, d.stride_bytes))
    return cmds

"""Pointer blocks -> runs -> DMA descriptors, and grid -> PE mapping (pure functions)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("triton")

from kernbench.commands import (  # noqa: E402
    DmaReadCmd,
    DmaStridedReadCmd,
    DmaStridedWriteCmd,
    DmaWriteCmd,
    Tile,
)
from kernbench.triton.grid import assign, grid3, programs  # noqa: E402
from kernbench.triton.runs import (  # noqa: E402
    Descriptor,
    contiguous_runs,
    descriptors,
    dma_commands,
)


def test_a_contiguous_block_is_one_run():
    addrs = 1000 + 4 * np.arange(256)
    assert contiguous_runs(addrs[::-1], 4) == [(1000, 1024)]  # any order


def test_duplicates_move_once_and_gaps_split_runs():
    addrs = np.array([0, 4, 4, 8, 100, 104, 0])
    assert contiguous_runs(addrs, 4) == [(0, 12), (100, 8)]


def test_matrix_tile_rows_are_one_strided_descriptor():
    # a 4 x 8 fp16 tile of a row-major matrix with 64 columns: rows 128 B apart
    rows, cols = np.meshgrid(np.arange(4), np.arange(8), indexing="ij")
    addrs = 5000 + 2 * (rows * 64 + cols)
    runs = contiguous_runs(addrs.reshape(-1), 2)
    assert runs == [(5000 + 128 * r, 16) for r in range(4)]
    assert descriptors(runs) == [Descriptor(5000, 4, 16, 128)]


def test_a_ragged_block_is_cut_into_the_fewest_descriptors():
    runs = [(0, 16), (128, 16), (256, 16), (300, 8), (400, 16), (528, 16)]
    assert descriptors(runs) == [
        Descriptor(0, 3, 16, 128),
        Descriptor(300, 1, 8, 8),
        Descriptor(400, 2, 16, 128),
    ]
    assert sum(d.nbytes for d in descriptors(runs)) == sum(n for _, n in runs)


def test_commands_by_descriptor_shape():
    tile = Tile(1, (4, 8), 2)
    one, strided = Descriptor(0, 1, 64, 64), Descriptor(0, 4, 16, 128)
    assert dma_commands([one], tile, True) == [DmaReadCmd(0, 64, tile)]
    assert dma_commands([one], tile, False) == [DmaWriteCmd(tile, 0, 64)]
    assert dma_commands([strided], tile, True) == [DmaStridedReadCmd(0, 4, 16, 128, tile)]
    assert dma_commands([strided], tile, False) == [DmaStridedWriteCmd(tile, 0, 4, 16, 128)]


def test_strided_descriptor_logical_bytes_by_d2():
    # framing 4 + opcode 1 + scope 1 + tuple 1 + src handle 8 + tuple 1 + dst handle 8
    # + 3 scalars (rows, row bytes, stride) 12 = 36; a plain DMA has 1 scalar: 28
    tile = Tile(1, (4, 8), 2)
    assert DmaStridedReadCmd(0, 4, 16, 128, tile).logical_bytes == 4 + 1 + 1 + 1 + 8 + 1 + 8 + 12
    assert DmaReadCmd(0, 64, tile).logical_bytes == 4 + 1 + 1 + 1 + 8 + 1 + 8 + 4


def test_grid_order_and_mappings():
    assert programs(grid3((2, 3))) == [(x, y, 0) for x in range(2) for y in range(3)]
    assert assign(10, 4, "cyclic") == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    assert assign(10, 4, "block") == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]
    assert assign(3, 16, "cyclic") == [[0], [1], [2]]  # only as many PEs as programs
    with pytest.raises(ValueError, match="mapping 'round' is not one of"):
        assign(4, 2, "round")

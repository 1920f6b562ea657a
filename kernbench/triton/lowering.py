"""Triton ops -> KernBench PE commands, and their values through functional memory.

The hook (:mod:`kernbench.triton.hook`) hands every intercepted op here with plain
numpy arrays. Each op issues its commands on the PE running the current program,
through the running kernel's ``kernbench.tl`` context, so both execution paths
(replay, greenlet) see the same command stream and PE_CPU pays the ADR-0064
dispatch cost for every command:

- load / store: the unmasked elements' host pointers -> device addresses of the
  run's address model -> contiguous runs -> DMA commands (2-D descriptors for
  strided blocks, :mod:`kernbench.triton.runs`); values read and written by PA;
- ``tl.dot`` of (m, k) @ (k, n): one ``GemmCmd(m, n, k)``, accumulating in place when
  it has an accumulator (a batched dot folds its batch into m);
- element-wise ops and reductions: one ``MathCmd`` by element count (the largest of
  its operands and result).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from kernbench import tl as kbtl
from kernbench.commands import GemmCmd, MathCmd, PeCommand, Tile
from kernbench.triton.hook import current_program
from kernbench.triton.memory import FunctionalMemory, HostWindow, PastEnd, Translator
from kernbench.triton.runs import contiguous_runs, descriptors, dma_commands


class Lowering:
    """Issues commands for one launch and keeps the device memory's values."""

    def __init__(self, window: HostWindow, translator: Translator, memory: FunctionalMemory):
        self.window = window
        self.translator = translator
        self.memory = memory
        self.commands: Counter[str] = Counter()  # issued per command kind, this launch
        # What the launch asks of each PE's engines, by PE index: GEMM flops and MATH
        # elements (the roofline's compute terms, kernbench.triton.roofline).
        self.flops: Counter[int] = Counter()
        self.elements: Counter[int] = Counter()

    def load(
        self, ptrs: np.ndarray, mask: np.ndarray, other: np.ndarray | None, dtype: Any
    ) -> tuple[np.ndarray, Tile]:
        """Values of the block at ``ptrs`` (``other``, or 0, where masked off)."""
        elem = np.dtype(dtype).itemsize
        tile = self._tile(ptrs.shape, elem)
        if ptrs.size and mask.all():  # every element: values straight from memory
            run = self._run(ptrs, elem)
            if run is not None:  # one ascending run of the tensor: by pieces
                dev_runs, pieces = run
                out = self.memory.read_pieces(pieces).view(dtype).reshape(ptrs.shape)
                self._dma_runs(dev_runs, tile, read=True)
                return out, tile
            dev, pas = self._addresses(ptrs, elem)
            out = self.memory.read(pas, elem).view(dtype).reshape(ptrs.shape)
            self._dma(dev, elem, tile, read=True)
            return out, tile
        out = np.zeros(ptrs.shape, dtype=dtype)
        if other is not None:
            out[...] = np.broadcast_to(other, ptrs.shape)
        keep = np.broadcast_to(mask, ptrs.shape).astype(bool)
        dev, pas = self._addresses(ptrs[keep], elem)
        if dev.size:
            out[keep] = self.memory.read(pas, elem).view(dtype).reshape(-1)
            self._dma(dev, elem, tile, read=True)
        return out, tile

    def store(
        self, ptrs: np.ndarray, values: np.ndarray, mask: np.ndarray, tile: Tile | None
    ) -> None:
        """Write the unmasked elements of ``values`` at ``ptrs``."""
        values = np.ascontiguousarray(np.broadcast_to(values, ptrs.shape))
        elem = values.dtype.itemsize
        run = self._run(ptrs, elem) if mask.all() else None
        if run is not None:  # one ascending run of the tensor: by pieces
            dev_runs, pieces = run
            self.memory.write_pieces(pieces, values.reshape(-1).view(np.uint8))
            src = tile if tile is not None else self._tile(ptrs.shape, elem)
            self._dma_runs(dev_runs, src, read=False)
            return
        if mask.all():  # every element (none at all if the block is empty)
            dev, pas = self._addresses(ptrs, elem)
            kept = values.reshape(-1)
        else:
            keep = np.broadcast_to(mask, ptrs.shape).astype(bool)
            dev, pas = self._addresses(ptrs[keep], elem)
            kept = np.ascontiguousarray(values[keep])
        if not dev.size:
            return
        raw = kept.view(np.uint8).reshape(-1, elem)
        self.memory.write(pas, raw)
        # A constant (no tile yet) still leaves the PE from a local buffer.
        src = tile if tile is not None else self._tile(ptrs.shape, elem)
        self._dma(dev, elem, src, read=False)

    def dot(
        self,
        a_shape: tuple[int, ...],
        b_shape: tuple[int, ...],
        a: Tile | None,
        b: Tile | None,
        acc: Tile | None,
    ) -> Tile:
        """``acc (+)= a @ b`` on the GEMM engine."""
        *batch, m, k = a_shape
        n = b_shape[-1]
        m *= math.prod(batch)
        # An operand that is no tile yet is a constant block: a local buffer.
        a = a if a is not None else self._tile(a_shape, 4)
        b = b if b is not None else self._tile(b_shape, 4)
        out = acc if acc is not None else self._tile((m, n), 4)  # fp32 accumulator
        self._emit(GemmCmd(a, b, out, m, n, k, accumulate=acc is not None))
        return out

    def math(self, op: str, operands: list[Tile], result: np.ndarray) -> Tile:
        """One element-wise op or reduction on the vector engine."""
        out = self._tile(result.shape or (1,), result.dtype.itemsize)
        self._emit(MathCmd(op, tuple(operands), out))
        return out

    # -- internals ----------------------------------------------------------------------
    def _addresses(self, host: np.ndarray, elem: int) -> tuple[np.ndarray, np.ndarray]:
        """Device addresses and PAs of the elements at host pointers ``host``."""
        host = host.astype(np.int64).reshape(-1)
        if not host.size:
            return host, host
        pe = current_program().pe
        dev = np.empty_like(host)
        for views, base, nbytes, idx in self.window.locate(host):
            offs = host[idx] - base
            if offs.max() + elem > nbytes:
                bad = int(host[idx][np.argmax(offs)])
                raise PastEnd(bad, base, nbytes)
            dev[idx] = self.translator.device_addrs(views, pe, offs)
        return dev, self.translator.pas(pe, dev)

    def _run(
        self, ptrs: np.ndarray, elem: int
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
        """A block of at least two elements at consecutive ascending host addresses,
        inside one tensor, in chunks resolved before: its device runs and PA pieces
        (:meth:`Translator.run_pieces`). None: take the element-wise path (which also
        raises every fault)."""
        host = ptrs.reshape(-1)
        if host.size < 2:
            return None
        first, last = int(host[0]), int(host[-1])
        if last - first != (host.size - 1) * elem or not (np.diff(host) == elem).all():
            return None
        found = self.window.find(first)
        if found is None:
            return None
        base, nbytes, views = found
        if last + elem > base + nbytes:
            return None
        pe = current_program().pe
        return self.translator.run_pieces(views, pe, first - base, host.size * elem)

    def _dma_runs(self, runs: list[tuple[int, int]], tile: Tile, read: bool) -> None:
        """The commands of device runs in address order (what :meth:`_dma` gives for
        the addresses of their elements)."""
        for cmd in dma_commands(descriptors(runs), tile, read):
            self._emit(cmd)

    def _dma(self, dev: np.ndarray, elem: int, tile: Tile, read: bool) -> None:
        for cmd in dma_commands(descriptors(contiguous_runs(dev, elem)), tile, read):
            self._emit(cmd)

    def _tile(self, shape: tuple[int, ...], elem: int) -> Tile:
        return kbtl.zeros(tuple(shape) or (1,), elem)

    def _emit(self, cmd: PeCommand) -> None:
        self.commands[type(cmd).__name__] += 1
        if isinstance(cmd, GemmCmd):
            self.flops[current_program().pe.index] += cmd.flops
        elif isinstance(cmd, MathCmd):
            self.elements[current_program().pe.index] += cmd.elements
        kbtl.emit(cmd)

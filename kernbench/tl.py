"""``kernbench.tl``: the Triton-like kernel language.

Kernels are plain Python functions. Every ``tl`` op builds one PE command and hands
it to the current kernel context, which either records it (replay path) or switches
to the simulator (greenlet path); the command is the same either way. Pointers are
integers in whatever space the address model gives (PA, VA or LA), so kernel code
never changes with the model or the channel mapping (ADR-0011 D-LA8).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Final

from kernbench.commands import (
    CompositeCmd,
    DmaReadCmd,
    DmaWriteCmd,
    GemmCmd,
    Handle,
    MathCmd,
    MemRef,
    OpSpec,
    PeCommand,
    PeCpuOverheadCmd,
    Scalar,
    Tile,
)


@dataclass
class KernelContext:
    """Where a running kernel's commands go, and which program it is."""

    program_id: tuple[int, ...]
    num_programs: tuple[int, ...]
    emit: Callable[[PeCommand], None]
    _tile_ids: itertools.count = field(default_factory=itertools.count)

    def new_tile(self, shape: tuple[int, ...], dtype_bytes: int) -> Tile:
        return Tile(next(self._tile_ids), tuple(shape), dtype_bytes)


_current: Final[ContextVar[KernelContext]] = ContextVar("kernbench_tl_context")


def bind(ctx: KernelContext) -> None:
    """Make ``ctx`` the context of the running kernel (per greenlet / per trace)."""
    _current.set(ctx)


def _ctx() -> KernelContext:
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError("kernbench.tl ops run only inside a launched kernel") from None


def emit(cmd: PeCommand) -> None:
    """Issue a command built elsewhere (front ends such as ``kernbench.triton``)."""
    _ctx().emit(cmd)


def program_id(axis: int = 0) -> int:
    return _ctx().program_id[axis]


def num_programs(axis: int = 0) -> int:
    return _ctx().num_programs[axis]


def zeros(shape: tuple[int, ...], dtype_bytes: int = 2) -> Tile:
    """A fresh local tile (no command: local memory needs no initialising traffic)."""
    return _ctx().new_tile(shape, dtype_bytes)


def block(ptr: int, shape: tuple[int, ...], dtype_bytes: int = 2) -> MemRef:
    """A block of device memory, for composite operands."""
    return MemRef(ptr, tuple(shape), dtype_bytes)


def load(ptr: int, shape: tuple[int, ...], dtype_bytes: int = 2, out: Tile | None = None) -> Tile:
    ctx = _ctx()
    dst = out if out is not None else ctx.new_tile(shape, dtype_bytes)
    ctx.emit(DmaReadCmd(ptr, dst.nbytes, dst))
    return dst


def store(ptr: int, tile: Tile) -> None:
    _ctx().emit(DmaWriteCmd(tile, ptr, tile.nbytes))


def dot(a: Tile, b: Tile, acc: Tile | None = None) -> Tile:
    """``a @ b`` (or ``acc += a @ b``) on the GEMM engine."""
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"tl.dot: inner dimensions differ ({a.shape} @ {b.shape})")
    ctx = _ctx()
    out = acc if acc is not None else ctx.new_tile((m, n), a.dtype_bytes)
    ctx.emit(GemmCmd(a, b, out, m, n, k, accumulate=acc is not None))
    return out


def _math(
    op: str, operands: tuple[Tile, ...], shape: tuple[int, ...], out: Tile | None, **extra: Scalar
) -> Tile:
    ctx = _ctx()
    dst = out if out is not None else ctx.new_tile(shape, operands[0].dtype_bytes)
    ctx.emit(MathCmd(op, operands, dst, dict(extra)))
    return dst


def exp(x: Tile, out: Tile | None = None) -> Tile:
    return _math("exp", (x,), x.shape, out)


def add(a: Tile, b: Tile, out: Tile | None = None) -> Tile:
    return _math("add", (a, b), a.shape, out)


def sub(a: Tile, b: Tile, out: Tile | None = None) -> Tile:
    return _math("sub", (a, b), a.shape, out)


def mul(a: Tile, b: Tile, out: Tile | None = None) -> Tile:
    return _math("mul", (a, b), a.shape, out)


def maximum(a: Tile, b: Tile, out: Tile | None = None) -> Tile:
    return _math("maximum", (a, b), a.shape, out)


def div(a: Tile, b: Tile, out: Tile | None = None) -> Tile:
    return _math("div", (a, b), a.shape, out)


def copy(x: Tile, out: Tile | None = None) -> Tile:
    """``out = x`` on the vector engine (e.g. the online-softmax ``m_old = m_new``)."""
    return _math("copy", (x,), x.shape, out)


def exp_diff(a: Tile, b: Tile, out: Tile | None = None) -> Tile:
    """``exp(a - b)`` as one op: the online-softmax rescale factor is one vector op."""
    return _math("exp_diff", (a, b), a.shape, out)


def scaled_rowsum(acc: Tile, scale: Tile, x: Tile, axis: int = 1, out: Tile | None = None) -> Tile:
    """``scale * acc + sum(x, axis)`` as one op: the online-softmax denominator update."""
    return _math("scaled_rowsum", (acc, scale, x), acc.shape, out, axis=axis)


def max(x: Tile, axis: int = 1, out: Tile | None = None) -> Tile:  # noqa: A001 (Triton name)
    return _math("max", (x,), _reduced(x.shape, axis), out, axis=axis)


def sum(x: Tile, axis: int = 1, out: Tile | None = None) -> Tile:  # noqa: A001 (Triton name)
    return _math("sum", (x,), _reduced(x.shape, axis), out, axis=axis)


def _reduced(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return tuple(1 if i == axis else d for i, d in enumerate(shape))


def op(kind: str, out: Handle | None = None, **fields: Handle | Scalar) -> OpSpec:
    """An OpSpec for ``composite``: handle-valued fields are operands, numbers are extras."""
    operands = {k: v for k, v in fields.items() if isinstance(v, (Tile, MemRef))}
    extra = {k: v for k, v in fields.items() if not isinstance(v, (Tile, MemRef))}
    return OpSpec(kind, operands, out, extra)


def composite(*ops: OpSpec, rw: tuple[Handle, ...] = (), tiles: int = 1) -> None:
    """One descriptor that PE_SCHEDULER tiles into overlapping DMA and compute stages."""
    _ctx().emit(CompositeCmd(tuple(ops), tuple(rw), tiles))


def cycles(n: float) -> None:
    """Spend exactly ``n`` CPU cycles (no dispatch formula)."""
    _ctx().emit(PeCpuOverheadCmd(n))

"""PE command dataclasses and their ``logical_bytes`` (ADR-0064 D2).

A command is what PE_CPU pushes into PE_SCHEDULER's queue. Its logical size is
counted field by field with the D2 table, never with ``sys.getsizeof``:

    framing 4 · opcode 1 · enum 1 · handle 8 · scalar 4 · tuple-length marker 1

Every primitive command is framing plus one op body counted exactly like an
:class:`OpSpec` (opcode, scope enum, operand tuple, optional out handle, extra
scalars), so a primitive and the same op inside a composite differ by the framing.
``CompositeCmd`` sums its OpSpecs and ``rw_handles`` recursively, as D2 writes it.

Commands are values (nothing changes one once built) but not frozen dataclasses:
a kernel builds one per ``tl`` op — one per access in a stream — and a frozen
dataclass's ``__init__`` costs three times a plain slotted one's (``object.__setattr__``
per field). Handles and op specs, built far less often, stay frozen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

FRAMING_BYTES = 4
OPCODE_BYTES = 1
ENUM_BYTES = 1
HANDLE_BYTES = 8
SCALAR_BYTES = 4
TUPLE_MARKER_BYTES = 1


@dataclass(frozen=True, slots=True)
class Tile:
    """A buffer in the PE's local memory (TCM); its id keys dependence tracking."""

    id: int
    shape: tuple[int, ...]
    dtype_bytes: int = 2
    # Derived once (every tl op and every compute stage reads them): not compared,
    # not arguments.
    elements: int = field(init=False, repr=False, compare=False)
    nbytes: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "elements", math.prod(self.shape))
        object.__setattr__(self, "nbytes", self.elements * self.dtype_bytes)


@dataclass(frozen=True, slots=True)
class MemRef:
    """A block of device memory at ``addr`` in the run's address space (PA, VA or LA)."""

    addr: int
    shape: tuple[int, ...]
    dtype_bytes: int = 2

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.elements * self.dtype_bytes


Handle = Tile | MemRef
Scalar = int | float


def op_body_bytes(n_operands: int, has_out: bool, n_extra: int) -> int:
    """D2 size of one op body: opcode, scope, operand tuple, out handle, extra scalars."""
    return (
        OPCODE_BYTES
        + ENUM_BYTES
        + TUPLE_MARKER_BYTES
        + HANDLE_BYTES * n_operands
        + (HANDLE_BYTES if has_out else 0)
        + TUPLE_MARKER_BYTES
        + SCALAR_BYTES * n_extra
    )


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One op inside a composite: ``gemm`` or a math op, operands named explicitly."""

    kind: str
    operands: dict[str, Handle]
    out: Handle | None = None
    extra: dict[str, Scalar] = field(default_factory=dict)

    @property
    def logical_bytes(self) -> int:
        return op_body_bytes(len(self.operands), self.out is not None, len(self.extra))

    @property
    def handles(self) -> list[Handle]:
        return list(self.operands.values()) + ([self.out] if self.out is not None else [])


@dataclass(slots=True)
class DmaReadCmd:
    """Copy ``nbytes`` from device memory at ``src_addr`` into a local tile."""

    src_addr: int
    nbytes: int
    dst: Tile

    def __init__(self, src_addr: int, nbytes: int, dst: Tile) -> None:
        # Written out (dataclass keeps it): a compiled build compiles this one, while
        # the __init__ dataclass generates stays interpreted, a ninth of an access.
        self.src_addr = src_addr
        self.nbytes = nbytes
        self.dst = dst

    @property
    def logical_bytes(self) -> int:
        return FRAMING_BYTES + op_body_bytes(1, True, 1)  # src handle, dst tile, nbytes


@dataclass(slots=True)
class DmaWriteCmd:
    """Copy ``nbytes`` from a local tile to device memory at ``dst_addr``."""

    src: Tile
    dst_addr: int
    nbytes: int

    def __init__(self, src: Tile, dst_addr: int, nbytes: int) -> None:
        # Written out for the compiled build, as DmaReadCmd's.
        self.src = src
        self.dst_addr = dst_addr
        self.nbytes = nbytes

    @property
    def logical_bytes(self) -> int:
        return FRAMING_BYTES + op_body_bytes(1, True, 1)  # src tile, dst handle, nbytes


# A 2-D descriptor's size: src, dst; rows, row, stride.
STRIDED_DMA_BYTES = FRAMING_BYTES + op_body_bytes(1, True, 3)

# The strided commands spell out their fields and properties: a base class declaring the
# shared fields (``rows``, ``row_bytes``, ``stride_bytes``) would not compile with mypyc
# (setup.py), whose dataclasses cannot inherit annotated fields from a non-dataclass.


@dataclass(slots=True)
class DmaStridedReadCmd:
    """A 2-D DMA descriptor: ``rows`` runs of ``row_bytes``, ``stride_bytes`` apart, from
    device memory at ``src_addr`` into one local tile (a strided block of a Triton kernel,
    e.g. a tile of a row-major matrix). PE_SCHEDULER moves each row as one DMA stage."""

    src_addr: int
    rows: int
    row_bytes: int
    stride_bytes: int
    dst: Tile

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes

    @property
    def logical_bytes(self) -> int:
        return STRIDED_DMA_BYTES


@dataclass(slots=True)
class DmaStridedWriteCmd:
    """The write twin of :class:`DmaStridedReadCmd`: a local tile to ``rows`` runs."""

    src: Tile
    dst_addr: int
    rows: int
    row_bytes: int
    stride_bytes: int

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes

    @property
    def logical_bytes(self) -> int:
        return STRIDED_DMA_BYTES


@dataclass(slots=True)
class GemmCmd:
    """``out (+)= a @ b`` with a of shape (m, k) and b of shape (k, n)."""

    a: Tile
    b: Tile
    out: Tile
    m: int
    n: int
    k: int
    accumulate: bool = False

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def logical_bytes(self) -> int:
        return FRAMING_BYTES + op_body_bytes(2, True, 3)  # a, b, out; m, n, k


@dataclass(slots=True)
class MathCmd:
    """An element-wise or row-reduction op on the vector engine."""

    op: str
    operands: tuple[Tile, ...]
    out: Tile
    extra: dict[str, Scalar] = field(default_factory=dict)

    @property
    def elements(self) -> int:
        return max(t.elements for t in (*self.operands, self.out))

    @property
    def logical_bytes(self) -> int:
        return FRAMING_BYTES + op_body_bytes(len(self.operands), True, len(self.extra))


@dataclass(slots=True)
class CompositeCmd:
    """A descriptor PE_SCHEDULER expands into tiled DMA and compute stages.

    Operands that are :class:`MemRef` are read by DMA, tile by tile; an ``out`` that
    is a MemRef is written back by DMA; Tile handles stay in local memory.
    ``rw_handles`` are state the composite both reads and writes (e.g. m, l, acc).
    """

    ops: tuple[OpSpec, ...]
    rw_handles: tuple[Handle, ...] = ()
    tiles: int = 1

    @property
    def logical_bytes(self) -> int:
        return (
            FRAMING_BYTES
            + TUPLE_MARKER_BYTES
            + sum(op.logical_bytes for op in self.ops)
            + TUPLE_MARKER_BYTES
            + HANDLE_BYTES * len(self.rw_handles)
        )


@dataclass(slots=True)
class PeCpuOverheadCmd:
    """Explicit CPU time (``tl.cycles``): costs exactly ``cycles``, bypassing the formula."""

    cycles: float

    @property
    def logical_bytes(self) -> int:
        return 0


PeCommand = (
    DmaReadCmd
    | DmaWriteCmd
    | DmaStridedReadCmd
    | DmaStridedWriteCmd
    | GemmCmd
    | MathCmd
    | CompositeCmd
    | PeCpuOverheadCmd
)

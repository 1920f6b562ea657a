"""The hook into Triton's interpreter: the only module that touches its internals.

Tested with triton 3.8 (the ``[triton]`` extra pins ``triton>=3.8,<3.9``). It relies
on these names of ``triton.runtime.interpreter`` and on nothing else:

- ``interpreter_builder``: the one ``InterpreterBuilder`` that every ``tl`` op reaches
  (through ``interpreter_semantic``) as a ``create_*`` call. During a launch each
  ``create_*`` method is shadowed on the instance and restored afterwards.
- ``TensorHandle`` (``data``, ``dtype``, ``attr``, ``get_element_ty()``): a value. The
  local tile that holds a value on the PE rides in ``attr[TILE_ATTR]``.
- ``ReduceOps.apply`` / ``ScanOps.apply``: reductions and scans (numpy, not the builder).
- ``_patch_lang(fn)`` (returns a scope with ``restore()``): installs the interpreter's
  ``tl`` builtins for a kernel's globals, as ``GridExecutor`` does.
- ``InterpretedFunction(fn)``: ``rewrite()`` is the kernel body as the interpreter runs
  it; calling it runs a ``@triton.jit`` helper (``tl.zeros``, ``tl.max``, a user's
  device function). If ``triton`` was imported before ``TRITON_INTERPRET=1`` was set,
  its helpers are ``JITFunction``s: during a launch ``JITFunction.__call__`` runs them
  interpreted and the ``triton.knobs.runtime.interpret`` knob is on, as in
  interpreter mode, so import order does not matter. During a launch
  ``InterpretedFunction.__call__`` (``_patch_lang(fn)``, then ``rewrite()`` called,
  errors wrapped in ``InterpreterError``) is replaced by the same steps with
  ``_patch_lang`` once per launch for each helper module: the interpreter patches the
  ``tl`` modules again on every helper call (``tl.sum``, ``tl.cdiv``...: a decoder
  step at batch 8 took 7% less CPU time without, 3 alternating runs) and never undoes
  those patches, so once is the same.
  ``GridExecutor(fn, names, grid).constexprs``: which arguments are constexpr;
  ``_implicit_cvt``: scalar arguments as ``tl`` tensors; ``_get_np_dtype``.

What becomes a command (DESIGN §10): loads and stores (DMA, through
:class:`~kernbench.triton.lowering.Lowering`), ``tl.dot`` (GEMM), and every other op
with a *data* operand — a value that came from memory or from a command — (MATH by
elements). Index, pointer and mask arithmetic on ``program_id``, ``arange`` and
scalars is address generation: it feeds the DMA descriptors and issues nothing.
Views (reshape, broadcast, transpose, splat) move no data and issue nothing.
Only the outermost builder call of a ``tl`` op issues (an op that calls another
builder method, or a reduction's combine function, counts once).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import triton
import triton.language as tl
from triton.runtime import interpreter as interp
from triton.runtime.jit import JITFunction

from kernbench.commands import Tile
from kernbench.errors import KernBenchError
from kernbench.topology.names import PeId


class Lowering(Protocol):
    """What the hook hands each traced op to (:class:`kernbench.triton.lowering.
    Lowering`, which imports this module for :func:`current_program`): the hook knows
    these four calls, not the class."""

    def load(
        self, ptrs: np.ndarray, mask: np.ndarray, other: np.ndarray | None, dtype: Any
    ) -> tuple[np.ndarray, Tile]: ...

    def store(
        self, ptrs: np.ndarray, values: np.ndarray, mask: np.ndarray, tile: Tile | None
    ) -> None: ...

    def dot(
        self,
        a_shape: tuple[int, ...],
        b_shape: tuple[int, ...],
        a: Tile | None,
        b: Tile | None,
        acc: Tile | None,
    ) -> Tile: ...

    def math(self, op: str, operands: list[Tile], result: np.ndarray) -> Tile: ...


TILE_ATTR = "kernbench.tile"


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Builder methods that move no data: the result shares its operand's tile.
VIEWS = _names(
    "create_reshape create_expand_dims create_broadcast create_trans create_splat "
    "create_unsplat create_bitcast create_int_to_ptr create_ptr_to_int create_addptr"
)
# Builder methods that issue nothing at all (program model, constants, debugging).
QUIET = _names("create_make_range create_print create_assert create_assume create_barrier")
# Builder methods kernbench cannot model: a clear error naming the op and kernel line.
UNSUPPORTED = _names(
    "create_atomic_cas create_atomic_rmw create_extern_elementwise create_inline_asm "
    "create_histogram create_gather create_dot_scaled create_make_tensor_descriptor "
    "create_descriptor_load create_descriptor_store create_descriptor_gather "
    "create_descriptor_scatter"
)
# Handled by the hook itself (memory, dot, program ids), never wrapped generically.
SPECIAL = _names(
    "create_load create_store create_masked_load create_masked_store create_dot "
    "create_get_program_id create_get_num_programs"
)


class UnsupportedOp(KernBenchError):
    """A ``triton.language`` op outside the supported subset."""


@dataclass(frozen=True)
class Program:
    """The program instance running in the current greenlet, and its PE."""

    pe: PeId
    pid: tuple[int, int, int]
    grid: tuple[int, int, int]


# Per greenlet (each has its own context), so interleaved programs never mix.
_program: ContextVar[Program] = ContextVar("kernbench_triton_program")


def current_program() -> Program:
    return _program.get()


def set_program(program: Program) -> None:
    _program.set(program)


def python_function(kernel: Any) -> Callable[..., Any]:
    """The Python function under a ``@triton.jit`` kernel (JIT or interpreted), looking
    through ``@triton.autotune`` / ``@triton.heuristics`` wrappers (their ``fn``)."""
    fn = kernel
    while not inspect.isfunction(fn) and hasattr(fn, "fn"):
        fn = fn.fn
    if not inspect.isfunction(fn):
        raise TypeError(f"{kernel!r} is not a @triton.jit kernel")
    return fn


def rewritten(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel body as the interpreter runs it (its assignments wrapped)."""
    return interp.InterpretedFunction(fn).rewrite()


def bind_args(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Arguments by name with defaults, launch options (``num_warps``...) dropped."""
    names = inspect.getfullargspec(fn).args
    kwargs = {k: v for k, v in kwargs.items() if k in names}
    return inspect.getcallargs(fn, *args, **kwargs)


def constexpr_names(fn: Callable[..., Any]) -> list[str]:
    names = inspect.getfullargspec(fn).args
    return list(interp.GridExecutor(fn, names, (1,)).constexprs)


def to_interpreter(value: Any, elem: Any | None = None, ptr: int | None = None) -> Any:
    """A kernel argument as the interpreter wants it: a pointer (``ptr`` with element
    type ``elem``) or a scalar through the interpreter's own conversion."""
    if ptr is None:
        return interp._implicit_cvt(value)
    ty = tl.pointer_type(elem)
    return tl.tensor(interp.TensorHandle(np.array([ptr], dtype=np.uint64), ty), ty)


def tile_of(handle: Any) -> Any:
    return handle.attr.get(TILE_ATTR) if isinstance(handle, interp.TensorHandle) else None


def _with_tile(result: Any, tile: Any) -> Any:
    for h in result if isinstance(result, tuple) else (result,):
        if isinstance(h, interp.TensorHandle):
            h.attr[TILE_ATTR] = tile
    return result


class Hook:
    """Shadows the interpreter's builder for one launch; see the module docstring."""

    def __init__(self, lowering: Lowering, fn: Callable[..., Any]) -> None:
        self.lowering = lowering
        self.fn = fn
        self.depth = 0  # > 0 inside a builder call or a reduction: inner calls are quiet

    @contextmanager
    def installed(self) -> Iterator[None]:
        builder = interp.interpreter_builder
        scope = interp._patch_lang(self.fn)
        names = [n for n in dir(type(builder)) if n.startswith("create_")]
        originals = {n: getattr(builder, n) for n in names}
        reduce_apply, scan_apply = interp.ReduceOps.apply, interp.ScanOps.apply
        jit_call, knob = JITFunction.__call__, triton.knobs.runtime.interpret
        helper_call = interp.InterpretedFunction.__call__
        try:
            JITFunction.__call__ = _call_interpreted
            interp.InterpretedFunction.__call__ = _helper_caller()
            triton.knobs.runtime.interpret = True
            for n in names:
                setattr(builder, n, self._wrap(n, originals[n]))
            interp.ReduceOps.apply = self._reduction("reduce", reduce_apply)
            interp.ScanOps.apply = self._reduction("scan", scan_apply)
            yield
        finally:
            for n in names:
                delattr(builder, n)
            interp.ReduceOps.apply, interp.ScanOps.apply = reduce_apply, scan_apply
            JITFunction.__call__, triton.knobs.runtime.interpret = jit_call, knob
            interp.InterpretedFunction.__call__ = helper_call
            scope.restore()

    def _wrap(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        special = {
            "create_masked_load": self._load,
            "create_masked_store": self._store,
            "create_dot": lambda *a: self._dot(orig, *a),
            "create_get_program_id": lambda axis: _int32(current_program().pid[axis]),
            "create_get_num_programs": lambda axis: _int32(current_program().grid[axis]),
        }
        if name in special:
            return special[name]
        if name in SPECIAL:
            return orig  # create_load / create_store reach create_masked_* themselves
        if name in UNSUPPORTED:
            return lambda *a, **k: self._unsupported(name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self.depth:
                return orig(*args, **kwargs)
            self.depth += 1
            try:
                result = orig(*args, **kwargs)
            finally:
                self.depth -= 1
            tiles = [t for t in map(tile_of, args) if t is not None]
            if not tiles or name in QUIET:
                return result
            if name in VIEWS:
                return _with_tile(result, tiles[0])
            first = result[0] if isinstance(result, tuple) else result
            out = self.lowering.math(name.removeprefix("create_"), tiles, first.data)
            return _with_tile(result, out)

        return wrapped

    def _load(self, ptrs: Any, mask: Any, other: Any, *_: Any) -> Any:
        dtype_tt = ptrs.get_element_ty()
        np_dtype = interp._get_np_dtype(dtype_tt)
        fill = None if other is None else other.data
        values, tile = self.lowering.load(ptrs.data, mask.data, fill, np_dtype)
        return _with_tile(interp.TensorHandle(values, dtype_tt), tile)

    def _store(self, ptrs: Any, value: Any, mask: Any, *_: Any) -> None:
        self.lowering.store(ptrs.data, value.data, mask.data, tile_of(value))

    def _dot(self, orig: Callable[..., Any], a: Any, b: Any, d: Any, *rest: Any) -> Any:
        result = orig(a, b, d, *rest)
        out = self.lowering.dot(a.data.shape, b.data.shape, tile_of(a), tile_of(b), tile_of(d))
        return _with_tile(result, out)

    def _reduction(self, kind: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        hook = self

        def apply(op: Any, input: Any) -> Any:
            hook.depth += 1
            try:
                result = orig(op, input)
            finally:
                hook.depth -= 1
            if hook.depth:
                return result
            ins = input if isinstance(input, tuple) else (input,)
            tiles = [t for t in (tile_of(x.handle) for x in ins) if t is not None]
            outs = result if isinstance(result, tuple) else (result,)
            if tiles:
                name = getattr(op.combine_fn, "__name__", kind).strip("_")
                out = hook.lowering.math(name, tiles, outs[0].handle.data)
                for o in outs:
                    _with_tile(o.handle, out)
            return result

        return apply

    def _unsupported(self, name: str) -> None:
        op = name.removeprefix("create_")
        raise UnsupportedOp(f"{op} is not supported by kernbench.triton ({kernel_line(self.fn)})")


def kernel_line(fn: Callable[..., Any]) -> str:
    """``kernel NAME, FILE:LINE: SOURCE`` of the innermost frame running ``fn``."""
    code = fn.__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == code.co_name and frame.f_code.co_filename == code.co_filename:
            line = inspect.getframeinfo(frame).code_context or [""]
            return f"kernel {code.co_name}, {code.co_filename}:{frame.f_lineno}: {line[0].strip()}"
        frame = frame.f_back
    return f"kernel {code.co_name}"


def unwrap_error(exc: BaseException) -> BaseException:
    """The KernBench error under the interpreter's ``InterpreterError`` wrapping, if any."""
    seen = exc
    while seen is not None:
        if isinstance(seen, KernBenchError):
            return seen
        seen = seen.__cause__
    return exc


def _helper_caller() -> Callable[..., Any]:
    """``InterpretedFunction.__call__`` for one launch: the interpreter's steps, with
    the ``tl`` modules a helper's globals hold patched on its module's first call only."""
    patched: set[int] = set()

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if id(self.fn.__globals__) not in patched:
            interp._patch_lang(self.fn)
            patched.add(id(self.fn.__globals__))
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise interp.InterpreterError(repr(e)) from e

    return call


def _call_interpreted(self: JITFunction, *args: Any, **kwargs: Any) -> Any:
    """A ``@triton.jit`` helper called from a kernel, run by the interpreter."""
    return interp.InterpretedFunction(self.fn)(*args, **kwargs)


def _int32(value: int) -> Any:
    return interp.TensorHandle(np.array([value], dtype=np.int32), tl.int32)

"""The user-facing API: ``Accelerator`` runs unchanged ``@triton.jit`` kernels (DESIGN §10).

    acc = Accelerator(["address=va", "channel_mapping=one_to_one"])
    x = acc.tensor(torch.randn(98432))
    out = acc.empty_like(x)
    res = acc.run(add_kernel, (grid,), x, y, out, n, BLOCK_SIZE=1024)
    acc.to_torch(out), res.kernel_latency_ns, res.metrics

The overrides are ordinary KernBench overrides composed by Hydra (``workload=triton``
is implied). Device tensors are deployed by the runtime (``RuntimeContext.deploy``
under a ``DPPolicy``) and their bytes written into the functional memory by PA.
"""

from __future__ import annotations

import linecache
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import triton.language as tl

from kernbench.config.schema import KernBenchConfig
from kernbench.config.validate import validate
from kernbench.errors import AddressFault
from kernbench.runtime.context import DPPolicy, RuntimeContext, Tensor
from kernbench.sim.metrics import LaunchUsage
from kernbench.sim.system import System
from kernbench.topology.names import PeId
from kernbench.triton import grid as gridmap
from kernbench.triton import hook
from kernbench.triton.lowering import Lowering
from kernbench.triton.memory import (
    FunctionalMemory,
    HostWindow,
    PastEnd,
    ShardView,
    Translator,
    shard_views,
)
from kernbench.triton.metrics import LaunchWork, launch_row, snapshot

TL_DTYPES = {
    torch.float32: tl.float32,
    torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16,
    torch.float64: tl.float64,
    torch.int32: tl.int32,
    torch.int64: tl.int64,
    torch.int16: tl.int16,
    torch.int8: tl.int8,
    torch.uint8: tl.uint8,
}


def compose_config(overrides: Sequence[str] = ()) -> KernBenchConfig:
    """The validated config of ``kernbench <overrides>`` with ``workload=triton``."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from kernbench.config.store import conf_dir, register_configs

    register_configs()
    given = list(overrides)
    if not any(o.lstrip("+~").startswith("workload=") for o in given):
        given.insert(0, "workload=triton")
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir())):
        cfg = compose(config_name="config", overrides=given)
    return validate(OmegaConf.to_object(cfg))  # type: ignore[arg-type]


@dataclass
class DeviceTensor:
    """A tensor deployed on the simulated device. ``data_ptr()`` is its host address
    (what Triton pointer arithmetic starts from), ``runtime`` the runtime's tensor."""

    runtime: Tensor
    shape: tuple[int, ...]
    dtype: torch.dtype
    host_base: int
    views: list[list[ShardView]] = field(repr=False)

    def data_ptr(self) -> int:
        return self.host_base

    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype).element_size()

    def numel(self) -> int:
        return math.prod(self.shape)

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def stride(self, dim: int | None = None) -> Any:
        """Row-major strides in elements (device tensors are contiguous)."""
        strides = tuple(math.prod(self.shape[i + 1 :]) for i in range(len(self.shape)))
        return strides if dim is None else strides[dim]

    @property
    def nbytes(self) -> int:
        return self.numel() * self.element_size()


@dataclass
class TritonRun:
    """What one launch measured: its simulated latency, a metrics row, and the work it
    asked of each unit (None only for a run made by hand)."""

    kernel_latency_ns: float
    metrics: dict[str, Any]
    work: LaunchWork | None = None


class Accelerator:
    """A simulated KernBench system that runs ``@triton.jit`` kernels."""

    def __init__(
        self,
        overrides: Sequence[str] = (),
        *,
        system: System | None = None,
        pes: int | str = "all",
        mapping: str = "cyclic",
    ) -> None:
        self.system = system if system is not None else System(compose_config(overrides))
        self.runtime = RuntimeContext(self.system)
        self.pes = pes
        self.mapping = mapping
        self.window = HostWindow()
        self.memory = FunctionalMemory()
        self.translator = Translator(self.system)
        self.tensors: list[DeviceTensor] = []
        self.policy = DPPolicy()  # placement of tensors deployed without one

    def __enter__(self) -> Accelerator:
        return self

    def __exit__(self, *exc: object) -> None:
        """Free every device tensor (unmapped through the control plane)."""
        self.tensors.clear()
        self.runtime.__exit__(*exc)

    # -- tensors --------------------------------------------------------------------------
    def tensor(self, data: torch.Tensor, policy: DPPolicy | None = None) -> DeviceTensor:
        """Deploy ``data`` (a CPU tensor) under ``policy`` (default ``self.policy``, the
        runtime's ``DPPolicy()``: split over every PE) and write its bytes into device
        memory."""
        dev = self._deploy(tuple(data.shape), data.dtype, policy)
        raw = data.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
        for copy in dev.views:
            for v in copy:
                self._write_shard(v, raw, dev.nbytes)
        return dev

    def empty(
        self, shape: Sequence[int], dtype: torch.dtype, policy: DPPolicy | None = None
    ) -> DeviceTensor:
        """A deployed tensor of zeros (device memory reads 0 until written), for outputs.

        Default placement: ``self.policy``, split rather than replicated. A store goes
        to the copy in the storing PE's cube only (copies are not kept coherent) and
        :meth:`to_torch` reads the first copy, so an output should be one copy."""
        return self._deploy(tuple(shape), dtype, policy or _one_copy(self.policy))

    def empty_like(self, t: DeviceTensor, policy: DPPolicy | None = None) -> DeviceTensor:
        """:meth:`empty` with ``t``'s shape, dtype and placement (split if replicated)."""
        return self.empty(t.shape, t.dtype, policy or _one_copy(t.runtime.policy))

    def to_torch(self, t: DeviceTensor) -> torch.Tensor:
        """The tensor's values as device memory holds them (its first copy)."""
        raw = np.zeros(t.nbytes, np.uint8)
        for v in t.views[0]:
            n = _real_bytes(v, t.nbytes)
            if n:
                pieces = self.translator.span_pieces(v.pe, v.ptr, n)
                raw[v.start : v.start + n] = self.memory.read_pieces(pieces)
        return torch.from_numpy(raw).view(t.dtype).reshape(t.shape).clone()

    # -- launch ---------------------------------------------------------------------------
    def run(self, kernel: Any, grid: Any, *args: Any, **kwargs: Any) -> TritonRun:
        """Run ``kernel[grid](*args, **kwargs)`` on the simulated device; the kernel's
        program instances are spread over PEs by ``self.mapping``."""
        fn = hook.python_function(kernel)
        named = hook.bind_args(fn, args, kwargs)
        g = gridmap.grid3(grid(named) if callable(grid) else tuple(grid))
        plan, used = self._plan(g)
        lowering = Lowering(self.window, self.translator, self.memory)
        before = snapshot(self.system, used)
        usage = LaunchUsage(self.system)
        start = self.system.env.now
        body, converted = hook.rewritten(fn), self._convert(fn, named)
        try:
            with hook.Hook(lowering, fn).installed():
                ends = self.runtime.launch(_pe_body, used, body, converted, plan, used, g)
        except Exception as exc:
            err = hook.unwrap_error(exc)  # a KernBench error under the interpreter's
            if isinstance(err, PastEnd):
                raise AddressFault(_past_end(err, fn, named)) from None
            if err is exc:
                raise
            raise err from None
        latency = max(ends.values()) - start
        row = launch_row(self.system, used, before, latency, lowering)
        row |= {"programs": math.prod(g), "active_pe_count": len(used)}
        work = LaunchWork(dict(lowering.flops), dict(lowering.elements), usage.link_bytes())
        return TritonRun(latency, row, work)

    def _plan(self, g: gridmap.Grid3) -> tuple[list[list[gridmap.Grid3]], list[PeId]]:
        """Program ids per PE slot, and the PEs that get programs."""
        progs = gridmap.programs(g)
        pes = self.runtime.pes(self.pes)
        plan = [
            [progs[i] for i in slot] for slot in gridmap.assign(len(progs), len(pes), self.mapping)
        ]
        return plan, pes[: len(plan)]

    # -- internals ------------------------------------------------------------------------
    def _deploy(
        self, shape: tuple[int, ...], dtype: torch.dtype, policy: DPPolicy | None
    ) -> DeviceTensor:
        """Deploy through the runtime. Its shards split the bytes evenly, so the
        allocation is padded to whole elements per shard (a shard boundary never cuts
        an element); the padding is never addressable from the kernel."""
        policy = policy or self.policy
        self.translator.forget()  # a deploy may reuse addresses freed since the last one
        elem = torch.empty((), dtype=dtype).element_size()
        nbytes = math.prod(shape) * elem
        quantum = elem * self._shards_per_copy(policy)
        padded = -(-nbytes // quantum) * quantum
        rt = self.runtime.deploy(padded, policy, f"t{len(self.tensors)}")
        views = shard_views(rt)
        dev = DeviceTensor(rt, shape, dtype, self.window.add(nbytes, views), views)
        self.tensors.append(dev)
        return dev

    def _shards_per_copy(self, policy: DPPolicy) -> int:
        if policy.cube == "replicate":
            return self.system.cfg.topology.pes_per_cube
        return len(self.runtime.pes(policy.pes))

    def _write_shard(self, v: ShardView, raw: np.ndarray, total: int) -> None:
        n = _real_bytes(v, total)
        if n:
            pieces = self.translator.span_pieces(v.pe, v.ptr, n)
            self.memory.write_pieces(pieces, raw[v.start : v.start + n])

    def _convert(self, fn: Callable[..., Any], named: dict[str, Any]) -> dict[str, Any]:
        """Arguments as the interpreter wants them; device tensors become pointers."""
        const = set(hook.constexpr_names(fn))
        out: dict[str, Any] = {}
        for name, value in named.items():
            if name in const:
                out[name] = value
            elif isinstance(value, DeviceTensor):
                out[name] = hook.to_interpreter(value, TL_DTYPES[value.dtype], value.host_base)
            elif isinstance(value, torch.Tensor):
                raise TypeError(
                    f"argument {name!r} is a host torch tensor: deploy it with acc.tensor(...)"
                )
            else:
                out[name] = hook.to_interpreter(value)
        return out


def _past_end(err: PastEnd, fn: Callable[..., Any], named: dict[str, Any]) -> str:
    """The fault's line with where it is: the offset from the tensor's start, the
    arguments it was passed as, and the kernel line that made the access."""
    args = [
        name
        for name, value in named.items()
        if isinstance(value, DeviceTensor) and value.host_base == err.base
    ]
    names = " and ".join(repr(a) for a in args) or "a tensor not among the arguments"
    offset = err.pointer - err.base
    return f"{err}: byte {offset} of argument {names}; {_kernel_line(err, fn)}"


def _kernel_line(err: BaseException, fn: Callable[..., Any]) -> str:
    """``kernel NAME, FILE:LINE: SOURCE`` of the innermost frame of ``fn`` (the
    ``@triton.jit`` function as the interpreter runs it) in ``err``'s traceback."""
    code = fn.__code__
    found = None
    tb = err.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code
        if f.co_name == code.co_name and f.co_filename == code.co_filename:
            found = tb
        tb = tb.tb_next
    if found is None:
        return f"kernel {code.co_name}"
    line = linecache.getline(code.co_filename, found.tb_lineno).strip()
    return f"kernel {code.co_name}, {code.co_filename}:{found.tb_lineno}: {line}"


def _one_copy(policy: DPPolicy) -> DPPolicy:
    """``policy``, with ``replicate`` replaced by one copy split over the same PEs."""
    return policy if policy.cube != "replicate" else DPPolicy("column_wise", policy.pes)


def _real_bytes(v: ShardView, total: int) -> int:
    """Bytes of shard ``v`` that hold the tensor (the rest is deploy padding)."""
    return max(0, min(v.nbytes, total - v.start))


def _pe_body(
    body: Callable[..., Any],
    args: dict[str, Any],
    plan: list[list[gridmap.Grid3]],
    pes: list[PeId],
    grid: gridmap.Grid3,
) -> None:
    """What one PE runs (a KernBench kernel): its program instances, in order."""
    from kernbench import tl as kbtl

    slot = kbtl.program_id(0)
    for pid in plan[slot]:
        hook.set_program(hook.Program(pes[slot], pid, grid))
        body(**args)


__all__ = ["Accelerator", "DeviceTensor", "TritonRun", "compose_config"]

"""``kernbench.triton``: unchanged ``@triton.jit`` kernels on the simulated accelerator.

Triton's own interpreter (``TRITON_INTERPRET=1``) runs every program instance and
computes every value; the hook (:mod:`kernbench.triton.hook`, the one module that
touches interpreter internals) turns its loads, stores, dots, element-wise ops and
reductions into KernBench PE commands on the PE that runs the program, so the
simulator times them (DESIGN §10). Device tensors keep their bytes in a functional
memory indexed by physical address (:mod:`kernbench.triton.memory`), read and
written through the address model, so a wrong mapping is a wrong value.

Needs the ``[triton]`` extra (triton and torch); importing this package without it
says what to install. Import it before ``triton`` (or set ``TRITON_INTERPRET=1``):
the interpreter is chosen when ``triton`` is first imported.
"""

from __future__ import annotations

import os

# The install that works: kernbench installs from its checkout (no registry serves it).
INSTALL_HINT = (
    "kernbench.triton needs the [triton] extra: pip install -e '.[triton]' in the kernbench"
    " checkout"
)

os.environ.setdefault("TRITON_INTERPRET", "1")
try:
    import torch  # noqa: F401
    import triton  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(f"{INSTALL_HINT} ({exc})") from exc

from kernbench.triton.accelerator import Accelerator, DeviceTensor, TritonRun  # noqa: E402
from kernbench.triton.hook import UnsupportedOp  # noqa: E402

__all__ = ["Accelerator", "DeviceTensor", "TritonRun", "UnsupportedOp", "INSTALL_HINT"]

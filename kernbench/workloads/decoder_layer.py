"""``workload=decoder_layer`` (DESIGN §13.2): a decode step of a Llama-style layer.

The work is in :mod:`kernbench.triton.decoder`; as for ``workload=triton``, this entry
imports it only when the workload runs, so KernBench without the ``[triton]`` extra
runs every other workload, and this one fails with one line saying what to install.
"""

from __future__ import annotations

from kernbench.config.schema import DecoderLayerWorkloadConfig
from kernbench.errors import ConfigError
from kernbench.results.kernels import WithKernels
from kernbench.sim.system import System


def run(system: System, w: DecoderLayerWorkloadConfig) -> WithKernels:
    try:
        from kernbench.triton import decoder
    except ImportError as exc:
        raise ConfigError("workload", str(exc)) from None
    return decoder.run(system, w)

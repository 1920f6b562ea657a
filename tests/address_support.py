"""Helpers shared by the address-model tests: configs per model, reads relative to launch."""

from __future__ import annotations

from kernbench import tl
from kernbench.config.schema import AddressConfig, AddressModel
from kernbench.runtime import DPPolicy
from tests.support import make_cfg, make_system

KIB4 = 4096
# One install message on the default topology, by hop (DESIGN §3.3, control.py):
# host->pcie_ep 500 + PCIE_EP 40 + ->io_cpu 50 + IO_CPU 200 + ->m_cpu 50 + M_CPU 100
# + m_cpu->noc 50 + noc->pe 5 + endpoint (PE_MMU or PE_DMA) 10
ONE_MESSAGE_NS = 500 + 40 + 50 + 200 + 50 + 100 + 50 + 5 + 10
assert ONE_MESSAGE_NS == 1005


def model_cfg(model: str, one_to_one: bool = False, **kw: object):
    cfg = make_cfg(one_to_one=one_to_one, **kw)
    cfg.address = AddressConfig(AddressModel(model))
    return cfg


def reads(pointers, nbytes):
    """Program p reads ``nbytes`` at every pointer in ``pointers[p]`` (a list per program)."""
    for ptr in pointers[tl.program_id(0)]:
        tl.load(ptr, (nbytes,), dtype_bytes=1)


def launch_reads(system, ctx, pes, pointers, nbytes):
    """Run ``reads`` on the given PE indices (``pointers`` keyed by PE index); end times
    relative to the launch."""
    start = system.env.now
    grid = [system.graph.pes[i] for i in pes]
    ends = ctx.launch(reads, grid, [pointers[i] for i in pes], nbytes)
    return {pe: end - start for pe, end in ends.items()}


def deploy_all(model: str, one_to_one: bool = False, nbytes: int = 1 << 20, policy=None):
    system, ctx = make_system(model_cfg(model, one_to_one))
    src = ctx.deploy(nbytes, policy or DPPolicy("column_wise", "all"), "src")
    return system, ctx, src

"""Helpers shared by the address-model tests: configs per model, reads relative to launch."""

from __future__ import annotations

from kernbench import tl
from kernbench.runtime import DPPolicy
from tests.support import make_cfg, make_system

KIB4 = 4096


def one_message_ns(cfg, endpoint: str = "mmu") -> float:
    """One install message with no queueing, by hop (DESIGN §3.3, control.py): host ->
    PCIE_EP (PCIe link), PCIE_EP, -> IO_CPU, IO_CPU, -> M_CPU, M_CPU (control links),
    -> NOC (control link), -> the PE endpoint (PE-NOC link), PE_MMU or PE_DMA."""
    lk, ctl = cfg.topology.links, cfg.topology.control
    end = ctl.mmu_processing_ns if endpoint == "mmu" else ctl.dma_processing_ns
    hops = lk.pcie_latency_ns + 3 * lk.ctrl_latency_ns + lk.pe_noc_latency_ns
    return (
        hops + ctl.pcie_ep_processing_ns + ctl.io_cpu_processing_ns + ctl.m_cpu_processing_ns + end
    )


# 1005 ns on the default topology (both endpoints take 10 ns)
ONE_MESSAGE_NS = one_message_ns(make_cfg())


def model_cfg(model: str, one_to_one: bool = False, **kw: object):
    return make_cfg(one_to_one=one_to_one, model=model, **kw)


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


def deploy_all(
    model: str, one_to_one: bool = False, nbytes: int = 1 << 20, policy=None, fabric="fair"
):
    system, ctx = make_system(model_cfg(model, one_to_one, fabric=fabric))
    src = ctx.deploy(nbytes, policy or DPPolicy("column_wise", "all"), "src")
    return system, ctx, src

"""Helpers shared by the address-model tests: configs per model, reads relative to launch."""

from __future__ import annotations

from kernbench import tl
from kernbench.runtime import DPPolicy
from tests.support import make_cfg, make_system

KIB4 = 4096


def message_bytes(cfg, endpoint: str = "mmu", entries: int = 0) -> int:
    """An install message's size (DESIGN §13.1): the header and one entry per page
    (VA: PE_MMU is the endpoint) or per segment (LA: PE_DMA)."""
    ctl = cfg.topology.control
    entry = ctl.pte_bytes if endpoint == "mmu" else ctl.baaw_segment_bytes
    return ctl.msg_header_bytes + entries * entry


def one_message_ns(cfg, endpoint: str = "mmu", entries: int = 0) -> float:
    """One install message carrying ``entries`` pages or segments, with no queueing, by
    hop (DESIGN §3.3, §13.1, control.py): each link costs its latency plus the message's
    size over its bandwidth. Host -> PCIE_EP (PCIe link), PCIE_EP, -> IO_CPU, IO_CPU,
    -> M_CPU, M_CPU (control links), -> NOC (control link), -> the PE endpoint (PE-NOC
    link), PE_MMU or PE_DMA."""
    lk, ctl = cfg.topology.links, cfg.topology.control
    end = ctl.mmu_processing_ns if endpoint == "mmu" else ctl.dma_processing_ns
    hops = lk.pcie_latency_ns + 3 * lk.ctrl_latency_ns + lk.pe_noc_latency_ns
    size = message_bytes(cfg, endpoint, entries)
    drains = size / lk.pcie_bw_gbs + 3 * size / lk.ctrl_bw_gbs + size / lk.pe_noc_bw_gbs
    return (
        hops
        + drains
        + ctl.pcie_ep_processing_ns
        + ctl.io_cpu_processing_ns
        + ctl.m_cpu_processing_ns
        + end
    )


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

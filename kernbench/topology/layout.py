"""Where every link of the topology sits, in closed form (DESIGN §3.1).

The topology is a tree of SIPs, cubes and PEs joined by a few fixed classes of link,
so a link's dense id (the fabrics keep their state in lists by id) is a function of
its coordinates, and a link is a function of its id. This module owns that
arithmetic, so that nothing is laid out for a PE no traffic reaches: a 16,384-PE
topology has some 800,000 links, and a run that touches 16 PEs makes the few dozen
it routes over (:class:`kernbench.topology.graph.TopologyGraph` makes each one when
asked, :class:`kernbench.topology.routes.Router` computes routes from these ids).

Ids ascend in this order (the order of the first design's graph builder, so every
link kept its id and every result its value)::

    SIP s:  host->pcie_ep, pcie_ep->host, pcie_ep->io_cpu (control)
            cube c:  io_cpu->m_cpu, m_cpu->noc (control), noc->pcie_ep, pcie_ep->noc
                     PE p:  dma->noc, noc->dma, [noc->mmu (control), VA only]
                            router r:  dma->router, router->dma, noc->router,
                                       router->noc, router->hbm_ctrl, hbm_ctrl->router
            NOC mesh, for each pair of cubes a < b:  noc_a->noc_b, noc_b->noc_a

Twins (a link and the link between the same nodes the other way) sit side by side.
The link back out of HBM shares the resource of the link into it (half-duplex);
every other link is its own resource.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kernbench.config.schema import HbmMappingMode, TopologyConfig
from kernbench.topology.names import HOST, PeId, cube_node, pe_part, sip_node

DATA: Final = "data"
CONTROL: Final = "control"

# Link classes: every link of a class has the same bandwidth, latency and plane.
PCIE: Final = 0  # host <-> a SIP's PCIe endpoint
CTRL: Final = 1  # the control CPUs' links
NOC_NOC: Final = 2  # NOC <-> NOC, and NOC <-> its SIP's PCIe endpoint
PE_NOC: Final = 3  # a PE's DMA <-> its cube's NOC
MMU: Final = 4  # NOC -> a PE's MMU (control, at the PE-NOC figures)
DMA_ROUTER: Final = 5  # a PE's DMA <-> its own HBM routers
NOC_ROUTER: Final = 6  # the cube NOC <-> a PE's HBM routers
ROUTER_HBM: Final = 7  # an HBM router <-> the cube's HBM controller

SIP_HEAD: Final = 3  # links of a SIP before its first cube
CUBE_HEAD: Final = 4  # links of a cube before its first PE
PE_HEAD: Final = 2  # links of a PE before its MMU link and routers
PER_ROUTER: Final = 6


@dataclass(frozen=True, slots=True)
class Link:
    id: int
    src: str
    dst: str
    bw_gbs: float
    latency_ns: float
    plane: str
    # The capacity this link uses: its own id, or (HBM's way back) its twin's.
    resource: int


class LinkLayout:
    """Link ids of one topology by coordinates, and the link of any id.

    A PE is ``(s, c, p)``; ``r`` is one of its HBM routers, ``0 .. routers - 1``
    (its channels in order under 1:1, the aggregate router under n:1)."""

    def __init__(self, topo: TopologyConfig, with_mmu: bool) -> None:
        lk, mm = topo.links, topo.cube.memory_map
        n = mm.hbm_channels_per_pe
        assert n is not None, "validate() derives hbm_channels_per_pe before building"
        self.one_to_one = mm.hbm_mapping_mode is HbmMappingMode.one_to_one
        self.channels = n
        self.routers = n if self.one_to_one else 1
        self.sips, self.cubes, self.pes = topo.n_sips, topo.cubes_per_sip, topo.pes_per_cube
        self.mmu = 1 if with_mmu else 0
        self.pe_size = PE_HEAD + self.mmu + PER_ROUTER * self.routers
        self.cube_size = CUBE_HEAD + self.pes * self.pe_size
        self.mesh_start = SIP_HEAD + self.cubes * self.cube_size
        self.sip_size = self.mesh_start + self.cubes * (self.cubes - 1)
        self.count = self.sips * self.sip_size
        router_bw = mm.hbm_channel_bw_gbs * (1 if self.one_to_one else n)
        # (bandwidth, latency, plane) by link class
        self.classes: list[tuple[float, float, str]] = [
            (lk.pcie_bw_gbs, lk.pcie_latency_ns, DATA),
            (lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL),
            (lk.noc_noc_bw_gbs, lk.noc_noc_latency_ns, DATA),
            (lk.pe_noc_bw_gbs, lk.pe_noc_latency_ns, DATA),
            (lk.pe_noc_bw_gbs, lk.pe_noc_latency_ns, CONTROL),
            (router_bw, lk.dma_router_latency_ns, DATA),
            (router_bw, lk.noc_router_latency_ns, DATA),
            (router_bw, lk.router_hbm_latency_ns, DATA),
        ]
        self._pairs = [(a, b) for a in range(self.cubes) for b in range(a + 1, self.cubes)]
        self._sip_bw: list[float] = []  # one SIP's bandwidths by offset, made when asked

    # -- ids by coordinates -------------------------------------------------------
    def cube_base(self, s: int, c: int) -> int:
        return s * self.sip_size + SIP_HEAD + c * self.cube_size

    def pe_base(self, s: int, c: int, p: int) -> int:
        return self.cube_base(s, c) + CUBE_HEAD + p * self.pe_size

    def host_to_pcie(self, s: int) -> int:
        return s * self.sip_size

    def pcie_to_host(self, s: int) -> int:
        return s * self.sip_size + 1

    def pcie_to_io(self, s: int) -> int:
        return s * self.sip_size + 2

    def io_to_m_cpu(self, s: int, c: int) -> int:
        return self.cube_base(s, c)

    def m_cpu_to_noc(self, s: int, c: int) -> int:
        return self.cube_base(s, c) + 1

    def noc_to_pcie(self, s: int, c: int) -> int:
        return self.cube_base(s, c) + 2

    def pcie_to_noc(self, s: int, c: int) -> int:
        return self.cube_base(s, c) + 3

    def dma_to_noc(self, s: int, c: int, p: int) -> int:
        return self.pe_base(s, c, p)

    def noc_to_dma(self, s: int, c: int, p: int) -> int:
        return self.pe_base(s, c, p) + 1

    def noc_to_mmu(self, s: int, c: int, p: int) -> int:
        assert self.mmu, "only a VA topology has PE MMUs"
        return self.pe_base(s, c, p) + PE_HEAD

    def router_base(self, s: int, c: int, p: int, r: int) -> int:
        """The first link of router ``r`` of PE ``(s, c, p)``: DMA -> router."""
        return self.pe_base(s, c, p) + PE_HEAD + self.mmu + PER_ROUTER * r

    def dma_to_router(self, s: int, c: int, p: int, r: int) -> int:
        return self.router_base(s, c, p, r)

    def noc_to_router(self, s: int, c: int, p: int, r: int) -> int:
        return self.router_base(s, c, p, r) + 2

    def router_to_hbm(self, s: int, c: int, p: int, r: int) -> int:
        return self.router_base(s, c, p, r) + 4

    def noc_to_noc(self, s: int, a: int, b: int) -> int:
        lo, hi = (a, b) if a < b else (b, a)
        pair = lo * (2 * self.cubes - lo - 1) // 2 + (hi - lo - 1)
        return s * self.sip_size + self.mesh_start + 2 * pair + (1 if a > b else 0)

    # -- links by id --------------------------------------------------------------
    def twin(self, i: int) -> int:
        """The link between the same two nodes the other way; -1 for a control link
        (they only go down). Twins sit side by side: which way is the offset's parity
        inside its block."""
        s, k = divmod(i, self.sip_size)
        if k < SIP_HEAD:
            return (i + 1, i - 1, -1)[k]
        if k >= self.mesh_start:
            return i + 1 if (k - self.mesh_start) % 2 == 0 else i - 1
        k = (k - SIP_HEAD) % self.cube_size
        if k < CUBE_HEAD:
            return -1 if k < 2 else (i + 1 if k == 2 else i - 1)
        k = (k - CUBE_HEAD) % self.pe_size
        if k < PE_HEAD:
            return i + 1 if k == 0 else i - 1
        k -= PE_HEAD + self.mmu
        if k < 0:
            return -1  # NOC -> MMU
        return i + 1 if k % 2 == 0 else i - 1

    def link(self, i: int) -> Link:
        """The link with id ``i``, made from its place in the order above."""
        if not 0 <= i < self.count:
            raise IndexError(f"no link {i}: the topology has {self.count}")
        s, k = divmod(i, self.sip_size)
        pcie = sip_node(s, "pcie_ep")
        if k < SIP_HEAD:
            io = sip_node(s, "io_cpu")
            ends = ((HOST, pcie), (pcie, HOST), (pcie, io))[k]
            return self._make(i, ends, (PCIE, PCIE, CTRL)[k])
        if k >= self.mesh_start:
            pair, back = divmod(k - self.mesh_start, 2)
            a, b = self._pairs[pair]
            ends = (cube_node(s, a, "noc"), cube_node(s, b, "noc"))
            return self._make(i, ends[::-1] if back else ends, NOC_NOC)
        c, k = divmod(k - SIP_HEAD, self.cube_size)
        noc = cube_node(s, c, "noc")
        if k < CUBE_HEAD:
            io, m_cpu = sip_node(s, "io_cpu"), cube_node(s, c, "m_cpu")
            head = ((io, m_cpu), (m_cpu, noc), (noc, pcie), (pcie, noc))[k]
            return self._make(i, head, (CTRL, CTRL, NOC_NOC, NOC_NOC)[k])
        p, k = divmod(k - CUBE_HEAD, self.pe_size)
        pe = self.pe_id(s, c, p)
        dma = pe.node("dma")
        if k < PE_HEAD:
            return self._make(i, ((dma, noc), (noc, dma))[k], PE_NOC)
        k -= PE_HEAD
        if k < self.mmu:
            return self._make(i, (noc, pe.node("mmu")), MMU)
        r, k = divmod(k - self.mmu, PER_ROUTER)
        router, hbm = self.router_node(pe, r), cube_node(s, c, "hbm_ctrl")
        way = (
            (dma, router),
            (router, dma),
            (noc, router),
            (router, noc),
            (router, hbm),
            (hbm, router),
        )[k]
        kind = (DMA_ROUTER, DMA_ROUTER, NOC_ROUTER, NOC_ROUTER, ROUTER_HBM, ROUTER_HBM)[k]
        return self._make(i, way, kind, i - 1 if k == 5 else i)

    def _make(self, i: int, ends: tuple[str, str], kind: int, resource: int = -1) -> Link:
        bw, latency, plane = self.classes[kind]
        return Link(i, ends[0], ends[1], bw, latency, plane, i if resource < 0 else resource)

    def bandwidths(self, lo: int = 0, hi: int = -1) -> list[float]:
        """The bandwidths of links ``lo`` up to ``hi`` (default: the last) by id, laid
        out block by block (no link is made): every SIP's block is the same list."""
        hi = self.count if hi < 0 else hi
        sip = self._sip_bandwidths()
        found: list[float] = []
        while lo < hi:
            s, k = divmod(lo, self.sip_size)
            take = min(hi - lo, self.sip_size - k)
            found += sip[k : k + take]
            lo += take
        return found

    def bandwidth(self, i: int) -> float:
        """The bandwidth of link ``i`` (no link is made)."""
        return self._sip_bandwidths()[i % self.sip_size]

    def _sip_bandwidths(self) -> list[float]:
        if not self._sip_bw:
            bw = [c[0] for c in self.classes]
            router = [bw[DMA_ROUTER]] * 2 + [bw[NOC_ROUTER]] * 2 + [bw[ROUTER_HBM]] * 2
            pe = [bw[PE_NOC]] * 2 + [bw[MMU]] * self.mmu + router * self.routers
            cube = [bw[CTRL]] * 2 + [bw[NOC_NOC]] * 2 + pe * self.pes
            sip = [bw[PCIE]] * 2 + [bw[CTRL]] + cube * self.cubes
            self._sip_bw = sip + [bw[NOC_NOC]] * (self.sip_size - self.mesh_start)
        return self._sip_bw

    # -- routers and PEs ----------------------------------------------------------
    def pe_id(self, s: int, c: int, p: int) -> PeId:
        return PeId(s, c, p, (s * self.cubes + c) * self.pes + p)

    def router_node(self, pe: PeId, r: int) -> str:
        """The node of the PE's router ``r``: channel ``p·N + r`` (1:1) or the
        aggregate router (n:1)."""
        if self.one_to_one:
            return pe.channel_router(pe.pe * self.channels + r)
        return pe.agg_router

    def pe_place(self, node: str) -> tuple[int, int, int, str] | None:
        """``(sip, cube, pe, part)`` of a node of a PE of this topology, else None."""
        found = pe_part(node)
        if found is None:
            return None
        s, c, p, _ = found
        return found if s < self.sips and c < self.cubes and p < self.pes else None

    def router_place(self, node: str) -> tuple[int, int, int, int] | None:
        """``(sip, cube, pe, r)`` of an HBM router of this topology, else None."""
        found = self.pe_place(node)
        if found is None:
            return None
        s, c, p, part = found
        if not self.one_to_one:
            return (s, c, p, 0) if part == "agg_router" else None
        number = part[4:]
        if part[:4] != "ch_r" or not number.isdigit() or part != f"ch_r{int(number)}":
            return None
        r = int(number) - p * self.channels
        return (s, c, p, r) if 0 <= r < self.channels else None

    def router_slot(self, i: int) -> int:
        """Where link ``i`` sits among its router's six (0 DMA -> router, 1 back,
        2 NOC -> router, 3 back, 4 router -> HBM, 5 back), or -1 if it is no router's."""
        k = (i % self.sip_size) - SIP_HEAD
        if k < 0 or k >= self.mesh_start - SIP_HEAD:
            return -1
        k = k % self.cube_size - CUBE_HEAD
        if k < 0:
            return -1
        k = k % self.pe_size - PE_HEAD - self.mmu
        return k % PER_ROUTER if k >= 0 else -1

    def never_binds(self, i: int) -> bool:
        """Whether resource ``i`` can never bind a route through it: a link into or out
        of an HBM router at least as wide as the router's HBM resource, which every
        route through the router also crosses (both ways share it, so it carries at
        least what such a link does). The fair fabric leaves them out of its solve."""
        slot = self.router_slot(i)
        if slot < 0 or slot >= 4:
            return False
        hbm = self.classes[ROUTER_HBM][0]
        return self.classes[DMA_ROUTER if slot < 2 else NOC_ROUTER][0] >= hbm

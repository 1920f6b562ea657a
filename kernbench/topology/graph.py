"""Build the topology graph (nodes, directed links) from a validated TopologyConfig.

The graph is plain data (DESIGN §3.1, ADR-0015/0017): no SimPy here. Links carry a
bandwidth in GB/s and a latency in ns; each has a dense integer id so the fabric can
keep its state in flat lists. ``plane`` separates the data links DMA traffic may
route over from the control links that carry install messages downwards.

Every data link has a *twin* in the other direction (``TopologyGraph.twin``): a read's
data comes back over the twins of its request's links (DESIGN §13.1). Each link is
one capacity *resource* (``Link.resource``, its own id), duplex links two, except
HBM: a router's link into its cube's HBM controller and the link back out of it are
one half-duplex resource, the channel (1:1) or the PE's aggregate link (n:1), whose
bandwidth reads and writes share. The fabrics keep their capacity state by resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernbench.config.schema import HbmMappingMode, TopologyConfig
from kernbench.topology.names import HOST, PeId, cube_node, sip_node

DATA = "data"
CONTROL = "control"


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


@dataclass
class TopologyGraph:
    """Nodes, links, the PEs and, per PE, the routers that serve its HBM."""

    config: TopologyConfig
    nodes: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    out_links: dict[str, list[Link]] = field(default_factory=dict)
    pes: list[PeId] = field(default_factory=list)
    # router node -> the link that carries its traffic into the cube's HBM controller
    hbm_link: dict[str, Link] = field(default_factory=dict)
    # data link id -> the id of the link between the same nodes the other way
    twin: dict[int, int] = field(default_factory=dict)
    # Nodes traffic ends at and never crosses: DMA engines, HBM routers, HBM controllers.
    endpoints: set[str] = field(default_factory=set)

    @property
    def channels_per_pe(self) -> int:
        n = self.config.cube.memory_map.hbm_channels_per_pe
        assert n is not None, "validate() derives hbm_channels_per_pe before building"
        return n

    @property
    def one_to_one(self) -> bool:
        return self.config.cube.memory_map.hbm_mapping_mode is HbmMappingMode.one_to_one

    def routers(self, pe: PeId) -> list[str]:
        """The PE's HBM routers: one per owned channel (1:1) or the aggregate one (n:1)."""
        if not self.one_to_one:
            return [pe.agg_router]
        n = self.channels_per_pe
        return [pe.channel_router(pe.pe * n + i) for i in range(n)]

    def link(self, src: str, dst: str) -> Link:
        for lk in self.out_links.get(src, ()):
            if lk.dst == dst:
                return lk
        raise KeyError(f"no link {src} -> {dst}")

    def add_node(self, name: str) -> None:
        self.nodes.append(name)
        self.out_links.setdefault(name, [])

    def add_link(
        self,
        src: str,
        dst: str,
        bw_gbs: float,
        latency_ns: float,
        plane: str = DATA,
        resource: int = -1,
    ) -> Link:
        """A directed link; its own resource unless ``resource`` names another link's."""
        lid = len(self.links)
        lk = Link(lid, src, dst, bw_gbs, latency_ns, plane, lid if resource < 0 else resource)
        self.links.append(lk)
        self.out_links[src].append(lk)
        return lk

    def add_duplex(self, a: str, b: str, bw_gbs: float, latency_ns: float) -> Link:
        """Two twin links, one resource each; returns the ``a -> b`` one."""
        ab = self.add_link(a, b, bw_gbs, latency_ns)
        ba = self.add_link(b, a, bw_gbs, latency_ns)
        self.twin[ab.id], self.twin[ba.id] = ba.id, ab.id
        return ab

    def add_half_duplex(self, a: str, b: str, bw_gbs: float, latency_ns: float) -> Link:
        """Two twin links sharing one resource (the ``a -> b`` link's); returns it."""
        ab = self.add_link(a, b, bw_gbs, latency_ns)
        ba = self.add_link(b, a, bw_gbs, latency_ns, resource=ab.id)
        self.twin[ab.id], self.twin[ba.id] = ba.id, ab.id
        return ab


def build_graph(topo: TopologyConfig, with_mmu: bool = False) -> TopologyGraph:
    """Lay out every node and link of the topology; ``with_mmu`` adds the VA PE_MMUs."""
    g = TopologyGraph(topo)
    lk = topo.links
    g.add_node(HOST)
    index = 0
    for s in range(topo.n_sips):
        pcie_ep, io_cpu = sip_node(s, "pcie_ep"), sip_node(s, "io_cpu")
        g.add_node(pcie_ep)
        g.add_node(io_cpu)
        g.add_duplex(HOST, pcie_ep, lk.pcie_bw_gbs, lk.pcie_latency_ns)
        g.add_link(pcie_ep, io_cpu, lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL)
        for c in range(topo.cubes_per_sip):
            _add_cube(g, s, c)
            for p in range(topo.pes_per_cube):
                pe = PeId(s, c, p, index)
                index += 1
                g.pes.append(pe)
                _add_pe(g, pe, with_mmu)
        _connect_cubes(g, s)
    return g


def _add_cube(g: TopologyGraph, s: int, c: int) -> None:
    lk = g.config.links
    m_cpu, noc, hbm = (cube_node(s, c, x) for x in ("m_cpu", "noc", "hbm_ctrl"))
    for name in (m_cpu, noc, hbm):
        g.add_node(name)
    g.endpoints.add(hbm)
    g.add_link(sip_node(s, "io_cpu"), m_cpu, lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL)
    g.add_link(m_cpu, noc, lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL)
    # Cross-SIP data leaves the cube through the SIP's PCIe endpoint.
    g.add_duplex(noc, sip_node(s, "pcie_ep"), lk.noc_noc_bw_gbs, lk.noc_noc_latency_ns)


def _connect_cubes(g: TopologyGraph, s: int) -> None:
    """A full mesh of NOC-to-NOC links between the cubes of one SIP."""
    lk = g.config.links
    n = g.config.cubes_per_sip
    for a in range(n):
        for b in range(a + 1, n):
            g.add_duplex(
                cube_node(s, a, "noc"),
                cube_node(s, b, "noc"),
                lk.noc_noc_bw_gbs,
                lk.noc_noc_latency_ns,
            )


def _add_pe(g: TopologyGraph, pe: PeId, with_mmu: bool) -> None:
    lk, mm = g.config.links, g.config.cube.memory_map
    parts = ["cpu", "scheduler", "dma", "gemm", "math"] + (["mmu"] if with_mmu else [])
    g.add_node(pe.prefix)
    for part in parts:
        g.add_node(pe.node(part))
    dma, noc = pe.node("dma"), cube_node(pe.sip, pe.cube, "noc")
    g.endpoints.add(dma)
    hbm = cube_node(pe.sip, pe.cube, "hbm_ctrl")
    g.add_duplex(dma, noc, lk.pe_noc_bw_gbs, lk.pe_noc_latency_ns)
    if with_mmu:
        g.add_link(noc, pe.node("mmu"), lk.pe_noc_bw_gbs, lk.pe_noc_latency_ns, CONTROL)
    router_bw = mm.hbm_channel_bw_gbs * (1 if g.one_to_one else g.channels_per_pe)
    for router in g.routers(pe):
        g.add_node(router)
        g.endpoints.add(router)
        g.add_duplex(dma, router, router_bw, lk.dma_router_latency_ns)
        g.add_duplex(noc, router, router_bw, lk.noc_router_latency_ns)
        g.hbm_link[router] = g.add_half_duplex(router, hbm, router_bw, lk.router_hbm_latency_ns)

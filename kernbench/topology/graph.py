"""The topology graph (nodes, directed links) of a validated TopologyConfig.

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

Nothing is laid out in advance: a link is made from its id, a PE from its index
(:mod:`kernbench.topology.layout`, :mod:`kernbench.topology.views`), so building the
graph of 16,384 PEs costs what building the graph of one does. Only the whole views
(``out_links``, ``nodes``, ``endpoints``: the reference route search of the tests)
make every node and link, once, when first asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernbench.config.schema import HbmMappingMode, TopologyConfig
from kernbench.topology.layout import CONTROL, DATA, Link, LinkLayout
from kernbench.topology.names import HOST, PeId, cube_node, sip_node
from kernbench.topology.views import HbmLinks, Links, PeIds, Twins

__all__ = ["CONTROL", "DATA", "Link", "TopologyGraph", "build_graph"]

PE_PARTS = ("cpu", "scheduler", "dma", "gemm", "math")


@dataclass
class _Whole:
    """Every node and every node's links, in the order the first design built them."""

    nodes: list[str] = field(default_factory=list)
    out_links: dict[str, list[Link]] = field(default_factory=dict)
    # Nodes traffic ends at and never crosses: DMA engines, HBM routers, HBM controllers.
    endpoints: set[str] = field(default_factory=set)


class TopologyGraph:
    """The PEs, the links by id and, per PE, the routers that serve its HBM."""

    def __init__(self, config: TopologyConfig, with_mmu: bool = False) -> None:
        self.config = config
        self.with_mmu = with_mmu
        self.layout = LinkLayout(config, with_mmu)
        self.pes = PeIds(self.layout)
        self.links = Links(self.layout)
        # router node -> the link that carries its traffic into the cube's HBM controller
        self.hbm_link = HbmLinks(self.layout, self.pes)
        # data link id -> the id of the link between the same nodes the other way
        self.twin = Twins(self.layout)
        self._whole: _Whole | None = None

    @property
    def channels_per_pe(self) -> int:
        return self.layout.channels

    @property
    def one_to_one(self) -> bool:
        return self.config.cube.memory_map.hbm_mapping_mode is HbmMappingMode.one_to_one

    def routers(self, pe: PeId) -> list[str]:
        """The PE's HBM routers: one per owned channel (1:1) or the aggregate one (n:1)."""
        return [self.layout.router_node(pe, r) for r in range(self.layout.routers)]

    def link(self, src: str, dst: str) -> Link:
        for lk in self.out_links.get(src, ()):
            if lk.dst == dst:
                return lk
        raise KeyError(f"no link {src} -> {dst}")

    @property
    def nodes(self) -> list[str]:
        return self.whole().nodes

    @property
    def out_links(self) -> dict[str, list[Link]]:
        return self.whole().out_links

    @property
    def endpoints(self) -> set[str]:
        return self.whole().endpoints

    def whole(self) -> _Whole:
        """Every node and link, made once (a small topology's tests walk them)."""
        if self._whole is None:
            self._whole = _lay_out(self)
        return self._whole


def build_graph(topo: TopologyConfig, with_mmu: bool = False) -> TopologyGraph:
    """The graph of the topology; ``with_mmu`` adds the VA PE_MMUs."""
    return TopologyGraph(topo, with_mmu)


def _lay_out(g: TopologyGraph) -> _Whole:
    whole = _Whole()
    for node in _node_order(g):
        whole.nodes.append(node)
        whole.out_links[node] = []
    for lk in g.links:
        whole.out_links[lk.src].append(lk)
    for pe in g.pes:
        whole.endpoints.add(pe.node("dma"))
        whole.endpoints.update(g.routers(pe))
    for s in range(g.config.n_sips):
        for c in range(g.config.cubes_per_sip):
            whole.endpoints.add(cube_node(s, c, "hbm_ctrl"))
    return whole


def _node_order(g: TopologyGraph) -> list[str]:
    """Host; per SIP its PCIe endpoint and IO_CPU; per cube its M_CPU, NOC, HBM
    controller, then per PE its own node, its parts and its routers."""
    parts = PE_PARTS + (("mmu",) if g.with_mmu else ())
    nodes = [HOST]
    for s in range(g.config.n_sips):
        nodes += [sip_node(s, "pcie_ep"), sip_node(s, "io_cpu")]
        for c in range(g.config.cubes_per_sip):
            nodes += [cube_node(s, c, part) for part in ("m_cpu", "noc", "hbm_ctrl")]
            for pe in g.pes.in_cube(s, c):
                nodes += [pe.prefix, *(pe.node(part) for part in parts), *g.routers(pe)]
    return nodes

"""The reference the hierarchy is held to: the first design's graph, built node by node
and link by link, and its shortest-path search (tests/test_routes.py).

The simulator no longer builds the graph or searches it (kernbench.topology.layout
computes link ids, kernbench.topology.routes computes routes from coordinates);
these are the definitions they must equal, kept apart from the code under test so a
slip in its arithmetic cannot hide in the reference too.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from kernbench.config.schema import HbmMappingMode, TopologyConfig
from kernbench.topology.graph import CONTROL, DATA, Link
from kernbench.topology.names import HOST, PeId, cube_node, sip_node


@dataclass
class Graph:
    """Nodes, links by id, each node's links out, twins, each router's HBM link."""

    config: TopologyConfig
    nodes: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    out_links: dict[str, list[Link]] = field(default_factory=dict)
    pes: list[PeId] = field(default_factory=list)
    hbm_link: dict[str, Link] = field(default_factory=dict)
    twin: dict[int, int] = field(default_factory=dict)
    endpoints: set[str] = field(default_factory=set)

    def add_node(self, name: str) -> None:
        self.nodes.append(name)
        self.out_links.setdefault(name, [])

    def add_link(self, a: str, b: str, bw: float, lat: float, plane=DATA, resource=-1) -> Link:
        lid = len(self.links)
        lk = Link(lid, a, b, bw, lat, plane, lid if resource < 0 else resource)
        self.links.append(lk)
        self.out_links[a].append(lk)
        return lk

    def add_pair(self, a: str, b: str, bw: float, lat: float, shared: bool = False) -> Link:
        ab = self.add_link(a, b, bw, lat)
        ba = self.add_link(b, a, bw, lat, resource=ab.id if shared else -1)
        self.twin[ab.id], self.twin[ba.id] = ba.id, ab.id
        return ab

    def routers(self, pe: PeId) -> list[str]:
        mm = self.config.cube.memory_map
        n = mm.hbm_channels_per_pe
        if mm.hbm_mapping_mode is not HbmMappingMode.one_to_one:
            return [pe.agg_router]
        return [pe.channel_router(pe.pe * n + i) for i in range(n)]


def build(topo: TopologyConfig, with_mmu: bool = False) -> Graph:
    """Every node and link of the topology, in the first design's order."""
    g, lk = Graph(topo), topo.links
    g.add_node(HOST)
    index = 0
    for s in range(topo.n_sips):
        pcie, io = sip_node(s, "pcie_ep"), sip_node(s, "io_cpu")
        g.add_node(pcie)
        g.add_node(io)
        g.add_pair(HOST, pcie, lk.pcie_bw_gbs, lk.pcie_latency_ns)
        g.add_link(pcie, io, lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL)
        for c in range(topo.cubes_per_sip):
            m_cpu, noc, hbm = (cube_node(s, c, x) for x in ("m_cpu", "noc", "hbm_ctrl"))
            for name in (m_cpu, noc, hbm):
                g.add_node(name)
            g.endpoints.add(hbm)
            g.add_link(io, m_cpu, lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL)
            g.add_link(m_cpu, noc, lk.ctrl_bw_gbs, lk.ctrl_latency_ns, CONTROL)
            g.add_pair(noc, pcie, lk.noc_noc_bw_gbs, lk.noc_noc_latency_ns)
            for p in range(topo.pes_per_cube):
                pe = PeId(s, c, p, index)
                index += 1
                g.pes.append(pe)
                _add_pe(g, pe, noc, hbm, with_mmu)
        for a in range(topo.cubes_per_sip):
            for b in range(a + 1, topo.cubes_per_sip):
                noc_a, noc_b = cube_node(s, a, "noc"), cube_node(s, b, "noc")
                g.add_pair(noc_a, noc_b, lk.noc_noc_bw_gbs, lk.noc_noc_latency_ns)
    return g


def _add_pe(g: Graph, pe: PeId, noc: str, hbm: str, with_mmu: bool) -> None:
    lk, mm = g.config.links, g.config.cube.memory_map
    parts = ["cpu", "scheduler", "dma", "gemm", "math"] + (["mmu"] if with_mmu else [])
    g.add_node(pe.prefix)
    for part in parts:
        g.add_node(pe.node(part))
    dma = pe.node("dma")
    g.endpoints.add(dma)
    g.add_pair(dma, noc, lk.pe_noc_bw_gbs, lk.pe_noc_latency_ns)
    if with_mmu:
        g.add_link(noc, pe.node("mmu"), lk.pe_noc_bw_gbs, lk.pe_noc_latency_ns, CONTROL)
    one_to_one = mm.hbm_mapping_mode is HbmMappingMode.one_to_one
    router_bw = mm.hbm_channel_bw_gbs * (1 if one_to_one else mm.hbm_channels_per_pe)
    for router in g.routers(pe):
        g.add_node(router)
        g.endpoints.add(router)
        g.add_pair(dma, router, router_bw, lk.dma_router_latency_ns)
        g.add_pair(noc, router, router_bw, lk.noc_router_latency_ns)
        g.hbm_link[router] = g.add_pair(router, hbm, router_bw, lk.router_hbm_latency_ns, True)


def search(g: Graph, src: str) -> dict[str, tuple[tuple[int, ...], float]]:
    """The first design's route search: from ``src`` to every node it reaches, least
    latency, then fewest hops, then node name; a DMA engine, an HBM router or an HBM
    controller is never a transit hop."""
    heap: list[tuple[float, int, str, tuple[int, ...]]] = [(0.0, 0, src, ())]
    tree: dict[str, tuple[tuple[int, ...], float]] = {}
    while heap:
        lat, hops, node, path = heapq.heappop(heap)
        if node in tree:
            continue
        tree[node] = (path, lat)
        if node != src and node in g.endpoints:
            continue
        for lk in g.out_links[node]:
            if lk.plane == DATA and lk.dst not in tree:
                heapq.heappush(heap, (lat + lk.latency_ns, hops + 1, lk.dst, path + (lk.id,)))
    return tree


@dataclass(frozen=True)
class Way:
    """A route as the first design's router made it from the search."""

    link_ids: tuple[int, ...]
    latency_ns: float
    min_bw_gbs: float
    nodes: tuple[str, ...]
    resources: tuple[int, ...]
    request_ns: float = 0.0


def to_memory(g: Graph, tree: dict, src: str, router: str) -> Way:
    path, lat = tree[router]
    links = [g.links[i] for i in path] + [g.hbm_link[router]]
    nodes = (src, *(lk.dst for lk in links))
    ids = tuple(lk.id for lk in links)
    bw = min(min((lk.bw_gbs for lk in links[:-1]), default=float("inf")), links[-1].bw_gbs)
    return Way(ids, lat + links[-1].latency_ns, bw, nodes, tuple(lk.resource for lk in links))


def from_memory(g: Graph, out: Way) -> Way:
    links = [g.links[g.twin[i]] for i in reversed(out.link_ids)]
    return Way(
        tuple(lk.id for lk in links),
        sum(lk.latency_ns for lk in links),
        min(lk.bw_gbs for lk in links),
        out.nodes[::-1],
        tuple(lk.resource for lk in links),
        out.latency_ns,
    )

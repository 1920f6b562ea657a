"""Routes over the data plane, from the hierarchy: no search.

A route is the list of links a physical request crosses. Its latency sum and its
narrowest bandwidth are precomputed so the data plane does arithmetic only.

The topology is a tree (DESIGN §3.1): a DMA reaches an HBM router through its own
cube's NOC, another cube's NOC over the NOC-to-NOC link between them, another SIP's
over its SIP's PCIe endpoint, the host and the other SIP's endpoint, and every hop
is a link of a fixed class. So the route from a DMA to a router is a function of
the two (sip, cube, pe, router) coordinates, of one of four *kinds*: the PE's own
memory, its cube, its SIP, another SIP. Its links are computed in O(route length)
(:class:`~kernbench.topology.layout.LinkLayout` gives their ids), and what depends
only on the kind (latency sum, narrowest bandwidth, both ways) is computed once per
kind. Every route is a shortest one by latency, ties going to the fewest hops: the
graph search that found them before is the reference tests/test_routes.py holds
them to, on several topologies and on random latencies.

**A PE's own memory** has two ways: the DMA's direct port to its router
(``dma_router_latency_ns``) and the way through the cube NOC (``pe_noc_latency_ns +
noc_router_latency_ns``). The route takes the shorter, the direct port on a tie;
with the default latencies (2 against 5 + 3) that is the direct port. A topology
whose direct port is slower routes its own traffic through the NOC, over the
PE-NOC link and the NOC's link to the router, where it shares them with other PEs'
traffic to that memory: a legal route (both links exist and carry data to that
router), and the one a latency-routed fabric takes, so it is kept, as the graph
search kept it, rather than forbidden or forced onto the slower port.

A read is a round trip (DESIGN §13.1): its request goes out on the write's route
carrying no payload, and its data comes back on the *twins* of that route's links, in
reverse order (:meth:`Router.from_memory`): the same path, so a read's two halves
cross the same nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.topology.graph import TopologyGraph
from kernbench.topology.layout import (
    DMA_ROUTER,
    NOC_NOC,
    NOC_ROUTER,
    PCIE,
    PE_NOC,
    ROUTER_HBM,
)
from kernbench.topology.names import HOST, cube_node, sip_node

# Route kinds by where the router is from the DMA, as the link classes they cross.
OWN = (DMA_ROUTER, ROUTER_HBM)  # its own memory, over the direct port
CUBE = (PE_NOC, NOC_ROUTER, ROUTER_HBM)  # its cube (its own memory too, through the NOC)
SIP = (PE_NOC, NOC_NOC, NOC_ROUTER, ROUTER_HBM)  # another cube of its SIP
REMOTE = (PE_NOC, NOC_NOC, PCIE, PCIE, NOC_NOC, NOC_ROUTER, ROUTER_HBM)  # another SIP


@dataclass(slots=True)
class Route:
    """The links a request's bytes cross, in order, with the capacity resource of
    each (``resources``, DESIGN §13.1: HBM's two directions share one), their latency
    sum and narrowest bandwidth. A read's route is its data's way back
    (``reads``); ``request_ns`` is then the latency of the payload-free request that
    went out before it (0 for a write, whose bytes travel with the request). Never
    changed once made (a route table hands out the same one to every request)."""

    link_ids: tuple[int, ...]
    latency_ns: float
    min_bw_gbs: float
    nodes: tuple[str, ...]
    resources: tuple[int, ...]
    # The highest link id it crosses (its resources' ids are links it crosses): a
    # fabric's per-link lists cover the links of the routes it has seen.
    top_id: int
    reads: bool
    request_ns: float

    def __init__(
        self,
        link_ids: tuple[int, ...],
        latency_ns: float,
        min_bw_gbs: float,
        nodes: tuple[str, ...],
        resources: tuple[int, ...],
        top_id: int,
        reads: bool = False,
        request_ns: float = 0.0,
    ) -> None:
        # Written out, not frozen: the compiled build compiles this one, while the
        # frozen dataclass's generated __init__ stayed interpreted, 5.8 of the 20
        # thousand instructions of making a route (1,024 PEs make 16,384).
        self.link_ids = link_ids
        self.latency_ns = latency_ns
        self.min_bw_gbs = min_bw_gbs
        self.nodes = nodes
        self.resources = resources
        self.top_id = top_id
        self.reads = reads
        self.request_ns = request_ns


@dataclass(frozen=True, slots=True)
class Kind:
    """What every route of one kind shares: latency and narrowest bandwidth, out to
    the memory and back (the way back's latency summed in its own order, as a route
    made link by link sums it)."""

    latency_ns: float
    min_bw_gbs: float
    back_latency_ns: float


class Router:
    """Routes from a DMA engine to an HBM router and back, from their coordinates."""

    def __init__(self, graph: TopologyGraph) -> None:
        self.graph = graph
        self.layout = graph.layout
        lk = graph.config.links
        # A PE's own memory: the direct port unless the NOC is strictly shorter (as a
        # search by (latency, hops) finds it: 1 hop beats 2 on a tie).
        via_noc = 0.0 + lk.pe_noc_latency_ns + lk.noc_router_latency_ns
        self.direct = lk.dma_router_latency_ns <= via_noc
        self.kinds: dict[tuple[int, ...], Kind] = {}
        self._places: dict[str, tuple[int, int, int, int]] = {}

    def to_memory(self, src: str, router: str) -> Route:
        """The route from the DMA ``src`` to an HBM router, and on into HBM."""
        ids, nodes, kind = self._path(src, router)
        k = self._kind(kind)
        return Route(ids, k.latency_ns, k.min_bw_gbs, nodes, ids, max(ids))

    def from_memory(self, dst: str, router: str) -> Route:
        """A read's data path: from the HBM controller behind ``router`` back to
        ``dst``, over the twins of :meth:`to_memory`'s links in reverse order; its
        ``request_ns`` is the outbound route's latency."""
        out, nodes, kind = self._path(dst, router)
        k = self._kind(kind)
        twin = self.layout.twin
        back = tuple(twin(i) for i in reversed(out))
        # The HBM link back out shares the resource of the link in (half-duplex).
        resources = (out[-1],) + back[1:]
        top = max(back)
        return Route(
            back, k.back_latency_ns, k.min_bw_gbs, nodes[::-1], resources, top, True, k.latency_ns
        )

    def _kind(self, kind: tuple[int, ...]) -> Kind:
        found = self.kinds.get(kind)
        if found is None:
            classes = self.layout.classes
            out = 0.0
            for c in kind:
                out += classes[c][1]
            back = sum(classes[c][1] for c in reversed(kind))
            found = Kind(out, min(classes[c][0] for c in kind), back)
            self.kinds[kind] = found
        return found

    def _path(
        self, src: str, router: str
    ) -> tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...]]:
        """The link ids and nodes from DMA ``src`` into the HBM behind ``router``,
        and the route's kind."""
        s, c, p, _ = self._place(src, True)
        t, d, q, r = self._place(router, False)
        lay = self.layout
        into = lay.router_to_hbm(t, d, q, r)
        hbm = cube_node(t, d, "hbm_ctrl")
        if self.direct and (s, c, p) == (t, d, q):
            return (lay.dma_to_router(t, d, q, r), into), (src, router, hbm), OWN
        up, noc = lay.dma_to_noc(s, c, p), cube_node(s, c, "noc")
        last = (lay.noc_to_router(t, d, q, r), into)
        if (s, c) == (t, d):
            return (up, *last), (src, noc, router, hbm), CUBE
        there = cube_node(t, d, "noc")
        if s == t:
            ids = (up, lay.noc_to_noc(s, c, d), *last)
            return ids, (src, noc, there, router, hbm), SIP
        far_ids = (
            up,
            lay.noc_to_pcie(s, c),
            lay.pcie_to_host(s),
            lay.host_to_pcie(t),
            lay.pcie_to_noc(t, d),
            *last,
        )
        pcie, far = sip_node(s, "pcie_ep"), sip_node(t, "pcie_ep")
        return far_ids, (src, noc, pcie, HOST, far, there, router, hbm), REMOTE

    def _place(self, node: str, dma: bool) -> tuple[int, int, int, int]:
        """``(sip, cube, pe, r)`` of a DMA engine (r = -1) or an HBM router."""
        place = self._places.get(node)
        if place is None:
            if dma:
                found = self.layout.pe_place(node)
                if found is None or found[3] != "dma":
                    raise KeyError(f"{node} is not a DMA engine of the topology")
                place = (found[0], found[1], found[2], -1)
            else:
                router = self.layout.router_place(node)
                if router is None:
                    raise KeyError(f"{node} is not an HBM router of the topology")
                place = router
            self._places[node] = place
        return place


class MemoryRoutes(dict[str, Route]):
    """One DMA engine's routes for one direction, by HBM router, each computed on
    first use: a dict, so the data plane finds one with a single subscript. ``src``
    names the DMA, the requester the data plane shares links between (a DMA's reads
    and writes are one requester's)."""

    def __init__(self, router: Router, src: str, reads: bool = False) -> None:
        super().__init__()
        self.router = router
        self.src = src
        self.reads = reads

    def __missing__(self, hbm_router: str) -> Route:
        route = self[hbm_router] = self.made(hbm_router)
        return route

    def made(self, hbm_router: str) -> Route:
        """The route to (a read's: from) ``hbm_router``, made now and not kept: for a
        walk over routes the run may not have taken (a bound's), which would otherwise
        keep one per PE and router it walked."""
        if self.reads:
            return self.router.from_memory(self.src, hbm_router)
        return self.router.to_memory(self.src, hbm_router)

"""Routes over the data plane, found once per source and cached.

A route is the list of links a physical request crosses. Its latency sum and its
narrowest bandwidth are precomputed so the data plane does arithmetic only. One search
from a source finds its routes to every node (a tree of shortest paths): a PE's DMA
under ``uniform`` traffic reaches every HBM router of the topology, and a search per
(source, destination) pair walked most of the graph each time (16 PEs x 128 routers
under 1:1: 2,048 searches, a quarter of a 600-access run's instructions).

A read is a round trip (DESIGN §13.1): its request goes out on the write's route
carrying no payload, and its data comes back on the *twins* of that route's links, in
reverse order (:meth:`Router.from_memory`): the same path, not a second search, so a
read's two halves cross the same nodes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from kernbench.topology.graph import DATA, TopologyGraph


@dataclass(frozen=True, slots=True)
class Route:
    """The links a request's bytes cross, in order, with the capacity resource of
    each (``resources``, DESIGN §13.1: HBM's two directions share one), their latency
    sum and narrowest bandwidth. A read's route is its data's way back
    (``reads``); ``request_ns`` is then the latency of the payload-free request that
    went out before it (0 for a write, whose bytes travel with the request)."""

    link_ids: tuple[int, ...]
    latency_ns: float
    min_bw_gbs: float
    nodes: tuple[str, ...]
    resources: tuple[int, ...]
    reads: bool = False
    request_ns: float = 0.0


class Router:
    """Shortest-latency routes (ties broken by hop count, then node name) with a cache."""

    def __init__(self, graph: TopologyGraph) -> None:
        self.graph = graph
        self._cache: dict[tuple[str, str], Route] = {}
        self._mem_cache: dict[tuple[str, str], Route] = {}
        self._back_cache: dict[tuple[str, str], Route] = {}
        # per source: each node it reaches -> (links of the route, latency)
        self._trees: dict[str, dict[str, tuple[tuple[int, ...], float]]] = {}

    def route(self, src: str, dst: str) -> Route:
        key = (src, dst)
        r = self._cache.get(key)
        if r is None:
            tree = self._trees.get(src)
            if tree is None:
                tree = self._trees[src] = self._dijkstra(src)
            found = tree.get(dst)
            if found is None:
                raise KeyError(f"no data route from {src} to {dst}")
            r = self._cache[key] = self._make(src, found[0], found[1])
        return r

    def to_memory(self, src: str, router: str) -> Route:
        """The route from ``src`` to an HBM router, plus the router's link into HBM."""
        key = (src, router)
        r = self._mem_cache.get(key)
        if r is None:
            head = self.route(src, router)
            last = self.graph.hbm_link[router]
            r = self._mem_cache[key] = Route(
                head.link_ids + (last.id,),
                head.latency_ns + last.latency_ns,
                min(head.min_bw_gbs, last.bw_gbs),
                head.nodes + (last.dst,),
                head.resources + (last.resource,),
            )
        return r

    def from_memory(self, dst: str, router: str) -> Route:
        """A read's data path: from the HBM controller behind ``router`` back to
        ``dst``, over the twins of :meth:`to_memory`'s links in reverse order; its
        ``request_ns`` is the outbound route's latency."""
        key = (dst, router)
        r = self._back_cache.get(key)
        if r is None:
            out = self.to_memory(dst, router)
            links = [self.graph.links[self.graph.twin[i]] for i in reversed(out.link_ids)]
            r = self._back_cache[key] = Route(
                tuple(lk.id for lk in links),
                sum(lk.latency_ns for lk in links),
                min(lk.bw_gbs for lk in links),
                out.nodes[::-1],
                tuple(lk.resource for lk in links),
                True,
                out.latency_ns,
            )
        return r

    def _dijkstra(self, src: str) -> dict[str, tuple[tuple[int, ...], float]]:
        """The route from ``src`` to every node it reaches: the path with which the node
        is first popped, as a search stopping at that node would return it."""
        g = self.graph
        heap: list[tuple[float, int, str, tuple[int, ...]]] = [(0.0, 0, src, ())]
        tree: dict[str, tuple[tuple[int, ...], float]] = {}
        while heap:
            lat, hops, node, path = heapq.heappop(heap)
            if node in tree:
                continue
            tree[node] = (path, lat)
            if node != src and node in g.endpoints:
                continue  # a DMA engine or the memory side is never a transit hop
            for lk in g.out_links[node]:
                if lk.plane == DATA and lk.dst not in tree:
                    heapq.heappush(heap, (lat + lk.latency_ns, hops + 1, lk.dst, path + (lk.id,)))
        return tree

    def _make(self, src: str, path: tuple[int, ...], lat: float) -> Route:
        links = [self.graph.links[i] for i in path]
        min_bw = min((lk.bw_gbs for lk in links), default=float("inf"))
        resources = tuple(lk.resource for lk in links)
        return Route(path, lat, min_bw, (src,) + tuple(lk.dst for lk in links), resources)


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
        if self.reads:
            route = self[hbm_router] = self.router.from_memory(self.src, hbm_router)
        else:
            route = self[hbm_router] = self.router.to_memory(self.src, hbm_router)
        return route

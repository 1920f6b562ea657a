"""Routes over the data plane, found once per source and cached.

A route is the list of links a physical request crosses. Its latency sum and its
narrowest bandwidth are precomputed so the data plane does arithmetic only. One search
from a source finds its routes to every node (a tree of shortest paths): a PE's DMA
under ``uniform`` traffic reaches every HBM router of the topology, and a search per
(source, destination) pair walked most of the graph each time (16 PEs x 128 routers
under 1:1: 2,048 searches, a quarter of a 600-access run's instructions).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from kernbench.topology.graph import DATA, TopologyGraph


@dataclass(frozen=True, slots=True)
class Route:
    link_ids: tuple[int, ...]
    latency_ns: float
    min_bw_gbs: float
    nodes: tuple[str, ...]


class Router:
    """Shortest-latency routes (ties broken by hop count, then node name) with a cache."""

    def __init__(self, graph: TopologyGraph) -> None:
        self.graph = graph
        self._cache: dict[tuple[str, str], Route] = {}
        self._mem_cache: dict[tuple[str, str], Route] = {}
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
            if node != src and node.endswith(".dma"):
                continue  # a DMA engine is an endpoint, never a transit hop
            for lk in g.out_links[node]:
                if lk.plane == DATA and lk.dst not in tree:
                    heapq.heappush(heap, (lat + lk.latency_ns, hops + 1, lk.dst, path + (lk.id,)))
        return tree

    def _make(self, src: str, path: tuple[int, ...], lat: float) -> Route:
        links = [self.graph.links[i] for i in path]
        min_bw = min((lk.bw_gbs for lk in links), default=float("inf"))
        return Route(path, lat, min_bw, (src,) + tuple(lk.dst for lk in links))


class MemoryRoutes(dict[str, Route]):
    """The routes from one DMA engine to HBM routers, each computed on first use: a
    dict, so the data plane finds one with a single subscript."""

    def __init__(self, router: Router, src: str) -> None:
        super().__init__()
        self.router = router
        self.src = src

    def __missing__(self, hbm_router: str) -> Route:
        route = self[hbm_router] = self.router.to_memory(self.src, hbm_router)
        return route

"""Routes over the data plane, computed once per (src, dst) and cached.

A route is the list of links a physical request crosses. Its latency sum and its
narrowest bandwidth are precomputed so the data plane does arithmetic only.
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

    def route(self, src: str, dst: str) -> Route:
        key = (src, dst)
        r = self._cache.get(key)
        if r is None:
            r = self._cache[key] = self._dijkstra(src, dst)
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

    def _dijkstra(self, src: str, dst: str) -> Route:
        g = self.graph
        heap: list[tuple[float, int, str, tuple[int, ...]]] = [(0.0, 0, src, ())]
        seen: set[str] = set()
        while heap:
            lat, hops, node, path = heapq.heappop(heap)
            if node == dst:
                return self._make(src, path, lat)
            if node in seen or (node != src and node.endswith(".dma")):
                continue  # a DMA engine is an endpoint, never a transit hop
            seen.add(node)
            for lk in g.out_links[node]:
                if lk.plane == DATA and lk.dst not in seen:
                    heapq.heappush(heap, (lat + lk.latency_ns, hops + 1, lk.dst, path + (lk.id,)))
        raise KeyError(f"no data route from {src} to {dst}")

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

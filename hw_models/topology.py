"""Cluster topologies with deterministic minimal routing: leaf-spine, HyperX and Dragonfly.

Vertices are numbered hosts first (``0 .. n_hosts-1``, host ``i`` is cluster node ``i``), then
switches (``n_hosts + s``). Every physical cable is two *directed* links, each with the full line
rate (``LinkParams``, NetSparse Table 5) in its direction. A path is the list of directed link ids
from the source host to the destination host; a node's path to itself is empty.

Assumptions (ours unless a NetSparse source is named):

* **Leaf-spine** (NetSparse Table 5 default): ``ceil(nodes / rack_size)`` ToR switches and
  ``leafspine_spines`` spines (16: one uplink from each ToR to every spine, so a ToR uses 16 down +
  16 up of its 32 ports, full bisection). A single rack has no spines. Inter-rack paths are
  host-ToR-spine-ToR-host. ECMP is replaced by a deterministic choice, ``topology.leafspine_spine_choice``:
  ``pair`` (default), spine = ``(src mod rack_size + dst mod rack_size) mod spines``, which spreads one
  source's flows and one destination's flows over all spines; ``pair_hash``, spine =
  ``splitmix64(src * 2**32 + dst) mod spines`` (ECMP on a fixed 5-tuple); ``per_packet``, every spine
  is one of the pair's paths, path ``p`` through spine ``(pair's spine + p) mod spines``, and the
  simulator sends a pair's packets down them in turn. Other topologies refuse a non-default value:
  their minimal routes have no spine to pick.
* **HyperX** ``4x4x2``, 4 hosts per switch, width 4 (NetSparse Fig. 22): a switch links to every
  switch that differs in exactly one coordinate, with ``width`` parallel cables per neighbour pair.
  Routing is dimension-ordered (fix dimension 0 first, then 1, ...), which is minimal. The cable of a
  trunk is chosen by the same deterministic hash, ``(src + dst) mod width``.
* **Dragonfly** with 32 switches in 4 groups, 4 hosts per switch (NetSparse Fig. 22): switches of a
  group are fully connected; switch ``i`` of a group has one global cable to switch ``i`` of every
  other group (``h = groups - 1`` global ports; 8 cables between every pair of groups). Minimal
  routing goes global first: ``(g, i) -> (g', i) -> (g', j)``; since every switch reaches every
  group directly, a minimal path has at most one global and one local inter-switch hop.
* Every switch of HyperX and Dragonfly has hosts, so every switch is a ToR (gets the NetSparse
  extensions when ``switch.netsparse_in_tor``).

Routing is computed vectorised over all (src, dst) pairs at once; :meth:`Topology.route_table` is
the dense form the C++ simulator takes (every path of every pair).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hw_models.errors import ConfigError
from hw_models.params import HardwareParams


@dataclass(frozen=True, eq=False)
class Topology:
    """A built topology: directed links, host attachment and a dense routing table."""

    name: str
    n_hosts: int
    n_switches: int
    link_src: np.ndarray
    """Source vertex of each directed link."""
    link_dst: np.ndarray
    """Destination vertex of each directed link."""
    link_bytes_per_s: np.ndarray
    """Capacity of each directed link in bytes/s (the line rate, NetSparse Table 5)."""
    link_latency_s: np.ndarray
    """One-way latency of each link (NetSparse Table 5: 450 ns)."""
    host_switch: np.ndarray
    """Switch index (``0 .. n_switches-1``) each host attaches to: its ToR."""
    switch_is_tor: np.ndarray
    """True for switches with hosts attached (the ones NetSparse extends, Table 5)."""
    _routes: np.ndarray = field(repr=False)
    """``[paths, n_hosts, n_hosts, max_hops]`` link ids, ``-1`` padded: a pair's alternative paths (several
    only with ``leafspine_spine_choice=per_packet``), all of one length; path 0 is the pair's own."""

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return len(self.link_src)

    def path(self, src: int, dst: int) -> list[int]:
        """Directed link ids from host ``src`` to host ``dst`` (empty when ``src == dst``)."""
        self._check_host(src)
        self._check_host(dst)
        row = self._routes[0, src, dst]
        return [int(x) for x in row[row >= 0]]

    def switch_path(self, src: int, dst: int) -> list[int]:
        """Switch indices traversed from ``src`` to ``dst``, in order."""
        links = self.path(src, dst)
        return [int(self.link_dst[li]) - self.n_hosts for li in links[:-1]]

    def hops(self, src: np.ndarray | int, dst: np.ndarray | int) -> np.ndarray:
        """Number of links on each path (vectorised over broadcastable ``src`` / ``dst``)."""
        return (self._routes[0, src, dst] >= 0).sum(axis=-1)

    def hop_matrix(self) -> np.ndarray:
        """``[n_hosts, n_hosts]`` link counts of every path."""
        return (self._routes[0] >= 0).sum(axis=-1)

    def path_table(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense routing table of each pair's own path: link ids ``[n_hosts, n_hosts, max_hops]`` (``-1``
        padded) and lengths."""
        return self._routes[0].copy(), self.hop_matrix()

    def route_table(self) -> np.ndarray:
        """Every path of every pair, ``[paths, n_hosts, n_hosts, max_hops]`` link ids (``-1`` padded)."""
        return self._routes.copy()

    def path_latency_s(self, src: int, dst: int, switch_latency_s: float) -> float:
        """Zero-load latency of a path: link latencies plus one switch latency per switch traversed."""
        links = self.path(src, dst)
        return float(self.link_latency_s[links].sum()) + switch_latency_s * max(len(links) - 1, 0)

    def _check_host(self, h: int) -> None:
        if not 0 <= h < self.n_hosts:
            raise ValueError(f"host {h} out of range [0, {self.n_hosts})")


def build_topology(params: HardwareParams | None = None) -> Topology:
    """Build the topology named by ``params.cluster.topology`` for ``params.cluster.nodes`` hosts."""
    params = params or HardwareParams()
    builders = {"leafspine": _leafspine, "hyperx": _hyperx, "dragonfly": _dragonfly}
    name = params.cluster.topology
    if name not in builders:
        raise ConfigError(f"unknown topology {name!r}; choose one of {', '.join(builders)}")
    if name != "leafspine" and params.topology.leafspine_spine_choice != "pair":
        raise ConfigError(f"topology.leafspine_spine_choice applies to leafspine; drop it for cluster.topology={name}")
    return builders[name](params)


class _Builder:
    """Accumulates cables and turns vertex sequences into link-id paths."""

    def __init__(self, n_hosts: int, n_switches: int, lanes: int = 1) -> None:
        self.n_hosts, self.n_switches, self.lanes = n_hosts, n_switches, lanes
        n_vertices = n_hosts + n_switches
        self.index = np.full((n_vertices, n_vertices, lanes), -1, dtype=np.int64)
        self.src: list[int] = []
        self.dst: list[int] = []

    def cable(self, u: int, v: int, lane: int = 0) -> None:
        """A full-duplex cable: two directed links."""
        for a, b in ((u, v), (v, u)):
            self.index[a, b, lane] = len(self.src)
            self.src.append(a)
            self.dst.append(b)

    def routes(self, vertices: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        """Link ids from padded vertex sequences ``[P, L+1]`` (``-1`` = absent, any position).

        Absent entries are squeezed out in order, so builders can write optional hops in place.
        """
        present = vertices >= 0
        order = np.argsort(~present, axis=1, kind="stable")  # present first, relative order kept
        seq = np.take_along_axis(vertices, order, axis=1)
        count = present.sum(axis=1)
        u, v = seq[:, :-1], seq[:, 1:]
        valid = np.arange(seq.shape[1] - 1)[None, :] < (count[:, None] - 1)
        lane = np.where((u >= self.n_hosts) & (v >= self.n_hosts), lanes[:, None], 0)
        links = np.where(valid, self.index[np.maximum(u, 0), np.maximum(v, 0), lane], -1)
        if (links[valid] < 0).any():  # a builder bug, never user input
            raise AssertionError("route uses a missing link")
        return links

    def finish(self, name: str, params: HardwareParams, host_switch: np.ndarray, routes: np.ndarray) -> Topology:
        """The topology; ``routes`` is ``[P, L]`` (one path per pair) or ``[paths, P, L]``."""
        n_links = len(self.src)
        tor = np.zeros(self.n_switches, dtype=bool)
        tor[host_switch] = True
        h = self.n_hosts
        return Topology(
            name=name, n_hosts=h, n_switches=self.n_switches,
            link_src=np.asarray(self.src, dtype=np.int64), link_dst=np.asarray(self.dst, dtype=np.int64),
            link_bytes_per_s=np.full(n_links, params.link.bytes_per_s),
            link_latency_s=np.full(n_links, params.link.latency_ns * 1e-9),
            host_switch=host_switch, switch_is_tor=tor, _routes=routes.reshape(-1, h, h, routes.shape[-1]),
        )


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    src, dst = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return src.ravel(), dst.ravel()


def _host_hops(b: _Builder, src, dst, sw_s, sw_d, middle: list[np.ndarray]) -> np.ndarray:
    """Vertex sequences ``src, ToR(src), middle..., ToR(dst), dst`` with the ToR hops dropped locally."""
    h = b.n_hosts
    same_host = src == dst
    cols = [src, np.where(same_host, -1, sw_s + h)]
    cols += [np.where(same_host, -1, m) for m in middle]
    cols += [np.where(same_host | (sw_s == sw_d), -1, sw_d + h), np.where(same_host, -1, dst)]
    return np.stack(cols, axis=1)


def _ports_check(name: str, used: int, params: HardwareParams) -> None:
    if used > params.switch.ports:
        raise ConfigError(f"{name} needs {used} ports per switch but switch.ports={params.switch.ports}")


def _leafspine(params: HardwareParams) -> Topology:
    n, rack = params.cluster.nodes, params.cluster.rack_size
    tors = -(-n // rack)
    spines = params.topology.leafspine_spines if tors > 1 else 0
    _ports_check("leafspine ToR", min(rack, n) + spines, params)
    _ports_check("leafspine spine", tors, params)
    b = _Builder(n, tors + spines)
    host_switch = np.arange(n) // rack
    for host in range(n):
        b.cable(host, n + host_switch[host])
    for t in range(tors):
        for s in range(spines):
            b.cable(n + t, n + tors + s)
    src, dst = _pairs(n)
    sw_s, sw_d = host_switch[src], host_switch[dst]
    choice, n_sp = params.topology.leafspine_spine_choice, max(spines, 1)
    if choice == "pair_hash":  # deterministic stand-ins for ECMP
        own = (splitmix64(src.astype(np.uint64) << np.uint64(32) | dst.astype(np.uint64)) % np.uint64(n_sp))
    else:
        own = (src % rack + dst % rack) % n_sp
    paths = []
    for p in range(n_sp if choice == "per_packet" else 1):
        spine = (own.astype(np.int64) + p) % n_sp
        mid = np.where(sw_s != sw_d, n + tors + spine, -1)
        paths.append(b.routes(_host_hops(b, src, dst, sw_s, sw_d, [mid]), np.zeros_like(src)))
    return b.finish("leafspine", params, host_switch, np.stack(paths))


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (Steele, Lea, Flood 2014) of each ``uint64``, modulo 2**64: a well-mixed
    hash, so neighbouring (src, dst) keys land on unrelated spines as under ECMP."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _attach(params: HardwareParams, switches: int, per_switch: int, name: str) -> np.ndarray:
    n = params.cluster.nodes
    if n > switches * per_switch:
        raise ConfigError(f"cluster.nodes={n} exceeds the {name} capacity of {switches * per_switch} hosts")
    return np.arange(n) // per_switch


def _hyperx(params: HardwareParams) -> Topology:
    t = params.topology
    shape, width, per = t.hyperx_shape, t.hyperx_width, t.hyperx_hosts_per_switch
    n_sw = int(np.prod(shape))
    _ports_check("hyperx", per + width * sum(d - 1 for d in shape), params)
    host_switch = _attach(params, n_sw, per, "hyperx")
    n = params.cluster.nodes
    b = _Builder(n, n_sw, lanes=width)
    for host in range(n):
        b.cable(host, n + host_switch[host])
    coords = np.stack(np.unravel_index(np.arange(n_sw), shape), axis=1)
    for s in range(n_sw):
        for r in range(s + 1, n_sw):
            if (coords[s] != coords[r]).sum() == 1:
                for lane in range(width):
                    b.cable(n + s, n + r, lane)
    src, dst = _pairs(n)
    sw_s, sw_d = host_switch[src], host_switch[dst]
    cur, cd = coords[sw_s].copy(), coords[sw_d]
    middle = []
    for d in range(len(shape) - 1):  # dimension order; the last dimension lands on ToR(dst)
        moves = cur[:, d] != cd[:, d]
        cur[:, d] = cd[:, d]
        sw = np.ravel_multi_index(cur.T, shape)
        middle.append(np.where(moves & (sw != sw_d), n + sw, -1))
    routes = b.routes(_host_hops(b, src, dst, sw_s, sw_d, middle), (src + dst) % width)
    return b.finish("hyperx", params, host_switch, routes)


def _dragonfly(params: HardwareParams) -> Topology:
    t = params.topology
    groups, a, per = t.dragonfly_groups, t.dragonfly_switches_per_group, t.dragonfly_hosts_per_switch
    n_sw = groups * a
    _ports_check("dragonfly", per + (a - 1) + (groups - 1), params)
    host_switch = _attach(params, n_sw, per, "dragonfly")
    n = params.cluster.nodes
    b = _Builder(n, n_sw)
    for host in range(n):
        b.cable(host, n + host_switch[host])
    for s in range(n_sw):
        for r in range(s + 1, n_sw):
            if s // a == r // a or s % a == r % a:  # local all-to-all, or the global cable i <-> i
                b.cable(n + s, n + r)
    src, dst = _pairs(n)
    sw_s, sw_d = host_switch[src], host_switch[dst]
    # Global first: (g, i) -> (g', i) -> (g', j); the hop is skipped when i == j or g == g'.
    via = (sw_d // a) * a + sw_s % a
    mid = np.where((sw_s // a != sw_d // a) & (via != sw_d), n + via, -1)
    routes = b.routes(_host_hops(b, src, dst, sw_s, sw_d, [mid]), np.zeros_like(src))
    return b.finish("dragonfly", params, host_switch, routes)

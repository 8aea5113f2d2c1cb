"""SmartFuse (ICS'24) LogcN model of a fused collective through smart switches.

    T = 2*o + L(N) + m/G + c(N, G)        total time of one fused collective of m bytes over N nodes
    c(N, G) = N*alpha + (gamma - 1)*m/G   in-switch computation cost
    G = beta*BW                           effective bandwidth

Times are in microseconds, sizes in bytes, BW in Gb/s.

Defaults from SmartFuse Table 2: o = 14.8 us, BW = 95.9 Gb/s, PCIe 0.9 us, FPGA-to-FPGA 0.44 us,
port-to-port 52 ns. alpha, beta and gamma are fitted per collective in the paper; our defaults
(alpha = 0, beta = 1, gamma = 1: no computation cost, full bandwidth) are assumptions.

L(N) is our assumption of how the Table 2 latencies compose. A message crosses PCIe out of the
sender host and into the receiver host (2 x PCIe), and climbs a switch tree of depth
``d(N) = ceil(log_radix N)`` (at least 1) and back down: 2*d FPGA-to-FPGA link hops and 2*d - 1
switch traversals (port to port):

    L(N) = 2*PCIe + 2*d(N)*FPGA-to-FPGA + (2*d(N) - 1)*port-to-port
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LogcNParams:
    """LogcN parameters; the sources are in the field comments."""

    o_us: float = 14.8  # software overhead per end, SmartFuse Table 2
    bw_gbps: float = 95.9  # link bandwidth, SmartFuse Table 2
    pcie_us: float = 0.9  # PCIe latency, SmartFuse Table 2
    fpga_to_fpga_us: float = 0.44  # FPGA-to-FPGA link latency, SmartFuse Table 2
    port_to_port_us: float = 0.052  # switch port-to-port latency (52 ns), SmartFuse Table 2
    alpha_us: float = 0.0  # per-node computation cost; assumption (fitted per collective in the paper)
    beta: float = 1.0  # bandwidth efficiency; assumption
    gamma: float = 1.0  # computation slowdown on the data; assumption (1 = computation hidden)
    radix: int = 64  # switch ports used for the tree depth d(N); assumption

    def __post_init__(self) -> None:
        for name in ("o_us", "pcie_us", "fpga_to_fpga_us", "port_to_port_us", "alpha_us"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.bw_gbps <= 0 or self.beta <= 0:
            raise ValueError(f"bw_gbps and beta must be > 0, got {self.bw_gbps} and {self.beta}")
        if self.gamma < 1:
            raise ValueError(f"gamma must be >= 1, got {self.gamma}")
        if self.radix < 2:
            raise ValueError(f"radix must be >= 2, got {self.radix}")


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"number of nodes N must be >= 1, got {n}")


def tree_depth(n: int, p: LogcNParams = LogcNParams()) -> int:
    """Switch levels between N nodes: ``ceil(log_radix N)``, at least 1 (assumption)."""
    _check_n(n)
    d, reach = 1, p.radix
    while reach < n:  # integer loop: no float log rounding at exact powers
        d, reach = d + 1, reach * p.radix
    return d


def latency_us(n: int, p: LogcNParams = LogcNParams()) -> float:
    """L(N) = 2*PCIe + 2*d*FPGA-to-FPGA + (2*d - 1)*port-to-port (our composition, see module doc)."""
    d = tree_depth(n, p)
    return 2 * p.pcie_us + 2 * d * p.fpga_to_fpga_us + (2 * d - 1) * p.port_to_port_us


def bandwidth_bytes_per_us(p: LogcNParams = LogcNParams()) -> float:
    """G = beta * BW, converted from Gb/s to bytes per microsecond."""
    return p.beta * p.bw_gbps * 1e9 / 8 / 1e6


def compute_us(m: float, n: int, p: LogcNParams = LogcNParams()) -> float:
    """c(N, G) = N*alpha + (gamma - 1)*m/G."""
    _check_n(n)
    return n * p.alpha_us + (p.gamma - 1) * m / bandwidth_bytes_per_us(p)


def time_us(m: float, n: int, p: LogcNParams = LogcNParams()) -> float:
    """T = 2*o + L(N) + m/G + c(N, G) for a fused collective of m bytes over N nodes."""
    if m < 0:
        raise ValueError(f"message size m must be >= 0, got {m}")
    return 2 * p.o_us + latency_us(n, p) + m / bandwidth_bytes_per_us(p) + compute_us(m, n, p)


from hw_models.bounds import owner_of  # noqa: E402
from hw_models.pattern import as_pattern  # noqa: E402

__all__ = ["LogcNParams", "bandwidth_bytes_per_us", "compute_us", "latency_us", "time_us", "tree_depth"]


@dataclass(frozen=True)
class PushTraffic:
    """Partial-sum rows of the push SpMM: ``sent[q, p]`` rows node ``q`` sends to the owner ``p`` of
    their output rows, ``aggregated[R, p]`` rows the ToR of rack ``R`` forwards to ``p`` after summing
    its rack's partials, and the rows crossing the spine (between racks) without and with the sums."""

    sent: np.ndarray
    aggregated: np.ndarray
    spine_rows: int
    spine_rows_aggregated: int


def push_traffic(a, w, rack_size: int) -> PushTraffic:
    """Count the partial-sum rows of ``A x B`` computed by pushing (SmartFuse-style in-switch SpMM).

    The owner ``q`` of row ``c`` of ``B`` computes ``A[r, c] * B[c]`` for every nonzero ``(r, c)``
    whose output row ``r`` another node owns, and first sums its own contributions per ``r``: it sends
    one partial row per distinct ``(q, r)``. Without aggregation the owner of ``r`` receives all of
    them; with ``switch_aggregate`` the ToR of ``q``'s rack sums the partials for the same ``r`` from
    every node of its rack before forwarding, so the owner of ``r`` receives one row per distinct
    ``(rack, r)`` (the destination ToR does not aggregate further: reduction at the source rack only,
    our reading of the SmartFuse push variant).

    The matrix is read node by node (a :class:`~hw_models.pattern.Pattern` in place):
    within a row, columns ascend, so their owners (and owners' racks) do too, and a new distinct
    ``(q, r)`` starts wherever the owner or the row changes; no sort, no per-matrix array.
    """
    a = as_pattern(a)
    n = w.nodes
    n_racks = -(-n // rack_size)
    sent = np.zeros((n, n), dtype=np.int64)
    aggregated = np.zeros((n_racks, n), dtype=np.int64)
    for p in range(n):  # per node (owner of the output rows), never per element
        ptr = a.indptr[w.row_bounds[p]:w.row_bounds[p + 1] + 1]
        src = owner_of(a.indices[ptr[0]:ptr[-1]], w.col_bounds)
        row = np.repeat(np.arange(len(ptr) - 1, dtype=np.int32), np.diff(ptr))
        remote = src != p
        src, row = src[remote], row[remote]
        for keys, out, width in ((src, sent, n), (src // rack_size, aggregated, n_racks)):
            first = np.ones(keys.size, dtype=bool)
            first[1:] = (keys[1:] != keys[:-1]) | (row[1:] != row[:-1])
            out[:, p] += np.bincount(keys[first], minlength=width)
    rack_of = np.arange(n) // rack_size
    cross = rack_of[:, None] != rack_of[None, :]
    agg_cross = np.arange(n_racks)[:, None] != rack_of[None, :]
    return PushTraffic(sent, aggregated, int(sent[cross].sum()), int(aggregated[agg_cross].sum()))


def switch_aggregate(a, w, k: int, params=None):
    """The ``switch_aggregate`` simulator baseline: the push SpMM of :func:`push_traffic` with the ToR
    summing partial rows from its rack. Like SUOpt and SAOpt it is analytic (line rate, no latency);
    partial rows travel as PRs concatenated per (source, destination) with NetSparse Table 5 headers,
    and their generation is the owner's SpMM work, so no per-PR software overhead is charged
    (assumption). A node's time is ``max(received, sent) / line rate``: the ToR's sums shrink what the
    owner of ``r`` receives, not what each source sends. Returns a
    :class:`hw_models.baselines.BaselineResult`."""
    from hw_models.baselines import BaselineResult, packed_bytes, property_bytes
    from hw_models.params import HardwareParams

    params = params or HardwareParams()
    h, rate = params.headers, params.link.bytes_per_s
    payload = property_bytes(k, h)
    t = push_traffic(a, w, params.cluster.rack_size)
    rx = packed_bytes(t.aggregated, payload, h).sum(axis=0)
    tx = packed_bytes(t.sent, payload, h).sum(axis=1)
    return BaselineResult(np.maximum(rx, tx) / rate, rx, tx,
                          (t.aggregated.sum(axis=0) * payload).astype(np.float64), rate)

"""The exact workload definitions of NetSparse Tables 1, 3 and 4 (docs/simulator.md), streamed node by node.

Conventions, shared by the simulator report:

* The sparse matrix ``A`` is partitioned into contiguous row blocks across ``nodes`` nodes by
  :func:`hw_models.bounds.row_bounds` (``rows`` = ``numpy.array_split`` sizes, ``nnz`` =
  contiguous balanced nonzeros). The dense input ``B`` has one row per column of ``A``; a node owns
  the rows of ``B`` with the same ids as its rows of ``A``. (For a non-square ``A`` the rows of
  ``B`` are split by ``numpy.array_split`` sizes instead: our assumption.)
* A stored entry ``(r, c)`` (explicit zeros included, duplicates merged) means that the owner of row
  ``r`` needs property ``c``, i.e. row ``c`` of ``B``. It is *remote* when another node owns ``c``;
  each remote entry is one property request (PR) of the sparsity-aware (SA) scheme.
* ``useful_transfers`` = sum over nodes of the number of distinct remote column ids in its rows.
* ``sa_prs`` = number of remote entries (SA fetches every remote nonzero).
* ``su_transfers`` = sum over nodes of (columns - owned rows of ``B``): sparsity-unaware (SU)
  all-gathers everything.
* Redundancy ratios (NetSparse Table 1): ``(transfers - useful) / useful`` of the totals summed over
  all nodes; ``inf`` when nothing is useful but something is sent, ``0`` when neither.
* ``dest_locality_64`` (NetSparse Table 4): for each node, its remote PRs in CSR order (rows
  ascending, columns ascending within a row, no filtering) are cut into non-overlapping windows of
  64; the number of distinct destination (owner) nodes is counted per *full* window and averaged
  over all full windows of all nodes. ``nan`` if no node has 64 remote PRs.
* SAOpt's ranks (NetSparse §8.1, §9.1: Conveyors runs one rank per core): each node's ``cores``
  ranks own contiguous blocks of its rows of ``A``, ``numpy.array_split`` shares (``rank_partition``
  ``rows``) or blocks of balanced nonzeros (``nnz``, ``software.rank_partition``), and the rows of
  ``B`` with the same ids (for a non-square ``A``, ``numpy.array_split`` shares of its rows of ``B``).
  A rank filters its own repeats only ("cross-rank filtering is not possible", §9.1): rank ``i`` of
  node ``p`` issues one PR per distinct remote column in its rows, served by the rank of the owner
  node that owns that row of ``B``.
* ``header_fraction_sa`` (NetSparse Table 3): header share of SA traffic with one read packet and
  one response packet per PR, header sizes of NetSparse Table 5.

Everything is computed by one streaming pass over the :class:`~hw_models.pattern.Pattern`
in C++ (``csrc/graph/node_stats.cpp``: a column bitmap per node and per rank), so no per-nonzero
array is ever made: the workload holds only ``[nodes, nodes]`` and ``[nodes, cores]`` counts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from hw_models.bounds import row_bounds
from hw_models.errors import ConfigError
from hw_models.native import graph as _graph
from hw_models.params import HeaderParams, SoftwareParams
from hw_models.pattern import Pattern, as_pattern

LOCALITY_WINDOW = 64
"""Window of consecutive remote PRs for destination locality. NetSparse Table 4 (64)."""


@dataclass(frozen=True)
class Workload:
    """One matrix partitioned over ``nodes``: per-node and per-pair counts of its remote PRs."""

    n_rows: int
    n_cols: int
    nnz: int
    nodes: int
    row_bounds: np.ndarray
    """Node ``p`` owns rows ``[row_bounds[p], row_bounds[p+1])`` of ``A``."""
    col_bounds: np.ndarray
    """Node ``p`` owns rows ``[col_bounds[p], col_bounds[p+1])`` of ``B``."""
    pair_prs: np.ndarray
    """``[nodes, nodes]``: SA PRs that node ``p`` sends to owner ``q``."""
    pair_useful: np.ndarray
    """``[nodes, nodes]``: distinct properties node ``p`` needs from owner ``q``."""
    node_nnz: np.ndarray
    """Nonzeros in each node's rows."""
    node_distinct_cols: np.ndarray
    """Distinct columns (local ones included) in each node's rows."""
    window: int
    """Window of the destination locality statistic (:data:`LOCALITY_WINDOW`)."""
    windows: np.ndarray
    """Full windows of ``window`` consecutive remote PRs of each node."""
    window_distinct: np.ndarray
    """Sum over each node's full windows of their distinct destinations."""
    cores: int
    """SAOpt ranks per node the ``rank_*`` counts are for."""
    rank_pair_useful: np.ndarray
    """``[nodes, nodes]``: PRs node ``p``'s ranks send to owner ``q`` after filtering within each rank."""
    rank_issued: np.ndarray
    """``[nodes, cores]``: PRs each rank issues (distinct remote columns in its rows)."""
    rank_served: np.ndarray
    """``[nodes, cores]``: per-rank-filtered PRs each rank serves (rows of ``B`` it owns)."""
    rank_partition: str = "rows"
    """How each node's rows are split among its ranks (``software.rank_partition``)."""

    @property
    def owned_cols(self) -> np.ndarray:
        """Rows of ``B`` each node owns."""
        return np.diff(self.col_bounds)

    @property
    def useful_per_node(self) -> np.ndarray:
        """Distinct remote properties each node needs."""
        return self.pair_useful.sum(axis=1)

    @property
    def sa_prs_per_node(self) -> np.ndarray:
        """Remote nonzeros (SA PRs) of each node."""
        return self.pair_prs.sum(axis=1)


def bounds(a: Pattern, nodes: int, partition: str = "rows") -> tuple[np.ndarray, np.ndarray]:
    """``(row_bounds, col_bounds)`` of ``a`` over ``nodes`` (see the module docstring)."""
    rb = row_bounds(a.n_rows, nodes, partition, a.indptr, parts=("nodes", "nodes"))
    cb = rb if a.n_rows == a.n_cols else row_bounds(a.n_cols, nodes, "rows", parts=("nodes", "nodes"))
    return rb, cb


def workload(a: Pattern | sp.spmatrix | sp.sparray, nodes: int, partition: str = "rows",
             cores: int | None = None, window: int = LOCALITY_WINDOW,
             rank_partition: str | None = None) -> Workload:
    """Partition ``a`` over ``nodes`` and count its remote PRs in one streaming pass (O(nnz), no copy
    of a :class:`Pattern`; a scipy matrix is converted once). ``cores`` and ``rank_partition``: the
    run's ``software`` fields (None: NetSparse Table 5's, read at the call)."""
    table5 = SoftwareParams()
    cores = table5.cores if cores is None else cores
    rank_partition = table5.rank_partition if rank_partition is None else rank_partition
    if cores < 1:
        raise ConfigError(f"cores must be >= 1, got {cores}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    a = as_pattern(a)
    rb, cb = bounds(a, nodes, partition)
    s = _graph.node_stats(a.indptr, a.indices, a.n_cols, np.ascontiguousarray(rb, dtype=np.int64),
                          np.ascontiguousarray(cb, dtype=np.int64), int(cores), int(window), rank_partition)
    return Workload(a.n_rows, a.n_cols, a.nnz, nodes, rb, cb, s["pair_prs"], s["pair_useful"], s["node_nnz"],
                    s["node_distinct"], int(window), s["windows"], s["window_distinct"], int(cores),
                    s["rank_pair_useful"], s["rank_issued"], s["rank_served"], rank_partition)


@dataclass(frozen=True)
class Redundancy:
    """The ``redundancy`` block of the simulator report (NetSparse Table 1)."""

    useful_transfers: int
    sa_prs: int
    su_transfers: int
    su_redundant_per_useful: float
    sa_redundant_per_useful: float

    def to_dict(self) -> dict[str, float]:
        """Report form."""
        return asdict(self)


def redundancy(w: Workload) -> Redundancy:
    """Useful, SA and SU transfer counts and their redundancy ratios (NetSparse Table 1)."""
    useful = int(w.pair_useful.sum())
    sa = int(w.pair_prs.sum())
    su = int(w.nodes * w.n_cols - w.owned_cols.sum())
    return Redundancy(useful, sa, su, _ratio(su - useful, useful), _ratio(sa - useful, useful))


def _ratio(extra: int, useful: int) -> float:
    if useful == 0:
        return math.inf if extra > 0 else 0.0
    return extra / useful


def dest_locality(w: Workload) -> float:
    """Mean distinct destinations per full window of ``w.window`` consecutive remote PRs (NetSparse
    Table 4); ``nan`` when no node has a full window."""
    windows = int(w.windows.sum())
    return int(w.window_distinct.sum()) / windows if windows else math.nan


def header_fraction_sa(k: int, headers: HeaderParams | None = None) -> float:
    """Header share of SA traffic, one read and one response packet per PR (NetSparse Table 3).

    Each packet carries upper + concatenation + PR headers; the response also carries ``k``
    elements: ``2h / (2h + k * element_bytes)``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    h = headers or HeaderParams()
    per_packet = h.upper_bytes + h.concat_bytes + h.pr_bytes
    return 2 * per_packet / (2 * per_packet + k * h.element_bytes)

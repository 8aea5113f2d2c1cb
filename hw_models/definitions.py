"""The exact workload definitions of issue 4 point 7 (NetSparse Tables 1, 3 and 4), vectorised.

Conventions, shared by the simulator report:

* The sparse matrix ``A`` is partitioned into contiguous row blocks across ``nodes`` nodes by
  :func:`netsparse_torch.partition.row_bounds` (``rows`` = ``numpy.array_split`` sizes, ``nnz`` =
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
* ``header_fraction_sa`` (NetSparse Table 3): header share of SA traffic with one read packet and
  one response packet per PR, header sizes of NetSparse Table 5.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from hw_models.params import HeaderParams
from netsparse_torch.errors import GraphInputError
from netsparse_torch.partition import owner_of, row_bounds

LOCALITY_WINDOW = 64
"""Window of consecutive remote PRs for destination locality. NetSparse Table 4 (64)."""


@dataclass(frozen=True)
class Workload:
    """One matrix partitioned over ``nodes``: the remote PR stream and per-node/per-pair counts."""

    n_rows: int
    n_cols: int
    nnz: int
    nodes: int
    row_bounds: np.ndarray
    """Node ``p`` owns rows ``[row_bounds[p], row_bounds[p+1])`` of ``A``."""
    col_bounds: np.ndarray
    """Node ``p`` owns rows ``[col_bounds[p], col_bounds[p+1])`` of ``B``."""
    remote_node: np.ndarray
    """Requesting node of each remote PR, in CSR order."""
    remote_col: np.ndarray
    """Column id (property) of each remote PR, in CSR order."""
    remote_dest: np.ndarray
    """Owner node of each remote PR's property, in CSR order."""
    pair_prs: np.ndarray
    """``[nodes, nodes]``: SA PRs that node ``p`` sends to owner ``q``."""
    pair_useful: np.ndarray
    """``[nodes, nodes]``: distinct properties node ``p`` needs from owner ``q``."""

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


def workload(a: sp.spmatrix | sp.sparray, nodes: int, partition: str = "rows") -> Workload:
    """Partition ``a`` over ``nodes`` and extract the remote PR stream (vectorised, O(nnz log nnz))."""
    a = _canonical_csr(a)
    n_rows, n_cols = a.shape
    rb = row_bounds(n_rows, nodes, partition, a.indptr)
    cb = rb if n_rows == n_cols else row_bounds(n_cols, nodes, "rows")
    row_node = np.repeat(np.arange(nodes), np.diff(rb))
    nz_node = np.repeat(row_node, np.diff(a.indptr))
    nz_dest = owner_of(a.indices, cb)
    remote = nz_node != nz_dest
    node, col, dest = nz_node[remote], a.indices[remote].astype(np.int64), nz_dest[remote]
    pair_prs = np.bincount(node * nodes + dest, minlength=nodes * nodes).reshape(nodes, nodes)
    pair_useful = _pair_useful(node, col, nodes, n_cols, cb)
    return Workload(n_rows, n_cols, int(a.nnz), nodes, rb, cb, node, col, dest, pair_prs, pair_useful)


def _pair_useful(node: np.ndarray, col: np.ndarray, nodes: int, n_cols: int, cb: np.ndarray) -> np.ndarray:
    """``[nodes, nodes]`` distinct remote columns node ``p`` needs from owner ``q``.

    One column bitmap per node: ``node`` is ascending (CSR order), so each node's PRs are one slice.
    O(nnz + nodes * n_cols / 8), where a hash or sort of all PRs (``np.unique``) takes minutes at
    50M nonzeros.
    """
    out = np.zeros((nodes, nodes), dtype=np.int64)
    starts = np.searchsorted(node, np.arange(nodes + 1))
    seen = np.zeros(n_cols, dtype=bool)
    for p in range(nodes):  # per node, not per element
        c = col[starts[p]:starts[p + 1]]
        if c.size == 0:
            continue
        seen[c] = True
        out[p] = np.diff(np.searchsorted(np.flatnonzero(seen), cb))  # distinct columns per owner block
        seen[c] = False
    return out


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


def dest_locality(w: Workload, window: int = LOCALITY_WINDOW) -> float:
    """Mean distinct destinations per full window of ``window`` consecutive remote PRs (NetSparse Table 4)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    counts = np.bincount(w.remote_node, minlength=w.nodes)
    full = counts // window
    if full.sum() == 0:
        return math.nan
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(len(w.remote_node)) - start[w.remote_node]  # position within the node's stream
    keep = pos < full[w.remote_node] * window  # drop each node's trailing partial window
    win_offset = np.concatenate([[0], np.cumsum(full)[:-1]])
    win = win_offset[w.remote_node[keep]] + pos[keep] // window
    distinct = len(np.unique(win * w.nodes + w.remote_dest[keep]))
    return distinct / int(full.sum())


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


def _canonical_csr(a: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    if not sp.issparse(a):
        raise GraphInputError(f"expected a scipy sparse matrix, got {type(a).__name__}")
    if a.ndim != 2 or 0 in a.shape:
        raise GraphInputError(f"expected a non-empty 2-D sparse matrix, got shape {a.shape}")
    a = sp.csr_matrix(a, copy=True)
    a.sum_duplicates()
    a.sort_indices()  # CSR order of the definitions: columns ascending within a row
    return a

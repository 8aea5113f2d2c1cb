"""Adjacency normalisations, computed once per graph (the layers then only aggregate).

Each works on a block of rows ``[row_start, row_start + n)`` with global column ids and needs, besides
the block, only the *degree information* of the nodes the block touches (:func:`degrees`). A rank of a
partitioned dataset holds that for its rows and its halo columns, so it normalises its rows without the
rest of the graph; the whole-graph functions are the block of all rows.

The values of a block are edge multiplicities (``adj``: duplicate edges count, as PyG's messages do)
or summed edge weights (a graph's :class:`~netsparse_torch.graph.graph.EdgeWeights`, what PyG's
``GCNConv`` reads from ``edge_weight``). Self loops follow PyG's ``add_remaining_self_loops``: a node
keeps one self loop however many it has, of weight 1 without edge weights and of its kept loop weight
(:attr:`EdgeWeights.loop`) with them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

#: ``lookup(ids) -> (degree, has_self_loop)`` for global node ids (float64, bool arrays).
DegreeLookup = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _own_ids(m: sp.csr_matrix, row_start: int) -> np.ndarray:
    """The global row id of every stored entry of a block of rows."""
    return np.repeat(np.arange(m.shape[0], dtype=np.int64) + row_start, np.diff(m.indptr))


def _diagonal(m: sp.csr_matrix, row_start: int) -> np.ndarray:
    """Each row's summed diagonal entries (its self loops) in a block with global column ids."""
    on = m.indices == _own_ids(m, row_start)
    return np.bincount(_own_ids(m, row_start)[on] - row_start, weights=m.data[on].astype(np.float64),
                       minlength=m.shape[0])


def degrees(adj: sp.csr_matrix, row_start: int = 0, weights: sp.csr_matrix | None = None,
            loop_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The degree information of a block of rows with global column ids: each node's degree before
    the missing self loops are filled in (float64) and whether it has a self loop.

    ``adj`` counts edges; with ``weights`` (the same rows' summed edge weights) and ``loop_weight``
    (each row's kept self loop weight) the degree is weighted. A node's self loops count once, as
    PyG's ``add_remaining_self_loops`` keeps one: the degree is the sum of the other entries plus the
    kept loop (1 without weights).
    """
    a = adj.tocsr()
    has_loop = _diagonal(a, row_start) > 0
    values = a if weights is None else weights.tocsr()
    others = np.asarray(values.astype(np.float64).sum(axis=1)).ravel() - _diagonal(values, row_start)
    kept = 1.0 if loop_weight is None else np.asarray(loop_weight, dtype=np.float64)
    return others + np.where(has_loop, kept, 0.0), has_loop


def gcn_norm_rows(rows: sp.csr_matrix, row_start: int, lookup: DegreeLookup, fill_value: float = 1.0,
                  loop_weight: np.ndarray | None = None) -> sp.csr_matrix:
    """Rows ``[row_start, row_start + n)`` of ``D^-1/2 (A + I) D^-1/2`` (Kipf & Welling, eq. 2).

    Matches PyG's ``gcn_norm`` with ``add_remaining_self_loops``: a node's self loops become one, of
    weight 1, or with edge weights its ``loop_weight``; a node without one gets ``fill_value`` (2 for
    ``improved=True``). The degree is the row sum (in-degree at the target) after that; a zero degree
    gives a zero row and a negative one NaN, as PyG's ``deg.pow(-0.5)`` does.
    """
    n = rows.shape[0]
    own = np.arange(row_start, row_start + n, dtype=np.int64)
    own_deg, own_loop = lookup(own)
    kept = np.ones(n) if loop_weight is None else np.asarray(loop_weight, dtype=np.float64)
    loops = sp.csr_matrix((np.where(own_loop, kept, fill_value), (np.arange(n), own)), shape=rows.shape)
    a = (_without_diagonal(rows, row_start) + loops).tocsr()
    a.sum_duplicates()
    col_deg, col_loop = lookup(a.indices)
    dinv_row = _inv_sqrt(own_deg + np.where(own_loop, 0.0, fill_value))
    dinv_col = _inv_sqrt(col_deg + np.where(col_loop, 0.0, fill_value))
    a.data = np.repeat(dinv_row, np.diff(a.indptr)) * a.data * dinv_col
    return _canonical(a)


def _without_diagonal(rows: sp.csr_matrix, row_start: int) -> sp.csr_matrix:
    a = rows.tocsr().astype(np.float64)
    off = a.indices != _own_ids(a, row_start)
    return sp.csr_matrix((a.data * off, a.indices, a.indptr), shape=a.shape)


def _inv_sqrt(deg: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(deg == 0, 0.0, deg ** -0.5)


def mean_norm_rows(rows: sp.csr_matrix) -> sp.csr_matrix:
    """Rows of the row-mean normalisation ``D^-1 A`` for SAGE's mean aggregation: every edge is one
    term, duplicates and repeated self loops included, as PyG's mean over messages; empty rows stay
    zero. It needs only the rows themselves."""
    a = rows.tocsr(copy=True).astype(np.float64)
    row_sum = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        inv = np.where(row_sum > 0, 1.0 / row_sum, 0.0)
    a.data = np.repeat(inv, np.diff(a.indptr)) * a.data
    return _canonical(a)


def self_loop_rows(rows: sp.csr_matrix, row_start: int) -> sp.csr_matrix:
    """Rows of ``A - diag(A) + I``: every node has exactly one self loop of weight 1, as PyG's
    ``remove_self_loops`` followed by ``add_self_loops`` gives (``GATConv(add_self_loops=True)``).
    The other entries keep their values, the edge multiplicities."""
    a = _without_diagonal(rows, row_start)
    n = a.shape[0]
    loops = sp.csr_matrix((np.ones(n), (np.arange(n), np.arange(n) + row_start)), shape=a.shape)
    out = (a + loops).tocsr()
    out.eliminate_zeros()
    return _canonical(out)


def whole_graph_lookup(adj: sp.csr_matrix, weights: sp.csr_matrix | None = None,
                       loop_weight: np.ndarray | None = None) -> DegreeLookup:
    deg, has_loop = degrees(adj, 0, weights, loop_weight)
    return lambda ids: (deg[ids], has_loop[ids])


def gcn_norm(adj: sp.csr_matrix, fill_value: float = 1.0, weights=None) -> sp.csr_matrix:
    """The whole graph's ``D^-1/2 (A + I) D^-1/2`` (see :func:`gcn_norm_rows`); ``weights``: the
    graph's :class:`~netsparse_torch.graph.graph.EdgeWeights`, or None for unit weights."""
    if weights is None:
        return gcn_norm_rows(adj, 0, whole_graph_lookup(adj), fill_value)
    return gcn_norm_rows(weights.adj, 0, whole_graph_lookup(adj, weights.adj, weights.loop), fill_value, weights.loop)


def mean_norm(adj: sp.csr_matrix) -> sp.csr_matrix:
    """The whole graph's ``D^-1 A`` (see :func:`mean_norm_rows`)."""
    return mean_norm_rows(adj)


def _canonical(m: sp.spmatrix) -> sp.csr_matrix:
    m = m.tocsr().astype(np.float32)
    m.sum_duplicates()
    m.sort_indices()
    return m

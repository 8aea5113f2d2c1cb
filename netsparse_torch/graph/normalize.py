"""Adjacency normalisations, computed once per graph (the layers then only aggregate).

Each works on a block of rows ``[row_start, row_start + n)`` with global column ids and needs, besides
the block, only the *degree information* of the nodes the block touches: a node's raw row sum and
whether its diagonal entry is nonzero (:func:`degrees`). A rank of a partitioned dataset holds that for
its rows and its halo columns, so it normalises its rows without the rest of the graph; the
whole-graph functions are the block of all rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

#: ``lookup(ids) -> (row_sum, has_self_loop)`` for global node ids (float64, bool arrays).
DegreeLookup = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def degrees(rows: sp.csr_matrix, row_start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Raw row sums (float64) and nonzero-diagonal flags of a block of rows with global column ids."""
    a = rows.tocsr()
    if not a.has_canonical_format:  # a duplicate diagonal entry counts once, with its summed value
        a = a.copy()
        a.sum_duplicates()
    row_sum = np.asarray(a.astype(np.float64).sum(axis=1)).ravel()
    own = np.repeat(np.arange(a.shape[0], dtype=np.int64) + row_start, np.diff(a.indptr))
    diag = (a.indices == own) & (a.data != 0)
    has_loop = np.zeros(a.shape[0], dtype=bool)
    has_loop[own[diag] - row_start] = True
    return row_sum, has_loop


def gcn_norm_rows(rows: sp.csr_matrix, row_start: int, lookup: DegreeLookup, fill_value: float = 1.0) -> sp.csr_matrix:
    """Rows ``[row_start, row_start + n)`` of ``D^-1/2 (A + I) D^-1/2`` (Kipf & Welling, eq. 2).

    Matches PyG's ``gcn_norm`` with ``add_remaining_self_loops``: an existing self loop keeps its
    weight, a missing one gets ``fill_value`` (2 for ``improved=True``), and the degree is the row
    sum (in-degree at the target) after the loops are added: ``row_sum + fill_value * (no loop)``.
    """
    n = rows.shape[0]
    own = np.arange(row_start, row_start + n, dtype=np.int64)
    own_sum, own_loop = lookup(own)
    missing = np.flatnonzero(~own_loop)
    loops = sp.csr_matrix((np.full(missing.size, fill_value), (missing, own[missing])), shape=rows.shape)
    a = (rows.astype(np.float64) + loops).tocsr()
    a.sum_duplicates()
    row_sum, has_loop = lookup(a.indices)
    dinv_row = _inv_sqrt(own_sum + np.where(own_loop, 0.0, fill_value))
    dinv_col = _inv_sqrt(row_sum + np.where(has_loop, 0.0, fill_value))
    a.data = np.repeat(dinv_row, np.diff(a.indptr)) * a.data * dinv_col
    return _canonical(a)


def _inv_sqrt(deg: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(deg > 0, deg ** -0.5, 0.0)


def mean_norm_rows(rows: sp.csr_matrix, row_start: int, lookup: DegreeLookup) -> sp.csr_matrix:
    """Rows of the row-mean normalisation ``D^-1 A`` for SAGE's mean aggregation; empty rows stay zero."""
    a = rows.tocsr(copy=True).astype(np.float64)
    row_sum, _ = lookup(np.arange(row_start, row_start + a.shape[0], dtype=np.int64))
    with np.errstate(divide="ignore"):
        inv = np.where(row_sum > 0, 1.0 / row_sum, 0.0)
    a.data = np.repeat(inv, np.diff(a.indptr)) * a.data
    return _canonical(a)


def self_loop_rows(rows: sp.csr_matrix, row_start: int) -> sp.csr_matrix:
    """Rows of ``A - diag(A) + I``: every node has exactly one self loop of weight 1, as PyG's
    ``remove_self_loops`` followed by ``add_self_loops`` gives (``GATConv(add_self_loops=True)``).
    The other entries keep their values, the edge multiplicities."""
    a = rows.tocsr().astype(np.float32)
    own = np.repeat(np.arange(a.shape[0], dtype=np.int64) + row_start, np.diff(a.indptr))
    keep = a.indices != own
    a = sp.csr_matrix((a.data * keep, a.indices, a.indptr), shape=a.shape)
    n = a.shape[0]
    loops = sp.csr_matrix((np.ones(n, dtype=np.float32), (np.arange(n), np.arange(n) + row_start)), shape=a.shape)
    out = (a + loops).tocsr()
    out.eliminate_zeros()
    return _canonical(out)


def whole_graph_lookup(adj: sp.csr_matrix) -> DegreeLookup:
    row_sum, has_loop = degrees(adj)
    return lambda ids: (row_sum[ids], has_loop[ids])


def gcn_norm(adj: sp.csr_matrix, fill_value: float = 1.0) -> sp.csr_matrix:
    """The whole graph's ``D^-1/2 (A + I) D^-1/2`` (see :func:`gcn_norm_rows`)."""
    return gcn_norm_rows(adj, 0, whole_graph_lookup(adj), fill_value)


def mean_norm(adj: sp.csr_matrix) -> sp.csr_matrix:
    """The whole graph's ``D^-1 A`` (see :func:`mean_norm_rows`)."""
    return mean_norm_rows(adj, 0, whole_graph_lookup(adj))


def _canonical(m: sp.spmatrix) -> sp.csr_matrix:
    m = m.tocsr().astype(np.float32)
    m.sum_duplicates()
    m.sort_indices()
    return m

"""METIS parts through pymetis, renumbered so that every part is a contiguous block of rows.

METIS partitions an undirected graph, so it sees the symmetrised pattern of the adjacency without
self loops (a nonzero ``(r, c)`` makes ``r`` read ``c``: cutting it costs one remote read whichever
way it points). Vertex weights balance what a rank holds and computes, selected by ``weights``:

- ``nnz`` (default): ``1 + nonzeros of the row``. A part's weight is its rows plus its nonzeros, so the
  SpMM work (one multiply-add per nonzero and feature) is balanced while rows still count.
- ``rows``: ``1`` per row, equal row counts (features and activations are per row).

The new numbering lists part 0's nodes, then part 1's, ..., each part in increasing original id, so
part ``p`` owns the rows ``[bounds[p], bounds[p+1])``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from netsparse_torch.errors import ConfigError

WEIGHTS = ("nnz", "rows")


def symmetric_pattern(adj: sp.csr_matrix) -> sp.csr_matrix:
    """``pattern(A + A^T)`` without the diagonal: the undirected graph METIS partitions."""
    a = sp.csr_matrix((np.ones(adj.nnz, dtype=np.int8), adj.indices, adj.indptr), shape=adj.shape)
    s = (a + a.T).tocsr()
    s.setdiag(0)
    s.eliminate_zeros()
    s.sort_indices()
    return s


def vertex_weights(adj: sp.csr_matrix, weights: str) -> np.ndarray:
    if weights not in WEIGHTS:
        raise ConfigError(f"unknown metis weights {weights!r}; choose one of {', '.join(WEIGHTS)}")
    if weights == "rows":
        return np.ones(adj.shape[0], dtype=np.int64)
    return 1 + np.diff(adj.indptr).astype(np.int64)


def metis_parts(adj: sp.csr_matrix, parts: int, seed: int = 0, weights: str = "nnz") -> np.ndarray:
    """The part (``0 .. parts-1``) of every node; no part is empty."""
    import pymetis

    n = adj.shape[0]
    if parts < 1:
        raise ConfigError(f"partition=metis needs parts >= 1, got {parts}")
    if parts > n:
        raise ConfigError(f"partition=metis with {parts} parts but the graph has only {n} nodes; "
                          f"use at most {n} parts")
    vw = vertex_weights(adj, weights)
    if parts == 1:
        return np.zeros(n, dtype=np.int64)
    s = symmetric_pattern(adj)
    idx = np.int32 if max(s.nnz, int(vw.sum())) < np.iinfo(np.int32).max else np.int64
    graph = pymetis.CSRAdjacency(s.indptr.astype(idx), s.indices.astype(idx))
    result = pymetis.part_graph(parts, graph, vweights=vw.astype(idx), options=pymetis.Options(seed=int(seed)))
    return _fill_empty_parts(np.asarray(result.vertex_part, dtype=np.int64), parts)


def _fill_empty_parts(membership: np.ndarray, parts: int) -> np.ndarray:
    """METIS may leave a part empty (tiny or disconnected graphs); every rank needs a row, so an empty
    part takes the highest-numbered node of the currently largest part."""
    counts = np.bincount(membership, minlength=parts)
    for p in np.flatnonzero(counts == 0):
        donor = int(np.argmax(counts))
        node = int(np.flatnonzero(membership == donor)[-1])
        membership[node] = p
        counts[donor] -= 1
        counts[p] += 1
    return membership


def contiguous_order(membership: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """``(order, bounds)``: ``order[new] = original`` id, parts in order and each part in increasing
    original id; part ``p`` is ``[bounds[p], bounds[p+1])`` of the new numbering."""
    order = np.argsort(membership, kind="stable").astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(membership, minlength=parts))]).astype(np.int64)
    return order, bounds

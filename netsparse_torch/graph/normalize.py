"""Adjacency normalisations, computed once per graph (the layers then only aggregate)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def gcn_norm(adj: sp.csr_matrix, fill_value: float = 1.0) -> sp.csr_matrix:
    """Symmetric GCN normalisation ``D^-1/2 (A + I) D^-1/2`` (Kipf & Welling, eq. 2).

    Matches PyG's ``gcn_norm`` with ``add_remaining_self_loops``: an existing self loop keeps its
    weight, a missing one gets ``fill_value`` (2 for ``improved=True``), and the degree is the row
    sum (in-degree at the target).
    """
    a = adj.tocsr(copy=True).astype(np.float64)
    diag = a.diagonal()
    a = a + sp.diags(np.where(diag == 0, fill_value, 0.0))
    a = a.tocsr()
    a.sum_duplicates()
    deg = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        dinv = np.where(deg > 0, deg ** -0.5, 0.0)
    out = sp.diags(dinv) @ a @ sp.diags(dinv)
    return _canonical(out)


def mean_norm(adj: sp.csr_matrix) -> sp.csr_matrix:
    """Row-mean normalisation ``D^-1 A`` for SAGE's mean aggregation; empty rows stay zero."""
    a = adj.tocsr(copy=True).astype(np.float64)
    deg = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        inv = np.where(deg > 0, 1.0 / deg, 0.0)
    return _canonical(sp.diags(inv) @ a)


def _canonical(m: sp.spmatrix) -> sp.csr_matrix:
    m = m.tocsr().astype(np.float32)
    m.sum_duplicates()
    m.sort_indices()
    return m

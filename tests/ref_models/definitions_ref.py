"""The whole-matrix definitions that hw_models.definitions replaced (before it streamed node by node): vectorised numpy
over per-remote-nonzero arrays, plus a brute-force per-rank filter. Tests only: they check the
streaming C++ pass on shared graphs and random matrices."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from hw_models.bounds import owner_of, row_bounds


def canonical(a) -> sp.csr_matrix:
    a = sp.csr_matrix(a, copy=True)
    a.sum_duplicates()
    a.sort_indices()
    return a


def remote_stream(a, nodes: int, partition: str = "rows"):
    """(row_bounds, col_bounds, remote_node, remote_col, remote_dest) in CSR order."""
    a = canonical(a)
    n_rows, n_cols = a.shape
    rb = row_bounds(n_rows, nodes, partition, a.indptr)
    cb = rb if n_rows == n_cols else row_bounds(n_cols, nodes, "rows")
    nz_node = np.repeat(np.repeat(np.arange(nodes), np.diff(rb)), np.diff(a.indptr))
    nz_dest = owner_of(a.indices, cb)
    remote = nz_node != nz_dest
    return rb, cb, nz_node[remote], a.indices[remote].astype(np.int64), nz_dest[remote]


def pair_counts(a, nodes: int, partition: str = "rows"):
    """``(pair_prs, pair_useful)`` as the old ``workload`` computed them (np.unique of (node, col))."""
    _, cb, node, col, dest = remote_stream(a, nodes, partition)
    pair_prs = np.bincount(node * nodes + dest, minlength=nodes * nodes).reshape(nodes, nodes)
    n_cols = a.shape[1]
    keys = np.unique(node * n_cols + col)
    useful_dest = owner_of(keys % n_cols, cb)
    pair_useful = np.bincount((keys // n_cols) * nodes + useful_dest, minlength=nodes * nodes).reshape(nodes, nodes)
    return pair_prs, pair_useful


def dest_locality(a, nodes: int, partition: str = "rows", window: int = 64) -> float:
    """The old vectorised Table 4 statistic over the remote PR arrays."""
    _, _, node, _, dest = remote_stream(a, nodes, partition)
    counts = np.bincount(node, minlength=nodes)
    full = counts // window
    if full.sum() == 0:
        return math.nan
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(len(node)) - start[node]
    keep = pos < full[node] * window
    win_offset = np.concatenate([[0], np.cumsum(full)[:-1]])
    win = win_offset[node[keep]] + pos[keep] // window
    return len(np.unique(win * nodes + dest[keep])) / int(full.sum())


def rank_of_rows(a, rb, cores: int, rank_partition: str = "rows") -> np.ndarray:
    """The SAOpt rank of every row of ``a`` (``a`` canonical): ``numpy.array_split`` shares of each node's
    rows, or (``nnz``) row ``r`` of a node with ``nnz`` nonzeros goes to rank
    ``min(cores - 1, floor(cores * (nonzeros of the node's rows before r) / nnz))`` (the closed form of
    "rank i starts where the node's running count reaches i/cores of its total")."""
    rank = np.zeros(a.shape[0], np.int64)
    for p in range(len(rb) - 1):
        lo, hi = int(rb[p]), int(rb[p + 1])
        nnz = int(a.indptr[hi] - a.indptr[lo])
        for j, blk in enumerate(np.array_split(np.arange(lo, hi), cores)):
            rank[blk] = j
        if rank_partition == "nnz" and nnz > 0:
            for r in range(lo, hi):
                rank[r] = min(cores - 1, cores * int(a.indptr[r] - a.indptr[lo]) // nnz)
    return rank


def rank_counts(a, nodes: int, cores: int, partition: str = "rows", rank_partition: str = "rows"):
    """Brute force SAOpt per-rank filtering with Python sets: ``(issued [nodes, cores],
    served [nodes, cores], rank_pair_useful [nodes, nodes])``. A rank owns the rows of ``B`` with the ids
    of its rows of ``A`` (square ``A``), else ``numpy.array_split`` shares of its node's rows of ``B``."""
    a = canonical(a)
    rb = row_bounds(a.shape[0], nodes, partition, a.indptr)
    square = a.shape[0] == a.shape[1]
    cb = rb if square else row_bounds(a.shape[1], nodes, "rows")
    row_rank = rank_of_rows(a, rb, cores, rank_partition)
    owner = {}
    for q in range(nodes):
        for j, blk in enumerate(np.array_split(np.arange(cb[q], cb[q + 1]), cores)):
            for c in blk:
                owner[int(c)] = (q, int(row_rank[c]) if square else j)
    issued = np.zeros((nodes, cores), np.int64)
    served = np.zeros((nodes, cores), np.int64)
    pair = np.zeros((nodes, nodes), np.int64)
    for p in range(nodes):
        for i in range(cores):
            needed = set()
            for r in range(rb[p], rb[p + 1]):
                if row_rank[r] != i:
                    continue
                for c in a.indices[a.indptr[r]:a.indptr[r + 1]]:
                    if owner[int(c)][0] != p:
                        needed.add(int(c))
            issued[p, i] = len(needed)
            for c in needed:
                q, j = owner[c]
                served[q, j] += 1
                pair[p, q] += 1
    return issued, served, pair

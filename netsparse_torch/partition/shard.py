"""A shard: one part of a partitioned graph, everything one rank trains on and nothing more.

It holds the part's rows ``[r0, r1)`` of the new numbering: the raw adjacency rows (CSR, global column
ids of the new numbering), the rows' features, labels, masks and original node ids, and the *degree
information* the normalisations need (:mod:`netsparse_torch.graph.normalize`) for its rows and its halo
columns (the remote columns its rows touch). Its size is O(rows + nonzeros + halo) of the part.

:class:`ShardBuilder` cuts shards out of a whole in-memory graph: ``netsparse-partition`` writes every
part to disk, and an in-memory training run builds its rank's part on the rank, so both paths train
on a :class:`Shard`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from netsparse_torch.graph import Graph
from netsparse_torch.graph.graph import GraphRows
from netsparse_torch.graph.normalize import degrees, gcn_norm_rows, mean_norm_rows, self_loop_rows
from netsparse_torch.partition.partitioning import Partitioning

SPLITS = ("train", "val", "test")
#: The prefix of a normalisation of the edge weights (``weighted_gcn``, ``weighted_gcn_improved``,
#: ``weighted_sum``): what ``DistGCNConv`` aggregates when a call passes the graph's weights.
WEIGHTED = "weighted_"


@dataclass(eq=False)
class Shard(GraphRows):
    """Part ``part`` of ``len(bounds) - 1`` parts of graph ``name`` (partitioned by ``mode``): the
    :class:`~netsparse_torch.graph.graph.GraphRows` of its rows, and what a rank needs beyond them.

    ``adj`` is ``rows x num_nodes`` with global column ids in the new numbering; ``node_ids[i]`` is the
    original id of row ``r0 + i``; ``row_sum``/``row_loop`` and ``halo_sum``/``halo_loop`` are the
    degree information (:func:`~netsparse_torch.graph.normalize.degrees`: the row sum with a node's
    self loops counted once, and whether it has one) of the own rows and of the halo columns
    ``halo_ids`` (sorted global ids outside ``[r0, r1)``).

    A graph with edge weights also has ``weights`` (the rows' summed edge weights, on ``adj``'s
    pattern), ``loop_weight`` (each row's kept self loop weight) and the weighted degrees
    ``row_wsum``/``halo_wsum``; ``adj`` still counts edges, for the layers that take no weights.
    """

    mode: str
    part: int
    bounds: np.ndarray
    node_ids: np.ndarray
    row_sum: np.ndarray
    row_loop: np.ndarray
    halo_ids: np.ndarray
    halo_sum: np.ndarray
    halo_loop: np.ndarray
    weights: sp.csr_matrix | None = field(default=None, kw_only=True)
    loop_weight: np.ndarray | None = field(default=None, kw_only=True)
    row_wsum: np.ndarray | None = field(default=None, kw_only=True)
    halo_wsum: np.ndarray | None = field(default=None, kw_only=True)

    @property
    def weighted(self) -> bool:
        return self.weights is not None

    @property
    def parts(self) -> int:
        return len(self.bounds) - 1

    @property
    def row_start(self) -> int:
        return int(self.bounds[self.part])

    @property
    def num_rows(self) -> int:
        return int(self.bounds[self.part + 1] - self.bounds[self.part])

    @property
    def num_nodes(self) -> int:
        return int(self.bounds[-1])

    @property
    def edge_cut(self) -> int:
        """Nonzeros of this part's rows whose column another part owns (remote reads before dedup)."""
        own = (self.adj.indices >= self.row_start) & (self.adj.indices < self.row_start + self.num_rows)
        return int(self.adj.nnz - np.count_nonzero(own))

    def lookup(self, ids: np.ndarray, weighted: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Degree information of global ids among the own rows and the halo columns (``weighted``: of
        the edge weights)."""
        ids = np.asarray(ids, dtype=np.int64)
        local = ids - self.row_start
        own = (local >= 0) & (local < self.num_rows)
        slot = np.searchsorted(self.halo_ids, ids[~own])
        row_sum, halo_sum = (self.row_wsum, self.halo_wsum) if weighted else (self.row_sum, self.halo_sum)
        deg = np.empty(ids.size, dtype=np.float64)
        has_loop = np.empty(ids.size, dtype=bool)
        deg[own], has_loop[own] = row_sum[local[own]], self.row_loop[local[own]]
        deg[~own], has_loop[~own] = halo_sum[slot], self.halo_loop[slot]
        return deg, has_loop

    def normalized(self, norm: str) -> sp.csr_matrix:
        """This part's rows of the ``norm``-normalised adjacency (global column ids). ``sum`` is the raw
        adjacency (edge multiplicities) and ``self_loops`` the raw adjacency with exactly one self loop per
        node: the two attention patterns of GAT (``add_self_loops`` off and on). ``weighted_gcn``,
        ``weighted_gcn_improved`` and ``weighted_sum`` are ``gcn``, ``gcn_improved`` and ``sum`` of the
        edge weights."""
        weighted = norm.startswith(WEIGHTED)
        base = norm.removeprefix(WEIGHTED)
        if weighted and (not self.weighted or base not in ("gcn", "gcn_improved", "sum")):
            raise ValueError(f"no normalisation {norm!r} for {'this' if self.weighted else 'an unweighted'} graph")
        values = self.weights if weighted else self.adj
        if base in ("gcn", "gcn_improved"):
            return gcn_norm_rows(values, self.row_start, lambda ids: self.lookup(ids, weighted),
                                 2.0 if base == "gcn_improved" else 1.0, self.loop_weight if weighted else None)
        if base == "sum":
            return values.astype(np.float32)
        if norm == "mean":
            return mean_norm_rows(self.adj)
        if norm == "self_loops":
            return self_loop_rows(self.adj, self.row_start)
        raise ValueError(f"unknown normalisation {norm!r}")

    def stats(self) -> dict:
        return {"rows": self.num_rows, "nnz": self.nnz, "halo": int(self.halo_ids.size), "edge_cut": self.edge_cut}


class ShardBuilder:
    """Cuts the shards of ``partitioning`` out of the whole ``graph`` (global degree information and the
    inverse permutation are computed once, so building every part is O(whole graph) in total)."""

    def __init__(self, graph: Graph, partitioning: Partitioning):
        self.graph, self.partitioning = graph, partitioning
        self.row_sum, self.row_loop = degrees(graph.adj)
        w = graph.weights
        self.row_wsum = None if w is None else degrees(graph.adj, 0, w.adj, w.loop)[0]
        self.new_ids = partitioning.new_ids()

    def rows(self, part: int, matrix: sp.csr_matrix | None = None) -> sp.csr_matrix:
        """The part's rows of ``matrix`` (by default the raw adjacency) with column ids in the new
        numbering, sorted in each row."""
        matrix = self.graph.adj if matrix is None else matrix
        r0, r1 = self.partitioning.block(part)
        if self.new_ids is None:
            return matrix[r0:r1]
        rows = matrix[self.partitioning.node_ids(part)]
        rows = sp.csr_matrix((rows.data, self.new_ids[rows.indices], rows.indptr), shape=rows.shape)
        rows.sort_indices()
        return rows

    def _weights(self, part: int, ids: np.ndarray, halo_orig: np.ndarray) -> dict:
        w = self.graph.weights
        if w is None:
            return {}
        return {"weights": self.rows(part, w.adj), "loop_weight": w.loop[ids], "row_wsum": self.row_wsum[ids],
                "halo_wsum": self.row_wsum[halo_orig]}

    def shard(self, part: int) -> Shard:
        p, g = self.partitioning, self.graph
        r0, r1 = p.block(part)
        ids = p.node_ids(part)
        adj = self.rows(part)
        cols = np.unique(adj.indices)
        halo = cols[(cols < r0) | (cols >= r1)].astype(np.int64)
        halo_orig = halo if p.order is None else p.order[halo]
        take = (lambda t: t[r0:r1]) if p.order is None else (lambda t: t[torch.from_numpy(ids)])
        return Shard(g.name, adj, take(g.x), take(g.y), *(take(g.mask(s)) for s in SPLITS), g.num_classes,
                     p.mode, part, p.bounds, np.asarray(ids, dtype=np.int64),
                     self.row_sum[ids], self.row_loop[ids], halo, self.row_sum[halo_orig], self.row_loop[halo_orig],
                     **self._weights(part, ids, halo_orig))

"""The one in-memory graph every loader produces: a square CSR adjacency plus node data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from netsparse_torch.errors import GraphInputError


@dataclass
class EdgeWeights:
    """A graph's edge weights, as PyG's ``GCNConv`` reads ``edge_weight``.

    ``adj`` has the graph's pattern and sums the weights of duplicate edges (their messages add);
    ``loop[i]`` is the weight of node ``i``'s self loop as ``add_remaining_self_loops`` keeps it (of
    several, the last in edge order; 0 where the node has none). The normalised GCN adjacency uses
    ``loop``, the plain weighted sum (``normalize=False``) every self loop.
    """

    adj: sp.csr_matrix
    loop: np.ndarray


@dataclass(eq=False)
class GraphRows:
    """What a whole graph (:class:`Graph`) and a rank's part of one
    (:class:`~netsparse_torch.partition.shard.Shard`) both hold for their rows: the adjacency rows
    with global column ids, and each row's features, label and split masks.

    ``adj[i, j]`` counts the edges ``j -> i``: row ``i`` aggregates from column ``j``, the PyG
    ``source_to_target`` convention, so a nonzero ``(r, c)`` makes the owner of row ``r`` read row
    ``c`` of the feature matrix.
    """

    name: str
    adj: sp.csr_matrix
    x: torch.Tensor
    y: torch.Tensor
    train_mask: torch.Tensor
    val_mask: torch.Tensor
    test_mask: torch.Tensor
    num_classes: int

    @property
    def num_features(self) -> int:
        return int(self.x.size(1))

    @property
    def nnz(self) -> int:
        return int(self.adj.nnz)

    def mask(self, split: str) -> torch.Tensor:
        """``train_mask``, ``val_mask`` or ``test_mask`` by split name."""
        return getattr(self, f"{split}_mask")


@dataclass
class Graph(GraphRows):
    """A whole graph on one process: every row of :class:`GraphRows`. ``weights``: the edge weights, if
    the graph has them (a PyG ``edge_weight``, a Matrix Market file's values); ``adj`` still counts
    edges, for the layers that take no weights.
    """

    weights: EdgeWeights | None = dataclasses.field(default=None, kw_only=True)

    @property
    def num_nodes(self) -> int:
        return self.adj.shape[0]

    def validate(self) -> Graph:
        """Check shapes, index ranges and finiteness; raise one clear :class:`GraphInputError`."""
        rows, cols = self.adj.shape
        if rows != cols:
            raise GraphInputError(f"{self.name}: adjacency is {rows}x{cols}; a GNN needs a square matrix")
        idx = self.adj.indices
        if idx.size and (idx.min() < 0 or idx.max() >= cols):
            raise GraphInputError(f"{self.name}: column index {int(idx.max())} outside [0, {cols})")
        n = rows
        for field in ("x", "y", "train_mask", "val_mask", "test_mask"):
            if getattr(self, field).size(0) != n:
                raise GraphInputError(
                    f"{self.name}: {field} has {getattr(self, field).size(0)} rows, the graph has {n} nodes"
                )
        self._validate_weights()
        if not torch.isfinite(self.x).all():
            bad = int((~torch.isfinite(self.x)).any(dim=1).nonzero()[0])
            raise GraphInputError(f"{self.name}: features contain NaN or Inf (first at node {bad}); clean them")
        if self.y.numel() and (self.y.min() < 0 or self.y.max() >= self.num_classes):
            raise GraphInputError(f"{self.name}: labels must lie in [0, {self.num_classes})")
        return self

    def _validate_weights(self) -> None:
        w = self.weights
        if w is None:
            return
        if w.adj.shape != self.adj.shape or w.loop.shape != (self.num_nodes,):
            raise GraphInputError(f"{self.name}: edge weights of shape {w.adj.shape} for a {self.adj.shape} adjacency")
        if not (np.isfinite(w.adj.data).all() and np.isfinite(w.loop).all()):
            raise GraphInputError(f"{self.name}: edge weights contain NaN or Inf; clean them")


def csr_from_edges(src: np.ndarray, dst: np.ndarray, n: int, name: str, values: np.ndarray | None = None
                   ) -> sp.csr_matrix:
    """Adjacency with ``adj[dst, src]`` = number of edges ``src -> dst`` (with ``values``: the sum of
    their values); indices are range-checked."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    for what, ids in (("source", src), ("target", dst)):
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise GraphInputError(f"{name}: {what} node index {int(ids.min() if ids.min() < 0 else ids.max())}"
                                  f" outside [0, {n})")
    data = np.ones(src.size, dtype=np.float32) if values is None else np.asarray(values, dtype=np.float64)
    adj = sp.csr_matrix((data, (dst, src)), shape=(n, n))
    adj.sum_duplicates()
    adj.sort_indices()
    return adj


def edge_weights(src: np.ndarray, dst: np.ndarray, n: int, name: str, weight: np.ndarray) -> EdgeWeights:
    """The :class:`EdgeWeights` of edges ``src -> dst`` weighing ``weight``: duplicates add, and a node's
    kept self loop is its last in edge order, the one PyG's ``add_remaining_self_loops`` keeps (its
    ``loop_attr[i] = edge_attr[loops]`` assignment leaves the last on CPU; on CUDA, or with more self
    loops than one CPU thread's share, PyG leaves the choice to the hardware)."""
    weight = np.asarray(weight, dtype=np.float64)
    if not np.isfinite(weight).all():
        raise GraphInputError(f"{name}: edge weights contain NaN or Inf; clean them")
    loops = np.flatnonzero(np.asarray(src) == np.asarray(dst))
    last = loops.size - 1 - np.unique(np.asarray(src)[loops][::-1], return_index=True)[1]
    loop = np.zeros(n)
    loop[np.asarray(src)[loops[last]]] = weight[loops[last]]
    return EdgeWeights(csr_from_edges(src, dst, n, name, weight), loop)

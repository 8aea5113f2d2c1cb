"""The one in-memory graph every loader produces: a square CSR adjacency plus node data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from netsparse_torch.errors import GraphInputError


@dataclass
class Graph:
    """A whole graph on one process.

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
    def num_nodes(self) -> int:
        return self.adj.shape[0]

    @property
    def num_features(self) -> int:
        return self.x.size(1)

    @property
    def nnz(self) -> int:
        return int(self.adj.nnz)

    def mask(self, split: str) -> torch.Tensor:
        """``train_mask``, ``val_mask`` or ``test_mask`` by split name."""
        return getattr(self, f"{split}_mask")

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
        if not torch.isfinite(self.x).all():
            bad = int((~torch.isfinite(self.x)).any(dim=1).nonzero()[0])
            raise GraphInputError(f"{self.name}: features contain NaN or Inf (first at node {bad}); clean them")
        if self.y.numel() and (self.y.min() < 0 or self.y.max() >= self.num_classes):
            raise GraphInputError(f"{self.name}: labels must lie in [0, {self.num_classes})")
        return self


def csr_from_edges(src: np.ndarray, dst: np.ndarray, n: int, name: str) -> sp.csr_matrix:
    """Adjacency with ``adj[dst, src]`` = number of edges ``src -> dst``; indices are range-checked."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    for what, ids in (("source", src), ("target", dst)):
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise GraphInputError(f"{name}: {what} node index {int(ids.min() if ids.min() < 0 else ids.max())}"
                                  f" outside [0, {n})")
    adj = sp.csr_matrix((np.ones(src.size, dtype=np.float32), (dst, src)), shape=(n, n))
    adj.sum_duplicates()
    adj.sort_indices()
    return adj

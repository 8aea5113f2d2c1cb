"""A rank's share of a graph: its rows, its plan, its strategy, and the normalised adjacencies."""

from __future__ import annotations

import numpy as np
import torch

from netsparse_torch.comm import Strategy, make_strategy
from netsparse_torch.graph import Graph, gcn_norm, mean_norm
from netsparse_torch.kernels import CSR
from netsparse_torch.partition import row_bounds
from netsparse_torch.plan import build_plan

NORMALISATIONS = {
    "gcn": lambda adj: gcn_norm(adj, 1.0),
    "gcn_improved": lambda adj: gcn_norm(adj, 2.0),
    "mean": mean_norm,
    "sum": lambda adj: adj.astype(np.float32),
}


class DistGraph:
    """What the distributed layers take in place of PyG's ``edge_index``.

    Every rank of the default process group builds it together (the plan exchanges request ids).
    ``propagate(x_local, norm)`` is the distributed SpMM ``Â[rows] x X``: the strategy gathers the
    remote rows, the C++ kernel aggregates.
    """

    def __init__(self, graph: Graph, rank: int, world_size: int, partition: str = "rows",
                 strategy: str = "sa", strategy_options: dict | None = None):
        self.graph = graph
        self.rank, self.world_size = rank, world_size
        self.bounds = row_bounds(graph.num_nodes, world_size, partition, graph.adj.indptr)
        r0, r1 = int(self.bounds[rank]), int(self.bounds[rank + 1])
        self.rows = slice(r0, r1)
        self.plan = build_plan(graph.adj[r0:r1], self.bounds, rank, world_size)
        self.strategy: Strategy = make_strategy(strategy, self.plan, **(strategy_options or {}))
        self._adjacency: dict[str, CSR] = {}

    @property
    def x(self) -> torch.Tensor:
        return self.graph.x[self.rows]

    @property
    def y(self) -> torch.Tensor:
        return self.graph.y[self.rows]

    def mask(self, split: str) -> torch.Tensor:
        return getattr(self.graph, f"{split}_mask")[self.rows]

    def adjacency(self, norm: str) -> CSR:
        """This rank's rows of the ``norm``-normalised adjacency, in the strategy's column space."""
        if norm not in self._adjacency:
            full = NORMALISATIONS[norm](self.graph.adj)
            self._adjacency[norm] = self.plan.localize(full[self.rows], self.strategy.space)
        return self._adjacency[norm]

    def propagate(self, x_local: torch.Tensor, norm: str, tag: str = "") -> torch.Tensor:
        return self.strategy.propagate(self.adjacency(norm), x_local, tag)

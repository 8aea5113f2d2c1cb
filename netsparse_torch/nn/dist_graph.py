"""A rank's share of a graph: its shard, its plan, its strategy, and its rows of the normalised adjacencies."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from netsparse_torch.comm import Strategy, make_strategy
from netsparse_torch.kernels import CSR
from netsparse_torch.partition import Partitioning, Shard, rank_shard
from netsparse_torch.partition.source import Source
from netsparse_torch.plan import build_plan


class DistGraph:
    """What the distributed layers take in place of PyG's ``edge_index``.

    ``data`` is a whole :class:`~netsparse_torch.graph.Graph` (cut by ``partition``: ``rows``, ``nnz``,
    ``metis`` or a precomputed :class:`~netsparse_torch.partition.Partitioning`), a partitioned dataset
    (:class:`~netsparse_torch.partition.PartitionedDataset` or its directory: only this rank's shard is
    read, and its own partition is used), or this rank's :class:`~netsparse_torch.partition.Shard`.
    Every rank of the default process group builds it together (the plan exchanges request ids).
    ``propagate(x_local, norm)`` is the distributed SpMM ``Â[rows] x X``: the strategy gathers the
    remote rows, the C++ kernel aggregates.

    Rows are numbered in the partition's order (``metis`` renumbers nodes so that each rank's rows are
    the contiguous block ``rows``); ``node_ids`` are their original ids.
    """

    def __init__(self, data: Source, rank: int, world_size: int, partition: str | Partitioning = "rows",
                 strategy: str = "sa", strategy_options: dict | None = None, verify: bool = True):
        self.shard: Shard = rank_shard(data, rank, world_size, partition, verify)
        self.rank, self.world_size = rank, world_size
        self.bounds = self.shard.bounds
        r0, r1 = int(self.bounds[rank]), int(self.bounds[rank + 1])
        self.rows = slice(r0, r1)
        #: Original (pre-permutation) node ids of this rank's rows, a LongTensor.
        self.node_ids = torch.as_tensor(np.asarray(self.shard.node_ids), dtype=torch.long)
        self.plan = build_plan(self.shard.adj, self.bounds, rank, world_size)
        self.strategy: Strategy = make_strategy(strategy, self.plan, **(strategy_options or {}))
        self._adjacency: dict[str, CSR] = {}

    @property
    def x(self) -> torch.Tensor:
        return self.shard.x

    @property
    def y(self) -> torch.Tensor:
        return self.shard.y

    def mask(self, split: str) -> torch.Tensor:
        return self.shard.mask(split)

    def adjacency(self, norm: str) -> CSR:
        """This rank's rows of the ``norm``-normalised adjacency, in the strategy's column space."""
        if norm not in self._adjacency:
            self._adjacency[norm] = self.plan.localize(self.shard.normalized(norm), self.strategy.space)
        return self._adjacency[norm]

    def propagate(self, x_local: torch.Tensor, norm: str, tag: str = "") -> torch.Tensor:
        return self.strategy.propagate(self.adjacency(norm), x_local, tag)

    def to_original(self, local: torch.Tensor) -> torch.Tensor:
        """Every rank's rows of ``local`` (a per-node tensor of this rank's rows) in original node order,
        on every rank. O(whole graph): for small graphs, tests and final per-node results."""
        if self.world_size == 1:
            parts, ids = [local], [self.node_ids]
        else:
            parts, ids = [None] * self.world_size, [None] * self.world_size
            dist.all_gather_object(parts, local.detach())
            dist.all_gather_object(ids, self.node_ids)
        out = torch.empty((self.shard.num_nodes, *local.shape[1:]), dtype=local.dtype)
        out[torch.cat(ids)] = torch.cat(parts).to(local.dtype)
        return out

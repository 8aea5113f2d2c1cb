"""A rank's shard, from whatever the caller has: a whole in-memory graph, a partitioned dataset, a paper
analog (the rank generates its part), or a shard.

Every rank of a job calls :func:`rank_shard` together: the ranks agree on success before any of them
enters a collective that a failed rank would never join, so a missing or corrupt shard on one rank
ends every rank with the error instead of leaving the others waiting for a timeout.
"""

from __future__ import annotations

from pathlib import Path

import torch.distributed as dist

from netsparse_torch.errors import ConfigError, NetsparseError, PartitionedDatasetError
from netsparse_torch.graph import Graph
from netsparse_torch.partition.analog import AnalogDataset, partition_dataset
from netsparse_torch.partition.dataset import PartitionedDataset
from netsparse_torch.partition.partitioning import Partitioning, partition_graph
from netsparse_torch.partition.shard import Shard, ShardBuilder

Source = Graph | PartitionedDataset | AnalogDataset | Shard | str | Path


def _build(data: Source, rank: int, world_size: int, partition: str | Partitioning, verify: bool) -> Shard:
    if isinstance(data, (str, Path)):
        data = PartitionedDataset(data)
    if isinstance(data, PartitionedDataset):
        data.check_world_size(world_size)
        return data.load_shard(rank, verify=verify)
    if isinstance(data, AnalogDataset) and not isinstance(partition, Partitioning):
        data, partition = partition_dataset(data, world_size, str(partition))  # metis: the whole graph
    if isinstance(data, AnalogDataset):
        if partition.parts != world_size:
            raise ConfigError(f"a partitioning into {partition.parts} parts given to {world_size} ranks")
        return data.shard(rank, partition)
    if isinstance(data, Shard):
        if data.parts != world_size or data.part != rank:
            raise ConfigError(f"shard {data.part} of {data.parts} given to rank {rank} of {world_size}")
        return data
    p = partition if isinstance(partition, Partitioning) else partition_graph(data.adj, world_size, str(partition))
    if p.parts != world_size:
        raise ConfigError(f"a partitioning into {p.parts} parts given to {world_size} ranks")
    return ShardBuilder(data, p).shard(rank)


def rank_shard(data: Source, rank: int, world_size: int, partition: str | Partitioning = "rows",
               verify: bool = True, group=None) -> Shard:
    """Rank ``rank``'s shard of ``data``.

    A :class:`~netsparse_torch.graph.Graph` is cut by ``partition`` (a mode name, computed here, or a
    :class:`Partitioning` computed once by the launcher); an
    :class:`~netsparse_torch.partition.analog.AnalogDataset` likewise, its part generated here; a
    :class:`PartitionedDataset` (or its directory) carries its own partition and must have ``world_size``
    parts, and only this rank's shard is read (``verify``: check its files' checksums). With
    ``world_size > 1`` every rank of ``group`` (None: the default process group) calls it together, so
    that one rank's bad shard fails them all.
    """
    error: NetsparseError | None = None
    shard = None
    try:
        shard = _build(data, rank, world_size, partition, verify)
    except NetsparseError as exc:
        error = exc
    if world_size > 1 and dist.is_initialized():
        errors: list = [None] * world_size
        dist.all_gather_object(errors, None if error is None else f"{type(error).__name__}: {error}", group=group)
        failed = [(r, e) for r, e in enumerate(errors) if e is not None]
        if error is None and failed:
            r, msg = failed[0]
            raise PartitionedDatasetError(f"rank {r} could not load its shard ({msg})")
    if error is not None:
        raise error
    return shard

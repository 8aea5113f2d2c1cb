"""Partitions and partitioned datasets.

``rows`` / ``nnz``: contiguous row blocks of the original numbering (:mod:`netsparse_torch.plan.bounds`); ``metis``:
pymetis parts renumbered into contiguous blocks (:mod:`.metis`). A :class:`Partitioning` says which
rows each part owns; a :class:`Shard` is one part's data, built in memory (:class:`ShardBuilder`) or
memory-mapped from a partitioned dataset on disk (:class:`PartitionedDataset`, written by
``netsparse-partition``).
"""

import importlib

from netsparse_torch.partition.partitioning import PARTITIONERS, Partitioning, partition_graph, partition_settings

# Shards hold torch tensors: they load on first use, so torch-free tools (netsparse-simulate and
# hw_models, which only need row bounds) start without importing torch.
_LAZY = {"PartitionedDataset": "dataset", "write_partitioned": "dataset", "rank_shard": "source",
         "Shard": "shard", "ShardBuilder": "shard"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"netsparse_torch.partition.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PARTITIONERS", "PartitionedDataset", "Partitioning", "Shard", "ShardBuilder", "partition_graph",
           "partition_settings", "rank_shard", "write_partitioned"]

"""Partitions and partitioned datasets.

``rows`` / ``nnz``: contiguous row blocks of the original numbering (:mod:`hw_models.bounds`); ``metis``:
pymetis parts renumbered into contiguous blocks (:mod:`.metis`). A :class:`Partitioning` says which
rows each part owns; a :class:`Shard` is one part's data, built in memory (:class:`ShardBuilder`) or
memory-mapped from a partitioned dataset on disk (:class:`PartitionedDataset`, written by
``netsparse-partition``).
"""

from netsparse_torch.partition.dataset import PartitionedDataset, write_partitioned
from netsparse_torch.partition.partitioning import PARTITIONERS, Partitioning, partition_graph, partition_settings
from netsparse_torch.partition.shard import Shard, ShardBuilder
from netsparse_torch.partition.source import rank_shard

__all__ = ["PARTITIONERS", "PartitionedDataset", "Partitioning", "Shard", "ShardBuilder", "partition_graph",
           "partition_settings", "rank_shard", "write_partitioned"]

"""Partitions and partitioned datasets.

``rows`` / ``nnz``: contiguous row blocks of the original numbering (:mod:`.bounds`); ``metis``:
pymetis parts renumbered into contiguous blocks (:mod:`.metis`). A :class:`Partitioning` says which
rows each part owns; a :class:`Shard` is one part's data, built in memory (:class:`ShardBuilder`) or
memory-mapped from a partitioned dataset on disk (:class:`PartitionedDataset`, written by
``netsparse-partition``).
"""

from netsparse_torch.partition.bounds import ROW_MODES, owner_of, row_bounds
from netsparse_torch.partition.dataset import PartitionedDataset, write_partitioned
from netsparse_torch.partition.partitioning import PARTITIONERS, Partitioning, partition_graph
from netsparse_torch.partition.rank_shard import rank_shard
from netsparse_torch.partition.shard import Shard, ShardBuilder

__all__ = ["PARTITIONERS", "ROW_MODES", "PartitionedDataset", "Partitioning", "Shard", "ShardBuilder",
           "owner_of", "partition_graph", "rank_shard", "row_bounds", "write_partitioned"]

"""Graph input: every loader returns a validated :class:`Graph` (square CSR adjacency + node data)."""

from __future__ import annotations

from pathlib import Path

from hw_models.mtx import default_data_root, read_mtx
from hw_models.params import check_flag
from hw_models.synthetic import generate
from netsparse_torch.errors import ConfigError
from netsparse_torch.graph.graph import EdgeWeights, Graph, csr_from_edges, edge_weights
from netsparse_torch.graph.loaders import (
    default_cache_dir,
    from_pyg,
    load_mtx,
    load_npz,
    load_planetoid,
    random_split,
    with_generated_features,
)
from netsparse_torch.graph.normalize import gcn_norm, mean_norm

DATASETS = ("cora", "citeseer", "tolokers", "minesweeper", "squirrel", "mtx", "synthetic", "paper", "partitioned")

__all__ = [
    "DATASETS", "EdgeWeights", "Graph", "csr_from_edges", "edge_weights", "from_pyg", "gcn_norm", "generate",
    "load_dataset", "load_mtx",
    "load_npz", "load_planetoid", "mean_norm", "random_split", "read_mtx", "with_generated_features",
]


def load_dataset(cfg):
    """Load the dataset a ``dataset`` config group describes (see ``configs/dataset/*.yaml``): a
    :class:`Graph`, or for ``partitioned`` a :class:`~netsparse_torch.partition.PartitionedDataset`
    (only its manifest is read; each rank loads its own shard), or for ``paper`` an
    :class:`~netsparse_torch.partition.analog.AnalogDataset` (nothing is generated; each rank generates
    its own shard)."""
    name = str(cfg.name).lower()
    if name == "partitioned":
        if not cfg.get("path"):
            raise ConfigError("dataset=partitioned needs dataset.path=<directory written by netsparse-partition>")
        from netsparse_torch.partition import PartitionedDataset

        return PartitionedDataset(Path(cfg.path))
    if name == "paper":
        from netsparse_torch.partition.analog import AnalogDataset

        return AnalogDataset.from_config(cfg)
    root = Path(cfg.get("root") or default_data_root())
    cache = Path(cfg.get("cache_dir") or default_cache_dir())
    seed = int(cfg.get("seed", 0))
    if name in ("cora", "citeseer"):
        return load_planetoid(name, root, cache)
    if name in ("tolokers", "minesweeper", "squirrel"):
        return load_npz(root / "heterophilous" / f"{name}.npz", split=int(cfg.get("split", 0)))
    if name == "mtx":
        if not cfg.get("path"):
            raise ConfigError("dataset=mtx needs dataset.path=<file.mtx or .mtx.gz>")
        weighted = cfg.get("weighted", False)
        check_flag("dataset.weighted", weighted)  # bool("maybe") would weigh the edges
        return load_mtx(Path(cfg.path), int(cfg.num_features), int(cfg.num_classes), seed, weighted=weighted)
    if name == "synthetic":
        params = dict(cfg.get("params") or {})
        adj = generate(str(cfg.shape), int(cfg.num_nodes), seed=seed, **params)
        return with_generated_features(f"synthetic-{cfg.shape}", adj, int(cfg.num_features),
                                       int(cfg.num_classes), seed)
    raise ConfigError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")

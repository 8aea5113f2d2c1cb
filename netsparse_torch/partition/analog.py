"""``dataset=paper``: an analog of a NetSparse Table 6 matrix as a training dataset, generated rank by rank.

The pattern is the one ``netsparse-simulate matrix=paper:<matrix>@<scale>`` models, from the same
generator and seed (:mod:`hw_models.analogs`). Every row of it, and every node's features, labels and
split, is a function of (seed, row) only, so a rank generates its own rows and, for its halo, only
the degree information its normalisation needs (:meth:`AnalogDataset.shard`): no process of a run
holds the whole graph. The node data is generated as for ``dataset=mtx``
(:func:`netsparse_torch.graph.loaders.with_generated_features`), keyed on the node instead of drawn in
node order: features ``X ~ N(0, 1)``, labels ``y = argmax(Â X W)`` of a seeded linear teacher ``W``
(``Â`` = GCN's ``D^-1/2 (A + I) D^-1/2``), and a 60/20/20 train/val/test split drawn per node.

The data is a *synthetic analog* of the paper's matrix, never the matrix itself: the report's
``dataset.label`` says so.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from hw_models import analogs
from hw_models.bounds import ROW_MODES, row_bounds
from hw_models.native import graph as _native
from hw_models.pattern import sorted_unique
from netsparse_torch.config_check import check_paper_dataset, check_paper_metis
from netsparse_torch.errors import ConfigError
from netsparse_torch.graph import Graph
from netsparse_torch.graph.normalize import gcn_norm_rows
from netsparse_torch.partition.partitioning import Partitioning, partition_graph
from netsparse_torch.partition.shard import Shard

TRAIN, VAL = 0.6, 0.2
"""The split's shares, as ``dataset=mtx``'s (:func:`netsparse_torch.graph.loaders.random_split`)."""

_SPLIT_SEED = 1
"""Offset of the split's seed from the features', as in ``random_split`` (``seed + 1``)."""


class AnalogDataset:
    """``paper:<matrix>@<scale>`` with generated node data; cheap to pickle (a few numbers), so the
    launcher hands it to its ranks and each generates its own shard.

    ``analog_seed`` seeds the pattern (``netsparse-simulate``'s ``analog_seed``), ``seed`` the node data;
    ``analog_cache`` is the directory of generated patterns that whole-graph models read
    (``netsparse-simulate``'s ``analog_cache``; the ranks never need it).
    """

    def __init__(self, matrix: str, scale: float, num_features: int = 16, num_classes: int = 4, seed: int = 0,
                 analog_seed: int = 0, analog_cache: str | None = None):
        self.matrix, self.scale = check_paper_dataset({"matrix": matrix, "scale": scale,
                                                       "num_features": num_features, "num_classes": num_classes})
        self.num_nodes = analogs.scaled_rows(self.matrix, self.scale)
        self.num_features, self.num_classes = int(num_features), int(num_classes)
        self.seed, self.analog_seed, self.analog_cache = int(seed), int(analog_seed), analog_cache
        self._nnz: int | None = None

    weights = None
    """The analogs are patterns: no edge weights (as a :class:`Graph` without ``weights``)."""

    @classmethod
    def from_config(cls, cfg) -> AnalogDataset:
        check_paper_dataset(cfg)
        return cls(str(cfg.matrix), cfg.get("scale", 1.0), cfg.get("num_features", 16), cfg.get("num_classes", 4),
                   int(cfg.get("seed", 0)), int(cfg.get("analog_seed", 0)),
                   str(cfg.analog_cache) if cfg.get("analog_cache") else None)

    # -- what every process knows without generating a row --------------------------------------------------
    @property
    def spec(self) -> str:
        """The ``netsparse-simulate`` matrix of this graph, ``paper:<matrix>@<scale>``."""
        return f"paper:{self.matrix.name}@{self.scale!r}"

    @property
    def name(self) -> str:
        return analogs.display_name(self.matrix, self.scale)

    @property
    def label(self) -> str:
        return analogs.label(self.spec)

    @property
    def nnz(self) -> int:
        """Nonzeros of the whole pattern: one counting pass (a chunk of rows at a time), done once."""
        if self._nnz is None:
            self._nnz = analogs.count_nonzeros(self.matrix, self.scale, self.analog_seed)
        return self._nnz

    def row_counts(self) -> np.ndarray:
        return analogs.row_counts(self.matrix, self.scale, self.analog_seed)

    # -- partitions -------------------------------------------------------------------------------------------
    def partitioning(self, parts: int, mode: str = "rows") -> Partitioning:
        """Row blocks: ``rows`` needs no pass over the graph, ``nnz`` one counting pass (8 B per row)."""
        if mode == "rows":
            return Partitioning(mode, row_bounds(self.num_nodes, parts, mode))
        if mode == "nnz":
            indptr = np.concatenate([[0], np.cumsum(self.row_counts())])
            return Partitioning(mode, row_bounds(self.num_nodes, parts, mode, indptr))
        raise ConfigError(f"dataset=paper: partition {mode!r} is not a row-block partition "
                          f"({', '.join(ROW_MODES)}); metis goes through partition_dataset")

    # -- one part, generated ----------------------------------------------------------------------------------
    def shard(self, part: int, partitioning: Partitioning) -> Shard:
        """Part ``part`` of a row-block ``partitioning``: its rows generated, its halo's degrees counted,
        its node data drawn: O(rows + nonzeros + halo) of the part."""
        if partitioning.order is not None:
            raise ConfigError("a renumbering partition (metis) of dataset=paper cuts shards from the whole "
                              "graph: use AnalogDataset.graph()")
        r0, r1 = partitioning.block(part)
        indptr, indices = analogs.generate_rows(self.matrix, self.scale, self.analog_seed, r0, r1)
        adj = sp.csr_matrix((np.ones(indices.size, dtype=np.float32), indices, indptr),
                            shape=(r1 - r0, self.num_nodes))
        del indptr, indices  # scipy keeps int32 copies where they fit
        cols = sorted_unique(adj.indices)
        halo = cols[(cols < r0) | (cols >= r1)].astype(np.int64)
        del cols
        halo_nnz, halo_loop = analogs.row_degrees(self.matrix, self.scale, self.analog_seed, halo)
        ids = np.arange(r0, r1, dtype=np.int64)
        shard = Shard(self.name, partitioning.mode, part, partitioning.bounds, adj,
                      torch.from_numpy(self.features(ids)), torch.empty(0, dtype=torch.long),
                      *self.split_masks(ids), self.num_classes, ids, np.diff(adj.indptr).astype(np.float64),
                      _diagonal(adj, r0), halo, halo_nnz.astype(np.float64), halo_loop)
        shard.y = torch.from_numpy(self._teacher_labels(shard))
        return shard

    def features(self, ids: np.ndarray) -> np.ndarray:
        """``X[ids]`` (float32, ``num_features`` standard normals per node, keyed on (seed, node))."""
        return _native.keyed_normal(self.seed, np.ascontiguousarray(ids, dtype=np.int64), self.num_features)

    def split_masks(self, ids: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Train, val and test masks of ``ids``: each node draws its split (60/20/20) from its own key."""
        u = _native.keyed_uniform(self.seed + _SPLIT_SEED, np.ascontiguousarray(ids, dtype=np.int64))
        return tuple(torch.from_numpy(m) for m in (u < TRAIN, (u >= TRAIN) & (u < TRAIN + VAL), u >= TRAIN + VAL))

    def teacher(self) -> np.ndarray:
        """The teacher ``W`` (float64, features x classes), seeded as ``dataset=mtx``'s."""
        gen = torch.Generator().manual_seed(self.seed)
        return torch.randn(self.num_features, self.num_classes, generator=gen, dtype=torch.float64).numpy()

    def _teacher_labels(self, shard: Shard) -> np.ndarray:
        """``argmax(Â X W)`` of the shard's rows, a block of rows at a time (bounded temporaries). ``X W`` is
        formed once per node, own and halo, and each row's sum runs in column order: a node gets the
        same label at every world size."""
        w = self.teacher()
        xw = np.concatenate([self._times_teacher(shard.x.numpy(), w),
                             self._times_teacher(self.features(shard.halo_ids), w)])
        r0, n = shard.row_start, shard.num_rows
        y = np.empty(n, dtype=np.int64)
        for a, b in _row_chunks(shard.adj.indptr):
            norm = gcn_norm_rows(shard.adj[a:b], r0 + a, shard.lookup).astype(np.float64)
            own = (norm.indices >= r0) & (norm.indices < r0 + n)
            slot = np.where(own, norm.indices - r0, n + np.searchsorted(shard.halo_ids, norm.indices))
            local = sp.csr_matrix((norm.data, slot, norm.indptr), shape=(b - a, xw.shape[0]))
            y[a:b] = np.asarray(local @ xw).argmax(axis=1)
        return y

    def _times_teacher(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``x @ W`` in float64, summed feature by feature: the same order for any set of rows."""
        xw = np.zeros((x.shape[0], self.num_classes))
        for start in range(0, x.shape[0], _CHUNK):
            block = x[start:start + _CHUNK].astype(np.float64)
            for f in range(self.num_features):
                xw[start:start + block.shape[0]] += block[:, f:f + 1] * w[f]
        return xw

    # -- the whole graph: tests, metis; never on a rank's path -----------------------------------------------
    def graph(self) -> Graph:
        """The whole graph in one process (O(whole graph)), the same data every shard holds."""
        s = self.shard(0, Partitioning("rows", np.array([0, self.num_nodes], dtype=np.int64)))
        adj = sp.csr_matrix(s.adj)
        return Graph(self.name, adj, s.x, s.y, s.train_mask, s.val_mask, s.test_mask, self.num_classes).validate()


_CHUNK = 1 << 18
"""Rows, or nonzeros, per block of the shard's one-off computations (our choice: temporaries of a few
tens of MB, against a rank's hundreds)."""


def _row_chunks(indptr: np.ndarray):
    """``(a, b)`` row blocks of about :data:`_CHUNK` nonzeros (at least one row each)."""
    n, a = len(indptr) - 1, 0
    while a < n:
        b = max(a + 1, min(n, int(np.searchsorted(indptr, indptr[a] + _CHUNK, side="right")) - 1))
        yield a, b
        a = b


def _diagonal(adj: sp.csr_matrix, row_start: int) -> np.ndarray:
    """Whether each row of ``adj`` (global column ids, first row ``row_start``) holds its diagonal entry."""
    out = np.zeros(adj.shape[0], dtype=bool)
    for a, b in _row_chunks(adj.indptr):
        own = np.repeat(np.arange(a, b) + row_start, np.diff(adj.indptr[a:b + 1]))
        out[own[adj.indices[adj.indptr[a]:adj.indptr[b]] == own] - row_start] = True
    return out


def partition_dataset(data, parts: int, mode: str = "rows", seed: int = 0, weights: str = "nnz"):
    """``(data, partitioning)`` of a loaded dataset (a :class:`Graph` or an :class:`AnalogDataset`) into
    ``parts`` parts. An analog stays an analog for ``rows`` and ``nnz`` (each rank generates its part);
    ``metis`` renumbers the whole graph, so an analog below
    :data:`~netsparse_torch.config_check.METIS_MAX_NNZ` comes back whole."""
    if isinstance(data, AnalogDataset):
        if mode in ROW_MODES:
            return data, data.partitioning(parts, mode)
        if mode == "metis":
            check_paper_metis(data.matrix, data.scale)
        data = data.graph()
    return data, partition_graph(data.adj, parts, mode, seed=seed, weights=weights)


def shard_source(data, partitioning: Partitioning):
    """What cuts ``partitioning``'s shards out of ``data``: the analog itself (it generates each part), or a
    :class:`~netsparse_torch.partition.ShardBuilder` over a whole graph."""
    from netsparse_torch.partition.shard import ShardBuilder

    if isinstance(data, AnalogDataset):
        return _AnalogShards(data, partitioning)
    return ShardBuilder(data, partitioning)


class _AnalogShards:
    def __init__(self, data: AnalogDataset, partitioning: Partitioning):
        self.data, self.partitioning = data, partitioning

    def shard(self, part: int) -> Shard:
        return self.data.shard(part, self.partitioning)



"""Partitioned datasets on disk: one directory of ``.npy`` shards plus a JSON manifest.

``netsparse-partition`` writes it (:func:`write_partitioned`); each training rank opens the manifest and
memory-maps only its own shard (:meth:`PartitionedDataset.load_shard`), so no rank ever holds the whole
graph. The layout (``docs/partitioning.md``)::

    DIR/manifest.json                 format, version, sizes, bounds, partitioner, per-part stats, checksums
    DIR/permutation/order.npy         order[new id] = original id (int64)
    DIR/permutation/new_ids.npy       new_ids[original id] = new id (int64)
    DIR/part-00000/<array>.npy        one file per array of :data:`ARRAYS` (and of :data:`WEIGHT_ARRAYS`
                                      when the graph has edge weights: the manifest's ``dataset.weighted``)

The manifest is written last, so a partitioner that dies leaves no manifest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from hw_models.files import locked, write_text_atomic
from netsparse_torch.errors import ConfigError, DatasetNotFoundError, PartitionedDatasetError
from netsparse_torch.graph import EdgeWeights, Graph
from netsparse_torch.partition.analog import AnalogDataset, shard_source
from netsparse_torch.partition.partitioning import Partitioning
from netsparse_torch.partition.shard import SPLITS, Shard
from netsparse_torch.progress import Progress

FORMAT = "netsparse-partitioned-dataset"
#: 2: the degree information counts a node's self loops once (PyG's add_remaining_self_loops), and
#: graphs with edge weights carry them.
FORMAT_VERSION = 2
MANIFEST = "manifest.json"

#: Every array of a shard and its dtype on disk.
ARRAYS = {
    "indptr": np.int64, "indices": np.int64, "data": np.float32,             # raw adjacency rows, CSR
    "x": np.float32, "y": np.int64,
    "train_mask": np.bool_, "val_mask": np.bool_, "test_mask": np.bool_,
    "node_ids": np.int64,                                                   # original ids of the rows
    "row_sum": np.float64, "row_loop": np.bool_,                            # degree info of the rows
    "halo_ids": np.int64, "halo_sum": np.float64, "halo_loop": np.bool_,    # ... and of the halo columns
}
#: The arrays of a graph with edge weights (:class:`Shard`'s weight fields): the rows' summed weights on
#: ``indices``/``indptr``, the kept self loop weights, and the weighted degrees of the rows and the halo.
WEIGHT_ARRAYS = {"weight": np.float32, "loop_weight": np.float32, "row_wsum": np.float64, "halo_wsum": np.float64}


class _HashingWriter:
    """A write-only file that hashes what passes through (np.save writes in chunks: no extra copy)."""

    def __init__(self, f):
        self.f, self.sha, self.size = f, hashlib.sha256(), 0

    def write(self, b) -> int:
        self.sha.update(b)
        self.size += len(b)
        return self.f.write(b)


def _save(root: Path, rel: str, array: np.ndarray) -> dict:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        w = _HashingWriter(f)
        np.save(w, np.ascontiguousarray(array))
    return {"path": rel, "bytes": w.size, "sha256": w.sha.hexdigest()}


def shard_arrays(shard: Shard) -> dict[str, np.ndarray]:
    a = shard.adj
    values = {"indptr": a.indptr, "indices": a.indices, "data": a.data, "x": shard.x.numpy(), "y": shard.y.numpy(),
              **{f"{s}_mask": shard.mask(s).numpy() for s in SPLITS}, "node_ids": shard.node_ids,
              "row_sum": shard.row_sum, "row_loop": shard.row_loop, "halo_ids": shard.halo_ids,
              "halo_sum": shard.halo_sum, "halo_loop": shard.halo_loop}
    if shard.weighted:
        values.update(weight=_on_pattern(shard.weights, a), loop_weight=shard.loop_weight, row_wsum=shard.row_wsum,
                      halo_wsum=shard.halo_wsum)
    dtypes = {**ARRAYS, **WEIGHT_ARRAYS}
    return {k: np.asarray(v).astype(dtypes[k], copy=False) for k, v in values.items()}


def _on_pattern(values: sp.csr_matrix, pattern: sp.csr_matrix) -> np.ndarray:
    """``values``'s entries at ``pattern``'s stored positions (0 where it stores none), so that the
    weights share the adjacency's ``indices`` and ``indptr`` on disk."""
    out = values.tocsr()[pattern.nonzero()]
    return np.asarray(out).ravel() if pattern.nnz else np.zeros(0)


def write_partitioned(graph: Graph | AnalogDataset, partitioning: Partitioning, out: Path | str,
                      source: dict | None = None, progress: bool = True) -> dict:
    """Write ``graph`` cut by ``partitioning`` to the directory ``out``; returns the manifest. An analog
    (``dataset=paper``) is generated part by part: this process holds one part at a time. Two writers
    of one directory (parallel jobs of a sweep) take turns: a lock beside it (``.<out>.lock``)."""
    out = Path(out)
    with locked(out.parent / f".{out.name}.lock"):
        return _write_partitioned(graph, partitioning, out, source, progress)


def _write_partitioned(graph: Graph, partitioning: Partitioning, out: Path, source: dict | None,
                       progress: bool) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # until the new one is complete, the directory is not a dataset
    order = partitioning.order if partitioning.order is not None else np.arange(graph.num_nodes, dtype=np.int64)
    new_ids = partitioning.new_ids()
    permutation = {"new_to_original": _save(out, "permutation/order.npy", order),
                   "original_to_new": _save(out, "permutation/new_ids.npy", order if new_ids is None else new_ids)}
    builder = shard_source(graph, partitioning)
    per_part = []
    with Progress(partitioning.parts, "shards written", enabled=progress, unit="shard") as bar:  # lines when piped
        for part in range(partitioning.parts):
            shard = builder.shard(part)
            files = {k: _save(out, f"part-{part:05d}/{k}.npy", v) for k, v in shard_arrays(shard).items()}
            per_part.append({"part": part, **shard.stats(), "files": files})
            bar.update(part + 1, f"part {part}: {per_part[-1]['rows']:,} rows")
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "dataset": {"name": graph.name, "nodes": graph.num_nodes, "nnz": sum(p["nnz"] for p in per_part),
                    "features": graph.num_features, "classes": graph.num_classes,
                    "weighted": graph.weights is not None,
                    **({"label": graph.label} if getattr(graph, "label", None) else {})},
        "source": source or {},
        "parts": partitioning.parts,
        "bounds": [int(b) for b in partitioning.bounds],
        "partitioner": {"name": partitioning.mode, "settings": partitioning.settings},
        "permutation": permutation,
        "edge_cut": sum(p["edge_cut"] for p in per_part),
        "per_part": per_part,
    }
    write_text_atomic(out / MANIFEST, json.dumps(manifest, indent=1))
    return manifest


class PartitionedDataset:
    """A partitioned dataset directory, opened through its manifest (small: O(parts)); pickles cheaply,
    so a launcher hands it to its ranks and each loads only its own shard."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.manifest = self._read_manifest()

    def _read_manifest(self) -> dict:
        file = self.path / MANIFEST
        if not file.is_file():
            raise DatasetNotFoundError(f"no partitioned dataset at {self.path} ({MANIFEST} missing); "
                                       "create one with netsparse-partition ... out=DIR")
        try:
            m = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise PartitionedDatasetError(f"{file}: unreadable manifest ({exc}); re-run netsparse-partition") from None
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise PartitionedDatasetError(f"{file}: not a {FORMAT} manifest; re-run netsparse-partition")
        if m.get("format_version") != FORMAT_VERSION:
            raise PartitionedDatasetError(
                f"{file}: format version {m.get('format_version')!r}, this netsparse_torch reads version "
                f"{FORMAT_VERSION}; re-run netsparse-partition with this version")
        return m

    # -- what every process may read: the manifest ----------------------------------------------------------
    @property
    def name(self) -> str:
        return str(self.manifest["dataset"]["name"])

    @property
    def num_nodes(self) -> int:
        return int(self.manifest["dataset"]["nodes"])

    @property
    def nnz(self) -> int:
        return int(self.manifest["dataset"]["nnz"])

    @property
    def num_features(self) -> int:
        return int(self.manifest["dataset"]["features"])

    @property
    def label(self) -> str | None:
        """What the data is when its name could mislead (a paper analog: ``synthetic analog of ...``)."""
        return self.manifest["dataset"].get("label")

    @property
    def num_classes(self) -> int:
        return int(self.manifest["dataset"]["classes"])

    @property
    def weighted(self) -> bool:
        return bool(self.manifest["dataset"].get("weighted", False))

    @property
    def parts(self) -> int:
        return int(self.manifest["parts"])

    @property
    def mode(self) -> str:
        return str(self.manifest["partitioner"]["name"])

    @property
    def bounds(self) -> np.ndarray:
        return np.asarray(self.manifest["bounds"], dtype=np.int64)

    def check_world_size(self, world_size: int) -> None:
        if world_size != self.parts:
            raise ConfigError(f"partitioned dataset {self.path} has {self.parts} parts but world_size={world_size}; "
                              f"run with world_size={self.parts} ranks or re-partition with parts={world_size}")

    def check_partition(self, given: str | None) -> None:
        """A ``partition=`` the command line gave (``given``) is the one the shards were cut by: another
        would be ignored without a word (the report's config saying it, its partition block the shards')."""
        if given is not None and given != self.mode:
            raise ConfigError(f"partition={given} does not apply to the partitioned dataset {self.path}: its "
                              f"{self.parts} shards were cut by {self.mode}; drop partition=, or re-partition with "
                              f"netsparse-partition ... partition={given}")

    # -- what one rank reads: its shard ---------------------------------------------------------------------
    def _array(self, entry: dict, verify: bool) -> np.ndarray:
        path = self.path / entry["path"]
        if not path.is_file():
            raise DatasetNotFoundError(f"shard file missing: {path}; the partitioned dataset {self.path} is "
                                       "incomplete, re-run netsparse-partition")
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise PartitionedDatasetError(f"{path} has {size} bytes, the manifest says {entry['bytes']}: truncated "
                                          "or replaced; re-run netsparse-partition")
        if verify:
            with open(path, "rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
            if digest != entry["sha256"]:
                raise PartitionedDatasetError(f"{path}: checksum mismatch (sha256 {digest[:12]}..., manifest "
                                              f"{entry['sha256'][:12]}...); the file changed, re-partition")
        try:
            return np.load(path, mmap_mode="c", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise PartitionedDatasetError(f"{path}: not a readable .npy file ({exc}); re-run netsparse-partition") \
                from None

    def load_shard(self, part: int, verify: bool = True) -> Shard:
        """Memory-map part ``part``'s files (checked against the manifest's sizes and, with ``verify``,
        checksums): O(that part), nothing of the other parts."""
        if not 0 <= part < self.parts:
            raise ConfigError(f"part {part} outside [0, {self.parts}) of {self.path}")
        entry = self.manifest["per_part"][part]
        a = {k: self._array(entry["files"][k], verify) for k in (*ARRAYS, *(WEIGHT_ARRAYS if self.weighted else ()))}
        rows = int(self.bounds[part + 1] - self.bounds[part])
        if a["indptr"].shape != (rows + 1,) or a["x"].shape != (rows, self.num_features) or \
                (self.weighted and a["weight"].shape != a["data"].shape):
            raise PartitionedDatasetError(f"{self.path}: part {part}'s arrays do not have its {rows} rows; "
                                          "re-run netsparse-partition")
        shape = (rows, self.num_nodes)
        adj = sp.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=shape)
        weights = {}
        if self.weighted:
            weights = {"weights": sp.csr_matrix((a["weight"], a["indices"], a["indptr"]), shape=shape),
                       **{k: a[k] for k in ("loop_weight", "row_wsum", "halo_wsum")}}
        t = torch.from_numpy
        return Shard(self.name, adj, t(a["x"]), t(a["y"]), *(t(a[f"{s}_mask"]) for s in SPLITS), self.num_classes,
                     self.mode, part, self.bounds, a["node_ids"], a["row_sum"],
                     a["row_loop"], a["halo_ids"], a["halo_sum"], a["halo_loop"], **weights)

    # -- the whole graph: tests, the round trip, a whole-graph modeled block; never on a rank's path --------
    def adjacency(self) -> sp.csr_matrix:
        """The whole raw adjacency in the *new* numbering, stacked from every shard (O(whole graph))."""
        return sp.vstack([self.load_shard(p).adj for p in range(self.parts)], format="csr")

    def assemble(self) -> Graph:
        """The whole graph in the *original* numbering, from every shard (O(whole graph))."""
        shards = [self.load_shard(p) for p in range(self.parts)]
        order = np.concatenate([s.node_ids for s in shards])
        new_ids = np.empty_like(order)
        new_ids[order] = np.arange(order.size, dtype=np.int64)

        def original(matrices):
            m = sp.vstack(matrices, format="csr")[new_ids][:, new_ids].tocsr()
            m.sort_indices()
            return m

        def cat(field):
            return torch.cat([getattr(s, field) for s in shards])[torch.from_numpy(new_ids)]

        weights = None
        if self.weighted:
            loop = np.concatenate([s.loop_weight for s in shards]).astype(np.float64)[new_ids]
            weights = EdgeWeights(original([s.weights for s in shards]).astype(np.float64), loop)
        return Graph(self.name, original([s.adj for s in shards]), cat("x"), cat("y"),
                     *(cat(f"{s}_mask") for s in SPLITS), self.num_classes, weights=weights)

"""Graph loaders: PyG ``Data``, Planetoid (offline), heterophilous ``.npz``, Matrix Market, synthetic.

Nothing here downloads. Files come from the data root: ``$NETSPARSE_DATA`` if set, else
``../shared/data`` beside the repository checkout.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from hw_models.mtx import _existing, read_mtx, read_mtx_values
from netsparse_torch.errors import DatasetNotFoundError, GraphInputError
from netsparse_torch.graph.graph import EdgeWeights, Graph, csr_from_edges, edge_weights
from netsparse_torch.graph.normalize import gcn_norm

PLANETOID = {"cora": "Cora", "citeseer": "CiteSeer"}
PLANETOID_RAW = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def default_cache_dir() -> Path:
    return Path(os.environ.get("NETSPARSE_CACHE", Path.home() / ".cache" / "netsparse_torch"))


def pyg_edge_weight(data, name: str = "pyg") -> tuple[str, torch.Tensor] | None:
    """The edge weights a PyG ``Data`` carries, as ``(attribute, tensor)``: its ``edge_weight``, else a
    one-weight-per-edge ``edge_attr`` (``[E]`` or ``[E, 1]``); None without either. Multi-dimensional
    edge features are refused: no distributed layer reads them."""
    attr = getattr(data, "edge_attr", None)
    if attr is not None and not (attr.dim() == 1 or (attr.dim() == 2 and attr.size(1) == 1)):
        raise GraphInputError(f"{name}: edge_attr has shape {list(attr.shape)}: multi-dimensional edge features "
                              "are not supported (no distributed layer reads them: DistGATConv refuses edge_dim); "
                              "delete data.edge_attr, or give one weight per edge")
    for key, w in (("edge_weight", getattr(data, "edge_weight", None)), ("edge_attr", attr)):
        if w is not None:
            if w.numel() != data.edge_index.size(1) or w.is_complex() or w.dtype == torch.bool:
                raise GraphInputError(f"{name}: {key} has shape {list(w.shape)} and dtype {w.dtype}; edge weights "
                                      f"are one real number per edge ({data.edge_index.size(1)} edges)")
            return key, w
    return None


def from_pyg(data, name: str = "pyg") -> Graph:
    """A PyG ``Data`` object (``x``, ``y``, ``edge_index``, optional masks and edge weights:
    :func:`pyg_edge_weight`) as a :class:`Graph`. ``y`` are class labels (:func:`pyg_labels`); a mask the
    ``Data`` lacks selects no node, as PyG has no such split (:func:`pyg_mask`)."""
    n = int(data.num_nodes)
    ei = data.edge_index.cpu().numpy()
    adj = csr_from_edges(ei[0], ei[1], n, name)
    found = pyg_edge_weight(data, name)
    weights = None
    if found is not None:
        weights = edge_weights(ei[0], ei[1], n, name, found[1].detach().cpu().reshape(-1).double().numpy())
    if getattr(data, "x", None) is None:
        raise GraphInputError(f"{name}: the Data has no node features x; set data.x (e.g. torch.ones(num_nodes, 1) "
                              "for a graph without features)")
    y = pyg_labels(data, name)
    masks = [pyg_mask(data, m, n, name) for m in ("train_mask", "val_mask", "test_mask")]
    num_classes = int(y.max()) + 1 if y.numel() else 0
    return Graph(name, adj, data.x.float().cpu(), y, *masks, num_classes, weights=weights).validate()


#: Where a node's targets are not one class label: the rows of the port's own tensor, ``data.target[dg.rows]``.
_OWN_TARGETS = "DistGraph's y is one class label per node (dg.y, dg.loss, dg.accuracy); keep other targets under " \
               "another name (data.target) and take this rank's rows with data.target[dg.rows]"


def pyg_labels(data, name: str) -> torch.Tensor:
    """``data.y`` as one class label per node: ``[N]`` or ``[N, 1]`` integers (real numbers that are whole, as a
    float tensor of classes holds, too). Real-valued targets would be truncated to classes and several per
    node would not line up with the nodes: each is one error."""
    y = getattr(data, "y", None)
    if y is None:
        raise GraphInputError(f"{name}: the Data has no labels y; {_OWN_TARGETS} (a model trained without "
                              "node labels: data.y = torch.zeros(num_nodes, dtype=torch.long))")
    if y.dim() > 2 or (y.dim() == 2 and y.size(1) != 1):
        raise GraphInputError(f"{name}: y has shape {list(y.shape)} (several targets per node); {_OWN_TARGETS}")
    y = y.reshape(-1).cpu()
    if y.is_complex() or (y.is_floating_point() and not bool((y == y.round()).all())):
        raise GraphInputError(f"{name}: y holds real values (e.g. {float(y[y != y.round()][0])}), which would be "
                              f"truncated to classes; {_OWN_TARGETS}")
    return y.long()


def pyg_mask(data, key: str, n: int, name: str) -> torch.Tensor:
    """``data.<key>`` as a boolean mask over the ``n`` nodes (all False where the Data has none, so that a
    split the user never made selects nothing). Several splits in columns (as PyG's WikipediaNetwork
    holds them) and node indices in place of a mask are each one error saying what to pass."""
    m = getattr(data, key, None)
    if m is None:
        return torch.zeros(n, dtype=torch.bool)
    if m.dim() == 2 and m.size(1) == 1:
        m = m.reshape(-1)
    if m.dim() == 2 and m.size(0) == n and m.size(1) > 1:
        raise GraphInputError(f"{name}: {key} has shape {list(m.shape)}, one column per split: choose one, "
                              f"data.{key} = data.{key}[:, i] (and the other masks alike)")
    is_mask = m.dim() == 1 and m.numel() == n and (m.dtype == torch.bool or bool(((m == 0) | (m == 1)).all()))
    if not is_mask:
        raise GraphInputError(f"{name}: {key} is a {m.dtype} tensor of shape {list(m.shape)}, not a mask of the "
                              f"{n} nodes; from node indices make one with torch_geometric.utils.index_to_mask("
                              f"idx, size={n})")
    return m.bool().cpu()


def load_planetoid(name: str, root: Path, cache_dir: Path) -> Graph:
    """PyG's own ``Planetoid`` with the raw files placed in its root, so it never downloads."""
    pyg_name = PLANETOID[name.lower()]
    raw_src = Path(root) / "planetoid" / pyg_name / "raw"
    files = [f"ind.{pyg_name.lower()}.{s}" for s in PLANETOID_RAW]
    missing = [f for f in files if not (raw_src / f).is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"{pyg_name}: raw files missing under {raw_src}: {', '.join(missing)}. "
            "Set dataset.root (or $NETSPARSE_DATA) to the folder that holds planetoid/"
        )
    pyg_root = Path(cache_dir) / "planetoid"
    raw_dst = pyg_root / pyg_name / "raw"
    raw_dst.mkdir(parents=True, exist_ok=True)
    # Under torchrun every rank loads the dataset at once: one copies the raw files and lets PyG
    # process them while the others wait, then they read the finished cache.
    with open(pyg_root / f".{pyg_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for f in files:
            if not (raw_dst / f).is_file():
                shutil.copyfile(raw_src / f, raw_dst / f"{f}.part")
                os.replace(raw_dst / f"{f}.part", raw_dst / f)
        raw = [raw_dst / f for f in files]
        graph = _cached_planetoid(raw, pyg_name)
        if graph is None:
            from torch_geometric.datasets import Planetoid

            graph = from_pyg(Planetoid(str(pyg_root), pyg_name)[0], name=pyg_name)
            _cache_planetoid(graph, raw)
    return graph


#: Planetoid as PyG processed it, in plain arrays: the launcher reads it without importing PyG (~3 s of
#: every Cora run's start-up); the ranks import PyG anyway, in the forkserver, for the layers.
PLANETOID_CACHE = "netsparse_graph.npz"


def _raw_fingerprint(raw: list[Path]) -> str:
    stats = [f.stat() for f in raw]
    return "v1:" + ",".join(f"{st.st_size}/{st.st_mtime_ns}" for st in stats)


def _cached_planetoid(raw: list[Path], name: str) -> Graph | None:
    """The cache beside the raw folder, if it was made from these raw files."""
    path = raw[0].parent.parent / PLANETOID_CACHE
    if not path.is_file():
        return None
    with np.load(path) as z:
        if str(z["fingerprint"]) != _raw_fingerprint(raw):
            return None  # other raw files than the cache was made from
        adj = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        masks = [torch.from_numpy(z[m]) for m in ("train_mask", "val_mask", "test_mask")]
        return Graph(name, adj, torch.from_numpy(z["x"]), torch.from_numpy(z["y"]), *masks,
                     int(z["num_classes"])).validate()


def _cache_planetoid(graph: Graph, raw: list[Path]) -> None:
    path = raw[0].parent.parent / PLANETOID_CACHE
    tmp = path.with_suffix(".part.npz")
    a = graph.adj
    np.savez(tmp, fingerprint=_raw_fingerprint(raw), data=a.data, indices=a.indices, indptr=a.indptr,
             shape=np.array(a.shape), x=graph.x.numpy(), y=graph.y.numpy(), train_mask=graph.train_mask.numpy(),
             val_mask=graph.val_mask.numpy(), test_mask=graph.test_mask.numpy(), num_classes=graph.num_classes)
    os.replace(tmp, path)


def load_npz(path: Path, split: int = 0) -> Graph:
    """The heterophilous-graphs ``.npz`` layout (``node_features``, ``edges``, ``*_masks``)."""
    path = _existing(path)
    with np.load(path) as z:
        keys = {"node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks"}
        if not keys <= set(z.files):
            raise GraphInputError(f"{path}: needs arrays {sorted(keys)}, found {sorted(z.files)}")
        x, y, edges = z["node_features"], z["node_labels"], z["edges"]
        masks = [z[k] for k in ("train_masks", "val_masks", "test_masks")]
    n = x.shape[0]
    if not 0 <= split < masks[0].shape[0]:
        raise GraphInputError(f"{path}: split {split} outside [0, {masks[0].shape[0]})")
    # The edges are undirected pairs: both directions carry messages.
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    adj = csr_from_edges(src, dst, n, path.stem)
    adj.data[:] = 1.0  # a pair listed twice is still one undirected edge
    y_t = torch.from_numpy(y.astype(np.int64))
    return Graph(path.stem, adj, torch.from_numpy(x.astype(np.float32)), y_t,
                 *[torch.from_numpy(m[split].astype(bool)) for m in masks], int(y.max()) + 1).validate()


def load_mtx(path: Path, num_features: int = 32, num_classes: int = 4, seed: int = 0,
             weighted: bool = False) -> Graph:
    """A Matrix Market graph: the pattern, and with ``weighted`` the matrix's values as edge weights
    (duplicate entries add, as scipy reads them; a diagonal entry is the node's one self loop).
    Features and labels are generated, since the files carry none: see :func:`with_generated_features`."""
    values = read_mtx_values(Path(path)) if weighted else None
    adj = read_mtx(Path(path)) if values is None else _pattern(values)
    if adj.shape[0] != adj.shape[1]:
        raise GraphInputError(f"{path}: matrix is {adj.shape[0]}x{adj.shape[1]}; a GNN needs a square adjacency")
    weights = None if values is None else EdgeWeights(values, values.diagonal().astype(np.float64))
    return with_generated_features(Path(path).name.split(".")[0], adj, num_features, num_classes, seed, weights)


def _pattern(values: sp.csr_matrix) -> sp.csr_matrix:
    adj = values.astype(np.float32)
    adj.data[:] = 1.0
    return adj


def with_generated_features(name: str, adj: sp.csr_matrix, num_features: int, num_classes: int,
                            seed: int, weights: EdgeWeights | None = None) -> Graph:
    """Seeded features ``X ~ N(0, 1)`` and labels from a random linear teacher on the aggregated
    features, ``y = argmax(Â X W)`` (``Â`` weighted when the graph has ``weights``), so the task is
    learnable from the graph; a 60/20/20 split."""
    if num_features < 1 or num_classes < 2:
        raise GraphInputError(f"{name}: need num_features >= 1 and num_classes >= 2")
    n = adj.shape[0]
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, num_features, generator=gen)
    w = torch.randn(num_features, num_classes, generator=gen, dtype=torch.float64)
    h = gcn_norm(adj, weights=weights).astype(np.float64) @ (x.double().numpy() @ w.numpy())
    y = torch.from_numpy(np.asarray(h).argmax(axis=1).astype(np.int64))
    return Graph(name, adj, x, y, *random_split(n, seed), num_classes, weights=weights).validate()


def random_split(n: int, seed: int, train: float = 0.6, val: float = 0.2):
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + 1))
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    a, b = int(train * n), int((train + val) * n)
    masks[0][perm[:a]], masks[1][perm[a:b]], masks[2][perm[b:]] = True, True, True
    return masks

"""The models the training entry point builds."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn.conv import DistGCNConv, DistSAGEConv
from netsparse_torch.nn.dist_graph import DistGraph
from netsparse_torch.nn.dropout import check_p, keyed_dropout
from netsparse_torch.nn.gat import DistGATConv, check_heads

LAYERS = {"gcn": DistGCNConv, "sage": DistSAGEConv, "gat": DistGATConv}
#: Keyword arguments of :class:`DistGNN` per model beyond the common ones, with their defaults. GAT's
#: are those of PyG's Cora example (examples/gat.py: 8 heads, 1 output head, dropout 0.6 on the
#: attention coefficients).
OPTIONS = {"gcn": {}, "sage": {}, "gat": {"heads": 8, "out_heads": 1, "attention_dropout": 0.6}}
#: Dropout key of the input features (GAT drops them before its first layer); the dropout after
#: layer ``i`` uses ``i``.
INPUT_LAYER_KEY = -1


def model_options(model_cfg) -> dict:
    """The :class:`DistGNN` keywords in a ``configs/model`` entry (everything but name and num_layers)."""
    return {str(k): v for k, v in dict(model_cfg).items() if k not in ("name", "num_layers")}


class DistGNN(torch.nn.Module):
    """``conv -> activation -> dropout -> ... -> conv``, the standard full-graph GCN, GraphSAGE or GAT.

    GCN and GraphSAGE use ReLU. GAT follows PyG's Cora example: dropout on the input features too,
    ELU, hidden layers of ``heads`` concatenated heads of ``hidden`` channels and an output layer of
    ``out_heads`` averaged heads; ``attention_dropout`` is the layers' dropout on attention.

    Dropout is counter-based (:func:`~netsparse_torch.nn.dropout.keyed_dropout`): its masks are keyed
    on ``(seed, epoch, layer, node id, feature)`` (attention masks on the edge and head), so the same
    seed trains the same model at every world size, partition and strategy. Pass the ``epoch`` to
    ``forward``; without it the model counts its own training forward passes (one per epoch in
    full-graph training).

    A graph with edge weights (``graph.edge_weight``: a PyG ``Data``'s, ``dataset.weighted=true``)
    trains GCN on them; GraphSAGE and GAT take none (as PyG's ``SAGEConv`` and ``GATConv``), so they
    refuse such a graph instead of ignoring its weights.
    """

    def __init__(self, kind: str, in_channels: int, hidden: int, out_channels: int, num_layers: int = 2,
                 dropout: float = 0.5, seed: int = 0, **options):
        super().__init__()
        if kind not in LAYERS:
            raise ConfigError(f"unknown model {kind!r}; choose one of {', '.join(LAYERS)}")
        if num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        unknown = sorted(set(options) - set(OPTIONS[kind]))
        if unknown:
            known = ", ".join(OPTIONS[kind]) or "none"
            raise ConfigError(f"unknown option(s) {unknown} for model {kind!r}; known: {known}")
        self.kind = kind
        self.dropout = check_p(dropout)
        self.seed = int(seed)
        opts = {**OPTIONS[kind], **options}
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        if kind == "gat":
            self.convs = self._gat_layers(dims, **opts)
        else:
            self.convs = torch.nn.ModuleList(LAYERS[kind](a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.steps = 0  # training forward passes, the epoch when none is given

    def _gat_layers(self, dims: list[int], heads: int, out_heads: int, attention_dropout: float) -> torch.nn.ModuleList:
        check_heads(heads)
        check_heads(out_heads)
        convs = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
            last = i == len(dims) - 2
            convs.append(DistGATConv(a if i == 0 else a * heads, b, heads=out_heads if last else heads,
                                     concat=not last, dropout=attention_dropout, seed=self.seed, layer=i))
        return torch.nn.ModuleList(convs)

    def forward(self, x: torch.Tensor, graph: DistGraph, epoch: int | None = None) -> torch.Tensor:
        if self.training:
            epoch = self.steps if epoch is None else epoch
            self.steps = epoch + 1
        gat = self.kind == "gat"
        weights = graph.edge_weight
        if weights is not None and self.kind != "gcn":
            raise ConfigError(f"model {self.kind!r} takes no edge weights (PyG's {LAYERS[self.kind].__name__[4:]} "
                              "has none) and the graph has them: train model=gcn, or load the graph without "
                              "weights (dataset.weighted=false)")
        drop = self.training and self.dropout > 0
        ids = graph.device_node_ids
        if gat and drop:
            x = keyed_dropout(x, ids, self.dropout, seed=self.seed, epoch=epoch, layer=INPUT_LAYER_KEY)
        for i, conv in enumerate(self.convs):
            x = conv(x, graph, tag=f"layer{i}", epoch=epoch) if gat else conv(x, graph, weights, tag=f"layer{i}")
            if i < len(self.convs) - 1:
                x = F.elu(x) if gat else F.relu(x)
                if drop:
                    x = keyed_dropout(x, ids, self.dropout, seed=self.seed, epoch=epoch, layer=i)
        return x

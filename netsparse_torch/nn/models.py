"""The two-layer models the training entry point builds."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn.conv import DistGCNConv, DistSAGEConv
from netsparse_torch.nn.dist_graph import DistGraph
from netsparse_torch.nn.dropout import check_p, keyed_dropout

LAYERS = {"gcn": DistGCNConv, "sage": DistSAGEConv}


class DistGNN(torch.nn.Module):
    """``conv -> ReLU -> dropout -> ... -> conv``, the standard full-graph GCN / GraphSAGE.

    Dropout is counter-based (:func:`~netsparse_torch.nn.dropout.keyed_dropout`): its masks are keyed
    on ``(seed, epoch, layer, node id, feature)``, so the same seed trains the same model at every
    world size, partition and strategy. Pass the ``epoch`` to ``forward``; without it the model
    counts its own training forward passes (one per epoch in full-graph training).
    """

    def __init__(self, kind: str, in_channels: int, hidden: int, out_channels: int, num_layers: int = 2,
                 dropout: float = 0.5, seed: int = 0):
        super().__init__()
        if kind not in LAYERS:
            raise ConfigError(f"unknown model {kind!r}; choose one of {', '.join(LAYERS)}")
        if num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(LAYERS[kind](a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.dropout = check_p(dropout)
        self.seed = int(seed)
        self.steps = 0  # training forward passes, the epoch when none is given

    def forward(self, x: torch.Tensor, graph: DistGraph, epoch: int | None = None) -> torch.Tensor:
        if self.training:
            epoch = self.steps if epoch is None else epoch
            self.steps = epoch + 1
        for i, conv in enumerate(self.convs):
            x = conv(x, graph, tag=f"layer{i}")
            if i < len(self.convs) - 1:
                x = F.relu(x)
                if self.training and self.dropout > 0:
                    x = keyed_dropout(x, graph.node_ids, self.dropout, seed=self.seed, epoch=epoch, layer=i)
        return x

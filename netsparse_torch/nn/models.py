"""The two-layer models the training entry point builds."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn.conv import DistGCNConv, DistSAGEConv
from netsparse_torch.nn.dist_graph import DistGraph

LAYERS = {"gcn": DistGCNConv, "sage": DistSAGEConv}


class DistGNN(torch.nn.Module):
    """``conv -> ReLU -> dropout -> ... -> conv``, the standard full-graph GCN / GraphSAGE."""

    def __init__(self, kind: str, in_channels: int, hidden: int, out_channels: int, num_layers: int = 2,
                 dropout: float = 0.5):
        super().__init__()
        if kind not in LAYERS:
            raise ConfigError(f"unknown model {kind!r}; choose one of {', '.join(LAYERS)}")
        if num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(LAYERS[kind](a, b) for a, b in zip(dims[:-1], dims[1:], strict=True))
        self.dropout = dropout

    def forward(self, x: torch.Tensor, graph: DistGraph) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, graph, tag=f"layer{i}")
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x

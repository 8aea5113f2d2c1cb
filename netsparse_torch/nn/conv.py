"""PyG-style layers whose aggregation is the distributed SpMM.

They subclass PyG's ``GCNConv`` and ``SAGEConv``, so constructor arguments, parameters,
initialisation and ``reset_parameters`` are PyG's own; only the aggregation differs. With one rank
and the same seed they reproduce PyG's outputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn.dist_graph import DistGraph


class DistGCNConv(GCNConv):
    """``GCNConv`` over a :class:`DistGraph`: ``Â (X W) + b`` with the symmetric normalisation."""

    def forward(self, x: torch.Tensor, graph: DistGraph, tag: str = "") -> torch.Tensor:  # type: ignore[override]
        if not self.normalize:
            norm = "sum"
        else:
            norm = "gcn_improved" if self.improved else "gcn"
            if not self.add_self_loops:
                raise ConfigError("DistGCNConv supports add_self_loops=False only with normalize=False")
        out = graph.propagate(self.lin(x), norm, tag)
        if self.bias is not None:
            out = out + self.bias
        return out


class DistSAGEConv(SAGEConv):
    """``SAGEConv`` over a :class:`DistGraph`: ``W_l mean_j(x_j) + W_r x_i`` (``aggr`` mean or sum)."""

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "mean", **kwargs):
        if aggr not in ("mean", "sum", "add"):
            raise ConfigError(f"DistSAGEConv supports aggr='mean' or 'sum', got {aggr!r}")
        super().__init__(in_channels, out_channels, aggr=aggr, **kwargs)
        self._norm = "mean" if aggr == "mean" else "sum"

    def forward(self, x: torch.Tensor, graph: DistGraph, tag: str = "") -> torch.Tensor:  # type: ignore[override]
        x_root = x
        if self.project and hasattr(self, "lin"):
            x = self.lin(x).relu()
        out = self.lin_l(graph.propagate(x, self._norm, tag))
        if self.root_weight:
            out = out + self.lin_r(x_root)
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out

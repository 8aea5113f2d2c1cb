"""Distributed PyG-style layers and models."""

from netsparse_torch.nn.conv import DistGCNConv, DistSAGEConv
from netsparse_torch.nn.dist_graph import DistGraph
from netsparse_torch.nn.dropout import keyed_dropout
from netsparse_torch.nn.models import DistGNN

__all__ = ["DistGCNConv", "DistGNN", "DistGraph", "DistSAGEConv", "keyed_dropout"]

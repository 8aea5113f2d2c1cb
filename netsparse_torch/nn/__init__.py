"""Distributed PyG-style layers and models."""

from netsparse_torch.nn.conv import DistGCNConv, DistSAGEConv
from netsparse_torch.nn.dist_graph import AttentionPattern, DistGraph
from netsparse_torch.nn.dropout import keyed_attention_dropout, keyed_dropout
from netsparse_torch.nn.gat import DistGATConv
from netsparse_torch.nn.models import DistGNN

__all__ = ["AttentionPattern", "DistGATConv", "DistGCNConv", "DistGNN", "DistGraph", "DistSAGEConv",
           "keyed_attention_dropout", "keyed_dropout"]

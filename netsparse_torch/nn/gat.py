"""``DistGATConv``: graph attention (Velickovic et al., ICLR'18) whose edge scores are the distributed
SDDMM.

It subclasses PyG's ``GATConv``, so constructor arguments, parameters, initialisation and
``reset_parameters`` are PyG's own; with one rank and the same seed it reproduces PyG's outputs. A
layer projects its rows, ``h = x W`` (``H`` heads of ``C`` channels), and computes each node's source
and target attention terms ``s = <h, a_src>`` and ``d = <h, a_dst>`` per head. Then:

1. one gather through the graph's strategy brings ``[h | s]`` (width ``H*C + H``) of every remote
   neighbour (:meth:`DistGraph.attention_gather`); its backward returns the gradients of both;
2. the scores ``LeakyReLU(s_j + d_i)`` on the nonzeros ``(i, j)`` (an SDDMM) and their per-row
   softmax run locally (:func:`~netsparse_torch.kernels.edge_softmax`);
3. attention dropout draws from the counter-based generator, keyed on the edge and head
   (:func:`~netsparse_torch.nn.dropout.keyed_attention_dropout`), not from torch's RNG;
4. the aggregation is the local SpMM with one attention value per nonzero and head
   (:func:`~netsparse_torch.kernels.spmm_heads`).
"""

from __future__ import annotations

import torch
from torch_geometric.nn import GATConv

from netsparse_torch.errors import ConfigError
from netsparse_torch.kernels import edge_softmax, spmm_heads
from netsparse_torch.nn.dist_graph import DistGraph
from netsparse_torch.nn.dropout import check_p, keyed_attention_dropout


def check_heads(heads) -> int:
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise ConfigError(f"GAT heads must be an integer >= 1, got {heads!r}")
    return heads


class DistGATConv(GATConv):
    """``GATConv`` over a :class:`DistGraph` (``heads``, ``concat``, ``negative_slope``, ``dropout`` on
    the attention coefficients, ``add_self_loops``, ``bias`` and ``residual`` as in PyG).

    Not supported: bipartite ``in_channels`` pairs and edge features (``edge_dim``; ``fill_value``
    only matters with them). ``seed`` and ``layer`` key the attention dropout masks; ``forward`` takes
    the ``epoch`` (without it the layer counts its own training calls).
    """

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True,
                 negative_slope: float = 0.2, dropout: float = 0.0, add_self_loops: bool = True,
                 edge_dim: int | None = None, bias: bool = True, residual: bool = False, *, seed: int = 0,
                 layer: int = 0, **kwargs):
        if not isinstance(in_channels, int):
            raise ConfigError(f"DistGATConv takes one in_channels (no bipartite pairs), got {in_channels!r}")
        if edge_dim is not None:
            raise ConfigError("DistGATConv does not support edge features (edge_dim must be None)")
        check_heads(heads)
        try:
            check_p(dropout)
        except ConfigError as exc:
            raise ConfigError(f"GAT attention {exc}") from None
        super().__init__(in_channels, out_channels, heads=heads, concat=concat, negative_slope=negative_slope,
                         dropout=float(dropout), add_self_loops=add_self_loops, bias=bias, residual=residual,
                         **kwargs)
        self.seed, self.layer = int(seed), int(layer)
        self.steps = 0  # training forward passes, the epoch when none is given

    def forward(self, x: torch.Tensor, graph: DistGraph, tag: str = "",  # type: ignore[override]
                epoch: int | None = None) -> torch.Tensor:
        H, C = self.heads, self.out_channels
        if self.training:
            epoch = self.steps if epoch is None else epoch
            self.steps = epoch + 1
        h = self.lin(x)
        heads = h.view(-1, H, C)
        src = (heads * self.att_src).sum(-1)
        dst = (heads * self.att_dst).sum(-1)
        gathered, pattern = graph.attention_gather(torch.cat([h, src], 1), self.add_self_loops, tag)
        alpha = edge_softmax(pattern.a, gathered[:, H * C:], dst, self.negative_slope)
        alpha = keyed_attention_dropout(alpha, pattern, self.dropout, seed=self.seed, epoch=epoch or 0,
                                        layer=self.layer, training=self.training)
        out = spmm_heads(pattern.a, alpha, gathered[:, : H * C])
        out = out if self.concat else out.view(-1, H, C).mean(dim=1)
        if self.res is not None:
            out = out + self.res(x)
        if self.bias is not None:
            out = out + self.bias
        return out

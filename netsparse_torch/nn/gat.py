"""``DistGATConv``: graph attention (Velickovic et al., ICLR'18) whose edge scores are the distributed
SDDMM.

It subclasses PyG's ``GATConv``, so parameters, initialisation and ``reset_parameters`` are PyG's
own; with one rank and the same seed it reproduces PyG's outputs (PyG options it does not honour are
refused, :mod:`.options`). A layer projects its rows, ``h = x W`` (``H`` heads of ``C`` channels),
and computes each node's source and target attention terms ``s = <h, a_src>`` and ``d = <h, a_dst>``
per head. Then:

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
from netsparse_torch.nn import options
from netsparse_torch.nn.dist_graph import DistGraph
from netsparse_torch.nn.dropout import check_p, keyed_attention_dropout


def check_heads(heads) -> int:
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise ConfigError(f"GAT heads must be an integer >= 1, got {heads!r}")
    return heads


class DistGATConv(GATConv):
    r"""The graph attentional operator of "Graph Attention Networks" (Velickovic et al., ICLR'18), as
    PyG's ``GATConv``, over a :class:`DistGraph`:

    .. math::
        \mathbf{x}^{\prime}_i = \sum_{j \in \mathcal{N}(i) \cup \{ i \}} \alpha_{i,j}
        \mathbf{\Theta} \mathbf{x}_j,
        \qquad
        \alpha_{i,j} = \frac{\exp\left(\mathrm{LeakyReLU}\left(\mathbf{a}_s^{\top}
        \mathbf{\Theta} \mathbf{x}_j + \mathbf{a}_t^{\top} \mathbf{\Theta} \mathbf{x}_i
        \right)\right)}{\sum_{k \in \mathcal{N}(i) \cup \{ i \}} \exp\left(\mathrm{LeakyReLU}
        \left(\mathbf{a}_s^{\top} \mathbf{\Theta} \mathbf{x}_k + \mathbf{a}_t^{\top}
        \mathbf{\Theta} \mathbf{x}_i \right)\right)},

    per head, with exactly one self loop per node when ``add_self_loops=True`` (existing ones removed
    first, as PyG does) and the graph as it is otherwise (a duplicate edge is one more term). The
    heads are concatenated or averaged, then the residual and the bias are added. The scores are the
    distributed SDDMM: one gather brings :math:`[\mathbf{\Theta}\mathbf{x}_j \,|\,
    \mathbf{a}_s^{\top}\mathbf{\Theta}\mathbf{x}_j]` of every remote neighbour.

    Args:
        in_channels (int): Size of each input sample :math:`F_{in}` (one integer: no bipartite pairs).
        out_channels (int): Size of each output sample per head :math:`C`.
        heads (int, optional): Number of attention heads :math:`H`. (default: ``1``)
        concat (bool, optional): If ``False``, the heads are averaged instead of concatenated.
            (default: ``True``)
        negative_slope (float, optional): LeakyReLU angle of the negative slope. (default: ``0.2``)
        dropout (float, optional): Dropout probability of the attention coefficients, drawn from the
            counter-based generator keyed on ``(seed, epoch, layer, edge, head)``, not from torch's RNG
            (the same masks at every world size). (default: ``0.0``)
        add_self_loops (bool, optional): If ``False``, no self loops are added. (default: ``True``)
        edge_dim (int, optional): Must be ``None``: edge features are refused. (default: ``None``)
        fill_value (float or torch.Tensor or str, optional): Accepted, no effect: PyG uses it for the
            features of inserted self loops, and there are no edge features. (default: ``"mean"``)
        bias (bool, optional): If ``False``, no additive bias. (default: ``True``)
        residual (bool, optional): If ``True``, a residual connection :math:`\mathbf{x}^{\prime}_i
            + \mathbf{W}_r \mathbf{x}_i`. (default: ``False``)
        seed (int, optional): Key of the attention dropout masks. (default: ``0``)
        layer (int, optional): Key of the attention dropout masks, one per layer of a model.
            (default: ``0``)

    PyG's ``MessagePassing`` keywords (``aggr``, ``flow``, ...) are refused, and so is an
    ``edge_attr`` in ``forward`` (edge features need ``edge_dim``). ``forward`` takes the ``epoch``
    (key of the dropout masks; without it the layer counts its own training calls) and does not
    return attention weights. A graph's edge weights do not change the attention: its patterns count
    edges, as PyG's ``GATConv`` does.

    Shapes:
        - **input:** this rank's node features :math:`(|\mathcal{V}_r|, F_{in})`, the
          :class:`DistGraph`, and keyword-only a traffic ``tag`` and the ``epoch``
        - **output:** this rank's node features :math:`(|\mathcal{V}_r|, H * C)` if ``concat=True``,
          else :math:`(|\mathcal{V}_r|, C)`
    """

    propagate = options.local_message_passing("DistGATConv", "propagate")
    edge_updater = options.local_message_passing("DistGATConv", "edge_updater")

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True,
                 negative_slope: float = 0.2, dropout: float = 0.0, add_self_loops: bool = True,
                 edge_dim: int | None = None, fill_value: float | torch.Tensor | str = "mean", bias: bool = True,
                 residual: bool = False, *, seed: int = 0, layer: int = 0, **kwargs):
        options.gat(in_channels, edge_dim, kwargs)
        check_heads(heads)
        try:
            check_p(dropout)
        except ConfigError as exc:
            raise ConfigError(f"GAT attention {exc}") from None
        super().__init__(in_channels, out_channels, heads=heads, concat=concat, negative_slope=negative_slope,
                         dropout=float(dropout), add_self_loops=add_self_loops, fill_value=fill_value, bias=bias,
                         residual=residual)
        self.seed, self.layer = int(seed), int(layer)
        self.steps = 0  # training forward passes, the epoch when none is given

    def forward(self, x: torch.Tensor, graph: DistGraph, edge_attr=None, *,  # type: ignore[override]
                tag: str = "", epoch: int | None = None) -> torch.Tensor:
        options.layer_input("DistGATConv", x, graph)
        options.no_edge_input("DistGATConv", "edge features (edge_attr)", edge_attr, "they need edge_dim, which the "
                              "distributed attention refuses (PyG's GATConv without edge_dim ignores them); call "
                              "conv(x, dg)")
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

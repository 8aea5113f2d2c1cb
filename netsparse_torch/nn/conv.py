"""PyG-style layers whose aggregation is the distributed SpMM.

They subclass PyG's ``GCNConv`` and ``SAGEConv``, so parameters, initialisation and
``reset_parameters`` are PyG's own; only the aggregation differs. With one rank and the same seed
they reproduce PyG's outputs. PyG options they do not honour are refused (:mod:`.options`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv

from netsparse_torch.nn import options
from netsparse_torch.nn.dist_graph import DistGraph


class DistGCNConv(GCNConv):
    r"""The graph convolutional operator of "Semi-supervised Classification with Graph Convolutional
    Networks" (Kipf and Welling, ICLR'17), as PyG's ``GCNConv``, over a :class:`DistGraph`:

    .. math::
        \mathbf{X}^{\prime} = \mathbf{\hat{D}}^{-1/2} \mathbf{\hat{A}} \mathbf{\hat{D}}^{-1/2}
        \mathbf{X} \mathbf{\Theta} + \mathbf{b},

    where :math:`\mathbf{\hat{A}} = \mathbf{A} + \mathbf{I}` is the adjacency with the self loops
    as PyG's ``add_remaining_self_loops`` leaves them (a node's self loops become one, which keeps its
    weight; the inserted ones weigh 2 with ``improved=True``), :math:`\hat{D}_{ii} = \sum_j
    \hat{A}_{ij}` its degree, and :math:`\mathbf{A}` counts duplicate edges, or, when the call passes
    the graph's edge weights, sums their weights. The rank computes its own rows: the product is the
    distributed SpMM of the graph's strategy (remote rows of :math:`\mathbf{X}\mathbf{\Theta}` are
    gathered, the local kernel aggregates).

    Args:
        in_channels (int): Size of each input sample :math:`F_{in}`.
        out_channels (int): Size of each output sample :math:`F_{out}`.
        improved (bool, optional): If ``True``, :math:`\mathbf{\hat{A}} = \mathbf{A} + 2\mathbf{I}`
            for a call that passes edge weights; without them it has no effect, exactly as in PyG's
            ``GCNConv``, whose ``add_remaining_self_loops`` drops the fill value when there are no
            weights (so a ported script gives PyG's numbers). (default: ``False``)
        cached (bool, optional): Accepted, no effect: the plan and the normalised adjacency are
            computed once per :class:`DistGraph` anyway. (default: ``False``)
        add_self_loops (bool, optional): Only its default: the normalisation adds the self loops
            (``False`` with ``normalize=True`` is refused). (default: ``None``)
        normalize (bool, optional): If ``False``, :math:`\mathbf{X}^{\prime} = \mathbf{A}
            \mathbf{X} \mathbf{\Theta} + \mathbf{b}` (sum over neighbours, weighted when the call
            passes the weights, with the graph's self loops as they are and none added).
            (default: ``True``)
        bias (bool, optional): If ``False``, no additive bias :math:`\mathbf{b}`. (default: ``True``)

    PyG's ``MessagePassing`` keywords (``aggr``, ``flow``, ...) are refused. ``forward``'s
    ``edge_weight`` must be the graph's (the ``Data``'s tensor it was built from, or
    ``dg.edge_weight``: :mod:`~netsparse_torch.nn.edge_weights`), since the DistGraph normalises its
    adjacency once; other weights are refused.

    Shapes:
        - **input:** this rank's node features :math:`(|\mathcal{V}_r|, F_{in})`, the
          :class:`DistGraph` (its ``rows`` are the rank's :math:`|\mathcal{V}_r|` nodes), optional
          edge weights :math:`(|\mathcal{E}|)` and a keyword-only traffic ``tag``
        - **output:** this rank's node features :math:`(|\mathcal{V}_r|, F_{out})`
    """

    propagate = options.local_message_passing("DistGCNConv", "propagate")

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False, cached: bool = False,
                 add_self_loops: bool | None = None, normalize: bool = True, bias: bool = True, **kwargs):
        options.gcn(normalize, add_self_loops, kwargs)
        super().__init__(in_channels, out_channels, improved=improved, cached=cached,
                         add_self_loops=add_self_loops, normalize=normalize, bias=bias)

    def forward(self, x: torch.Tensor, graph: DistGraph, edge_weight=None, *,  # type: ignore[override]
                tag: str = "") -> torch.Tensor:
        options.layer_input("DistGCNConv", x, graph)
        if not self.normalize:
            norm = "sum"
        else:  # as PyG's add_remaining_self_loops, which drops the fill value of a call without weights
            norm = "gcn_improved" if self.improved and edge_weight is not None else "gcn"
        if edge_weight is not None:
            norm = graph.weighted_norm(norm, edge_weight, "DistGCNConv")
        out = graph.propagate(self.lin(x), norm, tag)
        if self.bias is not None:
            out = out + self.bias
        return out


class DistSAGEConv(SAGEConv):
    r"""The GraphSAGE operator of "Inductive Representation Learning on Large Graphs" (Hamilton et
    al., NeurIPS'17), as PyG's ``SAGEConv``, over a :class:`DistGraph`:

    .. math::
        \mathbf{x}^{\prime}_i = \mathbf{W}_1 \mathbf{x}_i + \mathbf{W}_2 \cdot
        \mathrm{mean}_{j \in \mathcal{N}(i)} \mathbf{x}_j

    (a duplicate edge counts twice; a node without neighbours aggregates zeros). With
    ``project=True`` the neighbours are first projected, :math:`\mathbf{x}_j \leftarrow
    \mathrm{ReLU}(\mathbf{W}_3 \mathbf{x}_j + \mathbf{b})`; with ``normalize=True`` the output is
    :math:`\ell_2`-normalised, :math:`\mathbf{x}^{\prime}_i / \| \mathbf{x}^{\prime}_i \|_2`. The
    aggregation is the distributed SpMM of the graph's strategy.

    Args:
        in_channels (int): Size of each input sample :math:`F_{in}` (one integer: no bipartite pairs).
        out_channels (int): Size of each output sample :math:`F_{out}`.
        aggr (str, optional): ``"mean"``, or ``"sum"`` (``"add"``) for the plain sum; other PyG
            aggregations are refused. (default: ``"mean"``)
        normalize (bool, optional): If ``True``, the output is :math:`\ell_2`-normalised.
            (default: ``False``)
        root_weight (bool, optional): If ``False``, the layer does not add the transformed root
            node features :math:`\mathbf{W}_1 \mathbf{x}_i`. (default: ``True``)
        project (bool, optional): If ``True``, neighbours are projected by
            :math:`\mathrm{ReLU}(\mathbf{W}_3 \mathbf{x}_j + \mathbf{b})` before the aggregation.
            (default: ``False``)
        bias (bool, optional): If ``False``, :math:`\mathbf{W}_2` has no additive bias.
            (default: ``True``)

    PyG's ``MessagePassing`` keywords (``flow``, ``aggr_kwargs``, ...) are refused, and so are edge
    weights in ``forward``: PyG's ``SAGEConv`` takes none.

    Shapes:
        - **input:** this rank's node features :math:`(|\mathcal{V}_r|, F_{in})`, the
          :class:`DistGraph` and a keyword-only traffic ``tag``
        - **output:** this rank's node features :math:`(|\mathcal{V}_r|, F_{out})`
    """

    propagate = options.local_message_passing("DistSAGEConv", "propagate")

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "mean", normalize: bool = False,
                 root_weight: bool = True, project: bool = False, bias: bool = True, **kwargs):
        options.sage(in_channels, aggr, kwargs)
        super().__init__(in_channels, out_channels, aggr=aggr, normalize=normalize, root_weight=root_weight,
                         project=project, bias=bias)
        self._norm = "mean" if aggr == "mean" else "sum"

    def forward(self, x: torch.Tensor, graph: DistGraph, edge_weight=None, *,  # type: ignore[override]
                tag: str = "") -> torch.Tensor:
        options.layer_input("DistSAGEConv", x, graph)
        options.no_edge_input("DistSAGEConv", "edge weights", edge_weight, "PyG's SAGEConv takes none (every edge "
                              "counts once in its mean or sum); call conv(x, dg)")
        x_root = x
        if self.project:
            x = self.lin(x).relu()
        out = self.lin_l(graph.propagate(x, self._norm, tag))
        if self.root_weight:
            out = out + self.lin_r(x_root)
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out

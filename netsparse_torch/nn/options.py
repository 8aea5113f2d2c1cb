"""The PyG constructor options the distributed layers do not honour, refused with one clear error.

The layers subclass PyG's ``GCNConv``, ``SAGEConv`` and ``GATConv`` and take their arguments. Their
aggregation is the distributed SpMM of a :class:`~netsparse_torch.nn.DistGraph` (and, for attention,
the distributed SDDMM), not PyG's ``MessagePassing.propagate``: an option whose effect that aggregation
does not reproduce is refused here, naming the option and what to do, instead of being accepted and
silently ignored. Options that are honoured (or harmless, like ``GCNConv(cached=True)``: the plan and
the normalised adjacency are cached anyway) are accepted.
"""

from __future__ import annotations

import torch

from netsparse_torch.errors import ConfigError


def _refuse(layer: str, option: str, why: str) -> None:
    raise ConfigError(f"{layer}: {option} is not supported: {why}")


def no_edge_input(layer: str, what: str, value, why: str) -> None:
    """A ``forward`` argument the layer cannot use (edge weights or features): refused, not ignored."""
    if value is not None:
        raise ConfigError(f"{layer}: {what} are not supported: {why}")


def no_message_passing_options(layer: str, kwargs: dict) -> None:
    """PyG's ``MessagePassing`` keywords (``aggr``, ``flow``, ``node_dim``, ``decomposed_layers``, ...)
    configure ``propagate``, which the distributed layers never call."""
    if kwargs:
        names = ", ".join(f"{k}={v!r}" for k, v in sorted(kwargs.items()))
        _refuse(layer, names, "the aggregation is the distributed SpMM of the DistGraph, not PyG's "
                "MessagePassing; remove these arguments")


def layer_input(layer: str, x, graph) -> None:
    """``forward(x, dg)``'s inputs: PyG's ``edge_index`` where the layer takes the rank's DistGraph, or
    features that are not the rank's rows (the whole graph's ``data.x``), are one error saying what to pass."""
    if torch.is_tensor(graph) or not hasattr(graph, "propagate"):
        got = f"a {type(graph).__name__}" + (f" of shape {tuple(graph.shape)}" if torch.is_tensor(graph) else "")
        raise ConfigError(f"{layer}: forward takes the rank's DistGraph where PyG's layer takes edge_index (got "
                          f"{got}): build dg = DistGraph(data) once and call conv(dg.x, dg)")
    if not isinstance(getattr(graph, "row_range", None), slice):
        return  # a stand-in of the DistGraph (netsparse_torch.modeled's probe)
    rows = graph.row_range.stop - graph.row_range.start
    if not torch.is_tensor(x) or x.dim() != 2 or x.size(0) != rows:
        shape = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
        raise ConfigError(f"{layer}: x must be rank {graph.rank}'s rows, a ({rows}, features) tensor, got {shape}: "
                          "pass dg.x, or the whole graph's features indexed by dg.node_ids")


def local_message_passing(layer: str, method: str):
    """The layer's ``propagate`` (and GAT's ``edge_updater``): PyG's message passing over a local
    ``edge_index`` would aggregate this rank's edges only, so a call is refused. Defined in the layer's
    own class body, it also stops PyG from rendering its Jinja template of the method in every process
    that builds the layer: PyG writes each render to a temporary ``.py`` file that it never deletes."""

    def refused(self, *args, **kwargs):
        _refuse(layer, f"{method}()", "PyG's message passing over an edge_index would aggregate this rank's "
                "edges only; the layer aggregates over every rank in forward(x, dg)")

    refused.__name__ = refused.__qualname__ = method
    return refused


def one_input(layer: str, in_channels) -> None:
    """Bipartite ``(source, target)`` channel pairs: a DistGraph is square, one feature matrix."""
    if not isinstance(in_channels, int) or isinstance(in_channels, bool):
        _refuse(layer, f"in_channels={in_channels!r}", "a DistGraph has one node set (no bipartite "
                "pairs); pass one integer")


def gcn(normalize: bool, add_self_loops: bool | None, kwargs: dict) -> None:
    """``GCNConv``: the symmetric normalisation always adds the missing self loops."""
    no_message_passing_options("DistGCNConv", kwargs)
    if normalize and add_self_loops is False:
        _refuse("DistGCNConv", "add_self_loops=False with normalize=True", "the distributed GCN "
                "normalisation is D^-1/2 (A + I) D^-1/2; leave add_self_loops unset, or use "
                "normalize=False for the plain sum over neighbours")
    if not normalize and add_self_loops:
        _refuse("DistGCNConv", "add_self_loops=True with normalize=False", "as in PyG, self loops are "
                "added by the normalisation only; leave add_self_loops unset")


SAGE_AGGREGATIONS = ("mean", "sum", "add")


def sage(in_channels, aggr, kwargs: dict) -> None:
    """``SAGEConv``: the aggregation is a normalised SpMM, so only ``mean`` and ``sum`` exist."""
    no_message_passing_options("DistSAGEConv", kwargs)
    one_input("DistSAGEConv", in_channels)
    if not isinstance(aggr, str) or aggr not in SAGE_AGGREGATIONS:
        _refuse("DistSAGEConv", f"aggr={aggr!r}", "the distributed aggregation is an SpMM, so it is "
                "a mean or a sum; pass aggr='mean' or aggr='sum'")


def gat(in_channels, edge_dim, kwargs: dict) -> None:
    """``GATConv``: the attention scores are an SDDMM of node terms; edges carry no features."""
    no_message_passing_options("DistGATConv", kwargs)
    one_input("DistGATConv", in_channels)
    if edge_dim is not None:
        _refuse("DistGATConv", f"edge_dim={edge_dim!r}", "the distributed attention scores are built "
                "from node features only (no edge features); leave edge_dim=None")

"""The distributed layers take PyG's constructor options: the ones they honour build (and, on one rank,
give PyG's output); the ones they do not honour are refused with an error naming the option."""

import pytest
import torch
from graphs import edge_index, random_graph
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn import DistGATConv, DistGCNConv, DistGraph, DistSAGEConv

REFUSED = [
    (DistGCNConv, {"add_self_loops": False}, "add_self_loops=False with normalize=True"),
    (DistGCNConv, {"normalize": False, "add_self_loops": True}, "add_self_loops=True with normalize=False"),
    (DistGCNConv, {"aggr": "mean"}, "aggr='mean'"),
    (DistGCNConv, {"flow": "target_to_source"}, "flow='target_to_source'"),
    (DistSAGEConv, {"aggr": "max"}, "aggr='max'"),
    (DistSAGEConv, {"aggr": ["mean", "max"]}, r"aggr=\['mean', 'max'\]"),
    (DistSAGEConv, {"in_channels": (4, 6)}, r"in_channels=\(4, 6\)"),
    (DistSAGEConv, {"aggr_kwargs": {}}, "aggr_kwargs={}"),
    (DistGATConv, {"edge_dim": 2}, "edge_dim=2"),
    (DistGATConv, {"in_channels": (4, 6)}, r"in_channels=\(4, 6\)"),
    (DistGATConv, {"aggr": "mean"}, "aggr='mean'"),
]

ACCEPTED = [
    (DistGCNConv, {"improved": True}),
    (DistGCNConv, {"cached": True}),
    (DistGCNConv, {"normalize": False}),
    (DistGCNConv, {"add_self_loops": True, "bias": False}),
    (DistSAGEConv, {"aggr": "sum"}),
    (DistSAGEConv, {"aggr": "add", "normalize": True}),
    (DistSAGEConv, {"root_weight": False, "bias": False}),
    (DistSAGEConv, {"project": True}),
    (DistGATConv, {"heads": 3, "concat": False, "negative_slope": 0.1}),
    (DistGATConv, {"dropout": 0.5, "add_self_loops": False, "fill_value": 0.0}),
    (DistGATConv, {"bias": False, "residual": True, "seed": 7, "layer": 1}),
]


def _build(layer, kwargs):
    kwargs = dict(kwargs)
    return layer(kwargs.pop("in_channels", 4), 3, **kwargs)


@pytest.mark.parametrize("layer,kwargs,words", REFUSED, ids=[f"{c.__name__}-{k}" for c, k, _ in REFUSED])
def test_option_not_honoured_is_refused(layer, kwargs, words):
    with pytest.raises(ConfigError, match=f"{layer.__name__}: {words} is not supported"):
        _build(layer, kwargs)


@pytest.mark.parametrize("layer,kwargs", ACCEPTED, ids=[f"{c.__name__}-{k}" for c, k in ACCEPTED])
def test_honoured_option_builds(layer, kwargs):
    conv = _build(layer, kwargs)
    for name, value in kwargs.items():
        if name == "bias":
            bias = conv.lin_l.bias if layer is DistSAGEConv else conv.bias
            assert (bias is not None) == value
        elif name != "fill_value":  # no effect without edge features, in PyG too
            assert getattr(conv, name) == value, name


PYG_CASES = [
    (DistGCNConv, GCNConv, {"improved": True}),
    (DistGCNConv, GCNConv, {"normalize": False, "bias": False}),
    (DistSAGEConv, SAGEConv, {"project": True, "root_weight": False, "normalize": True}),
    (DistSAGEConv, SAGEConv, {"aggr": "sum"}),
    (DistGATConv, GATConv, {"heads": 2, "concat": False, "residual": True, "add_self_loops": False}),
]


@pytest.mark.parametrize("dist_layer,pyg_layer,kwargs", PYG_CASES,
                         ids=[f"{d.__name__}-{k}" for d, _, k in PYG_CASES])
def test_one_rank_matches_pyg(dist_layer, pyg_layer, kwargs):
    graph = random_graph()
    pyg = pyg_layer(graph.num_features, 5, **kwargs).eval()
    conv = dist_layer(graph.num_features, 5, **kwargs).eval()
    conv.load_state_dict(pyg.state_dict())  # the same parameters: only the aggregation differs
    dg = DistGraph(graph, 0, 1, "rows", "sa")
    edges = edge_index(graph)
    torch.testing.assert_close(conv(graph.x, dg), pyg(graph.x, edges), atol=1e-5, rtol=0)
    if pyg_layer is GCNConv:  # and with the graph's edge weights (improved=True then fills the loops with 2)
        weights = torch.rand(edges.size(1), generator=torch.Generator().manual_seed(1)) + 0.5
        wdg = DistGraph(Data(x=graph.x, y=graph.y, edge_index=edges, edge_weight=weights), 0, 1, "rows", "sa")
        torch.testing.assert_close(conv(graph.x, wdg, weights), pyg(graph.x, edges, weights), atol=1e-5, rtol=0)


def test_improved_changes_the_gcn_output_only_with_edge_weights_as_in_pyg():
    graph = random_graph()
    edges = edge_index(graph)
    ones = torch.ones(edges.size(1))
    dg = DistGraph(Data(x=graph.x, y=graph.y, edge_index=edges, edge_weight=ones), 0, 1, "rows", "sa")
    torch.manual_seed(0)
    plain = DistGCNConv(graph.num_features, 5)
    improved = DistGCNConv(graph.num_features, 5, improved=True)
    improved.load_state_dict(plain.state_dict())
    assert not torch.allclose(plain(graph.x, dg, ones), improved(graph.x, dg, ones), atol=1e-3)
    # PyG's GCNConv(improved=True) without weights is A + I: a ported script keeps PyG's numbers.
    torch.testing.assert_close(improved(graph.x, dg), plain(graph.x, dg), atol=0, rtol=0)
    pyg = GCNConv(graph.num_features, 5, improved=True)
    pyg.load_state_dict(plain.state_dict())
    torch.testing.assert_close(improved(graph.x, dg), pyg(graph.x, edges), atol=1e-5, rtol=0)


LOCAL_MESSAGE_PASSING = [(DistGCNConv, "propagate"), (DistSAGEConv, "propagate"), (DistGATConv, "propagate"),
                         (DistGATConv, "edge_updater")]


@pytest.mark.parametrize("layer,method", LOCAL_MESSAGE_PASSING, ids=[f"{c.__name__}.{m}" for c, m in
                                                                     LOCAL_MESSAGE_PASSING])
def test_pygs_local_message_passing_is_refused(layer, method):
    """conv.propagate(edge_index, ...) would aggregate the rank's own edges only: one error naming it."""
    graph = random_graph()
    conv = layer(graph.num_features, 5)
    with pytest.raises(ConfigError, match=rf"{layer.__name__}: {method}\(\) is not supported: .* forward\(x, dg\)"):
        getattr(conv, method)(edge_index(graph), x=graph.x)


def test_building_the_layers_leaves_no_pyg_template_behind(tmp_path, monkeypatch):
    """PyG renders a MessagePassing subclass's propagate (and edge_updater) from a Jinja template into a
    temporary .py file it never deletes, once per process: every rank of every run would leave its files
    in /tmp. The distributed layers never call them, so nothing is rendered."""
    import copy
    import sys
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    graph = random_graph()
    for layer in (DistGCNConv, DistSAGEConv, DistGATConv):
        conv = copy.deepcopy(layer(graph.num_features, 5))  # a copy (__setstate__) sets the templates again
        assert conv(graph.x, DistGraph(graph, 0, 1, "rows", "sa")).shape[0] == graph.num_nodes
    rendered = [m for m in sys.modules
                if m.startswith("netsparse_torch.") and m.endswith(("_propagate", "_edge_updater"))]
    assert rendered == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("layer", [DistGCNConv, DistSAGEConv, DistGATConv], ids=lambda c: c.__name__)
def test_a_pyg_call_with_edge_index_or_the_whole_graphs_features_is_one_clear_error(layer):
    """conv(x, edge_index), PyG's call, and conv(data.x, dg) on a rank that holds part of the graph each
    name what to pass instead, before any aggregation starts."""
    graph = random_graph()
    conv = layer(graph.num_features, 5)
    with pytest.raises(ConfigError, match=rf"{layer.__name__}: forward takes the rank's DistGraph where PyG's layer "
                                          r"takes edge_index \(got a Tensor of shape \(2, \d+\)\): .*conv\(dg.x, dg\)"):
        conv(graph.x, edge_index(graph))
    dg = DistGraph(graph, 0, 1, "rows", "sa")
    for x in (torch.cat([graph.x, graph.x]), graph.x[:, 0]):
        with pytest.raises(ConfigError, match=rf"{layer.__name__}: x must be rank 0's rows, a \({graph.num_nodes}, "
                                              r"features\) tensor, got .*: pass dg.x"):
            conv(x, dg)

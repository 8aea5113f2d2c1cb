"""Every strategy, layer, partition and world size matches single-process PyG: forward values,
input-feature gradients and every weight gradient (within 1e-5)."""

import itertools

import pytest
import torch
import torch.distributed as dist
from graphs import edge_index, random_graph
from torch_geometric.nn import GCNConv, SAGEConv

from netsparse_torch.launch import launch
from netsparse_torch.nn import DistGCNConv, DistGraph, DistSAGEConv

LAYERS = {"gcn": (DistGCNConv, GCNConv), "sage": (DistSAGEConv, SAGEConv)}
HIDDEN = 5


def _grads(layer, x):
    return {"x": x.grad.clone(), **{n: p.grad.clone() for n, p in layer.named_parameters()}}


def reference(graph, layer: str, weight: torch.Tensor):
    torch.manual_seed(0)
    conv = LAYERS[layer][1](graph.num_features, HIDDEN)
    x = graph.x.clone().requires_grad_()
    out = conv(x, edge_index(graph))
    (out * weight).sum().backward()
    return out.detach(), _grads(conv, x)


def run_layer(rank, world_size, graph, weight, strategy, layer, partition="rows", options=None):
    """One distributed layer forward + backward; rank 0's view of every rank's results."""
    dg = DistGraph(graph, rank, world_size, partition, strategy, options)
    torch.manual_seed(0)
    conv = LAYERS[layer][0](graph.num_features, HIDDEN)
    x = dg.x.clone().requires_grad_()
    out = conv(x, dg)
    (out * weight[dg.rows]).sum().backward()
    grads = _grads(conv, x)
    for name, g in grads.items():
        if name != "x":
            dist.all_reduce(g)  # each rank holds its rows' share of a weight gradient
    mine = {"out": out.detach(), "x": grads.pop("x"), "params": grads, "stats": dg.strategy.stats()}
    gathered = [None] * world_size
    dist.all_gather_object(gathered, mine)
    return gathered


def assert_matches_pyg(per_rank, graph, layer, weight, where):
    out_ref, grads_ref = reference(graph, layer, weight)
    torch.testing.assert_close(torch.cat([r["out"] for r in per_rank]), out_ref, atol=1e-5, rtol=0,
                               msg=f"forward differs: {where}")
    torch.testing.assert_close(torch.cat([r["x"] for r in per_rank]), grads_ref["x"], atol=1e-5, rtol=0,
                               msg=f"input gradient differs: {where}")
    for name, g in per_rank[0]["params"].items():
        torch.testing.assert_close(g, grads_ref[name], atol=1e-5, rtol=0, msg=f"{name} grad: {where}")


def distributed_case(rank, world_size, graph, combos, weight):
    return {(s, layer, p): run_layer(rank, world_size, graph, weight, s, layer, p) for s, layer, p in combos}


COMBOS = list(itertools.product(["su", "sa"], ["gcn", "sage"], ["rows", "nnz"]))


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_strategies_match_pyg(world_size):
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, HIDDEN, generator=torch.Generator().manual_seed(1))
    results = launch(distributed_case, world_size, (graph, COMBOS, weight), timeout_s=60)
    for (strategy, layer, partition), per_rank in results.items():
        assert_matches_pyg(per_rank, graph, layer, weight, f"{strategy}/{layer}/{partition}/ws={world_size}")

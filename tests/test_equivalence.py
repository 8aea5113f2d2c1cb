"""Every strategy, layer, partition and world size matches single-process PyG: forward values,
input-feature gradients and every weight gradient (within 1e-5). Partitions that renumber nodes
(metis) and partitioned datasets read from disk are compared after mapping each rank's rows back to
their original ids (``DistGraph.node_ids``)."""

import itertools
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from graphs import edge_index, random_graph
from torch_geometric.nn import GCNConv, SAGEConv

from netsparse_torch.nn import DistGCNConv, DistGraph, DistSAGEConv
from netsparse_torch.partition import partition_graph, write_partitioned
from netsparse_torch.run.launch import launch

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
    """One distributed layer forward + backward; rank 0's view of every rank's results. ``graph`` is
    the whole graph (cut by ``partition``) or a partitioned dataset's directory."""
    dg = DistGraph(graph, rank, world_size, partition, strategy, options)
    torch.manual_seed(0)
    conv = LAYERS[layer][0](dg.shard.num_features, HIDDEN)
    x = dg.x.clone().requires_grad_()
    out = conv(x, dg)
    (out * weight[dg.node_ids]).sum().backward()
    grads = _grads(conv, x)
    for name, g in grads.items():
        if name != "x":
            dist.all_reduce(g)  # each rank holds its rows' share of a weight gradient
    mine = {"out": out.detach(), "x": grads.pop("x"), "params": grads, "stats": dg.strategy.stats(),
            "node_ids": dg.node_ids}
    gathered = [None] * world_size
    dist.all_gather_object(gathered, mine)
    return gathered


def original_order(per_rank, key):
    """Every rank's rows of ``key`` placed at their original node ids."""
    ids = torch.cat([r["node_ids"] for r in per_rank])
    assert torch.equal(ids.sort().values, torch.arange(ids.numel())), "node_ids are not a permutation"
    rows = torch.cat([r[key] for r in per_rank])
    out = torch.empty_like(rows)
    out[ids] = rows
    return out


def assert_matches_pyg(per_rank, graph, layer, weight, where, tol=1e-5):
    out_ref, grads_ref = reference(graph, layer, weight)
    torch.testing.assert_close(original_order(per_rank, "out"), out_ref, atol=tol, rtol=0,
                               msg=f"forward differs: {where}")
    torch.testing.assert_close(original_order(per_rank, "x"), grads_ref["x"], atol=tol, rtol=0,
                               msg=f"input gradient differs: {where}")
    for name, g in per_rank[0]["params"].items():
        torch.testing.assert_close(g, grads_ref[name], atol=tol, rtol=0, msg=f"{name} grad: {where}")


def distributed_case(rank, world_size, graph, combos, weight, datasets=None):
    """``combos`` of (strategy, layer, partition); a partition naming a key of ``datasets`` reads that
    partitioned dataset's directory instead of cutting the in-memory graph."""
    datasets = datasets or {}
    return {(s, layer, p): run_layer(rank, world_size, datasets.get(p, graph), weight, s, layer, p)
            for s, layer, p in combos}


COMBOS = list(itertools.product(["su", "sa"], ["gcn", "sage"], ["rows", "nnz", "metis"]))
ON_DISK = {f"disk-{mode}": mode for mode in ("rows", "nnz", "metis")}
DISK_COMBOS = list(itertools.product(["su", "sa", "netsparse"], ["gcn", "sage"], ON_DISK))


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_strategies_match_pyg(world_size, tmp_path):
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, HIDDEN, generator=torch.Generator().manual_seed(1))
    datasets = {}
    for name, mode in ON_DISK.items():  # netsparse-partition's output, read back by each rank
        datasets[name] = Path(tmp_path / name)
        write_partitioned(graph, partition_graph(graph.adj, world_size, mode), datasets[name], progress=False)
    results = launch(distributed_case, world_size, (graph, COMBOS + DISK_COMBOS, weight, datasets), timeout_s=60)
    for (strategy, layer, partition), per_rank in results.items():
        if partition.endswith("metis") and world_size > 1:  # the renumbering is really exercised
            assert not torch.equal(torch.cat([r["node_ids"] for r in per_rank]), torch.arange(graph.num_nodes))
        assert_matches_pyg(per_rank, graph, layer, weight, f"{strategy}/{layer}/{partition}/ws={world_size}")

"""Exact payload bytes: sa moves unique-needed-rows x K x 4 per direction, su sum(N - owned) x K x 4."""

import numpy as np
import pytest
import torch
import torch.distributed as dist
from graphs import random_graph

from netsparse_torch.nn import DistGraph
from netsparse_torch.run.launch import launch

K = 7


def moved_bytes(rank, world_size, graph, strategy, partition):
    dg = DistGraph(graph, rank, world_size, partition, strategy)
    x = torch.randn(dg.plan.n_local, K, requires_grad=True)
    dg.propagate(x, "gcn").sum().backward()
    t = torch.tensor([dg.strategy.traffic.forward_bytes, dg.strategy.traffic.backward_bytes])
    dist.all_reduce(t)
    return t.tolist(), dg.bounds


def unique_remote_rows(adj, bounds) -> int:
    total = 0
    for p in range(len(bounds) - 1):
        r0, r1 = bounds[p], bounds[p + 1]
        cols = set(adj[r0:r1].indices.tolist())
        total += sum(1 for c in cols if not r0 <= c < r1)
    return total


@pytest.mark.parametrize("world_size,partition", [(2, "rows"), (3, "nnz"), (4, "rows")])
def test_sa_moves_unique_needed_rows(world_size, partition):
    graph = random_graph()
    (fwd, bwd), bounds = launch(moved_bytes, world_size, (graph, "sa", partition))
    expected = unique_remote_rows(graph.adj, bounds) * K * 4
    assert expected > 0
    assert fwd == expected and bwd == expected


@pytest.mark.parametrize("world_size,partition", [(2, "nnz"), (3, "rows")])
def test_su_moves_every_remote_row(world_size, partition):
    graph = random_graph()
    (fwd, bwd), bounds = launch(moved_bytes, world_size, (graph, "su", partition))
    owned = np.diff(bounds)
    expected = int(sum(graph.num_nodes - o for o in owned)) * K * 4
    assert fwd == expected and bwd == expected


def gat_moved_bytes(rank, world_size, graph, strategy, partition, heads, channels):
    from netsparse_torch.nn import DistGATConv

    dg = DistGraph(graph, rank, world_size, partition, strategy)
    torch.manual_seed(0)
    conv = DistGATConv(graph.num_features, channels, heads=heads)
    conv(dg.x, dg).sum().backward()  # x needs no gradient; the layer's weights do, so the reverse runs
    t = torch.tensor([dg.strategy.traffic.forward_bytes, dg.strategy.traffic.backward_bytes])
    dist.all_reduce(t)
    return t.tolist(), dg.bounds


@pytest.mark.parametrize("strategy,world_size,partition", [("sa", 2, "rows"), ("netsparse", 3, "nnz"),
                                                           ("sa", 4, "metis")])
def test_gat_gathers_unique_needed_rows_once_per_layer(strategy, world_size, partition):
    # One gather of [h | s] per layer: H*C projected features plus H source attention terms per row.
    graph = random_graph()
    heads, channels = 8, 3
    (fwd, bwd), bounds = launch(gat_moved_bytes, world_size, (graph, strategy, partition, heads, channels))
    adj = graph.adj
    if partition == "metis":  # count in the partition's numbering
        from netsparse_torch.partition import partition_graph

        p = partition_graph(graph.adj, world_size, partition)
        adj = graph.adj[p.order][:, p.order]
    expected = unique_remote_rows(adj, bounds) * (heads * channels + heads) * 4
    assert expected > 0
    assert fwd == expected and bwd == expected


def test_gat_su_gathers_every_remote_row():
    graph = random_graph()
    (fwd, bwd), bounds = launch(gat_moved_bytes, 3, (graph, "su", "rows", 2, 5))
    expected = int(sum(graph.num_nodes - o for o in np.diff(bounds))) * (2 * 5 + 2) * 4
    assert fwd == expected and bwd == expected

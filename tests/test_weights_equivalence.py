"""Edge weights and repeated self loops against single-process PyG, at world sizes 1-3, with every
strategy, in-memory (metis: renumbered rows) and through a partitioned dataset read from disk:
``DistGCNConv`` with the graph's weights matches ``GCNConv(x, edge_index, edge_weight)`` (normalised,
``improved=True``, ``normalize=False``) and without them ``GCNConv(x, edge_index)``; SAGE's mean and
GAT's attention count a node's self loops as PyG does, and a graph's weights leave GAT unchanged.
Forward values, input gradients and every weight gradient within 1e-5 (weight gradients also 1e-6
relative)."""

import pytest
import torch
import torch.distributed as dist
from graphs import weighted_data
from test_equivalence import original_order
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from netsparse_torch.graph import from_pyg
from netsparse_torch.nn import DistGATConv, DistGCNConv, DistGraph, DistSAGEConv
from netsparse_torch.partition import partition_graph, write_partitioned
from netsparse_torch.run.launch import launch

HIDDEN = 5
#: (layer, its keyword arguments, whether the call passes the graph's weights)
GCN_CASES = [("gcn", {}, True), ("gcn", {"improved": True}, True), ("gcn", {"normalize": False}, True),
             ("gcn", {}, False), ("gcn", {"normalize": False}, False)]
OTHER_CASES = [("sage", {}, False), ("sage", {"aggr": "sum"}, False), ("gat", {"heads": 2}, False),
               ("gat", {"add_self_loops": False}, False)]
LAYERS = {"gcn": (DistGCNConv, GCNConv), "sage": (DistSAGEConv, SAGEConv), "gat": (DistGATConv, GATConv)}


def _options(strategy: str, world_size: int) -> dict:
    if strategy == "ds":
        return {"replication": world_size if world_size < 3 else 3}
    return {"width": 3, "memory_limit_bytes": 200} if strategy == "twoface" else {}


def _grads(conv, x) -> dict:
    return {"x": x.grad, **{n: p.grad.clone() for n, p in conv.named_parameters()}}


def reference(data, case, weight) -> tuple[torch.Tensor, dict]:
    layer, kwargs, weighted = case
    torch.manual_seed(0)
    conv = LAYERS[layer][1](data.num_features, HIDDEN, **kwargs)
    x = data.x.clone().requires_grad_()
    out = conv(x, data.edge_index, data.edge_weight) if weighted else conv(x, data.edge_index)
    (out * weight[:, : out.size(1)]).sum().backward()
    return out.detach(), _grads(conv, x)


def run_cases(rank, world_size, source, strategy, cases, weight) -> list:
    """Every case on one DistGraph of ``source`` (a Data, cut by metis, or a dataset's directory);
    rank 0's view of every rank's outputs and gradients."""
    dg = DistGraph(source, rank, world_size, "metis", strategy, _options(strategy, world_size))
    # A port passes the Data's own tensor; from disk there is only the graph's weights.
    weights = source.edge_weight if hasattr(source, "edge_weight") else dg.edge_weight
    mine = []
    for layer, kwargs, weighted in cases:
        torch.manual_seed(0)
        conv = LAYERS[layer][0](dg.shard.num_features, HIDDEN, **kwargs)
        x = dg.x.clone().requires_grad_()
        out = conv(x, dg, weights) if weighted else conv(x, dg)
        (out * weight[dg.node_ids, : out.size(1)]).sum().backward()
        grads = _grads(conv, x)
        for name, g in grads.items():
            if name != "x":
                dist.all_reduce(g)  # each rank holds its rows' share of a weight gradient
        mine.append({"out": out.detach(), "x": grads.pop("x"), "params": grads, "node_ids": dg.node_ids})
    gathered = [None] * world_size
    dist.all_gather_object(gathered, mine)
    return gathered


def every_strategy(rank, world_size, data, disk, weight):
    runs = {s: run_cases(rank, world_size, data, s, GCN_CASES, weight) for s in ("su", "sa", "twoface", "ds")}
    runs["netsparse"] = run_cases(rank, world_size, data, "netsparse", GCN_CASES + OTHER_CASES, weight)
    runs["disk"] = run_cases(rank, world_size, disk, "sa", GCN_CASES + OTHER_CASES, weight)
    return runs


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_weights_and_repeated_self_loops_match_pyg(world_size, tmp_path):
    data = weighted_data()
    weight = torch.randn(data.num_nodes, 2 * HIDDEN, generator=torch.Generator().manual_seed(1))
    graph = from_pyg(data)
    write_partitioned(graph, partition_graph(graph.adj, world_size, "metis"), tmp_path, progress=False)
    runs = launch(every_strategy, world_size, (data, str(tmp_path), weight), timeout_s=120)
    for where, per_rank in runs.items():
        cases = GCN_CASES if len(per_rank[0]) == len(GCN_CASES) else GCN_CASES + OTHER_CASES
        for i, case in enumerate(cases):
            out_ref, grads_ref = reference(data, case, weight)
            msg = f"{case} / {where} / ws={world_size}"
            rows = [r[i] for r in per_rank]
            torch.testing.assert_close(original_order(rows, "out"), out_ref, atol=1e-5, rtol=0, msg=msg)
            torch.testing.assert_close(original_order(rows, "x"), grads_ref["x"], atol=1e-5, rtol=0, msg=msg)
            for name, g in rows[0]["params"].items():  # sums of ~40 (normalize=False): float32 rounding is ~1e-5
                torch.testing.assert_close(g, grads_ref[name], atol=1e-5, rtol=1e-6, msg=f"{name} grad: {msg}")

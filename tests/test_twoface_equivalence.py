"""twoface and ds match single-process PyG (forward, input and weight gradients) at world sizes 2-4,
for GCN and SAGE; one launch per world size runs every combination."""

import pytest
import torch
import torch.distributed as dist
from graphs import random_graph
from test_equivalence import HIDDEN, LAYERS, _grads, reference

from netsparse_torch.launch import launch
from netsparse_torch.nn import DistGraph

# Options that force every class of stripe to appear: W=4 on a 41-node graph gives several stripes
# per megatile; a zero-cost async model makes every remote stripe async, a huge one makes all sync.
ALL_ASYNC = {"width": 4}
MIXED = {"width": 3, "memory_limit_bytes": 200}


def combos(world_size):
    out = [("twoface", ALL_ASYNC), ("twoface", MIXED)]
    out += [("ds", {"replication": c}) for c in (1, 2, 4) if world_size % c == 0 and c <= world_size]
    if world_size == 3:
        out.append(("ds", {"replication": 3}))
    return [(s, o, layer) for s, o in out for layer in ("gcn", "sage")]


def case(rank, world_size, graph, weight):
    results = []
    for strategy, options, layer in combos(world_size):
        dg = DistGraph(graph, rank, world_size, "nnz", strategy, options)
        torch.manual_seed(0)
        conv = LAYERS[layer][0](graph.num_features, HIDDEN)
        x = dg.x.clone().requires_grad_()
        out = conv(x, dg)
        (out * weight[dg.rows]).sum().backward()
        grads = _grads(conv, x)
        for name, g in grads.items():
            if name != "x":
                dist.all_reduce(g)
        mine = {"out": out.detach(), "x": grads.pop("x"), "params": grads, "stats": dg.strategy.stats()}
        gathered = [None] * world_size
        dist.all_gather_object(gathered, mine)
        results.append(((strategy, str(options), layer), gathered))
    return results


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_twoface_and_ds_match_pyg(world_size):
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, HIDDEN, generator=torch.Generator().manual_seed(1))
    kinds = set()
    for (strategy, options, layer), per_rank in launch(case, world_size, (graph, weight), timeout_s=60):
        out_ref, grads_ref = reference(graph, layer, weight)
        where = f"{strategy}{options}/{layer}/ws={world_size}"
        torch.testing.assert_close(torch.cat([r["out"] for r in per_rank]), out_ref, atol=1e-5, rtol=0,
                                   msg=f"forward differs: {where}")
        torch.testing.assert_close(torch.cat([r["x"] for r in per_rank]), grads_ref["x"], atol=1e-5, rtol=0,
                                   msg=f"input gradient differs: {where}")
        for name, g in per_rank[0]["params"].items():
            torch.testing.assert_close(g, grads_ref[name], atol=1e-5, rtol=0, msg=f"{name} grad: {where}")
        if strategy == "twoface":
            for r in per_rank:
                kinds |= {k for k in ("sync", "async") if r["stats"][f"{k}_stripes"] > 0}
    assert kinds == {"sync", "async"}, "the cases must exercise both sync and async stripes"

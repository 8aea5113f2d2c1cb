"""DistGATConv matches single-process PyG GATConv: forward values, the input-feature
gradient and every weight gradient within 1e-5, for heads 1 and 8, concat on and off, self loops on
and off, at world sizes 1-4, with every strategy that can gather (su, sa, netsparse, twoface), on
in-memory partitions (rows, nnz, metis) and on partitioned datasets read from disk."""

import itertools
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from devices import requires_cuda
from graphs import edge_index, random_graph
from test_equivalence import original_order
from torch_geometric.nn import GATConv

from netsparse_torch.nn import DistGATConv, DistGraph
from netsparse_torch.partition import partition_graph, write_partitioned
from netsparse_torch.run.launch import launch

C = 3
# (heads, concat, add_self_loops, residual): both head counts, both concat modes, both loop modes.
LAYERS = [(1, True, True, False), (8, True, False, False), (8, False, True, True), (1, False, False, False)]
STRATEGIES = ["su", "sa", "netsparse", "twoface"]


def _width(heads, concat):
    return C * (heads if concat else 1)


def reference(graph, spec, weight):
    heads, concat, loops, residual = spec
    torch.manual_seed(0)
    conv = GATConv(graph.num_features, C, heads=heads, concat=concat, add_self_loops=loops, residual=residual)
    x = graph.x.clone().requires_grad_()
    out = conv(x, edge_index(graph))
    (out * weight[:, : out.size(1)]).sum().backward()
    return out.detach(), {"x": x.grad.clone(), **{n: p.grad.clone() for n, p in conv.named_parameters()}}


def run_layers(rank, world_size, data, partition, strategy, weight, device="cpu", options=None):
    dg = DistGraph(data, rank, world_size, partition, strategy, options, device=device)
    per_spec = {}
    for spec in LAYERS:
        heads, concat, loops, residual = spec
        torch.manual_seed(0)
        conv = DistGATConv(dg.shard.num_features, C, heads=heads, concat=concat, add_self_loops=loops,
                           residual=residual).to(dg.device)
        x = dg.x.clone().requires_grad_()
        out = conv(x, dg)
        (out * weight[dg.node_ids, : out.size(1)].to(dg.device)).sum().backward()
        params = {n: p.grad.clone() for n, p in conv.named_parameters()}
        for g in params.values():
            if world_size > 1:
                dist.all_reduce(g)  # each rank holds its rows' share of a weight gradient
        per_spec[spec] = {"out": out.detach().cpu(), "x": x.grad.cpu(), "node_ids": dg.node_ids,
                          "params": {n: g.cpu() for n, g in params.items()}}
    gathered = [None] * world_size
    dist.all_gather_object(gathered, per_spec)
    return gathered


def cases(rank, world_size, graph, combos, weight, datasets, device="cpu", options=None):
    return {(s, p): run_layers(rank, world_size, datasets.get(p, graph), p, s, weight, device, options)
            for s, p in combos}


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_gat_matches_pyg(world_size, tmp_path):
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, 8 * C, generator=torch.Generator().manual_seed(1))
    datasets = {}
    for mode in ("rows", "metis"):
        datasets[f"disk-{mode}"] = Path(tmp_path / mode)
        write_partitioned(graph, partition_graph(graph.adj, world_size, mode), datasets[f"disk-{mode}"], progress=False)
    combos = list(itertools.product(STRATEGIES, ["rows", "nnz", "metis"]))
    combos += [("sa", "disk-rows"), ("netsparse", "disk-metis"), ("twoface", "disk-metis")]
    results = launch(cases, world_size, (graph, combos, weight, datasets), timeout_s=120)
    assert_all_match(results, graph, weight, world_size)


CUDA = requires_cuda


@pytest.mark.parametrize("world_size", [1, 2])
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=CUDA), "cpu-staged"])
def test_gat_on_a_device_matches_pyg(world_size, device):
    """On CUDA (2 ranks share the GPU), every gathering strategy; its CPU twin runs netsparse with the
    RIG halo staged through host buffers, as on a GPU."""
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, 8 * C, generator=torch.Generator().manual_seed(1))
    if device == "cuda":
        combos, options = [(s, "rows") for s in STRATEGIES], None
    else:
        device, combos, options = "cpu", [("netsparse", "nnz")], {"stage": True}
    results = launch(cases, world_size, (graph, combos, weight, {}, device, options), timeout_s=180)
    # float32 on the GPU sums in another order than the CPU reference (no TF32: torch's default)
    assert_all_match(results, graph, weight, world_size, tol=1e-4 if device == "cuda" else 1e-5)


def assert_all_match(results, graph, weight, world_size, tol=1e-5):
    refs = {spec: reference(graph, spec, weight) for spec in LAYERS}
    for (strategy, partition), per_rank in results.items():
        for spec in LAYERS:
            where = f"{strategy}/{partition}/ws={world_size}/heads,concat,loops,residual={spec}"
            rows = [r[spec] for r in per_rank]
            out_ref, grads_ref = refs[spec]
            torch.testing.assert_close(original_order(rows, "out"), out_ref, atol=tol, rtol=0,
                                       msg=f"forward differs: {where}")
            torch.testing.assert_close(original_order(rows, "x"), grads_ref["x"], atol=tol, rtol=0,
                                       msg=f"input gradient differs: {where}")
            assert set(rows[0]["params"]) == set(grads_ref) - {"x"}
            for name, g in rows[0]["params"].items():
                torch.testing.assert_close(g, grads_ref[name], atol=tol, rtol=0, msg=f"{name} grad: {where}")

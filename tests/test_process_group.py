"""Explicit process groups: 4 ranks split into two subgroups of 2 (``dist.new_group``), each running
the distributed SpMM of its own graph with every strategy that supports subgroups. The two halves
call their strategies in opposite orders, so a single collective issued on the default group instead
of the subgroup would pair mismatched calls and fail. Results are checked against a float64 scipy
product of the whole graph's normalised adjacency; dense shifting refuses a subgroup."""

import numpy as np
import pytest
import torch
import torch.distributed as dist
from graphs import random_graph

from netsparse_torch.comm import make_strategy
from netsparse_torch.errors import ConfigError
from netsparse_torch.nn import DistGraph
from netsparse_torch.partition import ShardBuilder, partition_graph, rank_shard
from netsparse_torch.plan import build_plan
from netsparse_torch.run.launch import launch

STRATEGIES = ["su", "sa", "twoface", "netsparse"]
HALF = 2  # ranks per subgroup
K = 5


def graph_of(half: int):
    return random_graph(n=37 + 11 * half, m=180, features=K, seed=half)


def propagate(shard, plan, name: str, group):
    """``A x X`` and the gradient of ``sum(A x X * W)`` for this rank's rows (``W`` keyed on global row)."""
    strategy = make_strategy(name, plan, group=group, **({"pending_capacity": 4} if name == "netsparse" else {}))
    x = shard.x.clone().requires_grad_()
    out = strategy.propagate(plan.localize(shard.normalized("gcn"), strategy.space), x)
    weight = torch.arange(out.numel(), dtype=torch.float32).view_as(out) + plan.row_start * K
    (out * weight.remainder(7)).sum().backward()
    return out.detach(), x.grad


def subgroup_case(rank, world_size):
    groups = [dist.new_group(list(range(h * HALF, (h + 1) * HALF))) for h in range(world_size // HALF)]
    half = rank // HALF
    group = groups[half]
    sub_rank = dist.get_rank(group)
    graph = graph_of(half)
    shard = ShardBuilder(graph, partition_graph(graph.adj, HALF, "rows")).shard(sub_rank)
    plan = build_plan(shard.adj, shard.bounds, sub_rank, HALF, group=group)
    order = STRATEGIES if half == 0 else STRATEGIES[::-1]
    mine = {name: propagate(shard, plan, name, group) for name in order}
    mine["rows"] = (plan.row_start, plan.n_local)
    # The layers' graph on the subgroup: its shard check, plan, strategy and id lookup use the group.
    dg = DistGraph(graph, sub_rank, HALF, strategy="sa", group=group)
    mine["DistGraph"] = (dg.propagate(dg.x, "gcn").detach(), dg.original_ids(np.arange(graph.adj.shape[0])))
    with pytest.raises(ConfigError, match="default process group"):
        make_strategy("ds", plan, group=group)
    with pytest.raises(ConfigError, match="build the plan with the same group"):
        make_strategy("sa", plan)  # a plan of the subgroup used on the default group
    everyone = [None] * world_size
    dist.all_gather_object(everyone, (half, mine))
    return everyone


def reference(half: int):
    """Float64 ``A x X`` and ``A^T (W)`` of the whole graph in one process."""
    graph = graph_of(half)
    a = rank_shard(graph, 0, 1).normalized("gcn").astype(np.float64)
    x = graph.x.double().numpy()
    out = a @ x
    weight = np.remainder(np.arange(out.size, dtype=np.float64).reshape(out.shape), 7)
    return out, a.T @ weight


def test_subgroups_run_their_own_graphs():
    results = launch(subgroup_case, 2 * HALF, timeout_s=120)
    for half in range(2):
        out_ref, grad_ref = reference(half)
        members = [mine for h, mine in results if h == half]
        assert len(members) == HALF
        for name in STRATEGIES:
            out = np.zeros_like(out_ref)
            grad = np.zeros_like(grad_ref)
            for mine in members:
                r0, n = mine["rows"]
                out[r0:r0 + n], grad[r0:r0 + n] = mine[name][0].numpy(), mine[name][1].numpy()
            np.testing.assert_allclose(out, out_ref, atol=1e-5, rtol=0, err_msg=f"half {half} {name}: forward")
            np.testing.assert_allclose(grad, grad_ref, atol=1e-5, rtol=0, err_msg=f"half {half} {name}: gradient")
        out = np.zeros_like(out_ref)
        for mine in members:
            r0, n = mine["rows"]
            out[r0:r0 + n] = mine["DistGraph"][0].numpy()
            assert mine["DistGraph"][1].tolist() == list(range(out_ref.shape[0]))  # rows: ids are the rows
        np.testing.assert_allclose(out, out_ref, atol=1e-5, rtol=0, err_msg=f"half {half} DistGraph: forward")

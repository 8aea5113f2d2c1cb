"""twoface and ds match single-process PyG (forward, input and weight gradients) at world sizes 2-4,
for GCN and SAGE; one launch per world size runs every combination."""

import pytest
import torch
from graphs import random_graph
from test_equivalence import HIDDEN, assert_matches_pyg, run_layer

from hw_models.twoface import Coefficients
from netsparse_torch.run.launch import launch

# Options that force every class of stripe to appear: W=4 on a 41-node graph gives several stripes
# per megatile; a zero-cost async model makes every remote stripe async, a huge one makes all sync.
ALL_ASYNC = {"width": 4}
MIXED = {"width": 3, "memory_limit_bytes": 200}


def combos(world_size, profiles=()):
    out = [("twoface", ALL_ASYNC), ("twoface", MIXED)] + [("twoface", {"width": 4, "profile": p}) for p in profiles]
    out += [("ds", {"replication": c}) for c in (1, 2, 4) if world_size % c == 0 and c <= world_size]
    if world_size == 3:
        out.append(("ds", {"replication": 3}))
    return [(s, o, layer) for s, o in out for layer in ("gcn", "sage")]


def case(rank, world_size, graph, weight, profiles):
    return [((strategy, str(options), layer),
             run_layer(rank, world_size, graph, weight, strategy, layer, "nnz", options))
            for strategy, options, layer in combos(world_size, profiles)]


def overlap_sum_profiles(folder):
    """Two ``overlap=sum`` profiles: a dear synchronous stripe (every remote stripe asynchronous: no rank
    runs the synchronous exchange) and a dear asynchronous one (all synchronous: no asynchronous one)."""
    return [str(Coefficients(**coeffs).save(folder / f"{name}.json", {"overlap": "sum"}))
            for name, coeffs in (("all_async", {"alpha_s": 1.0}), ("all_sync", {"alpha_a": 1.0}))]


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_twoface_and_ds_match_pyg(world_size, tmp_path):
    graph = random_graph()
    weight = torch.randn(graph.num_nodes, HIDDEN, generator=torch.Generator().manual_seed(1))
    kinds = set()
    profiles = overlap_sum_profiles(tmp_path)
    for (strategy, options, layer), per_rank in launch(case, world_size, (graph, weight, profiles), timeout_s=60):
        assert_matches_pyg(per_rank, graph, layer, weight, f"{strategy}{options}/{layer}/ws={world_size}")
        if "all_async" in options:
            assert all(r["stats"]["sync_stripes"] == 0 and r["stats"]["overlap"] == "sum" for r in per_rank)
        if "all_sync" in options:
            assert all(r["stats"]["async_stripes"] == 0 for r in per_rank)
        if strategy == "twoface":
            for r in per_rank:
                kinds |= {k for k in ("sync", "async") if r["stats"][f"{k}_stripes"] > 0}
    assert kinds == {"sync", "async"}, "the cases must exercise both sync and async stripes"

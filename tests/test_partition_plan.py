"""Partitions and the plan, checked against direct numpy computations."""

import numpy as np
import pytest
import torch
from graphs import random_graph

from hw_models.bounds import row_bounds
from netsparse_torch.errors import ConfigError
from netsparse_torch.plan import Plan, build_plan


@pytest.mark.parametrize("n,ws", [(10, 3), (41, 4), (7, 7), (100, 1)])
def test_rows_partition_is_array_split(n, ws):
    sizes = [len(a) for a in np.array_split(range(n), ws)]
    assert np.diff(row_bounds(n, ws, "rows")).tolist() == sizes


def test_nnz_partition_balances_nonzeros():
    indptr = np.concatenate([[0], np.cumsum([100, 1, 1, 1, 1, 1, 1, 1, 1, 92])])
    b = row_bounds(10, 2, "nnz", indptr)
    assert b.tolist() == [0, 1, 10]  # 100 | 100
    assert np.all(np.diff(row_bounds(10, 10, "nnz", indptr)) == 1)  # every block keeps a row


def test_partition_errors():
    with pytest.raises(ConfigError, match="larger than the graph's 5 rows"):
        row_bounds(5, 6)
    with pytest.raises(ConfigError, match="unknown partition"):
        row_bounds(5, 2, "cols")


def test_single_rank_plan_has_no_halo():
    g = random_graph()
    plan = build_plan(g.adj, np.array([0, g.num_nodes]), 0, 1)
    assert plan.n_halo == 0 and plan.n_local == g.num_nodes


def test_combined_columns_put_halo_rows_after_own_rows():
    g = random_graph()
    bounds = np.array([0, 10, g.num_nodes])
    cols = np.unique(g.adj[10:].indices)
    halo = cols[cols < 10]  # rank 1's remote columns, all owned by rank 0
    plan = Plan(1, 2, bounds, halo, [halo.size, 0], torch.empty(0, dtype=torch.long), [0, 0])
    probe = np.array([10, g.num_nodes - 1, int(halo[0]), int(halo[-1])])
    n_local = g.num_nodes - 10
    assert plan.combined_columns(probe).tolist() == [0, n_local - 1, n_local, n_local + halo.size - 1]

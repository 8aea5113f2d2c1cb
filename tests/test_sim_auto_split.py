"""``snic.rig_auto_split`` (docs/simulator.md, "What `batch_size=auto` splits"): where a node's RIG
commands end when auto splits its remote idxs, checked against a tiny Python reference; a heavy remote
row by hand; the breakdown by hand and summing; the consistency with ``rig_local_idxs=host_filtered``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sim_breakdown import _sums_exactly, assert_lone_pr_path
from test_simulator import P4, mat, run

from hw_models import definitions
from hw_models.native import sim as _sim
from hw_models.params import HardwareParams
from hw_models.unit_args import auto_batch_size


def reference_ends(idx: list[int], lo: int, hi: int, batch: int) -> list[int]:
    """The documented cut: after the (k batch)-th remote idx for every k but the last command's, whose
    end is the stream's (its trailing local idxs join it)."""
    if not idx:
        return []
    remote = [i for i, c in enumerate(idx) if not lo <= c < hi]
    commands = max(1, -(-len(remote) // batch))
    return [remote[k * batch - 1] + 1 for k in range(1, commands)] + [len(idx)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 19), max_size=60), st.integers(0, 20), st.integers(0, 20), st.integers(1, 9))
def test_command_ends_match_the_reference(idx, a, b, batch):
    lo, hi = min(a, b), max(a, b)
    got = _sim.remote_command_ends(np.asarray(idx, dtype=np.int64), lo, hi, batch)
    assert got == reference_ends(idx, lo, hi, batch)


def test_command_ends_by_hand():
    # columns 4..7 local; remote at positions 0, 1, 3, 4, 7; batch 2: cuts after the 2nd and 4th remote
    idx = [0, 1, 5, 2, 3, 6, 4, 9]
    assert _sim.remote_command_ends(np.asarray(idx), 4, 8, 2) == [2, 5, 8]
    assert _sim.remote_command_ends(np.asarray([0, 1, 5, 6]), 4, 8, 2) == [4]  # trailing locals join
    assert _sim.remote_command_ends(np.asarray([5, 6]), 4, 8, 2) == [2]  # no remote idx: one command
    assert _sim.remote_command_ends(np.asarray([], dtype=np.int64), 4, 8, 2) == []


def heavy_row_params(split: str) -> HardwareParams:
    return P4.replace(snic={"rig_client_units": 2, "rig_auto_split": split})


@pytest.mark.parametrize("split", ["idxs", "remote_idxs"])
def test_a_heavy_remote_row_by_hand(split):
    """Node 0 (columns 0-15 of 64, two client units) reads rows 0 and 1 of 6 remote idxs each (node 3's
    columns 48-53, then 48 again and 54-58), then 12 local idxs (row 2). By idx count (n = 24, batch 12:
    s = 12, floor 24 / 4 = 6) the first command carries all 12 remote idxs and the second none; the
    repeated 48 coalesces in the first unit's Pending PR Table, 11 read PRs. By remote idx count
    (n = 12, batch 6: s = 6, floor 12 / 4 = 3) each command carries 6 remote idxs, the second one also
    the 12 local ones; the two 48s are on two units, 12 read PRs. Read PRs are the commands' distinct
    remote idxs, summed (each command on its own unit, all PRs pending at once)."""
    rows = [(0, c) for c in range(48, 54)] + [(1, c) for c in [48, *range(54, 59)]] + [(2, c) for c in range(12)]
    a = mat(rows, 64)
    idx = a.indices[: a.indptr[16]].tolist()
    batch = {"idxs": 12, "remote_idxs": 6}[split]
    ends = {"idxs": [12, 24], "remote_idxs": reference_ends(idx, 0, 16, 6)}[split]
    assert ends == ([12, 24] if split == "idxs" else [6, 24])
    starts = [0, *ends[:-1]]
    remote = [[c for c in idx[s:e] if c >= 16] for s, e in zip(starts, ends, strict=True)]
    assert [len(r) for r in remote] == ([12, 0] if split == "idxs" else [6, 6])
    r = run(a, params=heavy_row_params(split))
    nodes = r.counters["nodes"]
    assert nodes["batch"][0] == batch and nodes["commands"][0] == 2
    assert nodes["idxs"][0] == 24 and nodes["local"][0] == 12  # every idx still carried and scanned
    assert nodes["read_prs"][0] == sum(len(set(x)) for x in remote)
    assert nodes["coalesced"][0] + nodes["filtered"][0] == 12 - nodes["read_prs"][0]
    _sums_exactly(r)


def test_remote_split_breakdown_by_hand():
    """Node 0 (columns 0-1 of 8) reads idx 6 (node 3's, row 0) and its own 0 and 1 (row 1). Split by
    remote idx count (one remote idx: batch 1) the three idxs are one command: idx 6 is scanned first,
    the local ones after it, long before its response, so the node's time and its breakdown are the
    lone read PR's with a 12 B idx DMA (its first scan cycle is still 1321: test_sim_breakdown)."""
    r = run(mat([(0, 6), (1, 0), (1, 1)], 8), params=P4.replace(snic={"rig_auto_split": "remote_idxs"}))
    assert r.counters["nodes"]["commands"][0] == 1 and r.counters["nodes"]["local"][0] == 2
    assert_lone_pr_path(r)


def skewed(seed: int, n: int = 3000, nnz: int = 20000) -> sp.csr_matrix:
    """Random reads plus a few heavy rows of remote idxs (what the split is for)."""
    rng = np.random.default_rng(seed)
    rows = np.r_[rng.integers(0, n, nnz), np.repeat(rng.integers(0, n, 4), 1500)]
    cols = rng.integers(0, n, len(rows))
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


def remote_counts(a: sp.csr_matrix, nodes: int) -> list[int]:
    w = definitions.workload(a, nodes)
    out = []
    for q in range(nodes):
        c = a.indices[a.indptr[w.row_bounds[q]]:a.indptr[w.row_bounds[q + 1]]]
        out.append(int(np.sum((c < w.col_bounds[q]) | (c >= w.col_bounds[q + 1]))))
    return out


def cluster(**snic) -> HardwareParams:
    return HardwareParams.from_dict({"cluster": {"nodes": 8, "rack_size": 4},
                                     "snic": {"pending_pr_table": 16, **snic}})


def test_remote_split_counts_and_breakdown_on_a_skewed_stream():
    """Every node's batch is auto's rule of remote counts, its commands ceil(remote / batch), every idx
    still carried (idxs and local as by idx count), and the breakdown sums to every node's time."""
    a = skewed(7)
    r = run(a, params=cluster(rig_auto_split="remote_idxs"))
    base = run(a, params=cluster())
    remote = remote_counts(a, 8)
    batch = [auto_batch_size(m, max(remote), cluster()) for m in remote]
    nodes = r.counters["nodes"]
    assert nodes["batch"] == batch
    assert nodes["commands"] == [-(-m // b) for m, b in zip(remote, batch, strict=True)]
    assert nodes["batch"] != base.counters["nodes"]["batch"]  # the cuts moved
    for c in ("idxs", "local"):
        assert nodes[c] == base.counters["nodes"][c]
    _sums_exactly(r)


def same_report(a, b) -> None:
    """Node times, every counter (the host's wall clock aside) and the breakdown, bit for bit."""
    assert a.node_time_s.tolist() == b.node_time_s.tolist()
    assert {k: v for k, v in a.counters.items() if k != "wall_clock_s"} == \
        {k: v for k, v in b.counters.items() if k != "wall_clock_s"}
    assert a.critical_path.node_s.tolist() == b.critical_path.node_s.tolist()


def test_host_filtered_streams_split_the_same_either_way():
    """With only remote idxs in the stream, cutting at every batch idxs and at every batch remote idxs
    are the same cut: identical reports."""
    a = skewed(11)
    r = {s: run(a, params=cluster(rig_local_idxs="host_filtered", rig_auto_split=s)) for s in ("idxs", "remote_idxs")}
    same_report(r["idxs"], r["remote_idxs"])


@pytest.mark.parametrize("batch", [64, float("inf")])
def test_a_fixed_batch_ignores_the_split(batch):
    a = skewed(3)
    r = {s: run(a, params=cluster(rig_batch_size=batch, rig_auto_split=s)) for s in ("idxs", "remote_idxs")}
    same_report(r["idxs"], r["remote_idxs"])

"""Partitioners, shards and partitioned datasets on disk, checked against hand-worked cases and direct
dense computations on the original graph (never against values the code under test produced)."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from graphs import random_graph

from netsparse_torch.errors import ConfigError, DatasetNotFoundError, PartitionedDatasetError
from netsparse_torch.graph import csr_from_edges
from netsparse_torch.partition import PartitionedDataset, partition_graph, rank_shard, write_partitioned
from netsparse_torch.partition.metis import _fill_empty_parts, metis_parts, symmetric_pattern
from netsparse_torch.run.launch import launch

MODES = ("rows", "nnz", "metis")


def two_triangles() -> sp.csr_matrix:
    """Triangles {0, 2, 4} and {1, 3, 5}, joined by the one edge 4 - 5 (both directions)."""
    pairs = np.array([(0, 2), (2, 4), (0, 4), (1, 3), (3, 5), (1, 5), (4, 5)])
    src, dst = np.concatenate([pairs[:, 0], pairs[:, 1]]), np.concatenate([pairs[:, 1], pairs[:, 0]])
    return csr_from_edges(src, dst, 6, "two-triangles")


def test_symmetric_pattern_drops_the_diagonal_and_direction():
    a = sp.csr_matrix((np.ones(3), ([0, 1, 2], [1, 1, 0])), shape=(3, 3))  # 1 -> 0, a self loop at 1, 0 -> 2
    s = symmetric_pattern(a)
    assert sorted(zip(*s.nonzero(), strict=True)) == [(0, 1), (0, 2), (1, 0), (2, 0)]


def test_metis_cuts_the_bridge_and_renumbers_parts_contiguously():
    p = partition_graph(two_triangles(), 2, "metis")
    assert p.bounds.tolist() == [0, 3, 6]
    assert {tuple(p.node_ids(0)), tuple(p.node_ids(1))} == {(0, 2, 4), (1, 3, 5)}  # each part by original id
    new = p.new_ids()
    assert np.array_equal(new[p.order], np.arange(6))
    assert p.settings == {"seed": 0, "weights": "nnz"}


def test_metis_with_more_parts_than_nodes_is_one_clear_error():
    with pytest.raises(ConfigError, match="7 parts but the graph has only 6 nodes"):
        metis_parts(two_triangles(), 7)


def test_an_empty_metis_part_takes_a_node_of_the_largest_part():
    assert _fill_empty_parts(np.array([0, 0, 0, 2]), 3).tolist() == [0, 0, 1, 2]


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_partition_load_reassemble(tmp_path, mode):
    g = random_graph(n=41, m=160)
    manifest = write_partitioned(g, partition_graph(g.adj, 3, mode), tmp_path, progress=False)
    ds = PartitionedDataset(tmp_path)
    back = ds.assemble()
    assert back.name == g.name and back.num_classes == g.num_classes
    assert np.array_equal(back.adj.toarray(), g.adj.toarray())  # values too: duplicate edges are counts
    for field in ("x", "y", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(getattr(back, field), getattr(g, field)), field
    assert sum(p["rows"] for p in manifest["per_part"]) == g.num_nodes
    assert sum(p["nnz"] for p in manifest["per_part"]) == g.adj.nnz


@pytest.mark.parametrize("mode", MODES)
def test_shard_degree_information_matches_the_whole_graph(tmp_path, mode):
    g = random_graph(n=41, m=160, seed=1)  # node 31 has two self loops
    assert g.adj[31, 31] == 2
    write_partitioned(g, partition_graph(g.adj, 3, mode), tmp_path, progress=False)
    ds = PartitionedDataset(tmp_path)
    dense = g.adj.toarray().astype(np.float64)
    order = np.load(tmp_path / "permutation" / "order.npy")
    part_of = np.repeat(np.arange(3), np.diff(ds.bounds))  # part of each new id
    for part in range(3):
        s = ds.load_shard(part)
        r0, r1 = ds.bounds[part], ds.bounds[part + 1]
        assert np.array_equal(s.node_ids, order[r0:r1])
        # the rows, in the new numbering, directly from the dense original
        assert np.array_equal(s.adj.toarray(), dense[order[r0:r1]][:, order])
        touched = np.flatnonzero(dense[order[r0:r1]][:, order].any(axis=0))
        assert s.halo_ids.tolist() == [c for c in touched if not r0 <= c < r1]
        for ids, row_sum, loop in ((s.node_ids, s.row_sum, s.row_loop), (order[s.halo_ids], s.halo_sum, s.halo_loop)):
            has_loop = dense[ids, ids] != 0
            # self loops count once, as PyG's add_remaining_self_loops keeps one
            assert np.array_equal(row_sum, dense[ids].sum(axis=1) - dense[ids, ids] + has_loop)
            assert np.array_equal(loop, has_loop)
        cut = sum(1 for i in range(r1 - r0) for c in s.adj.indices[s.adj.indptr[i]:s.adj.indptr[i + 1]]
                  if part_of[c] != part)
        assert ds.manifest["per_part"][part]["edge_cut"] == cut == s.edge_cut


def _dataset(tmp_path, parts=2, mode="rows"):
    g = random_graph()
    write_partitioned(g, partition_graph(g.adj, parts, mode), tmp_path, progress=False)
    return PartitionedDataset(tmp_path)


def test_missing_shard_file_names_it_and_other_shards_still_load(tmp_path):
    ds = _dataset(tmp_path)
    (tmp_path / "part-00001" / "x.npy").unlink()
    with pytest.raises(DatasetNotFoundError, match="part-00001/x.npy"):
        ds.load_shard(1)
    assert ds.load_shard(0).num_rows > 0  # a rank reads only its own shard


def test_truncated_shard(tmp_path):
    ds = _dataset(tmp_path)
    path = tmp_path / "part-00000" / "indices.npy"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(PartitionedDatasetError, match="truncated"):
        ds.load_shard(0)


def test_checksum_mismatch(tmp_path):
    ds = _dataset(tmp_path)
    path = tmp_path / "part-00000" / "x.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # same size, different content
    path.write_bytes(bytes(raw))
    with pytest.raises(PartitionedDatasetError, match="checksum mismatch"):
        ds.load_shard(0)
    assert ds.load_shard(0, verify=False).num_rows > 0  # only the checksum tells


def test_manifest_of_another_format_version(tmp_path):
    _dataset(tmp_path)
    m = json.loads((tmp_path / "manifest.json").read_text())
    m["format_version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PartitionedDatasetError, match="format version 99"):
        PartitionedDataset(tmp_path)


def test_not_a_partitioned_dataset(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="manifest.json missing"):
        PartitionedDataset(tmp_path)


def test_parts_must_equal_world_size(tmp_path):
    ds = _dataset(tmp_path, parts=2)
    with pytest.raises(ConfigError, match="2 parts but world_size=3"):
        rank_shard(ds, 0, 3)


def _load_and_report(rank, world_size, path):
    import torch.distributed as dist

    try:
        rank_shard(path, rank, world_size)
        mine = "ok"
    except Exception as exc:  # noqa: BLE001  (the test wants every rank's outcome)
        mine = f"{type(exc).__name__}: {exc}"
    everyone = [None] * world_size
    dist.all_gather_object(everyone, mine)
    return everyone


def test_a_bad_shard_on_one_rank_fails_every_rank(tmp_path):
    _dataset(tmp_path, parts=2)
    (tmp_path / "part-00001" / "y.npy").unlink()
    outcomes = launch(_load_and_report, 2, (str(tmp_path),), timeout_s=60)
    assert "part-00001/y.npy" in outcomes[1]
    assert outcomes[0].startswith("PartitionedDatasetError: rank 1 could not load its shard"), outcomes[0]


def _per_node_back_in_original_order(rank, world_size, graph):
    from netsparse_torch.nn import DistGraph

    dg = DistGraph(graph, rank, world_size, "metis")
    return {"x": dg.to_original(dg.x), "y": dg.to_original(dg.y), "test": dg.to_original(dg.mask("test")),
            "node_ids": dg.node_ids}


def test_metis_rows_map_back_to_original_ids():
    g = random_graph()
    out = launch(_per_node_back_in_original_order, 3, (g,), timeout_s=60)
    assert not torch.equal(out["node_ids"], torch.arange(out["node_ids"].numel()))  # rank 0's rows were renumbered
    assert torch.equal(out["x"], g.x) and torch.equal(out["y"], g.y) and torch.equal(out["test"], g.test_mask)


def _whole_graph_tensors_indexed_by_rows(rank, world_size, graph):
    from netsparse_torch.nn import DistGraph

    renumbered = {}
    for partition in sorted(MODES):  # metis first
        dg = DistGraph(graph, rank, world_size, partition)
        # A PyG port's data.y[dg.rows]: with metis the partition's row block would pick other nodes.
        assert torch.equal(graph.x[dg.rows], dg.x), partition
        assert torch.equal(graph.y[dg.rows], dg.y), partition
        assert torch.equal(graph.test_mask[dg.rows], dg.mask("test")), partition
        renumbered[partition] = not isinstance(dg.rows, slice)
        assert dg.row_range.stop - dg.row_range.start == dg.x.size(0)
    return renumbered


def test_rows_index_the_whole_graphs_tensors_under_every_partition():
    renumbered = launch(_whole_graph_tensors_indexed_by_rows, 3, (random_graph(),), timeout_s=60)
    assert renumbered == {"rows": False, "nnz": False, "metis": True}  # rank 0's metis rows are other nodes

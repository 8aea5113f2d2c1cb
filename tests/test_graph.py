"""Graph input: every loader, the normalisations against PyG, and the synthetic generators."""

import numpy as np
import pytest
import scipy.io
import torch
from conftest import DATA
from graphs import weighted_data
from omegaconf import OmegaConf
from torch_geometric.nn.conv.gcn_conv import gcn_norm as pyg_gcn_norm
from torch_geometric.utils import scatter

from netsparse_torch.graph import from_pyg, gcn_norm, generate, load_dataset, load_mtx, mean_norm, read_mtx


def cfg(**kw):
    return OmegaConf.create(kw)


def test_cora_and_citeseer_offline():
    cora = load_dataset(cfg(name="cora", root=str(DATA)))
    assert (cora.num_nodes, cora.num_features, cora.num_classes) == (2708, 1433, 7)
    assert int(cora.train_mask.sum()) == 140 and int(cora.test_mask.sum()) == 1000
    assert cora.adj.nnz == 10556
    citeseer = load_dataset(cfg(name="citeseer", root=str(DATA)))
    assert (citeseer.num_nodes, citeseer.num_classes) == (3327, 6)



def _load_cora_into(cache: str) -> tuple[int, int]:
    from netsparse_torch.graph.loaders import load_planetoid

    g = load_planetoid("cora", DATA, cache)
    return g.adj.nnz, int(g.x.sum())


def test_planetoid_cache_survives_concurrent_first_use(tmp_path):
    """As under torchrun: several processes fill the same empty cache at once. They fork from this
    worker's forkserver (the launcher's, torch and PyG imported once) rather than start three fresh
    interpreters."""
    import multiprocessing as mp

    from netsparse_torch.run.forkserver import start_forkserver

    start_forkserver()
    with mp.get_context("forkserver").Pool(3) as pool:
        results = pool.map(_load_cora_into, [str(tmp_path)] * 3)
    assert results == [(10556, 49216)] * 3

def test_planetoid_cache_equals_pyg_and_is_read_without_it(tmp_path):
    """The launcher reads Cora from our array cache (no PyG import); it equals what PyG processed, and a
    changed raw file makes PyG process it again."""
    import os
    import subprocess
    import sys

    from netsparse_torch.graph.loaders import PLANETOID_CACHE, load_planetoid

    by_pyg = load_planetoid("cora", DATA, tmp_path)
    cache = tmp_path / "planetoid" / "Cora" / PLANETOID_CACHE
    assert cache.is_file()
    cached = load_planetoid("cora", DATA, tmp_path)
    assert (by_pyg.adj != cached.adj).nnz == 0 and by_pyg.adj.dtype == cached.adj.dtype
    for k in ("x", "y", "train_mask", "val_mask", "test_mask"):
        a, b = getattr(by_pyg, k), getattr(cached, k)
        assert torch.equal(a, b) and a.dtype == b.dtype
    assert (cached.name, cached.num_classes) == (by_pyg.name, by_pyg.num_classes)
    probe = ("import sys; from pathlib import Path; from netsparse_torch.graph.loaders import load_planetoid; "
             f"g = load_planetoid('cora', Path({str(DATA)!r}), Path({str(tmp_path)!r})); "
             "print(g.num_nodes, 'torch_geometric' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["2708", "False"]
    raw = tmp_path / "planetoid" / "Cora" / "raw" / "ind.cora.test.index"
    os.utime(raw, ns=(raw.stat().st_atime_ns, raw.stat().st_mtime_ns + 10**9))
    before = cache.stat().st_mtime_ns
    load_planetoid("cora", DATA, tmp_path)
    assert cache.stat().st_mtime_ns != before  # remade through PyG for the changed raw files


def test_heterophilous_npz_is_undirected():
    g = load_dataset(cfg(name="tolokers", root=str(DATA), split=3))
    with np.load(DATA / "heterophilous" / "tolokers.npz") as z:
        assert g.num_nodes == z["node_features"].shape[0]
        np.testing.assert_array_equal(g.train_mask.numpy(), z["train_masks"][3])
    assert abs(g.adj - g.adj.T).nnz == 0
    assert g.adj.nnz == 2 * 519_000


@pytest.mark.parametrize("name", ["karate.mtx", "west0067.mtx"])
def test_matrix_market_pattern_and_generated_features(name):
    path = DATA / "mtx_small" / name
    g = load_mtx(path, num_features=5, num_classes=3, seed=4)
    ref = scipy.io.mmread(str(path)).tocsr()
    assert g.adj.shape == ref.shape and g.adj.nnz == ref.nnz  # symmetric files expanded by mmread
    assert g.x.shape == (ref.shape[0], 5) and set(g.y.tolist()) <= {0, 1, 2}
    again = load_mtx(path, num_features=5, num_classes=3, seed=4)
    torch.testing.assert_close(g.x, again.x)  # seeded
    assert (g.train_mask | g.val_mask | g.test_mask).all()


def test_gzipped_matrix_market():
    adj = read_mtx(DATA / "graphs" / "delaunay_n16.mtx.gz")
    assert adj.shape == (65536, 65536) and adj.nnz == 393150


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("improved", [False, True])
def test_gcn_norm_matches_pyg(weighted, improved):
    """On a graph with a node of three self loops and one of two (PyG keeps one) and edge weights."""
    data = weighted_data()
    g = from_pyg(data)
    w = data.edge_weight if weighted else torch.ones(data.edge_index.size(1))
    ei_n, w_n = pyg_gcn_norm(data.edge_index, w, g.num_nodes, improved=improved, add_self_loops=True)
    dense_ref = torch.zeros(g.num_nodes, g.num_nodes, dtype=torch.float64)
    dense_ref.index_put_((ei_n[1], ei_n[0]), w_n.double(), accumulate=True)
    ours = gcn_norm(g.adj, 2.0 if improved else 1.0, g.weights if weighted else None)
    np.testing.assert_allclose(ours.toarray(), dense_ref.numpy(), atol=1e-6)


def test_mean_norm_is_pyg_mean_aggregation():
    """Every edge is one term of the mean, repeated self loops included."""
    data = weighted_data()
    g, ei = from_pyg(data), data.edge_index
    assert (ei[0] == ei[1]).sum() > len(set(ei[0][ei[0] == ei[1]].tolist()))  # repeated self loops
    ref = scatter(g.x[ei[0]], ei[1], dim=0, dim_size=g.num_nodes, reduce="mean")
    ours = torch.from_numpy(mean_norm(g.adj) @ g.x.numpy())
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)


def test_self_loop_rows_is_pygs_gat_pattern():
    """GATConv(add_self_loops=True): remove_self_loops then add_self_loops, one loop per node."""
    from torch_geometric.utils import add_self_loops, remove_self_loops

    from netsparse_torch.graph.normalize import self_loop_rows

    data = weighted_data()
    ei, _ = add_self_loops(remove_self_loops(data.edge_index)[0], num_nodes=data.num_nodes)
    dense_ref = torch.zeros(data.num_nodes, data.num_nodes)
    dense_ref.index_put_((ei[1], ei[0]), torch.ones(ei.size(1)), accumulate=True)
    np.testing.assert_array_equal(self_loop_rows(from_pyg(data).adj, 0).toarray(), dense_ref.numpy())


@pytest.mark.parametrize("shape", ["powerlaw", "banded", "road"])
def test_synthetic_shapes_are_seeded_symmetric_and_loop_free(shape):
    a = generate(shape, 2000, seed=3)
    b = generate(shape, 2000, seed=3)
    assert (a != b).nnz == 0 and abs(a - a.T).nnz == 0 and a.diagonal().sum() == 0
    assert a.nnz > 2000


def test_synthetic_shapes_differ_in_kind():
    deg = {s: np.diff(generate(s, 5000, seed=0).indptr) for s in ("powerlaw", "banded", "road")}
    assert deg["powerlaw"].max() > 10 * np.median(deg["powerlaw"])  # hubs
    assert deg["road"].max() <= 8  # planar grid-like
    banded = generate("banded", 5000, bandwidth=16, seed=0).tocoo()
    assert np.abs(banded.row - banded.col).max() <= 16

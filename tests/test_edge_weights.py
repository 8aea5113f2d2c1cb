"""Edge weights: what a DistGraph takes from a PyG Data, a Matrix Market file (``dataset.weighted``) and
a partitioned dataset; which weights a layer call may pass; the inputs refused with one line. The
references are PyG's own functions and scipy's reading of the files, never the code under test."""

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import torch
from cli import run_cli, train_here
from cli_here import train_error
from conftest import DATA
from graphs import weighted_data
from omegaconf import OmegaConf
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric.utils import add_remaining_self_loops, scatter

from netsparse_torch.errors import ConfigError, GraphInputError, NetsparseError
from netsparse_torch.graph import from_pyg, load_dataset
from netsparse_torch.nn import DistGATConv, DistGCNConv, DistGNN, DistGraph, DistSAGEConv
from netsparse_torch.nn.edge_weights import GraphWeights
from netsparse_torch.partition import PartitionedDataset, partition_graph, write_partitioned


def test_pyg_keeps_the_last_of_repeated_self_loops_and_so_do_we():
    from torch_geometric.data import Data

    ei = torch.tensor([[0, 1, 1, 0, 1], [1, 1, 0, 0, 1]])
    w = torch.tensor([0.5, 2.0, 0.25, 4.0, 3.0])
    _, kept = add_remaining_self_loops(ei, w, 7.0, num_nodes=3)
    assert kept[-3:].tolist() == [4.0, 3.0, 7.0]  # node 1: 2.0 then 3.0, the last stays; node 2 filled
    g = from_pyg(Data(x=torch.zeros(3, 1), y=torch.zeros(3, dtype=torch.long), edge_index=ei, edge_weight=w))
    assert g.weights.loop.tolist() == [4.0, 3.0, 0.0]
    assert g.weights.adj[1, 1] == 5.0 and g.adj[1, 1] == 2  # the plain sum keeps both, as PyG's messages do


def pyg_degrees(data, weighted: bool) -> np.ndarray:
    """Each node's degree after PyG's add_remaining_self_loops with fill value 0 (so: before filling)."""
    w = data.edge_weight if weighted else torch.ones(data.edge_index.size(1))
    ei, w = add_remaining_self_loops(data.edge_index, w, 0.0, data.num_nodes)
    return scatter(w.double(), ei[1], dim=0, dim_size=data.num_nodes, reduce="sum").numpy()


@pytest.mark.parametrize("mode", ["rows", "metis"])
def test_a_partitioned_dataset_keeps_the_weights(tmp_path, mode):
    data = weighted_data()
    write_partitioned(from_pyg(data), partition_graph(from_pyg(data).adj, 3, mode), tmp_path, progress=False)
    ds = PartitionedDataset(tmp_path)
    assert ds.weighted and json.loads((tmp_path / "manifest.json").read_text())["dataset"]["weighted"]
    back = ds.assemble().weights
    ref = torch.zeros(data.num_nodes, data.num_nodes, dtype=torch.float64)
    ref.index_put_((data.edge_index[1], data.edge_index[0]), data.edge_weight.double(), accumulate=True)
    np.testing.assert_allclose(back.adj.toarray(), ref.numpy(), atol=1e-6)
    deg, count = pyg_degrees(data, True), pyg_degrees(data, False)
    for part in range(3):
        s = ds.load_shard(part)
        new_to_old = np.load(tmp_path / "permutation" / "order.npy")
        np.testing.assert_allclose(s.row_wsum, deg[s.node_ids], rtol=1e-6)
        np.testing.assert_allclose(s.halo_wsum, deg[new_to_old[s.halo_ids]], rtol=1e-6)
        np.testing.assert_array_equal(s.row_sum, count[s.node_ids])
        np.testing.assert_array_equal(s.halo_sum, count[new_to_old[s.halo_ids]])


def _write_mtx(path, data) -> None:
    """``data``'s weighted edges as a general real Matrix Market file (row = target, column = source)."""
    ei, w = data.edge_index.numpy(), data.edge_weight.double().numpy()
    scipy.io.mmwrite(str(path), sp.coo_matrix((w, (ei[1], ei[0])), shape=(data.num_nodes,) * 2))


def test_a_weighted_matrix_market_graph_is_pygs_weighted_gcn(tmp_path):
    data = weighted_data()
    path = tmp_path / "w.mtx"
    _write_mtx(path, data)
    cfg = OmegaConf.create({"name": "mtx", "path": str(path), "num_features": 6, "num_classes": 3, "weighted": True})
    graph = load_dataset(cfg)
    assert load_dataset(OmegaConf.merge(cfg, {"weighted": False})).weights is None  # the default: the pattern
    m = scipy.io.mmread(str(path)).tocsr()  # the file as scipy reads it: duplicates summed
    ei = torch.from_numpy(np.vstack([m.tocoo().col, m.tocoo().row]).astype(np.int64))
    w = torch.from_numpy(m.tocoo().data).float()
    dg = DistGraph(graph)
    assert isinstance(dg.edge_weight, GraphWeights)
    for kwargs in ({}, {"normalize": False}):
        pyg = GCNConv(6, 4, **kwargs)
        conv = DistGCNConv(6, 4, **kwargs)
        conv.load_state_dict(pyg.state_dict())
        torch.testing.assert_close(conv(graph.x, dg, dg.edge_weight), pyg(graph.x, ei, w), atol=1e-5, rtol=0)
        torch.testing.assert_close(conv(graph.x, dg), pyg(graph.x, ei), atol=1e-5, rtol=0)


def test_weighted_true_on_a_pattern_file_is_one_line(tmp_path):
    line = train_error(tmp_path / "run", "dataset=mtx", f"dataset.path={DATA / 'mtx_small' / 'karate.mtx'}",
                       "dataset.weighted=true")
    assert "a pattern Matrix Market file has no real values" in line and "dataset.weighted=false" in line, line


def test_a_model_without_weights_on_a_weighted_dataset_is_one_error(tmp_path):
    """Every rank raises it at its first forward (the CLI prints a rank's error as one line)."""
    path = tmp_path / "w.mtx"
    _write_mtx(path, weighted_data())
    with pytest.raises(NetsparseError, match=r"model 'sage' takes no edge weights .*\(dataset\.weighted=false\)"):
        train_here(tmp_path, "dataset=mtx", f"dataset.path={path}", "dataset.weighted=true", "model=sage",
                   "epochs=1", "world_size=2")


def test_weighted_training_from_partitioned_shards_is_the_in_memory_run(tmp_path):
    """netsparse-partition carries dataset.weighted into the shards: training from them is the in-memory
    weighted run, bit for bit, and not the unweighted one."""
    path = tmp_path / "w.mtx"
    _write_mtx(path, weighted_data(n=120, m=700))
    src = ["dataset=mtx", f"dataset.path={path}", "dataset.num_features=6", "dataset.num_classes=3"]
    out = tmp_path / "shards"
    proc = run_cli("netsparse_torch.cli.partition", *src, "dataset.weighted=true", "partition=metis", "parts=2",
                   f"out={out}", f"hydra.run.dir={tmp_path / 'prun'}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    common = ["world_size=2", "epochs=3", "dropout=0", "hidden=8"]
    disk, _ = train_here(tmp_path / "disk", "dataset=partitioned", f"dataset.path={out}", *common)
    mem, _ = train_here(tmp_path / "mem", *src, "dataset.weighted=true", "partition=metis", *common)
    plain, _ = train_here(tmp_path / "plain", *src, "partition=metis", *common)
    losses = {name: [e["loss"] for e in r["epochs"]] for name, r in (("disk", disk), ("mem", mem), ("plain", plain))}
    assert losses["disk"] == pytest.approx(losses["mem"], rel=1e-6)  # weights stored as float32 on disk
    assert losses["mem"] != pytest.approx(losses["plain"], rel=1e-3)


# -- which weights a layer call may pass -----------------------------------------------------------------

def _gcn(seed=0):
    torch.manual_seed(seed)
    return DistGCNConv(6, 4)


def test_the_graphs_weights_are_recognised_by_identity_or_by_value():
    data = weighted_data()
    dg = DistGraph(data)
    assert dg.edge_weight is data.edge_weight
    want = _gcn()(dg.x, dg, data.edge_weight)
    for same in (data.edge_weight.clone(), data.edge_weight.double(), data.edge_weight.view(-1, 1), dg.edge_weight):
        torch.testing.assert_close(_gcn()(dg.x, dg, same), want, atol=0, rtol=0)
    assert not torch.allclose(_gcn()(dg.x, dg), want, atol=1e-3)  # no weights: PyG's unweighted GCN
    for other in (data.edge_weight * 2, data.edge_weight[:-1]):
        with pytest.raises(ConfigError, match=r"DistGCNConv: these edge weights are not the ones the DistGraph was "
                                              r"built with \(data\.edge_weight\)"):
            _gcn()(dg.x, dg, other)
    data.edge_weight.mul_(2)  # changed in place after the graph was built: no longer its weights
    with pytest.raises(ConfigError, match="not the ones the DistGraph was built with"):
        _gcn()(dg.x, dg, data.edge_weight)


def test_a_one_weight_edge_attr_is_taken_when_there_is_no_edge_weight():
    data = weighted_data()
    for attr in (data.edge_weight, data.edge_weight.view(-1, 1)):
        d = data.clone()
        del d.edge_weight
        d.edge_attr = attr
        dg = DistGraph(d)
        assert dg.edge_weight is d.edge_attr
        torch.testing.assert_close(_gcn()(dg.x, dg, d.edge_attr), _gcn()(dg.x, DistGraph(data), data.edge_weight))
    both = data.clone()
    both.edge_attr = data.edge_weight + 1
    with pytest.raises(ConfigError, match=r"built with \(data\.edge_weight\)"):  # edge_weight comes first
        _gcn()(both.x, DistGraph(both), both.edge_attr)


def test_weights_held_in_the_shard_are_passed_as_dg_edge_weight():
    graph = from_pyg(weighted_data())
    dg, other = DistGraph(graph), DistGraph(graph)
    assert isinstance(dg.edge_weight, GraphWeights)
    with pytest.raises(ConfigError, match="these edge weights are another DistGraph's"):
        _gcn()(dg.x, dg, other.edge_weight)
    with pytest.raises(ConfigError, match=r"not the ones the DistGraph was built with \(the graph's weights \(pass "
                                          r"dg\.edge_weight\)\)"):
        _gcn()(dg.x, dg, torch.ones(graph.nnz))


BAD_CALLS = [
    (lambda dg, w: DistSAGEConv(6, 4)(dg.x, dg, w),
     "DistSAGEConv: edge weights are not supported: PyG's SAGEConv takes none"),
    (lambda dg, w: DistGATConv(6, 4)(dg.x, dg, w.view(-1, 1)),
     r"DistGATConv: edge features \(edge_attr\) are not supported: they need edge_dim"),
    (lambda dg, w: _gcn()(dg.x, dg, w.clone().requires_grad_()),
     r"edge weights that require gradients are not supported.*pass edge_weight\.detach\(\)"),
    (lambda dg, w: _gcn()(dg.x, dg, "layer0"),  # the traffic tag is keyword-only
     "DistGCNConv: edge weights must be a tensor or dg.edge_weight, got str"),
]


@pytest.mark.parametrize("call,words", BAD_CALLS, ids=["sage", "gat", "requires_grad", "positional tag"])
def test_weights_a_layer_cannot_use_are_one_error(call, words):
    data = weighted_data()
    with pytest.raises(ConfigError, match=words):
        call(DistGraph(data), data.edge_weight)


def test_weights_given_to_a_graph_without_any_are_refused():
    data = weighted_data()
    del data.edge_weight
    dg = DistGraph(data)
    assert dg.edge_weight is None
    with pytest.raises(ConfigError, match="edge weights given, but the DistGraph was built without any"):
        _gcn()(dg.x, dg, torch.ones(data.edge_index.size(1)))


@pytest.mark.parametrize("field,value,words", [
    ("edge_attr", torch.ones(5, 3), r"edge_attr has shape \[5, 3\]: multi-dimensional edge features are not supported"),
    ("edge_weight", torch.ones(4), r"edge_weight has shape \[4\].*one real number per edge \(5 edges\)"),
    ("edge_weight", torch.tensor([1.0, float("nan"), 1, 1, 1]), "edge weights contain NaN or Inf"),
])
def test_bad_edge_weights_in_a_data_are_one_error(field, value, words):
    from torch_geometric.data import Data

    data = Data(x=torch.zeros(3, 1), y=torch.zeros(3, dtype=torch.long),
                edge_index=torch.tensor([[0, 1, 2, 1, 1], [1, 2, 0, 0, 1]]), **{field: value})
    with pytest.raises(GraphInputError, match=words):
        DistGraph(data)


def test_the_gcn_model_trains_on_the_weights_and_the_others_refuse_them():
    data = weighted_data()
    dg = DistGraph(data)
    torch.manual_seed(0)
    model = DistGNN("gcn", 6, 8, 3, dropout=0.0).eval()
    pyg = [GCNConv(6, 8), GCNConv(8, 3)]
    for ours, theirs in zip(model.convs, pyg, strict=True):
        theirs.load_state_dict(ours.state_dict())
    ei, w = data.edge_index, data.edge_weight
    torch.testing.assert_close(model(dg.x, dg), pyg[1](pyg[0](data.x, ei, w).relu(), ei, w), atol=1e-5, rtol=0)
    for kind in ("sage", "gat"):
        with pytest.raises(ConfigError, match=f"model '{kind}' takes no edge weights .* the graph has them"):
            DistGNN(kind, 6, 8, 3)(dg.x, dg)


def test_gat_on_a_weighted_graph_is_pygs_gat():
    """GATConv has no edge weights: the graph's weights must not change the attention patterns."""
    data = weighted_data()
    dg = DistGraph(data)
    for loops in (True, False):
        pyg = GATConv(6, 4, heads=2, add_self_loops=loops)
        conv = DistGATConv(6, 4, heads=2, add_self_loops=loops)
        conv.load_state_dict(pyg.state_dict())
        torch.testing.assert_close(conv(dg.x, dg), pyg(data.x, data.edge_index), atol=1e-5, rtol=0)

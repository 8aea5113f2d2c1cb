"""Bad input gets one clear error that names the problem, a non-zero exit, and no hung rank."""

import numpy as np
import pytest
import torch
from cli import run_cli, train
from conftest import DATA
from graphs import random_graph
from torch_geometric.data import Data

from netsparse_torch.errors import GraphInputError
from netsparse_torch.graph import from_pyg
from netsparse_torch.partition import partition_graph, write_partitioned


def assert_clean_failure(proc, *words):
    assert proc.returncode != 0
    err = proc.stderr
    assert "Traceback" not in err, err[-3000:]
    for w in words:
        assert w.lower() in err.lower(), err[-3000:]


def test_non_square_adjacency(tmp_path):
    proc, _ = train(tmp_path, "dataset=mtx", f"dataset.path={DATA / 'mtx_small' / 'lp_afiro.mtx'}")
    assert_clean_failure(proc, "27x51", "square")


def test_out_of_range_indices():
    data = Data(x=torch.randn(4, 2), y=torch.zeros(4, dtype=torch.long),
                edge_index=torch.tensor([[0, 1, 2], [1, 2, 4]]))
    with pytest.raises(GraphInputError, match="target node index 4 outside"):
        from_pyg(data)


def _npz(path, features):
    n = features.shape[0]
    masks = np.zeros((10, n), dtype=bool)
    masks[:, 0] = True
    np.savez(path, node_features=features, node_labels=np.zeros(n, dtype=np.int64),
             edges=np.array([[0, 1], [1, 2]]), train_masks=masks, val_masks=masks, test_masks=masks)


def test_nan_features(tmp_path):
    (tmp_path / "heterophilous").mkdir()
    feats = np.ones((3, 2), dtype=np.float32)
    feats[1, 0] = np.nan
    _npz(tmp_path / "heterophilous" / "tolokers.npz", feats)
    proc, _ = train(tmp_path, "dataset=tolokers", f"dataset.root={tmp_path}")
    assert_clean_failure(proc, "NaN or Inf", "node 1")


def test_inf_features_through_the_api():
    data = Data(x=torch.tensor([[1.0], [float("inf")]]), y=torch.zeros(2, dtype=torch.long),
                edge_index=torch.tensor([[0], [1]]))
    with pytest.raises(GraphInputError, match="NaN or Inf"):
        from_pyg(data)


def test_world_size_larger_than_rows(tmp_path):
    proc, _ = train(tmp_path, "dataset=mtx", f"dataset.path={DATA / 'mtx_small' / 'karate.mtx'}", "world_size=40")
    assert_clean_failure(proc, "world_size=40", "34 rows")


def test_missing_dataset_files(tmp_path):
    proc, _ = train(tmp_path, "dataset=cora", f"dataset.root={tmp_path / 'nowhere'}")
    assert_clean_failure(proc, "raw files missing", "dataset.root")


def test_missing_mtx_file(tmp_path):
    proc, _ = train(tmp_path, "dataset=mtx", f"dataset.path={tmp_path / 'absent.mtx'}")
    assert_clean_failure(proc, "not found", "absent.mtx")


@pytest.mark.parametrize("override,words", [
    ("strategy=nosuch", ["unknown strategy 'nosuch'", "choose one of", "twoface"]),  # one line, not Hydra's
    ("dataset=nosuch", ["unknown dataset 'nosuch'", "choose one of", "cora"]),
    ("strategy.name=nosuch", ["unknown strategy 'nosuch'"]),
])
def test_unknown_strategy_or_dataset(tmp_path, override, words):
    proc, _ = train(tmp_path, override)
    assert_clean_failure(proc, *words)


def test_unreadable_mtx(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\nthis is not a size line\n")
    proc, _ = train(tmp_path, "dataset=mtx", f"dataset.path={bad}")
    assert_clean_failure(proc, "not a readable Matrix Market file")


KARATE = DATA / "mtx_small" / "karate.mtx"


def test_metis_with_more_parts_than_nodes(tmp_path):
    proc = run_cli("netsparse_torch.cli.partition", "dataset=mtx", f"dataset.path={KARATE}", "partition=metis",
                   "parts=40", f"out={tmp_path / 'out'}", f"hydra.run.dir={tmp_path / 'prun'}")
    assert_clean_failure(proc, "40 parts", "only 34 nodes")
    proc, _ = train(tmp_path, "dataset=mtx", f"dataset.path={KARATE}", "partition=metis", "world_size=40")
    assert_clean_failure(proc, "40 parts", "only 34 nodes")


def _two_parts(path):
    g = random_graph()
    write_partitioned(g, partition_graph(g.adj, 2, "rows"), path, progress=False)
    return path


def test_partitioned_dataset_with_another_world_size(tmp_path):
    proc, _ = train(tmp_path, "dataset=partitioned", f"dataset.path={_two_parts(tmp_path / 'ds')}", "world_size=3")
    assert_clean_failure(proc, "2 parts but world_size=3")


def test_partitioned_dataset_without_path_or_manifest(tmp_path):
    proc, _ = train(tmp_path, "dataset=partitioned")
    assert_clean_failure(proc, "dataset.path")
    proc, _ = train(tmp_path, "dataset=partitioned", f"dataset.path={tmp_path}")
    assert_clean_failure(proc, "manifest.json missing", "netsparse-partition")


def test_a_corrupt_shard_ends_every_rank_with_its_error(tmp_path):
    path = _two_parts(tmp_path / "ds") / "part-00001" / "x.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    proc, _ = train(tmp_path, "dataset=partitioned", f"dataset.path={path.parents[1]}", "world_size=2", "epochs=1",
                    timeout=120)
    assert_clean_failure(proc, "checksum mismatch", "part-00001/x.npy")


@pytest.mark.parametrize("kwargs,words", [
    ({"heads": 0}, "heads must be an integer >= 1, got 0"),
    ({"heads": 2.5}, "heads must be an integer >= 1, got 2.5"),
    ({"dropout": -0.1}, "GAT attention dropout"),
    ({"dropout": 1.5}, "GAT attention dropout"),
])
def test_gat_bad_heads_or_dropout(kwargs, words):
    from netsparse_torch.errors import ConfigError
    from netsparse_torch.nn import DistGATConv, DistGNN

    with pytest.raises(ConfigError, match=words):
        DistGATConv(4, 2, **kwargs)
    model_kwargs = {"attention_dropout": kwargs["dropout"]} if "dropout" in kwargs else kwargs
    with pytest.raises(ConfigError, match=words):
        DistGNN("gat", 4, 3, 2, **model_kwargs)


def test_gat_with_a_strategy_that_cannot_gather(tmp_path):
    # Dense shifting never holds a row's whole neighbourhood: the softmax cannot run on it.
    proc, _ = train(tmp_path, "model=gat", "strategy=ds", "epochs=1")
    assert_clean_failure(proc, "model=gat cannot use strategy=ds", "choose su, sa, netsparse or twoface")
    proc, _ = train(tmp_path, "model=gat", "model.heads=0", "epochs=1")
    assert_clean_failure(proc, "heads must be an integer >= 1, got 0")
    proc, _ = train(tmp_path, "model=gat", "model.attention_dropout=-0.5", "epochs=1")
    assert_clean_failure(proc, "GAT attention dropout")


def test_a_rank_error_is_one_line_without_torch_noise(tmp_path):
    """torch's "Terminating process ... via signal SIGTERM" warnings must not come before our one line."""
    proc, _ = train(tmp_path, "strategy=ds", "strategy.replication=3", "world_size=2", "epochs=1", timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "replication factor 3" in lines[0], proc.stderr

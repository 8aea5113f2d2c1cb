"""Bad input gets one clear error that names the problem, a non-zero exit, and no hung rank.

A fresh ``netsparse-train`` process for a group choice refused before Hydra and for a rank's error (the
job's own refusals reach the shell through the same exit as a rank's); every other bad value goes through
``main``'s path in this process (tests/cli_here.py), which checks its exit status 2 and its one line too."""

import numpy as np
import pytest
import torch
from cli import train
from cli_here import error_line, partition_cli, train_error
from conftest import DATA
from graphs import random_graph
from torch_geometric.data import Data

from netsparse_torch.errors import ConfigError, GraphInputError
from netsparse_torch.graph import from_pyg
from netsparse_torch.partition import partition_graph, write_partitioned


def assert_clean_failure(proc, *words):
    assert proc.returncode != 0
    err = proc.stderr
    assert "Traceback" not in err, err[-3000:]
    for w in words:
        assert w.lower() in err.lower(), err[-3000:]


def says(line, *words):
    for w in words:
        assert w.lower() in line.lower(), line


def test_non_square_adjacency(tmp_path):
    says(train_error(tmp_path, "dataset=mtx", f"dataset.path={DATA / 'mtx_small' / 'lp_afiro.mtx'}"), "27x51",
         "square")


def test_out_of_range_indices():
    data = Data(x=torch.randn(4, 2), y=torch.zeros(4, dtype=torch.long),
                edge_index=torch.tensor([[0, 1, 2], [1, 2, 4]]))
    with pytest.raises(GraphInputError, match="target node index 4 outside"):
        from_pyg(data)


_CLASSES = torch.tensor([0, 1, 0, 1])


@pytest.mark.parametrize("fields, words", [
    ({"y": torch.tensor([0.3, 1.7, 2.2, 0.9])}, "y holds real values (e.g. 0.3"),  # were classes 0, 1, 2, 0
    ({"y": torch.tensor([[0.0, 1], [1, 0], [1, 1], [0, 0]])}, "y has shape [4, 2] (several targets per node)"),
    ({"y": None}, "the Data has no labels y"),
    ({"x": None}, "the Data has no node features x"),
    ({"train_mask": torch.ones(4, 10, dtype=torch.bool)}, "train_mask has shape [4, 10], one column per split"),
    ({"train_mask": torch.tensor([0, 1, 2, 3])}, "train_mask is a torch.int64 tensor of shape [4], not a mask"),
    ({"val_mask": torch.tensor([2])}, "index_to_mask(idx, size=4)"),
])
def test_pyg_labels_and_masks_that_would_be_misread_are_one_error(fields, words):
    """y and the masks as a PyG port may hold them: each was taken silently (real targets truncated to
    classes, node indices read as a mask, one split's column per node), or failed elsewhere."""
    base = {"x": torch.randn(4, 2), "y": _CLASSES, "edge_index": torch.tensor([[0, 1, 2], [1, 2, 3]]),
            "train_mask": torch.tensor([True, True, False, False])}
    data = Data(**{k: v for k, v in {**base, **fields}.items() if v is not None})
    with pytest.raises(GraphInputError) as err:
        from_pyg(data)
    assert words in str(err.value), err.value


def test_a_pyg_datas_own_masks_are_kept_and_a_missing_split_selects_no_node():
    """Only train_mask given: it was replaced, with the other two, by a random 60/20/20 split."""
    from netsparse_torch.nn import DistGraph

    train = torch.tensor([True, True, False, False])
    data = Data(x=torch.randn(4, 2), y=_CLASSES.float(), edge_index=torch.tensor([[0, 1], [1, 2]]), train_mask=train)
    dg = DistGraph(data, rank=0, world_size=1)
    assert torch.equal(dg.mask("train"), train) and not dg.mask("test").any()
    assert torch.equal(dg.y, _CLASSES)  # a float tensor of whole classes is read as classes
    column = Data(x=torch.randn(4, 2), y=_CLASSES, edge_index=data.edge_index, train_mask=train[:, None])
    assert torch.equal(from_pyg(column).train_mask, train)  # one column: the mask
    with pytest.raises(ConfigError, match=r"split 'test' has no nodes .* set data.test_mask"):
        dg.accuracy(torch.randn(4, 2), "test")


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
    says(train_error(tmp_path / "run", "dataset=tolokers", f"dataset.root={tmp_path}"), "NaN or Inf", "node 1")


def test_inf_features_through_the_api():
    data = Data(x=torch.tensor([[1.0], [float("inf")]]), y=torch.zeros(2, dtype=torch.long),
                edge_index=torch.tensor([[0], [1]]))
    with pytest.raises(GraphInputError, match="NaN or Inf"):
        from_pyg(data)


def test_world_size_larger_than_rows(tmp_path):
    line = train_error(tmp_path, "dataset=mtx", f"dataset.path={DATA / 'mtx_small' / 'karate.mtx'}", "world_size=40")
    says(line, "world_size=40", "34 rows")


def test_missing_dataset_files(tmp_path):
    says(train_error(tmp_path / "run", "dataset=cora", f"dataset.root={tmp_path / 'nowhere'}"), "raw files missing",
         "dataset.root")


def test_missing_mtx_file(tmp_path):
    says(train_error(tmp_path / "run", "dataset=mtx", f"dataset.path={tmp_path / 'absent.mtx'}"), "not found",
         "absent.mtx")


@pytest.mark.parametrize("override,words", [
    ("strategy=nosuch", ["unknown strategy 'nosuch'", "choose one of", "twoface"]),  # one line, not Hydra's
    ("dataset=nosuch", ["unknown dataset 'nosuch'", "choose one of", "cora"]),
])
def test_unknown_strategy_or_dataset(tmp_path, override, words):
    """A fresh process (refused before Hydra, within a second)."""
    proc, _ = train(tmp_path, override)
    assert_clean_failure(proc, *words)


def test_unknown_strategy_name(tmp_path):
    says(train_error(tmp_path, "strategy.name=nosuch"), "unknown strategy 'nosuch'")


def test_unreadable_mtx(tmp_path):
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\nthis is not a size line\n")
    says(train_error(tmp_path / "run", "dataset=mtx", f"dataset.path={bad}"), "not a readable Matrix Market file")


KARATE = DATA / "mtx_small" / "karate.mtx"


def test_metis_with_more_parts_than_nodes(tmp_path):
    done = partition_cli(tmp_path / "prun", "dataset=mtx", f"dataset.path={KARATE}", "partition=metis", "parts=40",
                         f"out={tmp_path / 'out'}")
    says(error_line(done, "netsparse-partition"), "40 parts", "only 34 nodes")
    line = train_error(tmp_path / "run", "dataset=mtx", f"dataset.path={KARATE}", "partition=metis", "world_size=40")
    says(line, "40 parts", "only 34 nodes")


def _two_parts(path):
    g = random_graph()
    write_partitioned(g, partition_graph(g.adj, 2, "rows"), path, progress=False)
    return path


def test_partitioned_dataset_with_another_world_size(tmp_path):
    line = train_error(tmp_path / "run", "dataset=partitioned", f"dataset.path={_two_parts(tmp_path / 'ds')}",
                       "world_size=3")
    says(line, "2 parts but world_size=3")


def test_a_partition_the_partitioned_datasets_shards_were_not_cut_by_is_one_line(tmp_path):
    """partition=nnz on shards cut by rows was ignored: the report's config said nnz, its partition rows."""
    line = train_error(tmp_path / "run", "dataset=partitioned", f"dataset.path={_two_parts(tmp_path / 'ds')}",
                       "partition=nnz")
    says(line, "partition=nnz does not apply to the partitioned dataset", "cut by rows", "drop partition=")


@pytest.mark.parametrize("overrides, said", [
    # world_size=4 with two processes was dropped silently
    (["epochs=1", "world_size=4"], "world_size=4 disagrees with torchrun's WORLD_SIZE=2 (--nnodes x "
                                   "--nproc-per-node): drop world_size=, which torchrun sets, or start 4 processes"),
    # each worker ran every job; the second hung at its start, in the first's checkpoint folder
    (["-m", "epochs=1,2", "hydra.sweep.dir=SWEEP"], "job 0 (epochs=1): a sweep (-m) under torchrun: every worker would "
                                                    "run each job of the sweep in this one torchrun job; sweep without "
                                                    "torchrun"),
])
def test_what_torchrun_cannot_run_as_given_is_one_line(tmp_path, monkeypatch, overrides, said):
    """Under torchrun the job is torchrun's. The rank speaks through the job's store (the first error wins),
    hosted here as the agent hosts it."""
    import datetime

    import torch.distributed as dist

    from netsparse_torch.run.launch import free_port

    port = free_port()
    store = dist.TCPStore("127.0.0.1", port, is_master=True, timeout=datetime.timedelta(seconds=30))
    for key, value in {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(port)}.items():
        monkeypatch.setenv(key, value)
    try:
        line = train_error(tmp_path, *[o.replace("SWEEP", str(tmp_path / "sweep")) for o in overrides])
    finally:
        del store
    assert line.startswith(f"netsparse-train: error: {said}"), line


def test_a_report_path_that_cannot_be_written_is_one_line_before_the_ranks(tmp_path):
    """It was a FileNotFoundError traceback with exit 1, after the whole training."""
    (tmp_path / "a_file").write_text("")
    target = tmp_path / "a_file" / "r.json"
    line = train_error(tmp_path / "run", "dataset=cora", "epochs=1", f"report_path={target}")
    assert line.startswith(f"netsparse-train: error: report_path: cannot write {target} (") and \
        line.endswith("): choose another report_path"), line


def test_a_checkpoint_dir_that_cannot_be_written_is_one_line_before_the_ranks(tmp_path):
    (tmp_path / "a_file").write_text("")
    target = tmp_path / "a_file" / "checkpoints"
    line = train_error(tmp_path / "run", "dataset=cora", "epochs=1", "checkpoint_every=1", f"checkpoint_dir={target}")
    assert line.startswith(f"netsparse-train: error: checkpoint_dir: cannot write {target} ("), line


def test_a_weighted_flag_bool_would_read_as_on_is_one_line(tmp_path):
    """dataset.weighted=maybe took a real-valued file's values as weights (bool("maybe") is True)."""
    karate = DATA / "mtx_small" / "karate.mtx"
    done = partition_cli(tmp_path / "run", "dataset=mtx", f"dataset.path={karate}", "dataset.weighted=maybe",
                         "parts=2", f"out={tmp_path / 'out'}")
    line = error_line(done, "netsparse-partition")
    assert line == "netsparse-partition: error: dataset.weighted must be true or false, got 'maybe'"


def test_a_partition_out_that_cannot_be_written_is_one_line_before_the_work(tmp_path):
    (tmp_path / "a_file").write_text("")
    line = error_line(partition_cli(tmp_path / "run", "dataset=cora", "parts=2", f"out={tmp_path / 'a_file'}"),
                      "netsparse-partition")
    assert line.startswith(f"netsparse-partition: error: out: cannot write {tmp_path / 'a_file'}/manifest.json (") \
        and line.endswith("): choose another out"), line


def test_partitioned_dataset_without_path_or_manifest(tmp_path):
    says(train_error(tmp_path / "a", "dataset=partitioned"), "dataset.path")
    says(train_error(tmp_path / "b", "dataset=partitioned", f"dataset.path={tmp_path}"),
         "manifest.json missing", "netsparse-partition")


def test_a_corrupt_shard_ends_every_rank_with_its_error(tmp_path):
    """Rank 1 finds it; both ranks end and the launcher says rank 1's error (a rank's error as a fresh
    process prints it: test_a_rank_error_is_one_line_without_torch_noise)."""
    path = _two_parts(tmp_path / "ds") / "part-00001" / "x.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    line = train_error(tmp_path / "run", "dataset=partitioned", f"dataset.path={path.parents[1]}", "world_size=2",
                       "epochs=1", in_a_rank=True)
    says(line, "checksum mismatch", "part-00001/x.npy")


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
    says(train_error(tmp_path / "a", "model=gat", "strategy=ds", "epochs=1"), "model=gat cannot use strategy=ds",
         "choose su, sa, netsparse or twoface")
    says(train_error(tmp_path / "b", "model=gat", "model.heads=0", "epochs=1"), "heads must be an integer >= 1, got 0")
    says(train_error(tmp_path / "c", "model=gat", "model.attention_dropout=-0.5", "epochs=1"), "GAT attention dropout")


def test_a_rank_error_is_one_line_without_torch_noise(tmp_path):
    """A fresh process: torch's "Terminating process ... via signal SIGTERM" warnings must not come
    before our one line."""
    proc, _ = train(tmp_path, "strategy=ds", "strategy.replication=3", "world_size=2", "epochs=1", timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "replication factor 3" in lines[0], proc.stderr

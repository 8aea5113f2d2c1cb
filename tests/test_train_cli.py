"""netsparse-train end to end: Cora accuracy, the report schema, checkpoint and resume, and training
from a partitioned dataset written by netsparse-partition."""

import json

import pytest
from cli import train_here
from cli_here import partition_cli
from graphs import random_graph


@pytest.mark.slow
def test_cora_gcn_two_ranks_reaches_paper_accuracy(tmp_path):
    report, printed = train_here(tmp_path, "dataset=cora", "model=gcn", "world_size=2", "epochs=200")
    assert report["final"]["test_acc"] >= 0.79
    # The report schema of the README.
    assert set(report["final"]) >= {"test_acc", "val_acc", "train_loss"}
    assert len(report["epochs"]) == 200 and set(report["epochs"][0]) == {"epoch", "loss", "time_s"}
    assert report["strategy"] == "sa" and report["world_size"] == 2
    assert sum(report["partition"]["rows"]) == 2708 and len(report["partition"]["halo"]) == 2
    comm = report["comm"]
    assert comm["feature_bytes_per_epoch"] > 0
    assert comm["feature_bytes"] >= 200 * comm["feature_bytes_per_epoch"]
    assert comm["collectives"]["alltoall"]["calls"] > 0
    assert "accuracy" in printed and "feature comm" in printed


def test_sage_su_nnz_partition_on_tolokers(tmp_path):
    report, _ = train_here(tmp_path, "dataset=tolokers", "model=sage", "strategy=su", "partition=nnz",
                           "world_size=3", "epochs=2", "hidden=8")
    nnz = report["partition"]["nnz"]
    assert sum(nnz) == report["dataset"]["nnz"] and max(nnz) < 0.5 * sum(nnz)
    n, owned = report["dataset"]["nodes"], report["partition"]["rows"]
    # su moves every remote row: forward in both layers (K = 10 input features, then 8 hidden), and
    # backward only in layer 2, since the raw input features need no gradient.
    per_epoch = sum(n - o for o in owned) * 4 * (10 + 8 + 8)
    assert report["comm"]["feature_bytes_per_epoch"] == per_epoch
    # tolokers is binary: ROC-AUC beside accuracy, and it picks the best epoch (tests/test_evaluation.py).
    assert 0 <= report["final"]["test_roc_auc"] <= 1 and report["best"]["metric"] == "val_roc_auc"


def test_netsparse_strategy_reports_its_block(tmp_path):
    report, printed = train_here(tmp_path, "dataset=cora", "strategy=netsparse", "world_size=2", "epochs=2")
    ns = report["netsparse"]
    for key in ("idxs", "local", "filtered", "coalesced", "prs_issued", "packets", "prs_per_packet",
                "header_bytes", "payload_bytes", "goodput", "wire_bytes"):
        assert key in ns, key
    assert ns["wire_bytes"] == ns["header_bytes"] + ns["payload_bytes"]
    assert 0 < ns["goodput"] < 1 and ns["prs_per_packet"] > 1
    assert {"layer0/forward", "layer1/forward", "layer1/backward"} <= set(ns["layers"])
    assert "netsparse" in printed


def test_partition_cli_then_train_from_the_shards(tmp_path):
    out = tmp_path / "cora-metis2"
    done = partition_cli(tmp_path / "prun", "dataset=cora", "partition=metis", "parts=2", f"out={out}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "edge cut" in done.stdout and (out / "manifest.json").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    disk, printed = train_here(tmp_path, "dataset=partitioned", f"dataset.path={out}", "world_size=2", "epochs=3")
    mem, _ = train_here(tmp_path / "mem", "dataset=cora", "partition=metis", "world_size=2", "epochs=3")
    # The same shards in the same order: the same run, bit for bit.
    assert [e["loss"] for e in disk["epochs"]] == [e["loss"] for e in mem["epochs"]]
    p = disk["partition"]
    assert p["mode"] == "metis" and p["rows"] == [q["rows"] for q in manifest["per_part"]]
    assert p["halo"] == [q["halo"] for q in manifest["per_part"]]
    assert p["edge_cut"] == [q["edge_cut"] for q in manifest["per_part"]]
    assert p["edge_cut_total"] == manifest["edge_cut"]
    assert [r["rank"] for r in disk["per_rank"]] == [0, 1]
    assert all(r["peak_rss_bytes"] > 2**20 for r in disk["per_rank"])
    assert disk["dataset"]["nodes"] == 2708 and disk["dataset"]["partitioned_path"] == str(out)
    assert "edge cut" in printed and "peak RSS per rank" in printed


def test_every_strategy_trains_from_a_partitioned_dataset(tmp_path):
    """su, sa, twoface, ds, netsparse and fabric=switch on one METIS-partitioned dataset (2 ranks, no
    dropout): the same losses as sa within float rounding; a modeled block assembles the adjacency."""
    from netsparse_torch.partition import partition_graph, write_partitioned

    g = random_graph(n=150, m=900, features=6, classes=3)
    write_partitioned(g, partition_graph(g.adj, 2, "metis"), tmp_path / "ds", progress=False)
    base = ["dataset=partitioned", f"dataset.path={tmp_path / 'ds'}", "world_size=2", "epochs=2", "dropout=0",
            "hidden=8"]
    variants = {"sa": ["strategy=sa"], "su": ["strategy=su"], "twoface": ["strategy=twoface"], "ds": ["strategy=ds"],
                "netsparse": ["strategy=netsparse"], "switch": ["fabric=switch", "cluster.rack_size=1"],
                "modeled": ["strategy=sa", "cluster=leafspine128", "cluster.nodes=16", "cluster.rack_size=4"]}
    reports = {name: train_here(tmp_path / name, *base, *extra)[0] for name, extra in variants.items()}
    want = [e["loss"] for e in reports["sa"]["epochs"]]
    for name, r in reports.items():
        assert r["partition"]["mode"] == "metis", name
        assert [e["loss"] for e in r["epochs"]] == pytest.approx(want, rel=1e-5), name
    assert reports["switch"]["fabric"] == "switch" and reports["switch"]["switches"]
    assert "assembled from the partitioned dataset's shards" in reports["modeled"]["modeled"]["adjacency"]


def test_normalize_features_is_pygs_transform():
    import torch
    import torch_geometric.transforms as T
    from torch_geometric.data import Data

    from netsparse_torch.run.training import normalize_features

    x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 0.5, -1.0], [2.0, 2.0, 2.0]])
    # By hand: minimum -2, shifted rows [3, 0, 5], [2.5, 2.5, 1], [4, 4, 4] over their sums 8, 6, 12.
    want = torch.tensor([[3 / 8, 0.0, 5 / 8], [2.5 / 6, 2.5 / 6, 1 / 6], [1 / 3, 1 / 3, 1 / 3]])
    torch.testing.assert_close(normalize_features(x), want)
    torch.testing.assert_close(normalize_features(x), T.NormalizeFeatures()(Data(x=x.clone())).x)


@pytest.mark.slow
def test_cora_gat_two_ranks_reaches_pyg_example_accuracy(tmp_path):
    # PyG's examples/gat.py reaches about 0.81-0.83 on Cora.
    report, _ = train_here(tmp_path, "dataset=cora", "model=gat", "world_size=2")
    assert report["final"]["test_acc"] >= 0.80
    assert len(report["epochs"]) == 200 and report["strategy"] == "sa"

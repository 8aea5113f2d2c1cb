"""Training a paper analog (``dataset=paper``): what a rank holds falls with the world size, and the
modeled block is the simulator's answer for the same pattern, partition, K and hardware."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.distributed as dist
from cli import train_here
from hydra import compose, initialize_config_dir

from netsparse_torch.config_check import config_dir
from netsparse_torch.errors import ConfigError
from netsparse_torch.kernels import CSR
from netsparse_torch.nn import DistGraph
from netsparse_torch.partition import AnalogDataset
from netsparse_torch.run import simulation
from netsparse_torch.run.launch import launch

SMALL = ["dataset=paper", "dataset.matrix=europe", "dataset.scale=5e-5", "dataset.num_features=6",
         "dataset.num_classes=3", "hidden=8", "epochs=1", "cluster=leafspine128"]


def held_bytes(root) -> int:
    """Bytes of every array, tensor and sparse matrix reachable from ``root`` through the package's
    objects, containers and attributes, each buffer counted once."""
    seen_objects, seen_buffers, total = set(), set(), 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen_objects or obj is None or isinstance(obj, str | bytes | int | float | bool):
            continue
        seen_objects.add(id(obj))
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            if storage.data_ptr() not in seen_buffers:
                seen_buffers.add(storage.data_ptr())
                total += storage.nbytes()
        elif isinstance(obj, np.ndarray):
            base = obj if obj.base is None else obj.base
            if isinstance(base, np.ndarray) and id(base) not in seen_buffers:
                seen_buffers.add(id(base))
                total += base.nbytes
        elif sp.issparse(obj):
            stack += [obj.data, obj.indices, obj.indptr]
        elif isinstance(obj, dict):
            stack += list(obj.values())
        elif isinstance(obj, list | tuple | set):
            stack += list(obj)
        elif type(obj).__module__.startswith("netsparse_torch") or isinstance(obj, CSR):
            stack += list(vars(obj).values()) if hasattr(obj, "__dict__") else []
    return total


def rank_bytes(rank, world_size, data, strategy):
    dg = DistGraph(data, rank, world_size, "rows", strategy)
    x = dg.x.clone().requires_grad_(True)
    dg.propagate(x, "gcn").sum().backward()  # the adjacency, the plan and the strategy's buffers exist now
    t = torch.tensor([held_bytes(dg)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


@pytest.mark.parametrize("strategy", ["sa", "netsparse"])
def test_per_rank_memory_falls_as_the_world_size_grows(strategy):
    """Nothing a rank holds scales with the whole graph: the largest rank's bytes fall with every doubling
    of the ranks, by about half from 2 to 4 (from 1 to 2 less: a rank of several also keeps its adjacency
    split into own and halo columns)."""
    data = AnalogDataset("europe", 0.002, num_features=16)  # 101,824 rows
    held = {ws: launch(rank_bytes, ws, (data, strategy)) for ws in (1, 2, 4)}
    assert held[1] > 20 * 2**20  # the whole graph's rows, features and adjacency on one rank
    assert held[2] < 0.7 * held[1] and held[4] < 0.55 * held[2], held


def _simulate(spec: str, k: int) -> dict:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose(config_name="simulate", overrides=[f"matrix={spec}", f"k={k}", "plots=false"])
    return simulation.run(cfg)


def test_the_modeled_block_is_netsparse_simulate_s_answer(tmp_path):
    report, printed = train_here(tmp_path, *SMALL, "world_size=2", "strategy=sa")
    block = report["modeled"]
    spec = AnalogDataset("europe", 5e-5).spec
    assert block["graph"]["name"] == "paper-europe@5e-05" and "raw analog " + spec in block["adjacency"]
    assert "self loop" in block["adjacency"]  # GCN's A + I is not what the block models: it says so
    ks = sorted({g["k"] for g in block["per_gather"]})
    assert ks == [3, 8]
    for k in ks:
        sim = _simulate(spec, k)
        assert sim["matrix"]["nnz"] == block["graph"]["nnz"]
        row = next(g for g in block["per_gather"] if g["k"] == k)
        for name in ("su_opt", "sa_opt", "netsparse"):
            assert row[f"{name}_comm_s"] == sim["strategies"][name]["comm_time_s"], (k, name)
    assert "this graph on 128 nodes: paper-europe@5e-05" in printed
    assert "synthetic analog of europe_osm at scale 5e-05" in printed


def test_the_full_size_block_has_the_same_fields_and_is_cached(tmp_path, monkeypatch):
    """cluster.full_size: the scale-1 block, here the 5e-5 analog standing in for it (the same code path
    at a size a test affords), built from the cache on the second run without generating the pattern."""
    from hw_models import analog_model

    monkeypatch.setattr("netsparse_torch.modeled.FULL_SCALE", 1e-4)
    first, printed = train_here(tmp_path / "a", *SMALL, "world_size=1", "cluster.full_size=true")
    full = first["modeled"]["full_size"]
    assert set(full) == set(first["modeled"]) - {"full_size"}
    assert full["graph"]["name"] == "paper-europe@0.0001" and full["graph"]["rows"] == 5091
    assert full["model_cache"]["pattern_generated"] and len(full["model_cache"]["gathers_computed"]) == 2
    assert "the paper's full-size graph on 128 nodes: paper-europe@0.0001" in printed
    monkeypatch.setattr(analog_model, "available_bytes", lambda: 0)  # no memory check when nothing is missing
    second, _ = train_here(tmp_path / "b", *SMALL, "world_size=2", "cluster.full_size=true")
    again = second["modeled"]["full_size"]
    assert not again["model_cache"]["pattern_generated"] and again["model_cache"]["gathers_computed"] == []
    # the model process's own peak (not the forking launcher's, which this pytest worker's RSS would be)
    assert again["process"]["peak_rss_bytes"] < 256 * 2**20
    for key in ("comm_time_s", "per_gather", "epoch_time_s", "end_to_end_speedup", "graph"):
        assert again[key] == full[key], key


def test_a_full_size_model_that_does_not_fit_is_one_line_before_training(tmp_path, monkeypatch):
    from hw_models import analog_model

    monkeypatch.setattr(analog_model, "available_bytes", lambda: 2**30)
    with pytest.raises(ConfigError, match=r"the model of paper-europe needs about 2\.\d GiB .* 1\.0 GiB are "
                                          "available: run it where more memory is free, or without cluster.full_size"):
        train_here(tmp_path, *SMALL, "world_size=1", "cluster.full_size=true")


def test_full_size_needs_a_paper_analog(tmp_path):
    with pytest.raises(ConfigError, match="cluster.full_size=true models the full-size original of a paper analog"):
        train_here(tmp_path, "dataset=cora", "cluster=leafspine128", "cluster.nodes=8", "cluster.full_size=true")

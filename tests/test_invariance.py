"""docs/invariance.md: with dropout on, the same seed trains the same model at every world size,
partition and strategy (counter-based dropout, netsparse_torch/nn/dropout.py)."""

import itertools

from graphs import random_graph
from hydra import compose, initialize_config_dir

from netsparse_torch.config_check import config_dir
from netsparse_torch.run.launch import launch
from netsparse_torch.run.training import Trainer

WORLD_SIZES = [1, 2, 3]
STRATEGIES = ["su", "sa", "netsparse"]
PARTITIONS = ["rows", "nnz", "metis"]
EPOCHS = 8


def configs(tmp_path) -> dict:
    common = [f"epochs={EPOCHS}", "dropout=0.5", "seed=3", "hidden=16", f"checkpoint_dir={tmp_path}"]
    with initialize_config_dir(config_dir(), version_base="1.3"):
        cfgs = {(s, p): compose("train", [*common, f"strategy={s}", f"partition={p}"])
                for s, p in itertools.product(STRATEGIES, PARTITIONS)}
        cfgs["no dropout"] = compose("train", [*common, "dropout=0"])
    return cfgs


def losses(rank, world_size, graph, cfgs):
    """Every configuration trained in one launch (one process group); rank 0's losses per epoch."""
    return {key: [e["loss"] for e in Trainer(rank, world_size, graph, cfg).fit()["epochs"]]
            for key, cfg in cfgs.items()}


def test_same_losses_at_every_world_size_partition_and_strategy(tmp_path):
    graph = random_graph(n=200, m=1000, features=12, classes=4)
    cfgs = configs(tmp_path)
    runs = {ws: launch(losses, ws, (graph, cfgs), timeout_s=120) for ws in WORLD_SIZES}
    reference = runs[1][("su", "rows")]
    assert len(reference) == EPOCHS
    # Dropout is really on: without it the run differs far beyond rounding.
    assert abs(runs[1]["no dropout"][-1] - reference[-1]) > 1e-3 * reference[-1]
    for ws, key in itertools.product(WORLD_SIZES, itertools.product(STRATEGIES, PARTITIONS)):
        got = runs[ws][key]
        for epoch, (a, b) in enumerate(zip(got, reference, strict=True)):
            assert abs(a - b) <= 1e-5 * abs(b), f"world size {ws}, {key}, epoch {epoch}: loss {a} != {b}"


def test_gat_attention_dropout_is_the_same_at_every_world_size_partition_and_strategy(tmp_path):
    # model=gat: feature dropout and attention dropout (keyed on the edge's original source and target
    # ids and the head) are both on; metis renumbers the nodes and twoface lays the gathered rows out
    # differently, so an edge's mask may not depend on where its rows land.
    graph = random_graph(n=120, m=600, features=8, classes=3)
    common = ["model=gat", "epochs=4", "seed=5", "hidden=4", "model.heads=2", f"checkpoint_dir={tmp_path}"]
    combos = [("su", "rows"), ("sa", "metis"), ("netsparse", "nnz"), ("twoface", "rows")]
    with initialize_config_dir(config_dir(), version_base="1.3"):
        cfgs = {(s, p): compose("train", [*common, f"strategy={s}", f"partition={p}"]) for s, p in combos}
        cfgs["no attention dropout"] = compose("train", [*common, "model.attention_dropout=0"])
    runs = {ws: launch(losses, ws, (graph, cfgs), timeout_s=120) for ws in WORLD_SIZES}
    reference = runs[1][("su", "rows")]
    assert abs(runs[1]["no attention dropout"][-1] - reference[-1]) > 1e-3 * reference[-1]
    for ws, key in itertools.product(WORLD_SIZES, combos):
        for epoch, (a, b) in enumerate(zip(runs[ws][key], reference, strict=True)):
            assert abs(a - b) <= 1e-5 * abs(b), f"GAT, world size {ws}, {key}, epoch {epoch}: loss {a} != {b}"

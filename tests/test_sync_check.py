"""A forgotten gradient sync stops the run whatever the loss: the distributed aggregation compares a
checksum of the parameters behind its input across ranks, so a PyG loop that keeps its own
``F.cross_entropy(out[mask], y[mask])`` and never calls ``dg.sync_gradients`` is one ConfigError on
every rank, for every strategy and layer, while a synchronised loop (and an opted-out one) trains on."""

import pytest
import torch
import torch.nn.functional as F
from graphs import random_graph

from netsparse_torch.errors import ConfigError
from netsparse_torch.nn import DistGATConv, DistGCNConv, DistGraph, DistSAGEConv
from netsparse_torch.nn.training import DENSE_CHECKS, check_aggregation
from netsparse_torch.run.launch import launch

LAYERS = {"gcn": DistGCNConv, "sage": DistSAGEConv, "gat": DistGATConv}
STEPS = 4


class Net(torch.nn.Module):
    def __init__(self, conv, fin: int, classes: int):
        super().__init__()
        self.conv1, self.conv2 = conv(fin, 8), conv(8, classes)

    def forward(self, x, dg):
        return self.conv2(self.conv1(x, dg).relu(), dg)


def plain_loop(dg: DistGraph, layer: str, sync: bool) -> str | None:
    """PyG's loop as a port might keep it: a per-rank mean loss, an evaluation under no_grad every step."""
    torch.manual_seed(0)
    model = Net(LAYERS[layer], dg.x.size(1), 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    try:
        for _ in range(STEPS):
            opt.zero_grad()
            out = model(dg.x, dg)
            mask = dg.mask("train")
            F.cross_entropy(out[mask], dg.y[mask]).backward()
            if sync:
                dg.sync_gradients(model)
            opt.step()
            with torch.no_grad():
                model(dg.x, dg)
    except ConfigError as exc:  # raised on every rank at the same aggregation: no rank waits for another
        return str(exc)
    return None


def runs(rank, world_size, graph) -> dict:
    got = {}
    for strategy in ("su", "sa", "twoface", "ds", "netsparse"):
        options = {"replication": world_size} if strategy == "ds" else {}
        dg = DistGraph(graph, strategy=strategy, strategy_options=options)
        got[("gcn", strategy)] = plain_loop(dg, "gcn", sync=False)
    for layer in ("sage", "gat"):
        got[(layer, "sa")] = plain_loop(DistGraph(graph), layer, sync=False)
    got["synced"] = plain_loop(DistGraph(graph, strategy="netsparse"), "gat", sync=True)
    got["checks off"] = plain_loop(DistGraph(graph, check_steps=0), "gcn", sync=False)
    return got


def test_a_forgotten_sync_stops_every_strategy_and_layer_whatever_the_loss():
    graph = random_graph(n=60, m=300, seed=3)
    for world_size in (2, 3):
        got = launch(runs, world_size, (graph,))
        for case in [k for k in got if isinstance(k, tuple)]:
            msg = got[case]
            assert msg is not None, f"{case} at {world_size} ranks trained unsynchronised weights without a word"
            # Aggregations 1 and 2 are the first step's forward, 3 and 4 its evaluation: the first one
            # after the unsynchronised step is the 5th; SAGE's first aggregates the raw features (no
            # parameter behind them), so its second, the 6th, is the first to see the weights.
            first = 6 if case[0] == "sage" else 5
            assert f"differ from rank 0 at aggregation {first}," in msg, (case, msg)
            assert "call dg.sync_gradients(model) after loss.backward()" in msg, (case, msg)
        assert got["synced"] is None and got["checks off"] is None


class _Counter:
    """The counting state check_aggregation reads, without a process group (world size 2, no collective
    is reached unless a call is checked: then the test's fake check_in_sync records it)."""

    world_size, check_steps = 2, 3

    def __init__(self):
        self._aggregations, self._aggregation_in_sync = 0, False


def test_checked_calls_are_the_first_ones_then_powers_of_two(monkeypatch):
    checked = []
    monkeypatch.setattr("netsparse_torch.nn.training.check_in_sync",
                        lambda dg, params, when: checked.append(dg._aggregations))
    dg = _Counter()
    for _ in range(1000):
        check_aggregation(dg, torch.zeros(1))
    assert checked == list(range(1, DENSE_CHECKS + 1)) + [32, 64, 128, 256, 512]


def test_a_complete_sync_needs_every_gradient_and_sends_no_flags(monkeypatch):
    """``sync_gradients(complete=True)`` (netsparse-train's loop: its loss reaches every parameter) sums
    the gradients alone, one flat buffer, and refuses a parameter without a gradient."""
    from types import SimpleNamespace

    from netsparse_torch.nn import training

    sent = []
    monkeypatch.setattr(training, "all_reduce", lambda dg, t: sent.append(t.numel()) or t.mul_(2))
    dg = SimpleNamespace(world_size=2, rank=1, group=None, _backward_unsynced=True)
    model = torch.nn.Linear(3, 2)
    model(torch.ones(1, 3)).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    training.sync_gradients(dg, model, complete=True)
    assert sent == [sum(p.numel() for p in model.parameters())]  # no flag per parameter
    assert all(torch.equal(p.grad, 2 * g) for p, g in zip(model.parameters(), grads, strict=True))
    model.bias.grad = None
    with pytest.raises(RuntimeError, match="parameter 1 has no gradient on rank 1"):
        training.sync_gradients(dg, model, complete=True)

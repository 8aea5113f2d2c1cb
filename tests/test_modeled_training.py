"""netsparse-train cluster=<target>: the modeled block (one epoch's gathers on the target cluster).

The gathers come from the training's own model (probe), so they are checked twice: against K lists
worked out by hand from the layer definitions, and against the bytes the real training *measured*
with the su strategy (every remote row, forward and backward, of every gather).
"""

import numpy as np
import pytest
from cli import train_here
from cli_here import train_error
from conftest import ROOT
from hydra import compose, initialize_config_dir

from hw_models import analysis as A
from hw_models.hardware import train_hardware
from hw_models.params import HardwareParams
from hw_models.simulator import NetSparseRun
from netsparse_torch import modeled as M
from netsparse_torch.errors import ConfigError
from netsparse_torch.report.modeled import modeled_lines

N, F, H, C = 600, 12, 8, 4  # synthetic graph: rows, features, hidden, classes
GRAPH = ["dataset=synthetic", f"dataset.num_nodes={N}", f"dataset.num_features={F}", f"dataset.num_classes={C}",
         f"hidden={H}", "world_size=2", "epochs=1", "strategy=su"]
CLUSTER = ["cluster=leafspine128", "cluster.nodes=16", "cluster.rack_size=4"]  # 16 virtual nodes, 2 ranks


def _gathers(kind, layers=2, f=F):
    return [(g["layer"], g["direction"], g["k"]) for g in M.epoch_gathers(kind, f, H, C, layers)]


def test_gcn_gathers_every_layer_both_ways():
    # GCN propagates lin(x): K is the layer's output width; lin has weights, so every layer's gather
    # has a backward reverse exchange (autograd runs backward from the last layer to the first).
    assert _gathers("gcn") == [("layer0", "forward", H), ("layer1", "forward", C),
                               ("layer1", "backward", C), ("layer0", "backward", H)]


def test_sage_gathers_inputs_and_skips_the_first_backward():
    # SAGE propagates the layer's input x: K is the input width; raw features need no gradient.
    assert _gathers("sage") == [("layer0", "forward", F), ("layer1", "forward", H), ("layer1", "backward", H)]
    assert _gathers("sage", 3) == [("layer0", "forward", F), ("layer1", "forward", H), ("layer2", "forward", H),
                                   ("layer2", "backward", H), ("layer1", "backward", H)]


def test_gat_gathers_one_sddmm_of_features_and_source_terms_per_layer():
    # A GAT layer gathers [h | s] once: heads x channels projected features plus one source attention
    # term per head (model=gat: 8 hidden heads of H channels, 1 output head of C). Both layers have
    # weights before the gather, so both have a backward reverse exchange.
    gathers = M.epoch_gathers("gat", F, H, C, 2)
    assert [(g["layer"], g["direction"], g["k"]) for g in gathers] == [
        ("layer0", "forward", 8 * H + 8), ("layer1", "forward", C + 1),
        ("layer1", "backward", C + 1), ("layer0", "backward", 8 * H + 8)]
    assert {g["kernel"] for g in gathers} == {"sddmm"}
    assert {g["kernel"] for g in M.epoch_gathers("gcn", F, H, C, 2)} == {"spmm"}
    ks = [g["k"] for g in M.epoch_gathers("gat", F, H, C, 2, heads=2, out_heads=3)]
    assert ks == [2 * H + 2, 3 * C + 3, 3 * C + 3, 2 * H + 2]


def test_probe_leaves_the_global_rng_alone():
    import torch

    torch.manual_seed(5)
    want = torch.rand(3)
    torch.manual_seed(5)
    M.epoch_gathers("gcn", 1433, 16, 7, 2)
    assert torch.equal(torch.rand(3), want)


def _su_tail_s(ks, nodes=16, rows=N, rate=400e9 / 8):
    """SUOpt by hand: the node owning the fewest rows receives all others, 4 B per element."""
    owned = min(len(p) for p in np.array_split(np.arange(rows), nodes))
    return (rows - owned) * 4 * sum(ks) / rate


@pytest.mark.parametrize("model, ks", [("gcn", [H, C, C, H]), ("sage", [F, H, H]),
                                       ("gat", [8 * H + 8, C + 1, C + 1, 8 * H + 8])])
def test_train_report_modeled_block(tmp_path, model, ks):
    report, printed = train_here(tmp_path, *GRAPH, f"model={model}", *CLUSTER)
    m = report["modeled"]
    # The measured su bytes of one epoch: every rank receives every remote row of every gather.
    owned = report["partition"]["rows"]
    assert report["comm"]["feature_bytes_per_epoch"] == sum(N - o for o in owned) * 4 * sum(ks)
    assert m["gathers_k"] == ks and [g["k"] for g in m["per_gather"]] == ks
    assert {g["direction"] for g in m["per_gather"]} == {"forward", "backward"}
    # Virtual nodes, not world_size.
    assert m["virtual_nodes"] == 16 and m["cluster"] == {"nodes": 16, "rack_size": 4, "topology": "leafspine"}
    assert report["world_size"] == 2 and m["cluster_name"] == "leafspine128"
    assert "modeled" in m["what"] and "measured" in m["what"] and "under 'modeled'" in report["measured"]
    assert m["netsparse_status"] == "simulated"
    t = m["comm_time_s"]
    assert t["su_opt"] == pytest.approx(_su_tail_s(ks))
    assert all(t[s] > 0 for s in ("su_opt", "sa_opt", "netsparse"))
    for s in ("su_opt", "sa_opt", "netsparse"):  # tail of a sum: between the largest and the sum of tails
        per = [g[f"{s}_comm_s"] for g in m["per_gather"]]
        assert max(per) <= t[s] * (1 + 1e-12) and t[s] <= sum(per) * (1 + 1e-12)
    _check_speedups(m)
    assert "modeled      16 virtual nodes" in printed


def _check_speedups(m):
    def check(sp, times):
        assert sp["netsparse_vs_su_opt"] == pytest.approx(times["su_opt"] / times["netsparse"])
        assert sp["netsparse_vs_sa_opt"] == pytest.approx(times["sa_opt"] / times["netsparse"])
        assert sp["sa_opt_vs_su_opt"] == pytest.approx(times["su_opt"] / times["sa_opt"])

    check(m["comm_speedup"], m["comm_time_s"])
    comp = m["compute"]["time_s"]
    for mode in ("none", "full"):
        check(m["end_to_end_speedup"][mode], m["epoch_time_s"][mode])
    for s, comm in m["comm_time_s"].items():
        none, full = m["epoch_time_s"]["none"][s], m["epoch_time_s"]["full"][s]
        assert max(comm, comp) <= full * (1 + 1e-12) and full <= none * (1 + 1e-12)
        assert none <= (comm + comp) * (1 + 1e-12)


def _cfg(*overrides):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


def test_cluster_none_has_no_block():
    from netsparse_torch.graph import load_dataset

    cfg = _cfg(*GRAPH)
    assert cfg.cluster.name == "none"
    report: dict = {}
    assert M.add_modeled(report, cfg, load_dataset(cfg.dataset), train_hardware(cfg)) is None
    assert "modeled" not in report
    assert modeled_lines(None) == []


def test_cluster_configs_are_the_table5_targets():
    for name, topo in (("leafspine128", "leafspine"), ("hyperx128", "hyperx"), ("dragonfly128", "dragonfly")):
        p = train_hardware(_cfg(f"cluster={name}"))
        assert (p.cluster.nodes, p.cluster.topology) == (128, topo)
        assert p.link == HardwareParams().link and p.snic == HardwareParams().snic
    assert train_hardware(_cfg("cluster=leafspine128")).cluster.rack_size == 16


def test_bad_cluster_fails_before_training(tmp_path):
    line = train_error(tmp_path / "run", *GRAPH, "cluster=leafspine128", "cluster.nodes=601")
    assert "cluster.nodes=601 virtual nodes > 600 graph rows" in line
    # The other bad clusters in-process, through the same checks the CLI runs (its contract: above).
    with pytest.raises(ConfigError, match="unknown topology 'torus'"):
        train_hardware(_cfg(*GRAPH, "cluster=leafspine128", "cluster.topology=torus"))
    with pytest.raises(ConfigError, match="compute_model"):
        cfg = _cfg(*GRAPH, "cluster=leafspine128", "cluster.compute_model=gpu")
        M.check_cluster(cfg, type("G", (), {"num_nodes": N})(), train_hardware(cfg))


class _SliceSim:
    """Fake simulator: every node finishes in K ns, so slicing shows up in the sum."""

    def __init__(self):
        self.ks = []

    def __call__(self, a, w, params, k, kernel, mechanisms):
        self.ks.append(k)
        return NetSparseRun(np.full(w.nodes, k * 1e-9), {})


def test_wide_properties_are_simulated_in_packet_sized_slices():
    # Table 5: MTU 1500, upper 50 B; Fig. 6 concatenation header 14 B, PR header 18 B -> 1418 B = 354 fp32.
    p = HardwareParams().replace(cluster={"nodes": 4, "rack_size": 2})
    assert A.max_packet_k(p) == (1500 - 50 - 14 - 18) // 4 == 354
    assert A.property_slices(1433, p) == [354, 354, 354, 354, 17] and A.property_slices(354, p) == [354]
    import scipy.sparse as sp

    a = sp.random(40, 40, density=0.2, random_state=1, format="csr")
    sim = _SliceSim()
    m = A.modeled_training(a, p, [1433, 16, 16], simulator=sim)
    assert sorted(sim.ks) == [16, 17, 354]  # each distinct width simulated once
    assert m["per_gather"][0]["netsparse_comm_s"] == pytest.approx(1433e-9)
    assert m["per_gather"][0]["netsparse_slices"] == 5
    assert m["comm_time_s"]["netsparse"] == pytest.approx((1433 + 32) * 1e-9)

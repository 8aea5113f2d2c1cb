"""fabric=switch on the training path: NetSparse packets of real DistGCNConv/DistSAGEConv layers go
rank -> ToR -> (spine -> ToR) -> owner through switches started by LocalSwitches; the results equal
strategy=sa (forward bit for bit, gradients within 1e-6), and the ToR cache serves a second node of
a rack. Expected values come from strategy=sa and from counts of the plan, never from the switches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from graphs import conv_grads, random_graph
from omegaconf import OmegaConf

from hw_models.hardware import train_hardware
from netsparse_torch.errors import ConfigError
from netsparse_torch.graph import Graph, csr_from_edges, random_split
from netsparse_torch.nn import DistGCNConv, DistGraph, DistSAGEConv
from netsparse_torch.run.launch import launch
from netsparse_torch.run.switch_launcher import LocalSwitches, attach_rank, check_switch_config

LAYERS = {"gcn": DistGCNConv, "sage": DistSAGEConv}


def rank_cfg(spec: dict, rack_size: int, timeout_s: float = 30.0):
    return OmegaConf.create({"fabric": {"name": "switch", "switches": spec, "token_env": None},
                             "cluster": {"rack_size": rack_size}, "rig": {"timeout_s": timeout_s}})


def compare(rank, world_size, graph, width, cfg):
    fabric = attach_rank(rank, world_size, cfg)
    results = {}
    for layer in ("gcn", "sage"):
        per = {}
        for strategy in ("sa", "netsparse"):
            options = {"fabric": fabric, "pending_capacity": 4} if strategy == "netsparse" else {}
            per[strategy] = conv_grads(LAYERS[layer], DistGraph(graph, rank, world_size, "rows", strategy, options),
                                       width, rank)
        results[layer] = per
    fabric.close()
    return results


@pytest.mark.parametrize("rack_size", [4, 2], ids=["one_rack", "two_racks"])
def test_switch_fabric_equals_sa(rack_size):
    graph = random_graph(n=60, m=300, features=6)
    with LocalSwitches(4, rack_size, 4) as sw:
        results = launch(compare, 4, (graph, 6, rank_cfg(sw.spec(), rack_size)), timeout_s=120)
        report = {e["name"]: e["counters"] for e in sw.report()}
    assert sorted(report) == (["tor0"] if rack_size == 4 else ["spine", "tor0", "tor1"])
    for layer, per in results.items():
        sa, ns = per["sa"], per["netsparse"]
        assert torch.equal(sa["out"], ns["out"]), f"{layer}: forward not bit-exact"
        for key in sa:
            if key != "out":
                torch.testing.assert_close(ns[key], sa[key], atol=1e-6, rtol=0, msg=f"{layer}: {key}")
    tor0 = report["tor0"]
    assert tor0["read_prs_in"] > 0 and tor0["prs_in"] == tor0["prs_out"]  # nothing lost or duplicated


def shared_rows_graph() -> Graph:
    """160 rows in 4 blocks of 40 (rack 0 = ranks 0, 1; rack 1 = ranks 2, 3). Rank 0's first row reads
    rows 120..139 (rank 3); rank 1's rows 40..79 read rows 80..119 of rank 2 (one each, in CSR order),
    and only its last row also reads the same rows 120..139. With one RIG command and a 4-entry Pending
    PR Table rank 1 reaches the shared rows ~10 round trips after rank 0 asked for them, so they are
    in ToR 0's cache by then. No read stays inside a rack (every hit is a cross-rack read)."""
    shared = np.arange(120, 140)
    dst = [np.zeros(20, np.int64), np.arange(40, 80), np.full(20, 79)]  # dst row reads src column
    src = [shared, np.arange(80, 120), shared]
    # rack 1 reads rack 0 (rank 2 -> rows 0..19, rank 3 -> rows 40..59) so its ToR works too
    dst += [np.arange(80, 100), np.arange(120, 140)]
    src += [np.arange(0, 20), np.arange(40, 60)]
    adj = csr_from_edges(np.concatenate(src), np.concatenate(dst), 160, "shared")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(160, 8, generator=gen)
    y = torch.randint(0, 3, (160,), generator=gen)
    return Graph("shared", adj, x, y, *random_split(160, 0), 3).validate()


def gather(rank, world_size, graph, cfg):
    fabric = attach_rank(rank, world_size, cfg)
    # one RIG command per rank (a batch above its stream), as shared_rows_graph's timing assumes
    options = {"fabric": fabric, "pending_capacity": 4, "batch_size": 32768}
    dg = DistGraph(graph, rank, world_size, "rows", "netsparse", options)
    sa = DistGraph(graph, rank, world_size, "rows", "sa", {})
    conv = DistSAGEConv(8, 3)
    x = graph.x[dg.plan.row_start: dg.plan.row_start + dg.plan.n_local]
    with torch.no_grad():
        out, ref = conv(x, dg), conv(x, sa)
    stats = dg.strategy.stats()["layers"]["/forward"]
    fabric.close()
    return {"equal": torch.equal(out, ref), "prs_issued": stats["prs_issued"], "halo": dg.plan.n_halo}


def test_a_second_node_in_a_rack_hits_the_tor_cache():
    graph = shared_rows_graph()
    with LocalSwitches(4, 2, 4) as sw:
        results = launch(_all_ranks(gather), 4, (graph, rank_cfg(sw.spec(), 2)), timeout_s=120)
        report = {e["name"]: e["counters"] for e in sw.report()}
    assert all(r["equal"] for r in results)
    # every read PR crosses racks in this graph (see shared_rows_graph): what the ToRs did not answer
    # from their caches went up to the spine
    issued = sum(r["prs_issued"] for r in results)
    assert issued == sum(r["halo"] for r in results) == 20 + 60 + 20 + 20  # the plan: distinct remote rows
    hits = report["tor0"]["cache_hits"] + report["tor1"]["cache_hits"]
    assert report["tor0"]["cache_hits"] >= 1  # rank 1 got some of rows 120..139 from ToR 0
    assert hits <= 20  # only rank 1's second reads of the shared rows can hit
    assert report["spine"]["read_prs_in"] == issued - hits
    for tor in ("tor0", "tor1"):
        c = report[tor]
        assert c["cache_hits"] + c["cache_misses"] == c["read_prs_in"]


def _all_ranks(fn):
    """launch() returns rank 0's value: gather every rank's with all_gather_object."""
    return _Gathered(fn)


class _Gathered:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, rank, world_size, *args):
        import torch.distributed as dist

        out = [None] * world_size
        dist.all_gather_object(out, self.fn(rank, world_size, *args))
        return out


def test_switch_fabric_needs_the_netsparse_strategy_and_a_rack_size():
    cfg = OmegaConf.create({"strategy": {"name": "sa"}, "cluster": {"rack_size": 2}, "rig": {"timeout_s": 30}})
    with pytest.raises(ConfigError, match="needs strategy=netsparse"):
        check_switch_config(cfg)
    cfg.strategy.name, cfg.cluster.rack_size = "netsparse", 0
    with pytest.raises(ConfigError, match="cluster.rack_size"):
        check_switch_config(cfg)


def test_netsparse_train_fabric_switch_matches_sa_and_reports_every_switch(tmp_path):
    from cli import train_here

    common = ["dataset=cora", "world_size=4", "epochs=3", "hidden=8"]
    sw, printed = train_here(tmp_path / "switch", *common, "fabric=switch", "cluster.rack_size=2")
    assert "switch tor1" in printed and "ToR cache hits" in printed and "forwarded (no cache)" in printed
    sa, _ = train_here(tmp_path / "sa", *common, "strategy=sa")
    assert sw["strategy"] == "netsparse" and sw["fabric"] == "switch"  # fabric=switch selects netsparse
    assert sw["epochs"][0]["loss"] == sa["epochs"][0]["loss"]  # same weights, bit-exact forward
    for a, b in zip(sw["epochs"], sa["epochs"], strict=True):
        assert abs(a["loss"] - b["loss"]) < 1e-5
    counters = {e["name"]: e["counters"] for e in sw["switches"]}
    assert {(e["name"], e["role"]) for e in sw["switches"]} == {("spine", "spine"), ("tor0", "tor"), ("tor1", "tor")}
    for c in counters.values():
        assert {"cache_hits", "cache_misses", "prs_in", "prs_out", "packets_in", "packets_out"} <= set(c)
        assert c["prs_in"] == c["prs_out"]  # every PR in went out (as itself or as a cache-hit response)
    tors = [counters["tor0"], counters["tor1"]]
    # reads enter the ToRs from their nodes (what the ranks issued) and from the spine (cross-rack)
    assert sum(t["read_prs_in"] for t in tors) == sw["netsparse"]["prs_issued"] + counters["spine"]["read_prs_out"]
    assert all(t["cache_hits"] + t["cache_misses"] == t["read_prs_in"] for t in tors)
    assert sum(t["cache_hits"] for t in tors) > 0


def launcher_cfg(switches=None):
    return OmegaConf.create({"world_size": 4, "strategy": {"name": "netsparse"}, "cluster": {"rack_size": 2},
                             "rig": {"timeout_s": 30}, "fabric": {"name": "switch", "switches": switches,
                                                                  "token_env": None}})


def test_launcher_stops_the_switches_it_started_when_a_rank_fails():
    from netsparse_torch.run.switch_launcher import switch_service

    cfg = launcher_cfg()
    with pytest.raises(RuntimeError, match="a rank failed"), switch_service(cfg, train_hardware(cfg)) as service:
        servers = list(service.local.servers.values())
        assert sorted(cfg.fabric.switches) == ["spine", "tors"] and len(cfg.fabric.switches.tors) == 2
        raise RuntimeError("a rank failed")
    assert len(servers) == 3 and all(s.summary is not None for s in servers)  # all stopped


def test_given_switches_must_match_the_racks():
    from netsparse_torch.run.switch_launcher import switch_service

    for switches, error in (({"spine": "127.0.0.1:1", "tors": ["127.0.0.1:2"]}, "needs 2 ToR address"),
                            ({"spine": None, "tors": ["127.0.0.1:2", "127.0.0.1:3"]}, "needs a spine")):
        cfg = launcher_cfg(switches)
        with pytest.raises(ConfigError, match=error), switch_service(cfg, train_hardware(cfg)):
            pass


def test_prs_by_owner_counts_a_frames_prs_per_owner_of_their_idx():
    from hw_models import unit_args, units
    from hw_models.unit_args import binding as native_units

    WIRE = unit_args.wire()

    def packet(kind, idx):
        n = len(idx)
        payload = np.zeros((n, 16), np.uint8) if kind == units.RESPONSE else None
        return units.encode_packet(kind, 0, 16, np.zeros(n, np.int64), np.zeros(n, np.int64), np.array(idx),
                                   np.arange(n), payload, **WIRE)

    frame = packet(units.READ, [7, 12, 3, 15]) + packet(units.RESPONSE, [4, 5, 0])
    # owners hold rows [0, 4), [4, 8), [8, 16): idx 0, 3 -> 0; 4, 5, 7 -> 1; 12, 15 -> 2
    assert native_units.prs_by_owner(frame, [0, 4, 8, 16], **WIRE).tolist() == [2, 3, 2]
    with pytest.raises(ValueError, match="idx 12 outside the row bounds"):
        native_units.prs_by_owner(frame, [0, 4, 8], **WIRE)

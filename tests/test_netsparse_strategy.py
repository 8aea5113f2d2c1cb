"""strategy=netsparse on the training path: bit-exact with sa forward, gradients within 1e-6,
statistics that add up, wide rows split into column kernels, and the public rig() operation."""

import threading

import numpy as np
import pytest
import torch
import torch.distributed as dist
from graphs import conv_grads, random_graph

import netsparse_torch
from hw_models import unit_args
from netsparse_torch.comm.netsparse import NetSparse, summarize
from netsparse_torch.comm.rig import max_columns, rig
from netsparse_torch.errors import ConfigError, RigTimeoutError
from netsparse_torch.nn import DistGCNConv, DistGraph, DistSAGEConv
from netsparse_torch.run.launch import launch

LAYERS = {"gcn": DistGCNConv, "sage": DistSAGEConv}


def compare(rank, world_size, graph, width):
    results = {}
    for layer in ("gcn", "sage"):
        per = {}
        for variant in ("sa", "netsparse", "netsparse inline"):
            strategy = variant.split()[0]
            options = {"pending_capacity": 4, "overlap": variant == "netsparse"} if strategy == "netsparse" else {}
            dg = DistGraph(graph, rank, world_size, "rows", strategy, options)
            per[variant] = {**conv_grads(LAYERS[layer], dg, width, rank), "stats": dg.strategy.stats()}
        results[layer] = per
    return results


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_netsparse_equals_sa(world_size):
    graph = random_graph(n=60, m=300, features=6)
    results = launch(compare, world_size, (graph, 6))
    for layer, per in results.items():
        sa, ns, inline = per["sa"], per["netsparse"], per["netsparse inline"]
        assert torch.equal(sa["out"], ns["out"]), f"{layer}: forward not bit-exact"
        # overlap=False gathers before the own-block SpMM: the same values, the same counters
        assert torch.equal(inline["out"], ns["out"]) and inline["stats"] == ns["stats"], layer
        for key in sa:
            if key not in ("out", "stats"):
                torch.testing.assert_close(ns[key], sa[key], atol=1e-6, rtol=0, msg=f"{layer}: {key}")
        fwd = ns["stats"]["layers"]["/forward"]
        assert fwd["local"] + fwd["filtered"] + fwd["coalesced"] + fwd["prs_issued"] == fwd["idxs"]
        assert fwd["rounds"] > 1  # a 4-entry Pending PR Table must stall and take several rounds
        assert fwd["filtered"] + fwd["coalesced"] > 0


def test_wide_rows_are_gathered_in_column_kernels():
    width = max_columns(4, **unit_args.wire()) + 7  # one property no longer fits a response PR
    graph = random_graph(n=30, m=90, features=width)
    results = launch(compare, 2, (graph, width))
    for per in results.values():
        assert torch.equal(per["sa"]["out"], per["netsparse"]["out"])


def test_summary_adds_ranks_and_derives_ratios():
    a = {"layers": {"l0/forward": {"idxs": 10, "local": 4, "filtered": 1, "coalesced": 1, "prs_issued": 4,
                                   "packets": 2, "prs": 8, "header_bytes": 100, "payload_bytes": 300,
                                   "wire_bytes": 400, "rounds": 1},
                    "l0/backward": {"mechanism": "reverse_exchange", "payload_bytes": 50, "wire_bytes": 50}}}
    s = summarize([a, a])
    assert s["idxs"] == 20 and s["packets"] == 4 and s["prs_per_packet"] == 4.0
    assert s["goodput"] == 0.75 and s["backward_bytes"] == 100
    assert s["layers"]["l0/forward"]["goodput"] == 0.75


def rig_case(rank, world_size, bounds, table, idxs):
    local = table[bounds[rank]:bounds[rank + 1]]
    # one RIG command per node (a batch larger than the stream): its unit's Pending PR Table coalesces
    # every repeat, so no column is read twice; the second gather keeps Table 5's batch (auto)
    fut = netsparse_torch.rig(local, idxs[rank], bounds, batch_size=len(idxs[rank]))
    pg_fut = rig(local, idxs[rank], bounds, group=dist.group.WORLD, coalesce=False)
    return fut.wait(), pg_fut.wait(), fut.value().rig_stats


def test_rig_is_an_indexed_gather():
    table = torch.randn(20, 5)
    bounds = [0, 7, 13, 20]
    rng = np.random.default_rng(0)
    idxs = [torch.from_numpy(rng.integers(0, 20, 40)) for _ in range(3)]
    out, out_pg, stats = launch(rig_case, 3, (bounds, table, idxs))
    assert torch.equal(out, table[idxs[0]]) and torch.equal(out_pg, table[idxs[0]])
    assert stats["prs_issued"] <= len(set(idxs[0].tolist()))


def rig_bad(rank, world_size):
    with pytest.raises(ValueError, match="outside"):
        netsparse_torch.rig(torch.zeros(2, 3), torch.tensor([0, 99]), [0, 2, 4])
    return True


def test_rig_rejects_out_of_range_idx():
    assert launch(rig_bad, 2)


class _HeldFabric:
    """A fabric whose kernel waits until the caller has got ``transport.start``'s handle back (so the gather
    must run in the background), notes its thread, then gives up as a RIG watchdog would."""

    name = "held"

    def __init__(self, world_size):
        self.world_size = world_size
        self.released = threading.Event()
        self.thread = None

    def run_kernel(self, node, prop_bytes):
        self.thread = threading.current_thread()
        assert self.released.wait(30), "transport.start did not return while the gather was in flight"
        raise RigTimeoutError("RIG command watchdog expired (test)", peers=[1 - dist.get_rank()])


def held_gather(rank, world_size, graph):
    dg = DistGraph(graph, rank, world_size, "rows", "sa")
    fabric = _HeldFabric(world_size)
    strat = NetSparse(dg.plan, fabric=fabric)
    x = torch.randn(dg.plan.n_local, 4)
    halo = torch.full((dg.plan.n_halo, 4), -1.0)
    pending = strat.transport.start(x, halo, "t")
    fabric.released.set()  # only reachable when transport.start returned before the kernel finished
    with pytest.raises(RigTimeoutError) as err:
        pending.wait()
    assert err.value.peers == [1 - rank]
    assert fabric.thread is not threading.main_thread()
    assert torch.equal(halo, torch.zeros_like(halo))  # a timed-out gather leaves no partial halo
    with pytest.raises(ConfigError, match="Fabric object"):
        NetSparse(dg.plan, fabric="switch")
    return True


def test_halo_gather_runs_in_the_background_and_wait_raises_its_error():
    assert launch(held_gather, 2, (random_graph(n=30, m=120, features=4),))

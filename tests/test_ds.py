"""Dense shifting: bad replication factors fail with one clear error before any communication; the
padded bytes it moves match the 1.5D count worked out by hand."""

import numpy as np
import pytest
import torch

from netsparse_torch.comm import make_strategy
from netsparse_torch.comm.ds import check_replication
from netsparse_torch.errors import ConfigError
from netsparse_torch.plan import Plan


def fake_plan(world_size: int, rank: int = 0) -> Plan:
    bounds = np.array([0, 3, 5, 8, 10, 12, 14, 16, 18][: world_size + 1])
    return Plan(rank, world_size, bounds, np.empty(0, np.int64), [0] * world_size,
                torch.empty(0, dtype=torch.long), [0] * world_size)


@pytest.mark.parametrize("c,p", [(3, 4), (2, 3), (8, 4), (0, 2), (-2, 4), (2.0, 4)])
def test_replication_must_divide_world_size(c, p):
    with pytest.raises(ConfigError, match="replication factor .* must be a positive integer dividing"):
        make_strategy("ds", fake_plan(p), replication=c)


def test_good_replication_and_moved_bytes():
    assert check_replication(2, 4) == 2 and check_replication(4, 4) == 4
    # p=4 blocks of rows 3,2,3,2 padded to 3; c=1 (no team: make_strategy builds no group): q=4 teams,
    # 3 shifts of 1 padded block = 9 rows; K=5 float32 -> 9*5*4 = 180 bytes.
    s = make_strategy("ds", fake_plan(4), replication=1)
    assert s.moved_bytes(torch.zeros(3, 5)) == 180
    assert s.stats() == {"replication": 1, "rounds": 4}


class CoalescingRecorder:
    """Stands in for the netsparse group's NCCL backend on CPU tensors: runs each send and receive on
    the group's gloo and records whether it was posted inside an NCCL group (``_start_coalescing`` ..
    ``_end_coalescing``), which is what keeps NCCL from deadlocking on a send and a receive with one
    peer."""

    def __init__(self, gloo):
        self.gloo, self.posted, self.batch = gloo, [], None

    def __getattr__(self, name):  # every collective but send and recv: gloo's, as it is
        return getattr(self.gloo, name)

    def _start_coalescing(self, device):
        self.batch = []

    def _end_coalescing(self, device):
        from netsparse_torch.backend import _StagedWork

        works, self.batch = self.batch, None
        return _StagedWork(works)

    def _post(self, kind, work):
        self.posted.append((kind, self.batch is not None))
        if self.batch is not None:
            self.batch.append(work)
        return work

    def send(self, tensors, dst, tag):
        return self._post("send", self.gloo.send(tensors, dst, tag))

    def recv(self, tensors, src, tag):
        return self._post("recv", self.gloo.recv(tensors, src, tag))


def ds_shifts_on_nccl(rank, world_size):
    """One ds layer forward and backward on a 2-rank graph (q = 2: the send and receive peer is the same
    rank) with the default group's CPU tensors routed to the recording NCCL stand-in."""
    import torch.distributed as dist
    from graphs import random_graph

    from netsparse_torch.nn import DistGCNConv, DistGraph

    graph = random_graph()
    dg = DistGraph(graph, rank, world_size, strategy="ds", strategy_options={"replication": 1})
    pg = dist.group.WORLD
    recorder = CoalescingRecorder(pg._gloo)
    pg._nccl, pg._routed_types, pg._device = recorder, ("cpu",), None
    torch.manual_seed(0)
    conv = DistGCNConv(graph.num_features, 4)
    x = dg.x.clone().requires_grad_()
    out = conv(x, dg)
    out.pow(2).sum().backward()
    pg._nccl, pg._routed_types = None, ("cuda",)  # the report's collectives go to gloo again
    mine = {"posted": recorder.posted, "out": out.detach(), "grad": x.grad, "ids": dg.node_ids}
    everyone = [None] * world_size
    dist.all_gather_object(everyone, mine)
    return everyone


def test_ds_shifts_are_one_nccl_group_each():
    from graphs import edge_index, random_graph
    from torch_geometric.nn import GCNConv

    from netsparse_torch.run.launch import launch

    everyone = launch(ds_shifts_on_nccl, 2, timeout_s=120)
    for mine in everyone:
        # forward: 1 shift; backward: 1 shift; each a send and a receive, both inside an NCCL group
        assert sorted(mine["posted"]) == [("recv", True), ("recv", True), ("send", True), ("send", True)]
    graph = random_graph()
    torch.manual_seed(0)
    ref = GCNConv(graph.num_features, 4)
    x = graph.x.clone().requires_grad_()
    out = ref(x, edge_index(graph))
    out.pow(2).sum().backward()
    ids = torch.cat([m["ids"] for m in everyone])
    torch.testing.assert_close(torch.cat([m["out"] for m in everyone]), out.detach()[ids])
    torch.testing.assert_close(torch.cat([m["grad"] for m in everyone]), x.grad[ids])

"""The ``collective`` fabric: a RIG kernel as exchange rounds of ``torch.distributed`` all_to_all.

Per round every rank pumps read packets out of its client units, one delivery carries them to their
owners, the owners' server units answer with response packets, a second delivery carries those back,
and the client units write the properties into the halo buffer. Rounds repeat until every rank's
commands are answered (an all_reduce MIN of ``node.done()``): a unit stalls when its Pending PR Table
is full, so a large halo takes several rounds.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist


class CollectiveFabric:
    """Delivers each rank's per-destination packet bytes to the ranks of ``group`` (None: WORLD)."""

    name = "collective"

    def __init__(self, group=None):
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.bytes_sent = 0
        self.rounds = 0

    def run_kernel(self, node, prop_bytes: int) -> int:
        """Exchange rounds until every rank's node is done; returns the number of rounds. The packets
        carry their own lengths, so ``prop_bytes`` (set on the node by ``begin_kernel``) is not needed."""
        rounds = 0
        while True:
            reads = self.deliver(node.pump_reads())
            node.absorb(self.deliver(node.serve(reads)))
            rounds += 1
            self.rounds += 1
            if all_done(node.done(), self.group):
                return rounds

    def deliver(self, outgoing: dict[int, bytes]) -> bytes:
        """Sends ``outgoing[d]`` (encoded packets) to rank ``d``; returns what every rank sent here,
        concatenated in rank order. One all_to_all of sizes, then one of bytes."""
        parts = [np.frombuffer(outgoing.get(d, b""), dtype=np.uint8) for d in range(self.world_size)]
        sizes = torch.tensor([p.size for p in parts], dtype=torch.long)
        recv_sizes = torch.empty_like(sizes)
        dist.all_to_all_single(recv_sizes, sizes, group=self.group)
        send = torch.from_numpy(np.concatenate(parts))
        recv = torch.empty(int(recv_sizes.sum()), dtype=torch.uint8)
        dist.all_to_all_single(recv, send, recv_sizes.tolist(), sizes.tolist(), group=self.group)
        self.bytes_sent += int(sizes.sum())
        return recv.numpy().tobytes()


def all_done(flag: bool, group=None) -> bool:
    """Whether every rank of ``group`` passed ``flag`` true (an all_reduce MIN; also a barrier)."""
    t = torch.tensor([1 if flag else 0], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.MIN, group=group)
    return bool(t.item())

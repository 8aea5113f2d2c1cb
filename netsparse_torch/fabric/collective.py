"""The ``collective`` fabric: one all_to_all of sizes, then one of bytes, per exchange round."""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist


class CollectiveFabric:
    """Delivers ``outgoing[d]`` (encoded packets for rank ``d``) and returns what each rank sent here."""

    name = "collective"

    def __init__(self, world_size: int, group=None):
        self.world_size = world_size
        self.group = group
        self.bytes_sent = 0
        self.rounds = 0

    def exchange(self, outgoing: list[bytes | np.ndarray]) -> list[np.ndarray]:
        if len(outgoing) != self.world_size:
            raise ValueError(f"exchange needs one buffer per rank ({self.world_size}), got {len(outgoing)}")
        parts = [np.frombuffer(b, dtype=np.uint8) if isinstance(b, bytes | bytearray) else b.view(np.uint8)
                 for b in outgoing]
        sizes = torch.tensor([p.size for p in parts], dtype=torch.long)
        recv_sizes = torch.empty_like(sizes)
        dist.all_to_all_single(recv_sizes, sizes, group=self.group)
        send = torch.from_numpy(np.concatenate(parts)) if parts else torch.empty(0, dtype=torch.uint8)
        recv = torch.empty(int(recv_sizes.sum()), dtype=torch.uint8)
        dist.all_to_all_single(recv, send, recv_sizes.tolist(), sizes.tolist(), group=self.group)
        self.bytes_sent += int(sizes.sum())
        self.rounds += 1
        return list(np.split(recv.numpy(), np.cumsum(recv_sizes.numpy())[:-1]))

"""The ``switch`` fabric: NetSparse packets travel rank -> its ToR -> (spine -> other ToR) -> owner rank
through the gRPC switch service (netsparse_torch.switch).

With a ToR property cache a read can come back as a response before it reaches its owner, so the
all_to_all round structure of the ``collective`` fabric (reads phase, then responses phase) does not
hold. This fabric instead runs a whole RIG kernel event-driven: it sends the node's read packets,
serves reads and absorbs responses as they arrive, pumps more reads as Pending PR Table entries free,
and stops when every rank is done (``all_done``: an all_reduce MIN of ``node.done()``, called the same
number of times on every rank). Every wait carries a timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from netsparse_torch._C import units as _cu
from netsparse_torch.switch.client import ControlClient, SwitchClient, SwitchError

READ, RESPONSE = 0, 1


def _dist_all_done(group=None) -> Callable[[bool], bool]:
    import torch
    import torch.distributed as dist

    def all_done(flag: bool) -> bool:
        t = torch.tensor([1 if flag else 0], dtype=torch.int32)
        dist.all_reduce(t, op=dist.ReduceOp.MIN, group=group)
        return bool(t.item())

    return all_done


class SwitchFabric:
    """One rank's attachment to its ToR. ``run_kernel(node)`` replaces the exchange rounds."""

    name = "switch"

    def __init__(self, world_size: int, rank: int, address: str, *, token: str | None = None,
                 tls_ca: bytes | None = None, group=None, timeout_s: float = 30.0, poll_s: float = 0.005,
                 all_done: Callable[[bool], bool] | None = None, controls: list[str] = ()):
        self.world_size, self.rank, self.group = world_size, rank, group
        self.timeout_s, self.poll_s = timeout_s, poll_s
        self.client = SwitchClient(address, rank, token=token, tls_ca=tls_ca)
        self.all_done = all_done or _dist_all_done(group)
        # switches this rank invalidates before each kernel (e.g. the first rank of a rack: its ToR;
        # rank 0 also the spine), so every switch expects the kernel's property size
        self.controls = [ControlClient(a, token=token, tls_ca=tls_ca, timeout=timeout_s) for a in controls]
        self.bytes_sent = 0
        self.rounds = 0

    def exchange(self, outgoing):
        raise NotImplementedError("the switch fabric runs whole kernels event-driven: call run_kernel(node)")

    def _send(self, per_dest: dict) -> None:
        data = b"".join(per_dest.values())
        if data:
            self.client.send(data, timeout=self.timeout_s)
            self.bytes_sent += len(data)

    def _handle(self, node, frame: bytes) -> None:
        parts, _, _ = _cu.split_frame(frame, n_ports=2, by_type=True)
        if parts[READ]:
            self._send(node.serve(parts[READ]))
        if parts[RESPONSE]:
            node.absorb(parts[RESPONSE])

    def begin_kernel(self, prop_bytes: int) -> None:
        """Invalidates the property caches of this rank's switches for a kernel of ``prop_bytes``-byte
        properties (paper §6.2.2: the cache is invalidated before each kernel), then waits for every
        rank, so no packet of the new kernel reaches a switch that still expects the old size."""
        for ctl in self.controls:
            ctl.invalidate(prop_bytes)
        self.all_done(True)  # a barrier

    def run_kernel(self, node, prop_bytes: int | None = None) -> int:
        """Drives ``node`` (a RigNode after begin_kernel/submit) until every rank is done; returns the
        number of poll rounds. With ``prop_bytes`` it first calls ``begin_kernel(prop_bytes)`` (all
        ranks must then pass it). Raises SwitchError when the switch fails or nothing completes in time."""
        if prop_bytes is not None:
            self.begin_kernel(prop_bytes)
        self._send(node.pump_reads())
        rounds, last_progress, pending = 0, time.monotonic(), node.pending
        while True:
            end = time.monotonic() + self.poll_s
            while (left := end - time.monotonic()) > 0:
                frame = self.client.poll(left)
                if frame is None:
                    break
                self._handle(node, frame)
                last_progress = time.monotonic()
            self._send(node.pump_reads())
            rounds += 1
            self.rounds += 1
            if self.all_done(node.done()):
                return rounds
            if node.pending != pending:
                pending, last_progress = node.pending, time.monotonic()
            if not node.done() and time.monotonic() - last_progress > self.timeout_s:
                raise SwitchError(f"rank {self.rank}: no packet from the switch for {self.timeout_s} s with "
                                  f"{node.pending} PRs pending")

    def close(self) -> None:
        self.client.close()
        for ctl in self.controls:
            ctl.close()

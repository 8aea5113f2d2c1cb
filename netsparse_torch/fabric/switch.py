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


class LocalSwitches:
    """One ToR per ``rack_size`` consecutive ranks plus a spine (when there are several racks), on free
    loopback ports of this process, configured and ready. Always ``stop()`` it (or use ``with``).

    ``address(rank)`` is the rank's ToR; ``controls(rank)`` the switches that rank invalidates before
    a kernel (the first rank of each rack: its ToR; rank 0 also the spine); ``report()`` the train
    report's ``switches`` list of ``{name, role, counters}``."""

    def __init__(self, world_size: int, rack_size: int, prop_bytes: int, *, host: str = "127.0.0.1",
                 token: str | None = None, **cfg):
        from netsparse_torch.switch import ControlClient, SwitchServer, configure_request

        if rack_size <= 0 or world_size <= 0:
            raise ValueError(f"world_size and rack_size must be > 0, got {world_size}, {rack_size}")
        self.rack_of = [r // rack_size for r in range(world_size)]
        racks: dict[int, list[int]] = {}
        for rank, rack in enumerate(self.rack_of):
            racks.setdefault(rack, []).append(rank)
        self.servers: dict[str, object] = {}
        self.token = token
        try:
            spine = ""
            if len(racks) > 1:
                s = self.servers["spine"] = SwitchServer("spine", host=host, token=token).start()
                spine = s.address
                ControlClient(spine, token=token).configure(configure_request(world_size, prop_bytes, racks, **cfg))
            for rack in racks:
                s = self.servers[f"tor{rack}"] = SwitchServer("tor", host=host, token=token).start()
                ControlClient(s.address, token=token).configure(configure_request(
                    world_size, prop_bytes, racks, rack_id=rack, spine_address=spine, **cfg))
        except BaseException:
            self.stop()
            raise

    def address(self, rank: int) -> str:
        return self.servers[f"tor{self.rack_of[rank]}"].address

    def controls(self, rank: int) -> list[str]:
        first = self.rack_of.index(self.rack_of[rank]) == rank
        out = [self.address(rank)] if first else []
        return out + ([self.servers["spine"].address] if rank == 0 and "spine" in self.servers else [])

    def report(self) -> list[dict]:
        from netsparse_torch.switch import ControlClient

        return [{"name": name, "role": s.core.role, "counters": ControlClient(s.address, token=self.token).counters()}
                for name, s in self.servers.items()]

    def stop(self) -> list[str]:
        """Stops every switch; returns their one-line summaries."""
        return [s.stop() for s in self.servers.values()]

    def __enter__(self) -> LocalSwitches:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

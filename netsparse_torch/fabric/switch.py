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

import functools
import time
from collections.abc import Callable

import grpc
import numpy as np

from hw_models.native import units as _cu
from netsparse_torch.errors import ConfigError, RigTimeoutError
from netsparse_torch.fabric import collective
from netsparse_torch.switch.client import ControlClient, SwitchClient, SwitchError

READ, RESPONSE = 0, 1


class SwitchFabric:
    """One rank's attachment to its ToR: a :class:`~netsparse_torch.fabric.base.Fabric` whose
    ``run_kernel`` is an event loop, not exchange rounds."""

    name = "switch"

    def __init__(self, world_size: int, rank: int, address: str, *, token: str | None = None,
                 tls_ca: bytes | None = None, group=None, timeout_s: float = 30.0, poll_s: float = 0.005,
                 all_done: Callable[[bool], bool] | None = None, controls: list[str] = (),
                 row_bounds: list[int] | None = None, mtu: int | None = None):
        self.world_size, self.rank, self.group = world_size, rank, group
        self.timeout_s, self.poll_s = timeout_s, poll_s
        self.address, self._token, self._tls_ca = address, token, tls_ca
        # with the MTU of this rank's packets the ToR refuses the attachment at once if it expects another
        self.client = SwitchClient(address, rank, token=token, tls_ca=tls_ca, mtu=mtu)
        self._peers: set[int] = set()  # destinations of this kernel's reads (named by the watchdog)
        # with the ranks' row bounds the watchdog names exactly the owners whose responses are missing:
        # read PRs sent minus response PRs received, per owner of the idx (counted in C++ per frame)
        self.row_bounds = None if row_bounds is None else np.asarray(row_bounds, dtype=np.int64)
        self._sent = np.zeros(world_size, np.int64)
        self._got = np.zeros(world_size, np.int64)
        self.all_done = all_done or functools.partial(collective.all_done, group=group)
        # switches this rank invalidates before each kernel (e.g. the first rank of a rack: its ToR;
        # rank 0 also the spine), so every switch expects the kernel's property size
        self.control_addresses = list(controls)
        self.controls = [ControlClient(a, token=token, tls_ca=tls_ca, timeout=timeout_s) for a in controls]
        self.bytes_sent = 0
        self.rounds = 0

    def _send_reads(self, node) -> None:
        per_dest = node.pump_reads()
        self._peers.update(d for d, b in per_dest.items() if b)
        if self.row_bounds is not None:
            for data in per_dest.values():
                if data:
                    self._sent += self._prs_by_owner(node, data)
        self._send(per_dest)

    def _prs_by_owner(self, node, data: bytes) -> np.ndarray:
        return _cu.prs_by_owner(data, self.row_bounds, mtu=node.mtu, upper_bytes=node.upper_bytes)

    def _send(self, per_dest: dict) -> None:
        data = b"".join(per_dest.values())
        if data:
            self.client.send(data, timeout=self.timeout_s)
            self.bytes_sent += len(data)

    def _handle(self, node, frame: bytes) -> None:
        # the node's packet sizes: the switches carry the packets the nodes built (same configuration)
        parts, _, _ = _cu.split_frame(frame, n_ports=2, by_type=True, mtu=node.mtu, upper_bytes=node.upper_bytes)
        if parts[READ]:
            self._send(node.serve(parts[READ]))
        if parts[RESPONSE]:
            node.absorb(parts[RESPONSE])
            if self.row_bounds is not None:
                self._got += self._prs_by_owner(node, parts[RESPONSE])

    def begin_kernel(self, prop_bytes: int) -> None:
        """Invalidates the property caches of this rank's switches for a kernel of ``prop_bytes``-byte
        properties (paper §6.2.2: the cache is invalidated before each kernel), then waits for every
        rank, so no packet of the new kernel reaches a switch that still expects the old size."""
        for address, ctl in zip(self.control_addresses, self.controls, strict=True):
            try:
                ctl.invalidate(prop_bytes)
            except SwitchError as e:
                if e.code == grpc.StatusCode.DEADLINE_EXCEEDED:  # a stalled switch: the watchdog's case
                    raise RigTimeoutError(f"RIG watchdog expired before the kernel: switch {address} did not "
                                          f"answer Invalidate within {self.timeout_s:g} s (down or stalled)",
                                          switch=address) from None
                raise SwitchError(f"switch {address}: {e}", e.code) from None
        self.all_done(True)  # a barrier

    def run_kernel(self, node, prop_bytes: int) -> int:
        """Drives ``node`` (a RigNode after begin_kernel/submit) until every rank is done; returns the
        number of poll rounds. It first calls ``begin_kernel(prop_bytes)`` (the switches' caches).

        Watchdog (paper §7.1, ``timeout_s``): while read PRs are pending, some frame must arrive from
        the switch within ``timeout_s``, else RigTimeoutError names the switch and the peers whose
        responses are missing (with ``row_bounds``; otherwise the peers the reads went to). The
        deadline restarts on every frame, so a long kernel that keeps progressing is not cut off;
        with in-order answers this is the per-command deadline. A stream the switch
        ends (killed switch) raises SwitchError at once."""
        self.begin_kernel(prop_bytes)
        self._peers.clear()
        self._sent[:], self._got[:] = 0, 0
        self._send_reads(node)
        rounds, last_progress, pending = 0, time.monotonic(), node.pending
        while True:
            end = time.monotonic() + self.poll_s
            while (left := end - time.monotonic()) > 0:
                frame = self._poll(left)
                if frame is None:
                    break
                self._handle(node, frame)
                last_progress = time.monotonic()
            self._send_reads(node)
            rounds += 1
            self.rounds += 1
            if self.all_done(node.done()):
                return rounds
            if node.pending != pending:
                pending, last_progress = node.pending, time.monotonic()
            if not node.done() and time.monotonic() - last_progress > self.timeout_s:
                raise self._watchdog_error(node)

    def _poll(self, timeout: float) -> bytes | None:
        try:
            return self.client.poll(timeout)
        except SwitchError as e:
            raise SwitchError(f"ToR {self.address}: {e}", e.code) from None

    def _watchdog_error(self, node) -> RigTimeoutError:
        if self.row_bounds is not None:
            peers = [int(o) for o in np.flatnonzero(self._sent > self._got)]
            where = f"responses missing from ranks {peers}"
        else:
            peers = sorted(self._peers - {self.rank})
            where = f"this kernel's reads went to ranks {peers}"
        probe = ControlClient(self.address, token=self._token, tls_ca=self._tls_ca, timeout=min(2.0, self.timeout_s))
        try:  # tell a stalled or dead switch from a live one that forwards nothing (a silent peer)
            probe.health()
            switch = f"ToR {self.address} answers Health but delivered nothing"
        except SwitchError:
            switch = f"ToR {self.address} does not answer (down or stalled)"
        finally:
            probe.close()
        return RigTimeoutError(
            f"RIG command watchdog expired: no response for {self.timeout_s:g} s with "
            f"{node.pending} read PRs pending; {where}; {switch}. The partial "
            "halo is discarded", peers=peers, switch=self.address)

    def close(self) -> None:
        self.client.close()
        for ctl in self.controls:
            ctl.close()


def racks_of(world_size: int, rack_size: int) -> dict[int, list[int]]:
    """Rack id -> its ranks: ``rack_size`` consecutive ranks per rack (the last rack may be smaller)."""
    if rack_size <= 0 or world_size <= 0:
        raise ValueError(f"world_size and rack_size must be > 0, got {world_size}, {rack_size}")
    racks: dict[int, list[int]] = {}
    for rank in range(world_size):
        racks.setdefault(rank // rack_size, []).append(rank)
    return racks


def check_spec(spec: dict, world_size: int, rack_size: int) -> None:
    """A switch spec is ``{"spine": address or None, "tors": [one address per rack]}``."""
    n_racks = len(racks_of(world_size, rack_size))
    tors = list(spec.get("tors") or [])
    if len(tors) != n_racks:
        raise ConfigError(f"fabric.switches needs {n_racks} ToR address(es) for world_size={world_size} and "
                          f"rack_size={rack_size} (one per rack), got {len(tors)}")
    if n_racks > 1 and not spec.get("spine"):
        raise ConfigError(f"fabric.switches needs a spine address: {n_racks} racks")


def attachment(spec: dict, rank: int, rack_size: int) -> tuple[str, list[str]]:
    """(the rank's ToR address, the switches it invalidates before a kernel): the first rank of each
    rack invalidates its ToR, rank 0 also the spine."""
    rack = rank // rack_size
    tor = spec["tors"][rack]
    controls = [tor] if rank % rack_size == 0 else []
    return tor, controls + ([spec["spine"]] if rank == 0 and spec.get("spine") else [])


def configure_switches(spec: dict, world_size: int, rack_size: int, prop_bytes: int, *,
                       token: str | None = None, tls_ca: bytes | None = None, **cfg) -> None:
    """Sends Configure to every switch of ``spec``: the spine first (a ToR's Configure connects its
    uplink, which the spine must already know), then each ToR with its rack and the spine address.
    ``cfg``: configure_request keywords (cache, concatenation, delay_cycles, capacity_bytes, ...). Each switch's
    counters start again from zero: the run's report holds what its own epochs counted, not an earlier run's
    on the same switches (a resumed run adds its checkpoint's)."""
    from netsparse_torch.switch import configure_request

    check_spec(spec, world_size, rack_size)
    racks = racks_of(world_size, rack_size)
    spine = spec.get("spine") or ""
    if len(racks) > 1:
        _configure(_control(spine, token, tls_ca), configure_request(world_size, prop_bytes, racks, **cfg))
    for rack, address in enumerate(spec["tors"]):
        _configure(_control(address, token, tls_ca), configure_request(
            world_size, prop_bytes, racks, rack_id=rack, spine_address=spine if len(racks) > 1 else "", **cfg))


def _configure(ctl: ControlClient, request) -> None:
    ctl.configure(request)
    ctl.reset()
    ctl.close()


def switch_report(spec: dict, *, token: str | None = None, tls_ca: bytes | None = None,
                  timeout_s: float | None = None) -> list[dict]:
    """The train report's ``switches``: ``[{name, role, counters}]`` read over each switch's control plane
    (each call within ``timeout_s``, None: the control client's default); a switch that fails is named."""
    named = ([("spine", spec["spine"])] if spec.get("spine") else []) + [
        (f"tor{i}", a) for i, a in enumerate(spec["tors"])]
    out = []
    for name, address in named:
        ctl = _control(address, token, tls_ca)
        if timeout_s is not None:
            ctl.timeout = timeout_s
        try:
            out.append({"name": name, "role": ctl.health().role, "address": address, "counters": ctl.counters()})
        except SwitchError as e:
            raise SwitchError(f"switch {address}: {e}", e.code) from None
        finally:
            ctl.close()
    return out


def _control(address: str, token: str | None, tls_ca: bytes | None = None) -> ControlClient:
    return ControlClient(address, token=token, tls_ca=tls_ca)


class LocalSwitches:
    """One ToR per ``rack_size`` consecutive ranks plus a spine (when there are several racks), on free
    loopback ports of this process, configured and ready. Always ``stop()`` it (or use ``with``).

    ``address(rank)`` is the rank's ToR; ``controls(rank)`` the switches that rank invalidates before
    a kernel (the first rank of each rack: its ToR; rank 0 also the spine); ``spec()`` the addresses
    as ``{"spine", "tors"}``; ``report()`` the train report's ``switches`` list of ``{name, role, counters}``."""

    def __init__(self, world_size: int, rack_size: int, prop_bytes: int, *, host: str = "127.0.0.1",
                 token: str | None = None, queue_depth: int = 64, **cfg):
        from netsparse_torch.switch import SwitchServer

        racks = racks_of(world_size, rack_size)
        self.rack_size = rack_size
        self.servers: dict[str, object] = {}
        self.token = token
        try:
            if len(racks) > 1:
                self.servers["spine"] = SwitchServer("spine", host=host, token=token, queue_depth=queue_depth).start()
            for rack in racks:
                self.servers[f"tor{rack}"] = SwitchServer("tor", host=host, token=token,
                                                          queue_depth=queue_depth).start()
            configure_switches(self.spec(), world_size, rack_size, prop_bytes, token=token, **cfg)
        except BaseException:
            self.stop()
            raise

    def spec(self) -> dict:
        spine = self.servers.get("spine")
        return {"spine": spine.address if spine else None,
                "tors": [s.address for n, s in self.servers.items() if n.startswith("tor")]}

    def address(self, rank: int) -> str:
        return attachment(self.spec(), rank, self.rack_size)[0]

    def controls(self, rank: int) -> list[str]:
        return attachment(self.spec(), rank, self.rack_size)[1]

    def report(self) -> list[dict]:
        return switch_report(self.spec(), token=self.token)

    def stop(self) -> list[str]:
        """Stops every switch; returns their one-line summaries."""
        return [s.stop() for s in self.servers.values()]

    def __enter__(self) -> LocalSwitches:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

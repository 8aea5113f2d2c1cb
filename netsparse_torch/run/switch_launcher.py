"""``fabric=switch`` around a training run: the launcher's side (start or configure the switches,
always stop the ones it started, read their counters for the report) and each rank's side (attach to
its ToR and hand the SwitchFabric to the netsparse strategy).

Launcher (parent process, before the ranks are spawned)::

    with switch_service(cfg, hardware) as service:  # None unless fabric=switch
        launch(...)             # each rank: fabric = attach_rank(rank, world_size, cfg, bounds, hardware)
        switches = service.report()             # [{name, role, counters}]

With ``fabric.switches: null`` it starts one ToR per ``hardware.cluster.rack_size`` ranks plus a spine on free
loopback ports (:class:`LocalSwitches`) and writes their addresses into ``cfg.fabric.switches``, so
the ranks see exactly what a multi-host run passes on the command line
(``fabric.switches={spine:host:port,tors:[host:port,...]}``); given switches are configured, not started.
Every switch is configured from the run's hardware (:func:`hw_models.unit_args.switch_options`: property
cache, concatenation delay, MTU and upper-layer header), the one the ranks' RIG nodes are built from.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from omegaconf import OmegaConf, open_dict

from hw_models.hardware import train_hardware
from hw_models.unit_args import switch_options
from netsparse_torch.errors import ConfigError
from netsparse_torch.run.torchrun import under_torchrun

if TYPE_CHECKING:  # grpc is heavy: the service's modules load when a switch is started or asked
    from netsparse_torch.switch_service import ControlClient

# The first kernel's property size is not known before the model runs; every kernel invalidates the
# caches with its own size (SwitchFabric.begin_kernel), so this placeholder is never used for data.
_INITIAL_PROP_BYTES = 4
_MECHANISMS = ("cache", "concatenation")  # on/off switches of the fabric, not hardware numbers


def rack_size(cfg) -> int:
    value = cfg.cluster.get("rack_size") if "cluster" in cfg else None
    if value is None or int(value) < 1:
        raise ConfigError(f"fabric=switch needs cluster.rack_size >= 1 (ranks per ToR), got {value}")
    return int(value)


def check_switch_config(cfg) -> None:
    """fabric=switch carries NetSparse packets, so it needs strategy=netsparse (configs/fabric/switch.yaml
    selects it; an explicit other strategy is an error)."""
    if str(cfg.strategy.name) != "netsparse":
        raise ConfigError(f"fabric=switch carries NetSparse packets and needs strategy=netsparse, got "
                          f"strategy={cfg.strategy.name}: drop the strategy override or use fabric=collective")
    rack_size(cfg)
    if float(cfg.rig.timeout_s) <= 0:
        raise ConfigError(f"rig.timeout_s must be > 0, got {cfg.rig.timeout_s}")


def _token(cfg) -> str | None:
    env = cfg.fabric.get("token_env")
    return os.environ.get(str(env)) or None if env else None


def _switch_options(cfg, hardware) -> dict:
    return {**{k: bool(cfg.fabric[k]) for k in _MECHANISMS if k in cfg.fabric}, **switch_options(hardware)}


class SwitchService:
    """The switches of one run: ``spec`` (addresses), ``report()``, ``stop()`` (only those it started)."""

    def __init__(self, cfg, hardware):
        ws, rs, self.token = int(cfg.world_size), hardware.cluster.rack_size, _token(cfg)
        self.local = None
        given = cfg.fabric.get("switches")
        torchrun_rank = int(os.environ["RANK"]) if under_torchrun() else None
        if given is None and torchrun_rank is not None:
            raise ConfigError("fabric=switch under torchrun: start netsparse-switch processes and give their "
                              "addresses, fabric.switches={spine:host:port,tors:[host:port,...]}")
        if given is None:
            self.local = LocalSwitches(ws, rs, _INITIAL_PROP_BYTES, host=str(cfg.fabric.get("host", "127.0.0.1")),
                                       token=self.token, queue_depth=cfg.fabric.get("queue_depth", 64),
                                       **_switch_options(cfg, hardware))
            self.spec = self.local.spec()
            with open_dict(cfg):
                cfg.fabric.switches = self.spec
        else:
            self.spec = OmegaConf.to_container(given, resolve=True) if OmegaConf.is_config(given) else dict(given)
            check_spec(self.spec, ws, rs)
            if not torchrun_rank:  # one configuring process (rank 0's under torchrun)
                configure_switches(self.spec, ws, rs, _INITIAL_PROP_BYTES, token=self.token,
                                   **_switch_options(cfg, hardware))

    def report(self) -> list[dict]:
        return switch_report(self.spec, token=self.token)

    def stop(self) -> list[str]:
        return self.local.stop() if self.local is not None else []


@contextmanager
def switch_service(cfg, hardware) -> Iterator[SwitchService | None]:
    """Launcher side of fabric=switch (``None`` for other fabrics). Switches it started are stopped on
    every exit path: normal end, a failed rank, Ctrl-C."""
    if str(cfg.fabric.name) != "switch":
        yield None
        return
    check_switch_config(cfg)
    service = SwitchService(cfg, hardware)
    try:
        yield service
    finally:
        service.stop()


def attach_rank(rank: int, world_size: int, cfg, bounds=None, hardware=None):
    """Rank side: attaches this rank to its ToR (after a barrier, so the launcher's Configure of every
    switch happened first, also under torchrun where rank 0's process configures them) and returns its
    :class:`~netsparse_torch.fabric.switched.SwitchFabric`, for the netsparse strategy's ``fabric``; the
    caller closes it. With the row ``bounds`` of every rank the watchdog names exactly the peers that
    did not answer. ``hardware`` (the run's; None: built from ``cfg``) gives the rack size and the MTU of
    the rank's packets: a ToR configured for another MTU refuses the attachment here, naming both."""
    import torch.distributed as dist

    from netsparse_torch.fabric.switched import SwitchFabric

    spec = cfg.fabric.get("switches")
    if spec is None:
        raise ConfigError("fabric=switch: fabric.switches has no addresses (start the run with netsparse-train, "
                          "or give fabric.switches={spine:...,tors:[...]})")
    if dist.is_initialized():
        dist.barrier()
    spec = OmegaConf.to_container(spec, resolve=True) if OmegaConf.is_config(spec) else dict(spec)
    hardware = hardware or train_hardware(cfg)
    address, controls = attachment(spec, rank, hardware.cluster.rack_size)
    return SwitchFabric(world_size, rank, address, token=_token(cfg), controls=controls,
                        timeout_s=float(cfg.rig.timeout_s), row_bounds=bounds, mtu=hardware.headers.mtu_bytes)



def switch_counters(cfg) -> list[dict]:
    """The counters of the run's switches now (``cfg.fabric.switches``), as the report lists them. A switch
    that does not answer within ``rig.timeout_s`` is the RIG watchdog's error, naming it."""
    import grpc

    from netsparse_torch.errors import RigTimeoutError
    from netsparse_torch.switch_service.client import SwitchError

    spec = cfg.fabric.switches
    spec = OmegaConf.to_container(spec, resolve=True) if OmegaConf.is_config(spec) else dict(spec)
    timeout_s = float(cfg.rig.timeout_s)
    try:
        return switch_report(spec, token=_token(cfg), timeout_s=timeout_s)
    except SwitchError as e:
        if e.code != grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
        raise RigTimeoutError(f"RIG watchdog expired at a checkpoint: {str(e).split(': ', 1)[0]} did not answer "
                              f"a counters read within {timeout_s:g} s (down or stalled)") from None


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
    ``cfg``: configure_request keywords (cache, concatenation, delay_cycles, size_bytes, ...). Each switch's
    counters start again from zero: the run's report holds what its own epochs counted, not an earlier run's
    on the same switches (a resumed run adds its checkpoint's)."""
    from netsparse_torch.switch_service import configure_request

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
    from netsparse_torch.switch_service import SwitchError

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
    from netsparse_torch.switch_service import ControlClient

    return ControlClient(address, token=token, tls_ca=tls_ca)


class LocalSwitches:
    """One ToR per ``rack_size`` consecutive ranks plus a spine (when there are several racks), on free
    loopback ports of this process, configured and ready. Always ``stop()`` it (or use ``with``).

    ``address(rank)`` is the rank's ToR; ``controls(rank)`` the switches that rank invalidates before
    a kernel (the first rank of each rack: its ToR; rank 0 also the spine); ``spec()`` the addresses
    as ``{"spine", "tors"}``; ``report()`` the train report's ``switches`` list of ``{name, role, counters}``."""

    def __init__(self, world_size: int, rack_size: int, prop_bytes: int, *, host: str = "127.0.0.1",
                 token: str | None = None, queue_depth: int = 64, **cfg):
        from netsparse_torch.switch_service import SwitchServer

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

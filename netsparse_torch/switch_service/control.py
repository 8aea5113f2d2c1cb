"""Control plane of the switch service (modeled on P4Runtime): configuration and counters.

``SwitchConfig`` is the validated form of a ``ConfigureRequest``; ``PortCounters`` and
``SwitchCounters`` hold what ``ReadCounters`` returns. A request carries every hardware number of the
run's ``HardwareParams`` (:func:`hw_models.unit_args.switch_options`: property cache §6.2.2 / Table 5,
switch concatenation delay §6.1.2, MTU and upper-layer header Table 5): the service fills none, so a
switch never runs on numbers the ranks do not know.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from hw_models import unit_args
from hw_models.params import HardwareParams
from netsparse_torch.switch_service._proto import pb

_CACHE_FIELDS = ("size_bytes", "ways", "segment_bytes", "max_line_bytes")


class ConfigInvalid(ValueError):
    """A ConfigureRequest that cannot describe a fabric (mapped to INVALID_ARGUMENT)."""


@dataclass
class SwitchConfig:
    """One switch's view of the fabric: every node's rack, its own rack, its mechanisms."""

    n_nodes: int
    prop_bytes: int
    rack_of: list[int]  # rack id per node
    rack_id: int
    spine_address: str
    cache: dict[str, int]
    cache_enabled: bool
    delay_cycles: int  # -1 = infinite (flush when full or idle): the proto's and the units' encoding
    mtu: int
    upper_bytes: int

    @property
    def racks(self) -> list[int]:
        return sorted(set(self.rack_of))

    def rack_nodes(self, rack: int) -> list[int]:
        return [n for n, r in enumerate(self.rack_of) if r == rack]


def config_from_request(req: pb.ConfigureRequest, role: str) -> SwitchConfig:
    """Validates a ConfigureRequest; raises ConfigInvalid naming the problem."""
    if req.n_nodes <= 0:
        raise ConfigInvalid("n_nodes must be > 0")
    if req.prop_bytes <= 0:
        raise ConfigInvalid("prop_bytes must be > 0")
    rack_of = [-1] * req.n_nodes
    for rack in req.racks:
        for n in rack.nodes:
            if n >= req.n_nodes:
                raise ConfigInvalid(f"rack {rack.rack_id} lists node {n} >= n_nodes={req.n_nodes}")
            if rack_of[n] != -1:
                raise ConfigInvalid(f"node {n} is in two racks ({rack_of[n]} and {rack.rack_id})")
            rack_of[n] = rack.rack_id
    missing = [n for n, r in enumerate(rack_of) if r == -1]
    if missing:
        raise ConfigInvalid(f"nodes {missing[:8]} belong to no rack; every node needs one")
    if role == "tor":
        if req.rack_id not in set(rack_of):
            raise ConfigInvalid(f"rack_id {req.rack_id} has no nodes")
        if len(set(rack_of)) > 1 and not req.spine_address:
            raise ConfigInvalid("several racks but no spine_address: other-rack traffic has no route")
    unset = [f"cache.{k}" for k in _CACHE_FIELDS if getattr(req.cache, k) == 0]
    unset += [k for k in ("mtu", "upper_bytes") if getattr(req, k) == 0]
    if unset:
        raise ConfigInvalid(f"{', '.join(unset)} not given: a ConfigureRequest carries every hardware number "
                            "(hw_models.unit_args.switch_options of the run's HardwareParams)")
    cache = {k: getattr(req.cache, k) for k in _CACHE_FIELDS}
    mech = req.mechanisms
    if req.concat_delay_cycles < -1:
        raise ConfigInvalid(f"concat_delay_cycles must be >= 0 or -1 (infinite), got {req.concat_delay_cycles}")
    delay = int(req.concat_delay_cycles) if mech.concatenation else 0  # off: one PR per packet
    return SwitchConfig(n_nodes=req.n_nodes, prop_bytes=req.prop_bytes, rack_of=rack_of, rack_id=req.rack_id,
                        spine_address=req.spine_address, cache=cache, cache_enabled=mech.cache,
                        delay_cycles=delay, mtu=req.mtu, upper_bytes=req.upper_bytes)


def configure_request(n_nodes: int, prop_bytes: int, racks: dict[int, list[int]], *, rack_id: int = 0,
                      spine_address: str = "", cache: bool = True, concatenation: bool = True,
                      hardware: HardwareParams | None = None, **numbers: int) -> pb.ConfigureRequest:
    """Builds a ConfigureRequest with every hardware number of ``hardware`` (NetSparse Table 5 when
    None; :func:`hw_models.unit_args.switch_options`); ``numbers`` replace single ones of them
    (``delay_cycles=-1``: infinite; ``size_bytes=-1``: the unbounded cache)."""
    hw = unit_args.switch_options(hardware, **numbers)
    return pb.ConfigureRequest(
        n_nodes=n_nodes, prop_bytes=prop_bytes,
        cache=pb.CacheConfig(**{k: hw[k] for k in _CACHE_FIELDS}),
        concat_delay_cycles=hw["delay_cycles"],
        mechanisms=pb.Mechanisms(cache=cache, concatenation=concatenation),
        racks=[pb.Rack(rack_id=r, nodes=nodes) for r, nodes in sorted(racks.items())],
        rack_id=rack_id, spine_address=spine_address, mtu=hw["mtu"], upper_bytes=hw["upper_bytes"])


_PORT_FIELDS = ("packets_in", "bytes_in", "prs_in", "packets_out", "bytes_out", "prs_out")


@dataclass
class PortCounters:
    """Traffic of one port (node or uplink), in and out of the switch."""

    packets_in: int = 0
    bytes_in: int = 0
    prs_in: int = 0
    packets_out: int = 0
    bytes_out: int = 0
    prs_out: int = 0


@dataclass
class SwitchCounters:
    """Switch-wide PR counters (the cache/concatenator ones come from the C++ SwitchPipe)."""

    read_prs_in: int = 0
    response_prs_in: int = 0
    read_prs_out: int = 0
    response_prs_out: int = 0
    errors: Counter = field(default_factory=Counter)


def counters_message(role: str, ports: dict[str, PortCounters], sw: SwitchCounters,
                     unit: dict[str, int]) -> pb.Counters:
    """Assembles a Counters reply; ``unit`` holds the pipe's hits/misses/inserts/evictions/concat_packets."""
    msg = pb.Counters(role=role)
    for name, pc in sorted(ports.items()):
        msg.ports.append(pb.PortCounters(port=name, **{f: getattr(pc, f) for f in _PORT_FIELDS}))
    msg.packets_in = sum(p.packets_in for p in ports.values())
    msg.packets_out = sum(p.packets_out for p in ports.values())
    msg.prs_in = sum(p.prs_in for p in ports.values())
    msg.prs_out = sum(p.prs_out for p in ports.values())
    msg.read_prs_in, msg.response_prs_in = sw.read_prs_in, sw.response_prs_in
    msg.read_prs_out, msg.response_prs_out = sw.read_prs_out, sw.response_prs_out
    msg.cache_hits = unit.get("hits", 0)
    msg.cache_misses = unit.get("misses", 0)
    msg.cache_inserts = unit.get("inserted", 0)
    msg.cache_evictions = unit.get("evictions", 0)
    msg.packets_concatenated = unit.get("concat_packets", 0)
    msg.prs_per_packet = msg.prs_out / msg.packets_out if msg.packets_out else 0.0
    for k, v in sw.errors.items():
        msg.errors[k] = v
    return msg


def counters_dict(msg: pb.Counters) -> dict:
    """A Counters reply as a plain dict of ints (for reports and logs)."""
    out: dict = {f.name: getattr(msg, f.name) for f in msg.DESCRIPTOR.fields if f.name not in ("ports", "errors")}
    out["ports"] = {p.port: {f: getattr(p, f) for f in _PORT_FIELDS} for p in msg.ports}
    out["errors"] = dict(msg.errors)
    return out

"""NetCrafter (ISCA'25) link layer: Table 1 packet types and a thin wrapper over the C++ flit unit.

The mechanism itself (flits, stitching, flit pooling, selective pooling, trimming, sequencing) lives
once, in ``csrc/units/flit_link.cpp``; this module only names the paper's packet types, builds packet
streams and turns the unit's counters into a typed result.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from hw_models import units as _units

FLIT_BYTES = 16
"""Flit size of NetCrafter Table 1 (16 B; 8 B is the paper's other option)."""

DEFAULT_POOL_CYCLES = 32
"""Flit pooling window W in cycles (NetCrafter's flit pooling default, docs/seeds.md)."""

DEFAULT_PIECE_OVERHEAD = 4
"""ID+Size bytes of a stitched piece. Our assumption (2 B ID + 2 B size); the paper's worked example
(two Read Rsp in 9 flits) only needs it to be <= 8 B."""


@dataclass(frozen=True)
class PacketType:
    """One NetCrafter packet type. ``header + payload`` is Table 1's *bytes needed*.

    The split into header and payload is our assumption: 12 B request headers, 4 B response headers
    and 64 B cache-line payloads reproduce every *bytes needed* of Table 1, and a 4 B header plus a
    16 B sector gives the paper's 20 B trimmed Read Rsp.
    """

    name: str
    header: int
    payload: int
    trimmable: bool = False

    @property
    def needed(self) -> int:
        """Bytes the packet actually needs (Table 1 'bytes needed')."""
        return self.header + self.payload


READ_REQ = PacketType("Read Req", 12, 0)
WRITE_REQ = PacketType("Write Req", 12, 64)
PAGE_TABLE_REQ = PacketType("Page Table Req", 12, 0)
READ_RSP = PacketType("Read Rsp", 4, 64, trimmable=True)
WRITE_RSP = PacketType("Write Rsp", 4, 0)
PAGE_TABLE_RSP = PacketType("Page Table Rsp", 4, 8)

TABLE1_TYPES: tuple[PacketType, ...] = (READ_REQ, WRITE_REQ, PAGE_TABLE_REQ, READ_RSP, WRITE_RSP, PAGE_TABLE_RSP)
"""The six packet types of NetCrafter Table 1, in the table's order."""


def flits_for(nbytes: int, flit_bytes: int = FLIT_BYTES) -> int:
    """Flits a packet of ``nbytes`` occupies when padded to whole flits (C++ ``flits_for``)."""
    return int(_units.flits_for(nbytes, flit_bytes))


def table1(flit_bytes: int = FLIT_BYTES) -> list[dict[str, int | str]]:
    """NetCrafter Table 1: bytes occupied, needed, padding and flits of each packet type."""
    rows: list[dict[str, int | str]] = []
    for t in TABLE1_TYPES:
        flits = flits_for(t.needed, flit_bytes)
        occupied = flits * flit_bytes
        rows.append({"type": t.name, "occupied": occupied, "needed": t.needed, "padding": occupied - t.needed,
                     "flits": flits})
    return rows


@dataclass
class LinkConfig:
    """Parameters of one NetCrafter link: every field of the C++ ``FlitLinkConfig`` (the one place that
    builds it, :meth:`to_cpp`; the C++ struct holds no value), each default with its source."""

    flit_bytes: int = FLIT_BYTES
    """Flit size. NetCrafter Table 1 (16 B)."""
    piece_overhead: int = DEFAULT_PIECE_OVERHEAD
    """ID+Size bytes of a stitched piece. Our assumption (4 B, see :data:`DEFAULT_PIECE_OVERHEAD`)."""
    stitching: bool = True
    """Flit stitching (NetCrafter's first mechanism) on."""
    pool_cycles: int = DEFAULT_POOL_CYCLES
    """Flit pooling window in cycles (:data:`DEFAULT_POOL_CYCLES`); 0 = no pooling."""
    no_pool_class: int = -1
    """Selective pooling: the packet class that never waits in the pool; -1 = none."""
    sequencing: bool = False
    """Sequencing (lower classes first at the egress queue) on."""
    trimming: bool = False
    """Trimming of trimmable responses to their needed sector on."""
    trim_granularity: int = 16
    """Sector a trimmed response is rounded up to. NetCrafter (16 B sectors: the 20 B trimmed Read Rsp)."""
    stitch_window: int = 8
    """Queued same-destination packets a newly opened flit examines. Our assumption: a small associative
    search window at the egress queue (8)."""

    def to_cpp(self) -> _units.FlitLinkConfig:
        """The C++ config (validates every field)."""
        return _units.FlitLinkConfig(**asdict(self))


@dataclass
class PacketStream:
    """Packets at one egress link, sorted by arrival cycle. ``useful`` = -1 marks untrimmable ones."""

    arrival: np.ndarray
    dest: np.ndarray
    header: np.ndarray
    payload: np.ndarray
    useful: np.ndarray
    cls: np.ndarray

    @classmethod
    def of(cls, types: list[PacketType], *, dest: list[int] | None = None, arrival: list[int] | None = None,
           useful: list[int] | None = None, classes: list[int] | None = None) -> PacketStream:
        """A stream from packet types (all to destination 0 and arriving at cycle 0 unless given)."""
        n = len(types)

        def col(v: list[int] | None, default: int) -> np.ndarray:
            return np.full(n, default, dtype=np.int64) if v is None else np.asarray(v, dtype=np.int64)

        use = col(useful, -1)
        for i, t in enumerate(types):
            if not t.trimmable:
                use[i] = -1
        return cls(col(arrival, 0), col(dest, 0), np.array([t.header for t in types], dtype=np.int64),
                   np.array([t.payload for t in types], dtype=np.int64), use, col(classes, 0))


@dataclass
class LinkResult:
    """Counters of one link run; ``done[i]`` is the cycle after packet i's last byte left."""

    packets: int
    flits: int
    wire_bytes: int
    needed_bytes: int
    overhead_bytes: int
    padding_bytes: int
    unstitched_flits: int
    stitched_packets: int
    stitched_flits: int
    pieces: int
    trimmed_bytes: int
    last_cycle: int
    done: np.ndarray

    @property
    def stitched_fraction(self) -> float:
        """Share of packets whose whole body or tail rode in another packet's flit."""
        return self.stitched_packets / self.packets if self.packets else 0.0

    @property
    def padding_fraction(self) -> float:
        """Share of wire bytes that are padding."""
        return self.padding_bytes / self.wire_bytes if self.wire_bytes else 0.0


def run_link(stream: PacketStream, config: LinkConfig | None = None) -> LinkResult:
    """Send ``stream`` through one NetCrafter link (the C++ unit) and return its counters."""
    cfg = (config or LinkConfig()).to_cpp()
    out = _units.flit_link_run(cfg, stream.arrival, stream.dest, stream.header, stream.payload, stream.useful,
                               stream.cls)
    return LinkResult(**out)


def synthetic_stream(n: int, *, seed: int = 0, n_dest: int = 4, mean_gap: float = 4.0) -> PacketStream:
    """A synthetic GPU-like stream: Table 1 types in a fixed mix, random destinations, Poisson gaps.

    Our assumption for the W sweep (mean gap 4 cycles = about 65% link load at 2.6 flits per packet):
    40% Read Req, 30% Read Rsp, 10% Write Req, 10% Write Rsp,
    5% each page-table request and response; class 1 = page-table traffic (latency-sensitive).
    """
    rng = np.random.default_rng(seed)
    mix = np.array([0.40, 0.10, 0.05, 0.30, 0.10, 0.05])
    kinds = rng.choice(len(TABLE1_TYPES), size=n, p=mix)
    types = [TABLE1_TYPES[k] for k in kinds]
    arrival = np.cumsum(rng.poisson(mean_gap, size=n)).astype(np.int64)
    dest = rng.integers(0, n_dest, size=n).astype(np.int64)
    classes = [1 if t in (PAGE_TABLE_REQ, PAGE_TABLE_RSP) else 0 for t in types]
    useful = [16 if t.trimmable else -1 for t in types]
    return PacketStream.of(types, dest=list(dest), arrival=list(arrival), useful=useful, classes=classes)


def pool_sweep(windows: list[int], *, n: int = 20000, seed: int = 0, mean_gap: float = 4.0,
               selective_class: int = -1) -> list[dict[str, float]]:
    """Flits, padding, stitched fraction and mean latency for each pooling window W (docs/seeds.md)."""
    stream = synthetic_stream(n, seed=seed, mean_gap=mean_gap)
    rows = []
    for w in windows:
        r = run_link(stream, LinkConfig(pool_cycles=w, no_pool_class=selective_class))
        lat = r.done - stream.arrival
        rows.append({"W": w, "flits": r.flits, "unstitched_flits": r.unstitched_flits,
                     "flit_saving": 1 - r.flits / r.unstitched_flits, "padding_fraction": r.padding_fraction,
                     "stitched_fraction": r.stitched_fraction, "mean_latency": float(lat.mean()),
                     "class1_latency": float(lat[stream.cls == 1].mean())})
    return rows


# --- The flit layer in the cluster simulator (netsparse-simulate link_layer=flit) -------------------

LINK_LAYERS = ("packet", "flit")
"""``link_layer`` modes of the simulator: plain NetSparse packets, or NetCrafter flits on inter-rack links."""

SIM_FLIT_KEYS = ("flit_bytes", "piece_overhead", "pool_cycles", "stitching", "trimming", "sequencing",
                 "no_pool_class")
"""``flit.*`` settings the simulator passes to the C++ flit unit (defaults: :class:`LinkConfig`)."""

TIMING_NOTE = ("closed loop: each inter-switch link is the C++ flit unit inside the event loop; a packet "
               "reaches the next switch link latency after the flit holding its last byte left")


def sim_flit_config(link_layer: dict | None) -> dict:
    """The simulator's flat ``flit_*`` config keys for ``{"mode": ..., "flit": {...}}``.

    ``mode="packet"`` (or ``None``) adds nothing, so the packet-mode run is exactly the one without a link
    layer. In the simulator, packets of read PRs are class 0 and responses class 1 (our assumption; it
    matters for ``sequencing`` and ``no_pool_class``). No simulator packet is trimmable: NetSparse
    responses carry whole properties, so ``trimming`` is accepted and has no effect there.
    """
    from hw_models.errors import ConfigError

    mode = (link_layer or {}).get("mode", "packet")
    if mode not in LINK_LAYERS:
        raise ConfigError(f"unknown link_layer {mode!r}; choose one of {', '.join(LINK_LAYERS)}")
    if mode == "packet":
        return {}
    flit = dict((link_layer or {}).get("flit") or {})
    unknown = sorted(set(flit) - set(SIM_FLIT_KEYS))
    if unknown:
        raise ConfigError(f"unknown flit setting(s) {', '.join(unknown)}; choose from {', '.join(SIM_FLIT_KEYS)}")
    cfg = LinkConfig(**{k: (bool(v) if isinstance(getattr(LinkConfig, k), bool) else int(v))
                        for k, v in flit.items()})
    cfg.to_cpp()  # the C++ unit validates: units.ConfigInvalid, a ConfigError naming the field
    return {"flit_layer": True, **{f"flit_{k}" if k != "flit_bytes" else k: getattr(cfg, k) for k in SIM_FLIT_KEYS}}


def flit_link_config(link_layer: dict | None) -> _units.FlitLinkConfig | None:
    """The simulator's C++ flit link parameters for ``link_layer`` (``None`` in packet mode), validated
    as :func:`sim_flit_config` validates them; settings not given keep :class:`LinkConfig`'s defaults."""
    keys = sim_flit_config(link_layer)
    if not keys:
        return None
    return LinkConfig(**{k: keys[k if k == "flit_bytes" else f"flit_{k}"] for k in SIM_FLIT_KEYS}).to_cpp()


def link_layer_report(flit_links: dict, link_layer: dict | None) -> dict:
    """``strategies.netsparse.link_layer``: the flit unit's totals over the inter-switch links, beside
    the same packets' bytes as NetSparse packets (what ``link_layer=packet`` puts on those links)."""
    cols = {k: np.asarray(v, dtype=np.int64) for k, v in flit_links.items()}
    total = {k: int(cols[k].sum()) for k in ("packets", "flits", "unstitched_flits", "wire_bytes", "needed_bytes",
                                             "padding_bytes", "overhead_bytes", "stitched_packets", "stitched_flits",
                                             "pieces", "trimmed_bytes", "packet_bytes")}
    flit_cfg = {k: v for k, v in sim_flit_config(link_layer).items() if k != "flit_layer"}
    return {
        "mode": "flit", "timing": TIMING_NOTE, "links": int(cols["link"].size),
        "config": {k.removeprefix("flit_") if k != "flit_bytes" else k: v for k, v in flit_cfg.items()},
        **{k: v for k, v in total.items() if k != "packet_bytes"},
        "stitched_fraction": _frac(total["stitched_packets"], total["packets"]),
        "padding_fraction": _frac(total["padding_bytes"], total["wire_bytes"]),
        "packet_wire_bytes": total["packet_bytes"],
        "wire_bytes_vs_packet": _frac(total["wire_bytes"], total["packet_bytes"]),
        "flit_finish_s": float(cols["flit_finish_ps"].max(initial=0)) * 1e-12,
    }


def _frac(num: int, den: int) -> float | None:
    return None if den == 0 else num / den

"""Typed parameters of the modeled NetSparse cluster, each default with its source.

Every default that comes from the NetSparse paper (MICRO'25) names its table or section; values
that are our own assumption say so. All dataclasses are frozen and validated on construction:
a zero or negative size, count or rate raises :class:`~hw_models.errors.ConfigError` naming
the field. Fields that may meaningfully be zero (latencies, delay cycles) or infinite (delay
cycles, cache capacity, RIG batch size) say so in their metadata.

Build a full configuration from a plain or OmegaConf mapping with :meth:`HardwareParams.from_dict`;
``"inf"`` strings are accepted wherever ``inf`` is allowed.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hw_models.errors import ConfigError

TOPOLOGIES = ("leafspine", "hyperx", "dragonfly")
"""Topology names understood by :mod:`hw_models.topology`."""


def _p(default: Any, *, zero_ok: bool = False, inf_ok: bool = False) -> Any:
    """A validated numeric field: positive and finite unless ``zero_ok`` / ``inf_ok``."""
    return field(default=default, metadata={"zero_ok": zero_ok, "inf_ok": inf_ok})


def check_flag(name: str, value: Any) -> None:
    """A switch given as anything but true or false is one ConfigError: ``bool("maybe")`` and ``bool("false")``
    are both True, so reading it with ``bool()`` would switch it on without a word."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")


def _one_of(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """A field that names one of ``choices`` (one-line error naming them)."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {choices}, got {value!r}")


class _Validated:
    """Checks every numeric field of a dataclass against its ``zero_ok`` / ``inf_ok`` metadata, and that
    every flag is a bool."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.type == "bool":
                check_flag(f"{type(self).__name__}.{f.name}", getattr(self, f.name))
            if "zero_ok" not in f.metadata:
                continue
            value = getattr(self, f.name)
            _check_number(type(self).__name__, f.name, value, f.metadata)
            if f.type == "int" and math.isfinite(value) and value != int(value):
                raise ConfigError(f"{type(self).__name__}.{f.name} must be a whole number, got {value}")
        self._check()

    def _check(self) -> None:
        """Cross-field checks of subclasses."""


def _check_number(owner: str, name: str, value: Any, meta: Mapping[str, bool]) -> None:
    where = f"{owner}.{name}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{where} must be a number, got {value!r}")
    if math.isnan(value):
        raise ConfigError(f"{where} is NaN")
    if math.isinf(value) and not (meta["inf_ok"] and value > 0):
        raise ConfigError(f"{where} must be finite, got {value}")
    if value < 0 or (value == 0 and not meta["zero_ok"]):
        bound = ">= 0" if meta["zero_ok"] else "> 0"
        raise ConfigError(f"{where} must be {bound}, got {value}")


@dataclass(frozen=True)
class ClusterParams(_Validated):
    """Node count, rack size and topology of the target cluster."""

    nodes: int = _p(128)
    """Number of nodes. NetSparse Table 5 (128 nodes)."""
    rack_size: int = _p(16)
    """Nodes per rack (per ToR switch) for leaf-spine. NetSparse Table 5 (8 racks of 16). A node count
    that is not a multiple leaves the last rack partly filled (strong scaling from 1 node)."""
    topology: str = "leafspine"
    """``leafspine`` (NetSparse Table 5 default), ``hyperx`` or ``dragonfly`` (NetSparse §8, Fig. 22)."""

    def _check(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise ConfigError(f"unknown topology {self.topology!r}; choose one of {', '.join(TOPOLOGIES)}")

    @property
    def racks(self) -> int:
        """Number of racks (ToR switches) of the leaf-spine topology."""
        return -(-self.nodes // self.rack_size)


SPINE_CHOICES = ("pair", "pair_hash", "per_packet")
"""The values of ``TopologyParams.leafspine_spine_choice``."""


@dataclass(frozen=True)
class TopologyParams(_Validated):
    """Shapes of the three topologies. Hosts fill switches in order; ``cluster.nodes`` may be smaller
    than a topology's capacity but not larger."""

    leafspine_spines: int = _p(16)
    """Spine switches of the leaf-spine. Our assumption: 16 spines, one uplink from every ToR to each,
    so a ToR uses 16 down + 16 up of its 32 ports (full bisection; NetSparse Table 5 gives 32 ports)."""
    leafspine_spine_choice: str = "pair"
    """How an inter-rack (source, destination) host pair of the leaf-spine picks its spine: ``"pair"``
    (default), one spine per pair, ``(src mod rack_size + dst mod rack_size) mod spines``; ``"pair_hash"``,
    one spine per pair by a splitmix64 hash of (src, dst), what ECMP on a fixed 5-tuple gives;
    ``"per_packet"``, each packet of a pair takes the pair's next spine in turn (the simulator's
    deterministic spraying; analytic models see the first). Our assumption: NetSparse Table 5 says only
    that routing is deterministic (docs/simulator.md). Leaf-spine only: another topology refuses a
    non-default value."""
    hyperx_shape: tuple[int, ...] = (4, 4, 2)
    """HyperX switch grid. NetSparse §8 / Fig. 22 (4x4x2)."""
    hyperx_hosts_per_switch: int = _p(4)
    """Hosts per HyperX switch. NetSparse Fig. 22 (4)."""
    hyperx_width: int = _p(4)
    """Parallel links between two HyperX neighbours (trunk width). NetSparse Fig. 22 (width 4): 4 hosts
    + 7 neighbours x 4 = 32 ports."""
    dragonfly_groups: int = _p(4)
    """Dragonfly groups. NetSparse Fig. 22 (32 switches in 4 groups)."""
    dragonfly_switches_per_group: int = _p(8)
    """Switches per Dragonfly group. NetSparse Fig. 22 (32 / 4 = 8)."""
    dragonfly_hosts_per_switch: int = _p(4)
    """Hosts per Dragonfly switch. NetSparse Fig. 22 (4)."""

    def _check(self) -> None:
        _one_of("topology.leafspine_spine_choice", self.leafspine_spine_choice, SPINE_CHOICES)
        shape = tuple(self.hyperx_shape)
        if not shape or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1 for d in shape):
            raise ConfigError(f"topology.hyperx_shape must be positive whole numbers, got {self.hyperx_shape!r}")
        object.__setattr__(self, "hyperx_shape", tuple(int(d) for d in shape))  # lists from YAML -> tuple


LINE_UTIL_DIRECTIONS = ("rx", "both")
"""The values of ``LinkParams.line_util_direction``."""


@dataclass(frozen=True)
class LinkParams(_Validated):
    """Network links (every link of the topology, host and inter-switch alike)."""

    bandwidth_gbps: float = _p(400.0)
    """Line rate in Gb/s, per direction. NetSparse Table 5 (400 Gb/s)."""
    latency_ns: float = _p(450.0, zero_ok=True)
    """One-way link latency (propagation + PHY). NetSparse Table 5 (450 ns)."""
    line_util_direction: str = "rx"
    """What the report's line utilisation of the tail node (NetSparse Table 7) counts, a reading only (no
    time changes): ``"rx"`` (default), the wire bytes the node receives over ``line rate x its time``;
    ``"both"``, the bytes it receives and sends over both directions' capacity, ``2 x line rate x its
    time``. Our reading for the default: the paper sets the tail's line utilisation against its goodput,
    which counts received payload (docs/simulator.md, "Assumptions of the SAOpt baseline and of the report")."""

    def _check(self) -> None:
        _one_of("link.line_util_direction", self.line_util_direction, LINE_UTIL_DIRECTIONS)

    @property
    def bytes_per_s(self) -> float:
        """Line rate in bytes per second."""
        return self.bandwidth_gbps * 1e9 / 8


@dataclass(frozen=True)
class SwitchParams(_Validated):
    """Tofino-like switches; the NetSparse extensions sit only in ToR switches (NetSparse Table 5, §6.2)."""

    latency_ns: float = _p(300.0, zero_ok=True)
    """Switch traversal latency. NetSparse Table 5 (300 ns)."""
    ports: int = _p(32)
    """Ports per switch. NetSparse Table 5 (Tofino-like, 32 ports)."""
    pipes: int = _p(8)
    """Match-action pipelines per switch. NetSparse Table 5 (8 pipes)."""
    clock_ghz: float = _p(2.0)
    """Pipeline clock. NetSparse Table 5 (2 GHz)."""
    concat_delay_cycles: float = _p(125, zero_ok=True, inf_ok=True)
    """Concatenation delay in switch cycles. NetSparse Table 5 (125 cycles); 0 = one PR per packet,
    ``inf`` = MTU-full packets (NetSparse Fig. 17)."""
    netsparse_in_tor: bool = True
    """NetSparse extensions (property cache, concatenation) in ToR switches. NetSparse Table 5 / §6.2."""
    netsparse_in_spine: bool = False
    """Extensions in non-ToR switches: off, as in NetSparse Table 5 (only ToRs are extended)."""
    middle_pipe_prs_per_cycle: int = _p(1)
    """PRs a ToR middle pipe (property cache lookup, switch concatenator) takes per switch cycle
    (simulator only). Our assumption: 1, the pipelined cache and shift queue of §6.2 read as taking
    one PR per cycle. A 400 Gb/s port brings 25 B per 2 GHz switch cycle, several 18 B read PRs, so
    a pipe serving several ports may need more; sensitivity in docs/experiments.md."""
    buffer_bytes: int = _p(96 * 2**20)
    """Packet buffer per switch, shared by its ports. NetSparse Table 5 (96 MB). Links from and to hosts
    wait for room (credit flow control, lossless); with Table 5's numbers it cannot fill (the bytes in
    flight are bounded by the Pending PR Tables, docs/simulator.md)."""

    def _check(self) -> None:
        if self.middle_pipe_prs_per_cycle > 1024:
            raise ConfigError(f"switch.middle_pipe_prs_per_cycle={self.middle_pipe_prs_per_cycle} must be at most 1024 "
                              "(Table 5's 4 ports per pipe bring at most 6 read PRs per cycle, docs/simulator.md)")
        if self.ports < self.pipes:
            raise ConfigError(f"switch.ports={self.ports} must be >= switch.pipes={self.pipes} (ports per pipe)")


@dataclass(frozen=True)
class PropertyCacheParams(_Validated):
    """The in-switch property cache (NetSparse §6.2.2, Table 5)."""

    size_bytes: float = _p(32 * 2**20, inf_ok=True)
    """Capacity per switch. NetSparse Table 5 (32 MB); ``inf`` = infinite cache (NetSparse Fig. 18).
    Split evenly over the switch's middle pipes (``switch.pipes``, §6.2.1: one property cache per
    pipe), 4 MB each: our reading. Table 5 lists 32 MB among the switch's per-switch resources (32
    ports, 8 pipes, 96 MB packet buffer), and 8 x 32 MB = 256 MB of SRAM would be far beyond a
    Tofino-class switch; a pipe only caches the properties whose packets pass it, so no capacity is
    spent twice on one property."""
    ways: int = _p(16)
    """Associativity. NetSparse Table 5 (16-way)."""
    latency_cycles: int = _p(16, zero_ok=True)
    """Lookup latency in switch cycles. NetSparse Table 5 (16 cycles)."""
    segment_bytes: int = _p(16)
    """Line allocation granularity. NetSparse §6.2.2 (16 B segments)."""
    max_line_bytes: int = _p(512)
    """Largest line; larger properties are tiled. NetSparse §6.2.2 (512 B)."""
    policy: str = "lru"
    """Replacement policy. NetSparse Table 5 (LRU)."""

    def _check(self) -> None:
        if self.policy != "lru":
            raise ConfigError(f"property_cache.policy={self.policy!r}: only 'lru' is modeled (NetSparse Table 5)")
        if self.max_line_bytes % self.segment_bytes:
            raise ConfigError("property_cache.max_line_bytes must be a multiple of property_cache.segment_bytes")


RIG_LOCAL_IDXS = ("scan", "host_filtered")
"""The values of ``SNICParams.rig_local_idxs``."""
RIG_COMMAND_OVERLAP = ("wait_last_response", "overlap")
"""The values of ``SNICParams.rig_command_overlap``."""
RIG_AUTO_SPLIT = ("idxs", "remote_idxs")
"""The values of ``SNICParams.rig_auto_split``."""
RIG_UNIT_ROLES = ("static", "dynamic")
"""The values of ``SNICParams.rig_unit_roles``."""


@dataclass(frozen=True)
class SNICParams(_Validated):
    """The SmartNIC with RIG units (NetSparse §5, Table 5)."""

    clock_ghz: float = _p(2.2)
    """SNIC clock. NetSparse Table 5 (2.2 GHz)."""
    rig_units: int = _p(32)
    """RIG units per SNIC. NetSparse Table 5 (32)."""
    rig_client_units: int | None = None
    """How many of the RIG units are clients during a gather; the rest serve. ``None`` (default): half,
    ``rig_units // 2``. Our assumption: §5 has every RIG unit able to act as either, and §5.3's Q Control
    assigns server work as reads arrive; a fixed half/half split is the static reading of that, used by
    ``units.RigNode`` and, by default, the simulator (``rig_unit_roles`` lets the simulator's idle
    client units serve too). Sensitivity in docs/experiments.md."""
    pending_pr_table: int = _p(256)
    """Pending PR Table entries per RIG unit. NetSparse Table 5 (256)."""
    lsq_entries: int = _p(64)
    """Load-store queue entries per RIG unit. NetSparse Table 5 (64)."""
    rig_batch_size: float | str = "auto"
    """Nonzeros per RIG command: ``"auto"`` (default), a positive whole number, or ``inf`` (the node's
    whole stream in one command). ``auto`` picks a power of two from the node's nonzeros and its client
    unit count (:func:`hw_models.unit_args.auto_batch_size`, rule in docs/simulator.md); the
    paper's batches are input-sensitive (32k for arabic/queen/stokes, 8k for europe/uk, NetSparse §9.3 /
    Fig. 15)."""
    rig_auto_split: str = "idxs"
    """What ``rig_batch_size="auto"`` splits evenly (simulator only; a fixed batch or inf ignores it):
    ``"idxs"`` (default), the idxs a command carries, so every command but a node's last has the
    batch's idx count; ``"remote_idxs"``, the node's remote idxs: the host, which knows the partition,
    applies auto's rule to the nodes' remote idx counts and cuts a command after every batch-th remote
    idx, so every command carries the same number of PRs to make (and the local idxs in between).
    Our assumption: §5.1 and §8 give a batch of nonzeros, not how the host cuts a node's stream
    (docs/simulator.md). Sensitivity in docs/experiments.md."""
    concat_delay_cycles: float = _p(500, zero_ok=True, inf_ok=True)
    """NIC concatenation delay in SNIC cycles. NetSparse Table 5 (500 cycles); swept in Fig. 17."""
    concat_phys_queue_bytes: int = _p(256)
    """One physical queue of the virtualised concatenation queues (NetSparse §7.2, an option the
    evaluation leaves off; ``units.Concatenator(virtual_queues=True)``). Our assumption: sub-MTU,
    256 B; §7.2 gives no size."""
    concat_phys_queues: int = _p(64)
    """Physical queues in the pool of the virtualised concatenation queues (NetSparse §7.2). Our
    assumption: 64; §7.2 gives no number."""
    rig_cycles_per_pr: int = _p(1, zero_ok=True)
    """SNIC cycles between two read PRs of one round of ``units.RigNode`` (the training path and the
    switch service), so the NIC concatenation delay acts between a round's PRs. Our assumption: one
    PR per cycle. The simulator times every PR with its own model of the units instead."""
    rig_local_idxs: str = "scan"
    """What a RIG command carries (simulator only): ``"scan"`` (default), every nonzero's idx, so a
    client unit spends one SNIC cycle reading each local idx before dropping it (NetSparse §5.3: the
    unit reads each idx of its command and drops those the node owns); ``"host_filtered"``, only the
    remote idxs, because the host knows the partition: local idxs cost no scan cycle, no DMA byte and
    no batch slot (a batch counts the idxs a command carries). Our assumption for the default: §5.3
    has the unit, not the host, tell local idxs apart. Sensitivity in docs/experiments.md."""
    rig_command_overlap: str = "wait_last_response"
    """When a client unit asks for its next RIG command (simulator only): ``"wait_last_response"``
    (default), once its command completed (every response written), so a command's last responses
    and the host round trip are not overlapped with any scan; ``"overlap"``, as soon as its command
    is scanned: the next command's scan runs while the last one's PRs are pending (one Pending PR
    Table and Idx Filter for both), and the unit's last command completes when its last response
    lands. Our assumption: §5.1 has the host hand a unit its next command after the completion
    notification; §5.3 stalls a unit only on a full Pending PR Table, LSQ or Tx queue (docs/simulator.md)."""
    rig_unit_roles: str = "static"
    """Which RIG units serve read packets (simulator only): ``"static"`` (default), the server units alone
    (``rig_units - rig_client_units``); ``"dynamic"``, also every client unit that holds no RIG command (before its
    first, between a completion and its next command's idxs arriving, after the node's stream): the server unit free
    first, unless an idle client unit would start the packet's first read sooner (the lowest index on ties); a
    command that arrives while its unit serves waits until the packet's last read started (charged to
    ``remote_server``). Our assumption for the default: §5 has every RIG unit able to act as either and §5.3's Q
    Control hands work to units as it arrives, but the text gives no rule; the static split is what
    ``units.RigNode`` and the training path run (docs/simulator.md)."""
    idx_bytes: int = _p(4)
    """Bytes per idx a RIG command's DMA brings from host memory. Our assumption: 32-bit column ids
    (enough for the paper's matrices, at most 51M columns, NetSparse Table 6)."""
    rx_buffer_bytes: int = _p(2 * 2**20)
    """SNIC receive buffer. NetSparse Table 5 (2 MB): packets wait in it for a server unit (reads) or
    their host write (responses); the ToR's link to the host waits for room (credit flow control)."""
    tx_buffer_bytes: int = _p(2 * 2**20)
    """SNIC transmit buffer. NetSparse Table 5 (2 MB): packets the NIC made wait in it for the uplink;
    while it is full, client units issue no PR and server units take no read packet."""

    def _check(self) -> None:
        if self.rig_units < 2:
            raise ConfigError(f"snic.rig_units must be at least 2 (a RIG node needs a client and a server unit), "
                              f"got {self.rig_units}")
        c = self.rig_client_units
        if c is not None and not (isinstance(c, int) and 1 <= c < self.rig_units):
            raise ConfigError(f"snic.rig_client_units must be null (half the RIG units) or a whole number from 1 to "
                              f"rig_units - 1 = {self.rig_units - 1} (at least one unit serves), got {c!r}")
        _one_of("snic.rig_local_idxs", self.rig_local_idxs, RIG_LOCAL_IDXS)
        _one_of("snic.rig_auto_split", self.rig_auto_split, RIG_AUTO_SPLIT)
        _one_of("snic.rig_command_overlap", self.rig_command_overlap, RIG_COMMAND_OVERLAP)
        _one_of("snic.rig_unit_roles", self.rig_unit_roles, RIG_UNIT_ROLES)
        b = self.rig_batch_size
        if isinstance(b, str):
            if b != "auto":
                raise ConfigError(f"snic.rig_batch_size must be 'auto', a positive whole number or inf, got {b!r}")
        else:
            _check_number(type(self).__name__, "rig_batch_size", b, {"zero_ok": False, "inf_ok": True})
            if math.isfinite(b) and b != int(b):
                raise ConfigError(f"SNICParams.rig_batch_size must be a whole number, got {b}")


@dataclass(frozen=True)
class SNICMemoryParams(_Validated):
    """Memory behind a client RIG unit's Idx Filter loads: per unit an L1 and an L2 (shared
    by a client/server pair, NetSparse §8.2; the server's property reads go to host memory over PCIe,
    so the filter lines get them whole), then the SNIC's LLC, then DRAM; LRU over 64 B lines.
    Sizes named in NetSparse are used; the rest, and every latency, are our assumptions, taken from an
    Arm Neoverse/Cortex-A78-class SmartNIC (BlueField-3: 16 A78 cores, 16 MB LLC) because NetSparse's
    SNIC runs at a similar clock (2.2 GHz) and gives none of them."""

    line_bytes: int = _p(64)
    """Cache line. Our assumption (64 B, the Arm line size)."""
    l1_bytes: int = _p(32 * 2**10)
    """L1 per client/server unit pair. NetSparse §8.2 (32 KB)."""
    l1_ways: int = _p(4)
    """Our assumption (Cortex-A78 L1D: 4-way)."""
    l1_cycles: int = _p(4, zero_ok=True)
    """L1 load-to-use latency in SNIC cycles. Our assumption (Cortex-A78: 4 cycles)."""
    l2_bytes: int = _p(128 * 2**10)
    """L2 per client/server unit pair. NetSparse §8.2 (128 KB)."""
    l2_ways: int = _p(8)
    """Our assumption (Cortex-A78 L2: 8-way)."""
    l2_cycles: int = _p(12, zero_ok=True)
    """Our assumption (Cortex-A78 L2: 9-13 cycles)."""
    llc_bytes: int = _p(16 * 2**20)
    """SNIC last-level cache, shared by the node's RIG units. Our assumption (BlueField-3: 16 MB LLC);
    every paper matrix's filter bitmap (at most 51M columns / 8 = 6.4 MB) fits in it."""
    llc_ways: int = _p(16)
    """Our assumption."""
    llc_cycles: int = _p(40, zero_ok=True)
    """Our assumption (an Arm DSU/CMN L3 hit: 30-50 cycles)."""
    dram_latency_ns: float = _p(100.0, zero_ok=True)
    """SNIC DRAM load latency. Our assumption (DDR5 idle latency, ~100 ns)."""


@dataclass(frozen=True)
class PCIeParams(_Validated):
    """Host-SNIC interconnect."""

    generation: int = _p(6)
    """PCIe generation. NetSparse Table 5 (Gen6)."""
    latency_ns: float = _p(200.0, zero_ok=True)
    """One-way latency. NetSparse Table 5 (200 ns)."""
    bandwidth_gbytes_per_s: float = _p(128.0)
    """Host -> SNIC DMA bandwidth of the RIG commands' idxs, per node. Our assumption: Table 5 names
    Gen6 but no width; x16 at 64 GT/s per lane is 128 GB/s per direction (PCIe 6.0, raw)."""


@dataclass(frozen=True)
class HeaderParams(_Validated):
    """Modeled header sizes and MTU (NetSparse Table 5). The encoded wire format of the
    protocol unit (``csrc/units/protocol.h``) uses the Fig. 6 sizes instead (14 B concatenation header);
    this model uses Table 5."""

    upper_bytes: int = _p(50, zero_ok=True)
    """Upper-layer headers (Ethernet/IP/UDP...) per packet. NetSparse Table 5 (50 B)."""
    concat_bytes: int = _p(12, zero_ok=True)
    """Concatenation header per packet. NetSparse Table 5 (12 B)."""
    pr_bytes: int = _p(18, zero_ok=True)
    """Header per property request (PR). NetSparse Table 5 (18 B)."""
    mtu_bytes: int = _p(1500)
    """Maximum transmission unit, including the upper-layer headers. NetSparse Table 5 (1500 B)."""
    element_bytes: int = _p(4)
    """Bytes per property element: fp32. Our assumption (NetSparse Table 3 uses 4-byte elements)."""

    def _check(self) -> None:
        if self.mtu_bytes < self.upper_bytes + self.concat_bytes + self.pr_bytes:
            raise ConfigError(
                f"headers.mtu_bytes={self.mtu_bytes} is smaller than one packet's headers "
                f"({self.upper_bytes}+{self.concat_bytes}+{self.pr_bytes} B)"
            )

    @property
    def packet_bytes(self) -> int:
        """Per-packet header bytes (upper + concatenation)."""
        return self.upper_bytes + self.concat_bytes

    def prs_per_packet(self, payload_bytes: int) -> int:
        """Most PRs with ``payload_bytes`` each that fit in one MTU packet (at least 1).

        A property larger than the MTU would need fragmentation; we charge it as one PR per packet
        (an assumption: the paper's properties always fit).
        """
        room = self.mtu_bytes - self.packet_bytes
        return max(1, room // (self.pr_bytes + payload_bytes))


RANK_PARTITIONS = ("rows", "nnz")
"""The values of ``SoftwareParams.rank_partition`` (the node partition's vocabulary, ``partition=rows|nnz``)."""


@dataclass(frozen=True)
class SoftwareParams(_Validated):
    """The SAOpt software baseline (NetSparse §8.1, §9.1): Conveyors with one rank per core.

    A PR costs its rank ``sa_per_pr_overhead_ns + sa_per_byte_overhead_ns * property bytes`` on the
    requesting rank and again on the serving rank. Both parts are a *calibration*, not paper numbers:
    left ``None``, they are set so that a balanced, software-bound node reaches
    ``sa_target_goodput`` of the line rate at K=16 (NetSparse Table 7's typical "Gput SA") and
    ``sa_target_goodput_k128`` at K=128 (our assumption; see
    :func:`hw_models.baselines.calibrate_sa_overheads`).
    """

    cores: int = _p(64)
    """Cores per node running the SA runtime, one Conveyors rank each. NetSparse §8.1 (64 cores)."""
    rank_partition: str = "rows"
    """How a node's rows are split among its ranks, each rank a contiguous block: ``"rows"`` (default),
    ``numpy.array_split`` shares of equal row counts; ``"nnz"``, blocks of nonzero counts as equal as
    contiguity allows, as a load-balanced Conveyors code would cut them. A rank owns the rows of ``B``
    with the ids of its rows of ``A`` (square ``A``). Our assumption for the default: §8.1 names no
    balancing among the ranks, and §9.1 reads SAOpt's low goodput as intra-node imbalance (reasoning and
    sensitivity: docs/simulator.md, "Assumptions of the SAOpt baseline and of the report")."""
    sa_target_goodput: float = _p(0.10)
    """SAOpt goodput at K=16 as a fraction of line rate used for the calibration. NetSparse Table 7
    (typical "Gput SA" about 10%)."""
    sa_target_goodput_k128: float = _p(0.40)
    """SAOpt goodput at K=128 used for the calibration of the per-byte part. Our assumption: NetSparse
    §8.1 says SAOpt stays "far from the optimal 100 %" with 64 cores at both property sizes it
    measured, without a number; 40 % is our reading of that (a per-PR cost alone would give 80 %)."""
    sa_per_pr_overhead_ns: float | None = None
    """Per-PR software time on one rank (issue and serve each count once). Our calibration, not a
    NetSparse number: ``None`` = calibrated; a number overrides the calibration, and then the per-byte
    part is ``sa_per_byte_overhead_ns`` or 0 (config knob ``software.sa_per_pr_overhead_ns``)."""
    sa_per_byte_overhead_ns: float | None = None
    """Per-property-byte software time on one rank (copies in and out of Conveyors' buffers). Our
    calibration, an assumption and not a NetSparse number: ``None`` = calibrated together with the
    per-PR part (or 0 when that one is given)."""

    def _check(self) -> None:
        _one_of("software.rank_partition", self.rank_partition, RANK_PARTITIONS)
        for name in ("sa_target_goodput", "sa_target_goodput_k128"):
            if getattr(self, name) > 1:
                raise ConfigError(f"software.{name} must be <= 1, got {getattr(self, name)}")
        g16, g128 = self.sa_target_goodput, self.sa_target_goodput_k128
        if not g16 <= g128 <= 8 * g16:  # both calibrated costs (per PR, per byte) must be >= 0
            raise ConfigError(f"software.sa_target_goodput_k128 must lie between sa_target_goodput and 8x it "
                              f"(non-negative per-PR and per-byte costs), got {g128} with {g16} at K=16")
        for name in ("sa_per_pr_overhead_ns", "sa_per_byte_overhead_ns"):
            if getattr(self, name) is not None:
                _check_number(type(self).__name__, name, getattr(self, name), {"zero_ok": True, "inf_ok": False})


_SECTIONS: dict[str, type] = {
    "cluster": ClusterParams,
    "topology": TopologyParams,
    "link": LinkParams,
    "switch": SwitchParams,
    "property_cache": PropertyCacheParams,
    "snic": SNICParams,
    "snic_memory": SNICMemoryParams,
    "pcie": PCIeParams,
    "headers": HeaderParams,
    "software": SoftwareParams,
}


@dataclass(frozen=True)
class HardwareParams:
    """The whole modeled cluster; every section defaults to NetSparse Table 5."""

    cluster: ClusterParams = field(default_factory=ClusterParams)
    topology: TopologyParams = field(default_factory=TopologyParams)
    link: LinkParams = field(default_factory=LinkParams)
    switch: SwitchParams = field(default_factory=SwitchParams)
    property_cache: PropertyCacheParams = field(default_factory=PropertyCacheParams)
    snic: SNICParams = field(default_factory=SNICParams)
    snic_memory: SNICMemoryParams = field(default_factory=SNICMemoryParams)
    pcie: PCIeParams = field(default_factory=PCIeParams)
    headers: HeaderParams = field(default_factory=HeaderParams)
    software: SoftwareParams = field(default_factory=SoftwareParams)

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any] | None = None) -> HardwareParams:
        """Build from a nested mapping (plain dict or OmegaConf ``DictConfig``) of section -> fields.

        Missing sections and fields keep their defaults; unknown keys raise ``ConfigError``.
        ``"inf"`` / ``".inf"`` strings become ``float('inf')``.
        """
        cfg = _to_container(cfg)
        unknown = sorted(set(cfg) - set(_SECTIONS))
        if unknown:
            raise ConfigError(f"unknown hardware section(s) {unknown}; known: {', '.join(_SECTIONS)}")
        return cls(**{name: section_from_dict(_SECTIONS[name], cfg.get(name)) for name in _SECTIONS})

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain nested dict (JSON-friendly apart from ``inf``, which ``json`` writes as ``Infinity``)."""
        return dataclasses.asdict(self)

    def replace(self, **sections: Mapping[str, Any]) -> HardwareParams:
        """A copy with some fields of some sections changed: ``p.replace(snic={"rig_units": 8})``."""
        merged = self.to_dict()
        for name, values in sections.items():
            if name not in _SECTIONS:
                raise ConfigError(f"unknown hardware section {name!r}; known: {', '.join(_SECTIONS)}")
            merged[name].update(_to_container(values))
        return HardwareParams.from_dict(merged)


def section_from_dict(kind: type, values: Mapping[str, Any] | None) -> Any:
    """One section dataclass from a mapping; unknown keys raise ``ConfigError``."""
    values = _to_container(values)
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"unknown {kind.__name__} field(s) {unknown}; known: {', '.join(sorted(names))}")
    return kind(**{k: _parse_inf(v) for k, v in values.items()})


def _to_container(cfg: Any) -> dict[str, Any]:
    if cfg is None:
        return {}
    try:  # OmegaConf is optional here: accept DictConfig without importing it eagerly.
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency of the package
        pass
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"expected a mapping of parameters, got {type(cfg).__name__}")
    return dict(cfg)


def _parse_inf(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("inf", ".inf", "infinity", "+inf"):
        return math.inf
    return value

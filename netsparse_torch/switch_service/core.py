"""The switch data plane: ports with bounded queues around the C++ SwitchPipe.

A ToR (paper §6.2.1) sends every admitted frame through the C++ middle pipe (deconcatenation, property
cache lookup/insert, concatenation) and routes the output packets by destination: a node of its rack
gets them on its port, any other node goes through the ``uplink`` port to the spine. A cache hit turns
a read into a response addressed to the read's source, so it never leaves the rack. The spine has one
port per rack (``tor:<rack>``) and forwards packets unchanged by destination rack.

Threads: gRPC handler threads *admit* frames (validated in C++ by ``scan_frame`` before anything
touches the pipe) into one bounded ingress queue; one worker thread owns the pipe and puts output
frames into bounded per-port egress queues. A full queue blocks its producer (backpressure reaches the
sender through gRPC flow control); a port that stays full for ``stall_timeout_s`` is failed and the
PRs it could not take are counted in ``errors["undelivered_prs"]``: nothing is dropped silently.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from hw_models import units
from hw_models import units as _units
from netsparse_torch.errors import ConfigError, PacketError
from netsparse_torch.switch_service.control import PortCounters, SwitchConfig, SwitchCounters, counters_message

log = logging.getLogger("netsparse.switch")

CLOCK_GHZ = 1.0  # virtual switch clock for the concatenation delay (our assumption: 1 cycle = 1 ns)
UPLINK = "uplink"


class FrameRejected(ValueError):
    """A frame the switch refuses; ``kind`` is its error-counter key."""

    def __init__(self, kind: str, msg: str):
        super().__init__(msg)
        self.kind = kind


@dataclass
class Port:
    """One switch port: counters, a bounded egress queue and whether a stream is attached."""

    name: str
    egress: queue.Queue
    counters: PortCounters = field(default_factory=PortCounters)
    attached: bool = False
    failed: str | None = None  # reason once the port could not take its output


class SwitchCore:
    """Ports, queues and the worker thread of one switch (role ``tor`` or ``spine``)."""

    def __init__(self, role: str, *, queue_depth: int = 64, max_frame_bytes: int = 4 << 20,
                 stall_timeout_s: float = 30.0):
        if role not in ("tor", "spine"):
            raise ValueError(f"role must be 'tor' or 'spine', got {role!r}")
        if isinstance(queue_depth, bool) or not isinstance(queue_depth, int) or queue_depth < 1:
            # queue.Queue(maxsize=0) has no bound: the switch would lose its backpressure without a word
            raise ConfigError(f"queue_depth must be a whole number >= 1 (frames per bounded queue), got "
                              f"{queue_depth!r}")
        self.role = role
        self.queue_depth = queue_depth
        self.max_frame_bytes = max_frame_bytes
        self.stall_timeout_s = stall_timeout_s
        self.cfg: SwitchConfig | None = None
        self.ports: dict[str, Port] = {}
        self.sw = SwitchCounters()
        self.pipe = None
        self._port_list: list[Port] = []
        self._port_of_dest = np.zeros(0, dtype=np.int64)
        self._lock = threading.RLock()  # config, counters, pipe
        self._ingress: queue.Queue = queue.Queue(maxsize=queue_depth)
        self._t0 = time.monotonic_ns()
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._run, name=f"switch-{role}-pipe", daemon=True)
        self._worker.start()

    # ---- control plane -------------------------------------------------------------------------
    def configure(self, cfg: SwitchConfig) -> None:
        """Installs a configuration: ports, routing table and (ToR) a fresh C++ SwitchPipe."""
        with self._lock:
            self.cfg = cfg
            if self.role == "tor":
                names = [f"node:{n}" for n in cfg.rack_nodes(cfg.rack_id)]
                names += [UPLINK] if len(cfg.racks) > 1 else []
                local = {n: i for i, n in enumerate(cfg.rack_nodes(cfg.rack_id))}
                uplink = len(names) - 1
                pod = [local.get(n, uplink) for n in range(cfg.n_nodes)]
            else:
                names = [f"tor:{r}" for r in cfg.racks]
                pod = [cfg.racks.index(r) for r in cfg.rack_of]
            old = self.ports
            self.ports = {n: old.get(n) or Port(n, queue.Queue(maxsize=self.queue_depth)) for n in names}
            self._port_list = [self.ports[n] for n in names]
            self._port_of_dest = np.asarray(pod, dtype=np.int64)
            self.pipe = self._new_pipe() if self.role == "tor" and cfg.cache_enabled else None

    def _new_pipe(self):
        cfg = self.cfg
        return units.SwitchPipe(n_dests=cfg.n_nodes, prop_bytes=cfg.prop_bytes, mtu=cfg.mtu,
                                upper_bytes=cfg.upper_bytes, delay_cycles=cfg.delay_cycles, **cfg.cache)

    def reset(self) -> None:
        """Zeroes every counter and invalidates the cache (a new pipe)."""
        with self._lock:
            self._emit(self._flush())
            for p in self.ports.values():
                p.counters = PortCounters()
            self.sw = SwitchCounters()
            if self.pipe is not None:
                self.pipe = self._new_pipe()

    def invalidate(self, prop_bytes: int = 0) -> None:
        """Invalidates the property cache; a non-zero ``prop_bytes`` starts a kernel with that size."""
        with self._lock:
            if self.cfg is None:
                return
            self._emit(self._flush())
            if prop_bytes:
                self.cfg.prop_bytes = prop_bytes
            if self.pipe is not None:
                self.pipe.begin_kernel(self.cfg.prop_bytes)

    def counters(self):
        """The ``Counters`` message of this switch."""
        with self._lock:
            unit = {}
            if self.pipe is not None:
                unit = dict(self.pipe.counters)
                unit.update({k: v for k, v in _units.switch_pipe_unit_counters(self.pipe).items()
                             if k in ("evictions", "concat_packets")})
            return counters_message(self.role, {p.name: p.counters for p in self.ports.values()}, self.sw, unit)

    def count_error(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.sw.errors[kind] += n

    # ---- data plane ----------------------------------------------------------------------------
    def port(self, name: str) -> Port:
        with self._lock:
            if self.cfg is None:
                raise FrameRejected("not_configured", "the switch is not configured yet (call Configure first)")
            if name not in self.ports:
                raise FrameRejected("unknown_port", f"{name!r} is not a port of this {self.role} "
                                    f"(ports: {sorted(self.ports)})")
            return self.ports[name]

    def admit(self, port: Port, data: bytes, expected_src: int = -1, timeout: float | None = None) -> None:
        """Validates a frame from ``port`` and queues it for the pipe (blocks while the ingress is full)."""
        cfg = self.cfg
        if cfg is None:
            raise FrameRejected("not_configured", "the switch is not configured yet (call Configure first)")
        if len(data) > self.max_frame_bytes:
            raise FrameRejected("oversize", f"frame of {len(data)} B exceeds the {self.max_frame_bytes} B limit")
        try:
            n_pk, n_rd, n_rs = _units.scan_frame(data, n_dests=cfg.n_nodes, prop_bytes=cfg.prop_bytes,
                                              expected_src=expected_src, mtu=cfg.mtu, upper_bytes=cfg.upper_bytes)
        except PacketError as e:  # the C++ frame check raises one subclass per error-counter key
            raise FrameRejected(e.kind, str(e)) from None
        with self._lock:
            c = port.counters
            c.packets_in += n_pk
            c.bytes_in += len(data)
            c.prs_in += n_rd + n_rs
            self.sw.read_prs_in += n_rd
            self.sw.response_prs_in += n_rs
        self._ingress.put((data, n_rd, n_rs), timeout=timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                item = self._ingress.get(timeout=0.05)
            except queue.Empty:
                continue
            try:
                with self._lock:
                    out = self._process(*item)
                self._emit(out)
            except Exception:  # the worker must survive anything; the error is counted and logged
                log.exception("switch worker error")
                self.count_error("internal")

    def _now(self) -> int:
        return int((time.monotonic_ns() - self._t0) * CLOCK_GHZ)

    def _process(self, data: bytes, n_rd: int, n_rs: int) -> list[tuple[int, bytes]]:
        """Runs one frame through the pipe (ToR with cache) or forwards it; returns (type, bytes) outputs."""
        if self.pipe is None:
            # no cache: packets keep their type; the split below counts PRs per port
            return [(-1, data)] if data else []
        now = self._now()
        self.pipe.process(data, now)
        self.pipe.advance(now)
        if self._ingress.empty():  # idle: nothing more to concatenate with (our assumption)
            self.pipe.flush_all(now)
        return self._take()

    def _flush(self) -> list[tuple[int, bytes]]:
        if self.pipe is None:
            return []
        self.pipe.flush_all(self._now())
        return self._take()

    def _take(self) -> list[tuple[int, bytes]]:
        streams = self.pipe.take_streams()
        by_type = [b"".join(v for (t, _), v in streams.items() if t == ty) for ty in (units.READ, units.RESPONSE)]
        return [(ty, b) for ty, b in zip((units.READ, units.RESPONSE), by_type, strict=True) if b]

    def _emit(self, outputs: list[tuple[int, bytes]]) -> None:
        """Routes output packets to egress queues by destination port (blocking on a full queue)."""
        cfg = self.cfg
        for ty, data in outputs:
            parts, pkts, prs = _units.split_frame(data, port_of_dest=self._port_of_dest, n_ports=len(self._port_list),
                                               mtu=cfg.mtu, upper_bytes=cfg.upper_bytes)
            with self._lock:
                if ty == units.READ:
                    self.sw.read_prs_out += int(prs.sum())
                elif ty == units.RESPONSE:
                    self.sw.response_prs_out += int(prs.sum())
                else:  # forwarded unchanged: count the types from the scan again
                    _, n_rd, n_rs = _units.scan_frame(data, n_dests=cfg.n_nodes, prop_bytes=cfg.prop_bytes,
                                                   mtu=cfg.mtu, upper_bytes=cfg.upper_bytes)
                    self.sw.read_prs_out += n_rd
                    self.sw.response_prs_out += n_rs
            for port, part, n_pk, n_pr in zip(self._port_list, parts, pkts, prs, strict=True):
                if part:
                    self._deliver(port, part, int(n_pk), int(n_pr))

    def _deliver(self, port: Port, part: bytes, n_pk: int, n_pr: int) -> None:
        if port.failed is None:
            try:
                port.egress.put(part, timeout=self.stall_timeout_s)
                with self._lock:
                    c = port.counters
                    c.packets_out += n_pk
                    c.bytes_out += len(part)
                    c.prs_out += n_pr
                return
            except queue.Full:
                port.failed = f"port {port.name} took no output for {self.stall_timeout_s} s"
                log.error(port.failed)
        self.count_error("undelivered_prs", n_pr)

    def stop(self) -> str:
        """Stops the worker and returns the one-line counter summary (also logged)."""
        self._stop.set()
        self._worker.join(timeout=5)
        left = sum(p.egress.qsize() for p in self.ports.values()) + self._ingress.qsize()
        if left:
            self.count_error("frames_left_at_stop", left)
        line = summary_line(self.role, self.counters())
        log.info(line)
        return line


def summary_line(role: str, c) -> str:
    """One-line summary of a Counters message."""
    errs = ",".join(f"{k}={v}" for k, v in sorted(c.errors.items())) or "none"
    return (f"switch {role} stopped: packets in={c.packets_in} out={c.packets_out} PRs in={c.prs_in} "
            f"out={c.prs_out} hits={c.cache_hits} misses={c.cache_misses} inserts={c.cache_inserts} "
            f"evictions={c.cache_evictions} PRs/packet={c.prs_per_packet:.1f} errors: {errs}")

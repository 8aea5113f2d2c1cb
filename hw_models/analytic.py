"""Zero-load (contention-free) timing of one property request: the analytic cross-check of the simulator.

The discrete-event simulator must agree with an analytic calculation on contention-free cases.
This module is that calculation; the simulator's hand-checked tests compare
against it. Model of one read PR from node ``src`` for a property owned by ``dst`` and its response,
with nothing else in flight: the node's whole RIG stream is that one idx (every assumption here is
ours, chosen to be what the simulator models, host side and filter load included):

1. host side of the RIG command (NetSparse §5.1): the MMIO write of the command (``pcie.latency_ns``),
   then the unit's DMA of its idxs (request ``pcie.latency_ns``, ``snic.idx_bytes`` per idx at
   ``pcie.bandwidth_gbytes_per_s``, data ``pcie.latency_ns``); the unit starts at the next SNIC cycle;
2. the client RIG unit reads the idx in one SNIC cycle; with the filter on it loads the idx's Idx
   Filter bit, a cold miss to DRAM (``snic_memory.dram_latency_ns`` rounded up to whole cycles);
3. with ``concat_nic``, the lone PR waits ``snic.concat_delay_cycles`` in its NIC concatenation queue
   until the queue expires (NetSparse §6.1.2); without it, it leaves at once;
4. the packet crosses the path of :mod:`hw_models.topology` store-and-forward: on every link it
   serialises (``wire_bytes / line rate``) and propagates (``link.latency_ns``); every switch adds
   ``switch.latency_ns``; with ``switch``, every extended switch (a ToR, NetSparse Table 5) also adds a
   property-cache lookup (``property_cache.latency_cycles``) and, for the lone PR, its concatenation
   delay ``switch.concat_delay_cycles`` (switch clock); a cold cache misses; a lone PR has its middle
   pipe to itself;
5. the server RIG unit takes one SNIC cycle and reads the property over PCIe: ``2 * pcie.latency_ns``;
6. the response goes back the same way (path ``dst -> src``), with the property as payload;
7. the client writes the property to host memory over PCIe: ``pcie.latency_ns``;
8. the command is complete: its completion notification reaches the host, ``pcie.latency_ns``.

Packets carry Table 5 headers: upper + concatenation + one PR header, plus the payload for responses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw_models.errors import ConfigError
from hw_models.params import HardwareParams
from hw_models.topology import Topology


@dataclass(frozen=True)
class ZeroLoadPR:
    """Breakdown of one PR's round trip, in seconds."""

    host_command_s: float
    client_issue_s: float
    read_network_s: float
    server_s: float
    response_network_s: float
    client_write_s: float
    completion_s: float

    @property
    def total_s(self) -> float:
        """From the host's RIG command to its completion notification at the host."""
        return (self.host_command_s + self.client_issue_s + self.read_network_s + self.server_s
                + self.response_network_s + self.client_write_s + self.completion_s)


def single_packet_bytes(n_prs: int, payload_bytes: int, params: HardwareParams) -> int:
    """Wire bytes of one packet of ``n_prs`` PRs (Table 5 headers); it must fit in the MTU."""
    h = params.headers
    size = h.upper_bytes + h.concat_bytes + n_prs * (h.pr_bytes + payload_bytes)
    if size > h.mtu_bytes:
        raise ConfigError(f"a packet of {n_prs} PR(s) with {payload_bytes} B payload is {size} B > MTU {h.mtu_bytes} B")
    return size


def path_time_s(topo: Topology, src: int, dst: int, wire_bytes: int, params: HardwareParams,
                switch_on: bool) -> float:
    """Store-and-forward time of one packet from host ``src`` to host ``dst`` with no contention."""
    links = topo.path(src, dst)
    t = sum(wire_bytes / topo.link_bytes_per_s[li] + topo.link_latency_s[li] for li in links)
    switches = topo.switch_path(src, dst)
    t += len(switches) * params.switch.latency_ns * 1e-9
    if switch_on:
        extended = sum(bool(topo.switch_is_tor[s]) and params.switch.netsparse_in_tor
                       or not topo.switch_is_tor[s] and params.switch.netsparse_in_spine for s in switches)
        per_switch = (params.property_cache.latency_cycles + params.switch.concat_delay_cycles) \
            / (params.switch.clock_ghz * 1e9)
        if extended and math.isinf(per_switch):
            raise ConfigError("switch.concat_delay_cycles=inf: a lone PR never leaves the switch queue")
        t += extended * per_switch
    return float(t)


def host_command_s(params: HardwareParams, n_idxs: int = 1) -> float:
    """Host side of a RIG command of ``n_idxs`` idxs until the unit can read its first idx: MMIO
    write, DMA request, the idxs at the PCIe bandwidth, DMA data latency, then the next SNIC cycle
    boundary (NetSparse §5.1; bandwidth and idx size are our assumptions, hw_models.params)."""
    pcie = params.pcie.latency_ns * 1e-9
    dma = n_idxs * params.snic.idx_bytes / (params.pcie.bandwidth_gbytes_per_s * 1e9)
    ready = 3 * pcie + dma
    cycle = 1.0 / (params.snic.clock_ghz * 1e9)
    return math.ceil(ready / cycle - 1e-6) * cycle


def filter_load_cycles(params: HardwareParams) -> int:
    """SNIC cycles of a cold Idx Filter load: DRAM latency rounded up to whole cycles."""
    return math.ceil(params.snic_memory.dram_latency_ns * params.snic.clock_ghz - 1e-9)


def single_pr(topo: Topology, params: HardwareParams, src: int, dst: int, k: int,
              mechanisms: dict[str, bool] | None = None, issue_cycles: int = 1) -> ZeroLoadPR:
    """Zero-load round trip of one read PR of ``k`` elements from ``src`` to the owner ``dst``, from
    the host's RIG command to its completion notification."""
    if src == dst:
        raise ValueError("a PR to the node's own property is local: it never reaches the network")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    on = {"filter": True, "concat_nic": True, "switch": True, **(mechanisms or {})}
    snic_cycle = 1.0 / (params.snic.clock_ghz * 1e9)
    nic_wait = params.snic.concat_delay_cycles * snic_cycle if on["concat_nic"] else 0.0
    if math.isinf(nic_wait):
        raise ConfigError("snic.concat_delay_cycles=inf: a lone PR never leaves the NIC queue")
    payload = k * params.headers.element_bytes
    read = single_packet_bytes(1, 0, params)
    response = single_packet_bytes(1, payload, params)
    pcie = params.pcie.latency_ns * 1e-9
    load = filter_load_cycles(params) if on["filter"] else 0
    return ZeroLoadPR(
        host_command_s=host_command_s(params),
        client_issue_s=(issue_cycles + load) * snic_cycle + nic_wait,
        read_network_s=path_time_s(topo, src, dst, read, params, on["switch"]),
        server_s=issue_cycles * snic_cycle + 2 * pcie + nic_wait,
        response_network_s=path_time_s(topo, dst, src, response, params, on["switch"]),
        client_write_s=pcie,
        completion_s=pcie,
    )

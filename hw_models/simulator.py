"""NetSparse on the modeled cluster: wrapper of the C++ packet-level discrete-event simulator.

The event loop, links, switches and every NetSparse unit run in C++ (``csrc/sim/``: workload, nodes,
switches and network around one event queue, driving the ``csrc/units/`` units: RIG client/server units, NIC
concatenator, switch pipes with their property caches, header model). This module builds the C++
``SimConfig`` from :class:`HardwareParams` (:func:`sim_config`, the only place), flattens the topology
of :mod:`hw_models.topology` into arrays and turns the counters into a :class:`NetSparseRun`; the
mechanisms it switches are the Table 8 :data:`STAGES` (:mod:`hw_models.analysis` builds on this module).
Timing rules and counter definitions: ``docs/simulator.md`` and :mod:`hw_models.analytic`.

The matrix reaches C++ as it is: a :class:`~hw_models.pattern.Pattern`'s ``indptr``
(int64) and ``indices`` (int32 at the papers' scale) are read in place, never copied or widened; a
scipy matrix is converted once by :func:`~hw_models.pattern.as_pattern`.

Our assumptions (not NetSparse numbers) are in :mod:`hw_models.params`, each beside its field; the
one made here: half the RIG units are clients and half servers (as in ``units.RigNode``). Per-node byte
statistics of the tail node count the bytes the node *receives*, like SUOpt's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from hw_models import definitions
from hw_models.compute import KERNELS
from hw_models.errors import ConfigError
from hw_models.link_stats import LinkSeries, cxx_bin_ps, from_simulator, link_names
from hw_models.native import sim as _sim
from hw_models.params import HardwareParams, check_flag
from hw_models.pattern import Pattern, as_pattern
from hw_models.topology import Topology, build_topology
from hw_models.unit_args import cxx_batch, cxx_cache_bytes, cxx_delay, rig_split

STAGES = ("rig", "filter", "coalesce", "concat_nic", "switch")
"""NetSparse mechanisms in the cumulative order of the Table 8 ablation."""


@dataclass(frozen=True)
class CriticalPath:
    """Each node's critical path (docs/simulator.md, "Where a node's time goes"): the time each resource
    held it up, summing exactly to the node's time."""

    bounds: tuple[str, ...]
    """Resource names, in the order of the columns below."""
    node_s: np.ndarray
    """[nodes, bounds]: seconds per resource; each row sums to the node's time."""
    segments_ps: np.ndarray
    """[stretches, 3 + bounds] int64: node, t0, t1 (ps) and ps per resource of each stretch of a path."""
    stalled_on: np.ndarray | None = None
    """[nodes, bounds]: the path's unit's Pending PR Table stalls (SNIC cycles), each split in proportion
    to the journey of the response whose write ended it (a diagnostic, not part of the path)."""

    def pending_full_by(self, node: int) -> dict[str, float]:
        """The node's ``pending_full`` seconds split like :attr:`stalled_on` (what the stalls awaited)."""
        row = self.stalled_on[node] if self.stalled_on is not None else np.zeros(len(self.bounds))
        total, pf = float(row.sum()), float(self.node_s[node, self.bounds.index("pending_full")])
        return {b: pf * float(v) / total for b, v in zip(self.bounds, row, strict=True) if v} if total else {}

    def of(self, node: int) -> dict[str, float]:
        """``{resource: seconds}`` of one node."""
        return {b: float(s) for b, s in zip(self.bounds, self.node_s[node], strict=True)}


@dataclass(frozen=True)
class NetSparseRun:
    """What one NetSparse simulation returns (filled by :func:`simulate`)."""

    node_time_s: np.ndarray
    """Completion time of each node."""
    tail: dict[str, float]
    """Tail-node statistics: fc_rate, prs_per_packet, pcache_hit_rate, goodput, line_util,
    wire_bytes, read_prs (definitions in docs/simulator.md)."""
    active_nodes: tuple[list[float], list[int]] = field(default_factory=lambda: ([], []))
    """Step series (time in s, nodes still running)."""
    counters: dict[str, object] = field(default_factory=dict)
    critical_path: CriticalPath | None = None
    switch_pipes: dict[str, list[int]] = field(default_factory=dict)
    """Per middle pipe of an extended ToR, each counter of ``SIM_PIPE_COUNTERS`` (docs/simulator.md)."""
    hops: np.ndarray | None = None
    """With ``simulate(..., log_hops=True)``: the network's hop log, ``[rows, 8]`` (csrc/sim/types.h HopRow)."""
    link_stats: LinkSeries | None = None
    """With ``simulate(..., link_stats_bin_ps=...)``: each link's utilisation and queue in time bins."""
    loop_cpu_s: float | None = None
    """Measured: CPU seconds of the event loop (its thread's; ``counters["wall_clock_s"]`` is its wall clock)."""


def mechanisms_up_to(stage: str) -> dict[str, bool]:
    """The cumulative Table 8 setting: every mechanism up to and including ``stage`` on."""
    if stage not in STAGES:
        raise ConfigError(f"unknown NetSparse stage {stage!r}; choose one of {', '.join(STAGES)}")
    last = STAGES.index(stage)
    return {s: i <= last for i, s in enumerate(STAGES)}


def check_mechanisms(mechanisms: dict[str, bool] | None) -> dict[str, bool]:
    """All mechanisms on by default; unknown names, and values other than true and false (``bool("off")``
    would switch a mechanism on), raise ``ConfigError``."""
    out = dict.fromkeys(STAGES, True)
    for name, on in (mechanisms or {}).items():
        if name not in out:
            raise ConfigError(f"unknown NetSparse mechanism {name!r}; choose from {', '.join(STAGES)}")
        out[name] = bool(on) if isinstance(on, np.bool_) else on
        check_flag(f"mechanisms.{name}", out[name])
    return out


def simulate(a: Pattern | sp.spmatrix | sp.sparray, w: definitions.Workload, params: HardwareParams, k: int,
             kernel: str = "spmm", mechanisms: dict[str, bool] | None = None,
             topo: Topology | None = None, *, link_layer: dict | None = None,
             log_hops: bool = False, link_stats_bin_ps: int | str | None = None,
             progress: Callable[[int, int], None] | None = None) -> NetSparseRun:
    """Simulate one NetSparse gather of ``k``-element properties (``k`` is the *gathered* width).

    ``a`` is a :class:`Pattern` (read in place) or a scipy matrix; ``w`` its partition (only
    ``w.nodes``, ``w.n_cols``, ``w.row_bounds`` and ``w.col_bounds`` are used). ``mechanisms`` switches
    the Table 8 stages (all on by default). ``link_layer`` = ``{"mode": "packet"|"flit", "flit": {...}}``
    puts the NetCrafter flit layer on the inter-switch links, in the event loop (see
    :func:`hw_models.seeds.netcrafter.sim_flit_config`); its accounting lands in
    ``counters["link_layer"]``. Returns per-node completion times, tail statistics, the active-nodes
    step series and every counter (and, with ``log_hops``, the network's hop log: ``NetSparseRun.hops``).
    ``link_stats_bin_ps`` (a bin width in ps, or ``"auto"``) records each link's utilisation and queue in
    time bins (``NetSparseRun.link_stats``, :mod:`hw_models.link_stats`; packet links only).
    ``progress(read, total)`` is called about every million events with the idxs the client units have read
    so far and in all (a progress bar's); what it raises, and a Ctrl-C, stop the run there.
    """
    from hw_models.seeds import netcrafter

    mech = check_mechanisms(mechanisms)
    if not mech["rig"]:
        raise ConfigError("mechanism rig=False: NetSparse without RIG units is the SAOpt baseline; "
                          "the simulator models RIG offload only")
    if kernel not in KERNELS:
        raise ConfigError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    pat = as_pattern(a)
    if params.cluster.nodes != w.nodes:
        raise ConfigError(f"workload has {w.nodes} nodes but cluster.nodes={params.cluster.nodes}")
    if pat.shape != (int(w.row_bounds[-1]), int(w.n_cols)):
        raise ConfigError(f"workload is of a {w.row_bounds[-1]} x {w.n_cols} matrix, the matrix is {pat.shape}")
    topo = topo or build_topology(params)
    routes = topo.route_table()
    if routes.shape[-1] == 0:  # one node: no path has a link
        routes = np.full((1, topo.n_hosts, topo.n_hosts, 1), -1, dtype=np.int64)
    cfg = sim_config(params, k, mech, netcrafter.flit_link_config(link_layer))
    bin_ps = cxx_bin_ps(link_stats_bin_ps)
    if bin_ps and cfg.flit_layer:
        raise ConfigError("link statistics cover packet links; the flit layer reports its own link totals "
                          "(counters['link_layer'])")
    out = _sim.simulate(
        pat.indptr, pat.indices, np.asarray(w.row_bounds, np.int64),
        np.asarray(w.col_bounds, np.int64), cfg, topo.link_src, topo.link_dst,
        np.asarray(topo.link_bytes_per_s, np.float64), np.rint(topo.link_latency_s * 1e12).astype(np.int64),
        topo.switch_is_tor.astype(np.int64), routes.astype(np.int64), log_hops=log_hops, link_stats_bin_ps=bin_ps,
        progress=progress)
    run = _to_run(out, params)
    if "link_stats" in out:
        names = link_names(topo.link_src, topo.link_dst, topo.n_hosts, topo.switch_is_tor)
        run = dataclasses.replace(run, link_stats=from_simulator(out["link_stats"], names,
                                                                 int(np.max(out["node_done_ps"]))))
    if "flit_links" in out:
        run.counters["link_layer"] = netcrafter.link_layer_report(out["flit_links"], link_layer)
    return run


def sim_config(params: HardwareParams, k: int, mech: dict[str, bool], flit=None):
    """The C++ ``SimConfig`` of ``params`` for properties of ``k`` elements: the one place where
    :class:`HardwareParams` (every default and its source) becomes the simulator's parameters.
    ``flit``: a ``FlitLinkConfig`` puts the NetCrafter flit layer on the inter-switch links."""
    prop_bytes = k * params.headers.element_bytes
    clients, servers = rig_split(params)
    pc, snic, mem, sw, hd = params.property_cache, params.snic, params.snic_memory, params.switch, params.headers
    for name in ("rx_buffer_bytes", "tx_buffer_bytes"):
        if getattr(snic, name) < hd.mtu_bytes:
            raise ConfigError(f"snic.{name}={getattr(snic, name)} must hold one MTU packet ({hd.mtu_bytes} B)")
    c = _sim.SimConfig()
    c.filter, c.coalesce, c.concat_nic = mech["filter"], mech["coalesce"], mech["concat_nic"]
    c.switch_on = mech["switch"] and sw.netsparse_in_tor
    c.prop_bytes, c.client_units, c.server_units = prop_bytes, clients, servers
    c.pending_entries, c.lsq_entries = snic.pending_pr_table, snic.lsq_entries
    c.batch = cxx_batch(snic.rig_batch_size)
    c.host_filters_local = snic.rig_local_idxs == "host_filtered"
    c.auto_splits_remote = snic.rig_auto_split == "remote_idxs"
    c.overlap_commands = snic.rig_command_overlap == "overlap"
    c.dynamic_units = snic.rig_unit_roles == "dynamic"
    c.snic_ghz, c.switch_ghz = snic.clock_ghz, sw.clock_ghz
    c.nic_delay_cycles, c.switch_delay_cycles = cxx_delay(snic.concat_delay_cycles), cxx_delay(sw.concat_delay_cycles)
    c.cache_latency_cycles = int(pc.latency_cycles)
    c.cache_bytes = cxx_cache_bytes(pc.size_bytes, sw.pipes)
    c.cache_ways, c.cache_segment, c.cache_max_line = pc.ways, pc.segment_bytes, pc.max_line_bytes
    c.switch_pipes, c.switch_ports, c.pipe_prs_per_cycle = sw.pipes, sw.ports, sw.middle_pipe_prs_per_cycle
    c.pcie_ps, c.pcie_bytes_per_s = round(params.pcie.latency_ns * 1000), params.pcie.bandwidth_gbytes_per_s * 1e9
    c.idx_bytes, c.line_bytes = snic.idx_bytes, mem.line_bytes
    c.l1_bytes, c.l1_ways, c.l1_cycles = mem.l1_bytes, mem.l1_ways, mem.l1_cycles
    c.l2_bytes, c.l2_ways, c.l2_cycles = mem.l2_bytes, mem.l2_ways, mem.l2_cycles
    c.llc_bytes, c.llc_ways, c.llc_cycles = mem.llc_bytes, mem.llc_ways, mem.llc_cycles
    c.dram_ps, c.switch_ps = round(mem.dram_latency_ns * 1000), round(sw.latency_ns * 1000)
    c.mtu, c.upper_bytes, c.concat_bytes, c.pr_bytes = hd.mtu_bytes, hd.upper_bytes, hd.concat_bytes, hd.pr_bytes
    c.switch_buffer_bytes = sw.buffer_bytes
    c.rx_buffer_bytes, c.tx_buffer_bytes = snic.rx_buffer_bytes, snic.tx_buffer_bytes
    c.flit_layer = flit is not None
    if flit is not None:
        c.flit = flit
    return c


def _to_run(out: dict, params: HardwareParams) -> NetSparseRun:
    nodes = {name: np.asarray(v) for name, v in out["nodes"].items()}
    switches = {name: np.asarray(v) for name, v in out["switches"].items()}
    t = np.asarray(out["node_done_ps"], dtype=np.float64) * 1e-12
    tail = int(np.argmax(t))
    remote = int(nodes["idxs"][tail] - nodes["local"][tail])
    lookups, hits = int(switches["read_lookups"].sum()), int(switches["read_hits"].sum())
    time_s = float(t[tail])
    wire = float(nodes["wire_rx"][tail])
    stats = {
        "fc_rate": _div(nodes["filtered"][tail] + nodes["coalesced"][tail], remote),
        "prs_per_packet": _div(nodes["prs_tx"][tail], nodes["packets_tx"][tail]),
        "pcache_hit_rate": _div(hits, lookups),
        "goodput": _div(nodes["payload_rx"][tail], wire),
        "line_util": line_util(nodes, tail, time_s, params),
        "wire_bytes": wire,
        "read_prs": float(nodes["read_prs"][tail]),
    }
    counters: dict[str, object] = {
        "nodes": {name: v.tolist() for name, v in nodes.items()},
        "switches": {name: v.tolist() for name, v in switches.items()},
        "wire_bytes_total": float(nodes["wire_rx"].sum()),
        "read_prs_total": int(nodes["read_prs"].sum()),
        "events": int(out["events"]), "max_packet_wire_bytes": int(out["max_packet_wire"]),
        "infinite_delay_drains": int(out["drains"]), "max_queued_events": int(out["max_queue"]),
        "events_by_kind": {k: int(v) for k, v in out["events_by_kind"].items() if v},
        "wall_clock_s": float(out["wall_s"]),
    }
    series = ([float(x) * 1e-12 for x in out["active_t_ps"]], [int(c) for c in out["active_count"]])
    path = CriticalPath(bounds=bound_names(), node_s=np.asarray(out["bound_ps"], dtype=np.float64) * 1e-12,
                        segments_ps=np.asarray(out["path"], dtype=np.int64),
                        stalled_on=np.asarray(out["stalled_on"], dtype=np.float64))
    pipes = {name: np.asarray(v).tolist() for name, v in out["pipes"].items()}
    hops = np.asarray(out["hops"]) if "hops" in out else None
    return NetSparseRun(node_time_s=t, tail=stats, active_nodes=series, counters=counters, critical_path=path,
                        switch_pipes=pipes, hops=hops, loop_cpu_s=float(out["cpu_s"]))


def line_util(nodes: dict, node: int, time_s: float, params: HardwareParams) -> float | None:
    """NetSparse Table 7's line utilisation of ``node``, as ``link.line_util_direction`` reads it: the wire
    bytes it receives over ``line rate x time_s`` (``rx``), or the bytes it receives and sends over
    ``2 x line rate x time_s`` (``both``). ``nodes`` holds the per-node counters (``wire_rx``, ``wire_tx``)."""
    wire, lanes = float(nodes["wire_rx"][node]), 1
    if params.link.line_util_direction == "both":
        wire, lanes = wire + float(nodes["wire_tx"][node]), 2
    return _div(wire, lanes * params.link.bytes_per_s * time_s)


def bound_names() -> tuple[str, ...]:
    """The resources of the critical-path breakdown, in the C++ order (``NETSPARSE_BOUNDS``)."""
    return tuple(name for name, _ in _sim.SIM_BOUNDS)


def _div(num: float, den: float) -> float | None:
    return None if den == 0 else float(num) / float(den)


COUNTER_TABLE_BEGIN = "<!-- counter table: generated by python -m hw_models.simulator docs/simulator.md -->"
COUNTER_TABLE_END = "<!-- end of counter table -->"


def counter_table() -> str:
    """The Markdown table of every simulator counter, event kind and critical-path resource, from the
    C++ lists (``NETSPARSE_NODE_COUNTERS``, ``NETSPARSE_SWITCH_COUNTERS``, ``NETSPARSE_SIM_EVENTS``,
    ``NETSPARSE_PIPE_COUNTERS``, ``NETSPARSE_BOUNDS`` in ``csrc/sim/types.h``), where each is
    declared once with its meaning."""
    where = {"nodes": "`counters.nodes.{}` (per node)", "switches": "`counters.switches.{}` (per switch)",
             "events_by_kind": "`counters.events_by_kind.{}`",
             "switch_pipes": "`switch_pipes.{}` (per ToR middle pipe)",
             "bounds": "`critical_path` resource `{}`"}
    scopes = {**_sim.SIM_COUNTERS, "switch_pipes": _sim.SIM_PIPE_COUNTERS, "bounds": _sim.SIM_BOUNDS}
    rows = ["| counter | meaning |", "|---|---|"]
    for scope, items in scopes.items():
        rows += [f"| {where[scope].format(name)} | {meaning} |" for name, meaning in items]
    return "\n".join([COUNTER_TABLE_BEGIN, *rows, COUNTER_TABLE_END])


def _write_counter_table(path: str) -> None:
    """Replaces the generated counter table in ``path`` (between its two marker comments)."""
    from pathlib import Path

    doc = Path(path)
    text = doc.read_text()
    head, _, rest = text.partition(COUNTER_TABLE_BEGIN)
    _, _, tail = rest.partition(COUNTER_TABLE_END)
    doc.write_text(head + counter_table() + tail)


if __name__ == "__main__":
    import sys

    _write_counter_table(sys.argv[1])

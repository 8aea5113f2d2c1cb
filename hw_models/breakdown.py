"""Where a NetSparse node's time goes: the report blocks of the simulator's critical-path breakdown and
of its per-pipe switch counters (definitions in docs/simulator.md, "Where a node's time goes").

The C++ simulator charges every node's time to resources (``NETSPARSE_BOUNDS``); this module turns them
into the report's ``tail``/``per_node`` blocks, the Fig. 19-style series of active nodes split by the
resource bounding them, the ``switch_pipes`` block, and plain words for the printed summary.
"""

from __future__ import annotations

import numpy as np

from hw_models.simulator import CriticalPath

WORDS = {
    "scan_local": "the RIG client idx scan of local idxs",
    "scan_filtered": "the RIG client idx scan of filtered idxs",
    "scan_coalesced": "the RIG client idx scan of coalesced idxs",
    "scan_issued": "the RIG client idx scan of issued idxs",
    "filter_lsq": "Idx Filter loads waiting for the LSQ",
    "filter_l1": "Idx Filter loads from L1",
    "filter_l2": "Idx Filter loads from L2",
    "filter_llc": "Idx Filter loads from the SNIC LLC",
    "filter_dram": "Idx Filter loads from SNIC DRAM",
    "pending_full": "a full Pending PR Table",
    "tx_link": "the Tx link (host to ToR)",
    "nic_concat": "NIC concatenation delay",
    "switch_latency": "switch latency",
    "switch_middle": "the ToR middle pipes",
    "switch_concat": "ToR concatenation delay",
    "switch_links": "switch-to-switch links",
    "rx_link": "the Rx link (ToR to host)",
    "remote_server": "waiting on remote servers",
    "rx": "Rx (deconcatenation and DMA of responses)",
    "host": "host RIG command round trips",
}
"""Each resource in plain words (the summary's)."""

GROUPS = {"the RIG client idx scan": ("scan_local", "scan_filtered", "scan_coalesced", "scan_issued"),
          "Idx Filter loads": ("filter_lsq", "filter_l1", "filter_l2", "filter_llc", "filter_dram")}
"""Resources the summary names together (their parts are in the report)."""

BINS = 200
"""Time bins of the active-nodes-by-bound series."""


def tail_block(cp: CriticalPath, node: int) -> dict:
    """``breakdown_s`` (resource -> seconds, summing to the node's time), ``bound`` (the largest) and
    ``pending_full_by_s``: its ``pending_full`` seconds split by what the stalled unit's awaited responses
    were held up by (each stall in proportion to the journey of the response ending it: approximate)."""
    b = cp.of(node)
    return {"breakdown_s": b, "bound": max(b, key=b.__getitem__), "pending_full_by_s": cp.pending_full_by(node)}


def per_node(cp: CriticalPath, time_s: np.ndarray) -> dict:
    """Every node's time, bound and breakdown (``breakdown_s[resource][node]``)."""
    return {"time_s": [float(t) for t in time_s],
            "bound": [cp.bounds[i] for i in np.argmax(cp.node_s, axis=1)],
            "breakdown_s": {b: cp.node_s[:, i].tolist() for i, b in enumerate(cp.bounds)}}


def active_by_bound(cp: CriticalPath, bins: int = BINS) -> dict:
    """Fig. 19 split by resource: over ``bins`` equal time bins up to the last node's finish, the number
    of nodes active in each bin, each counted for the resources its critical path was charged to there.
    A path is kept as stretches (a command's scan, a response's journey, a host round trip; the C++
    halves their resolution past 64 per client unit); within a stretch each resource is spread evenly,
    so a bin's split is exact only at stretch resolution, while its total is the average active nodes."""
    seg = cp.segments_ps.astype(np.float64)
    end = float(seg[:, 2].max()) if len(seg) else 0.0
    edges = np.linspace(0.0, end, bins + 1)
    if end == 0.0:
        return {"t_s": [], "nodes": {}}
    lo, hi = seg[:, 1:2], seg[:, 2:3]
    overlap = np.clip(np.minimum(hi, edges[1:]) - np.maximum(lo, edges[:-1]), 0.0, None)  # [stretches, bins]
    share = seg[:, 3:] / np.maximum(hi - lo, 1.0)                                            # [stretches, bounds]
    per_bin = (share.T @ overlap) / np.diff(edges)                                           # [bounds, bins]
    mids = (edges[:-1] + edges[1:]) / 2 * 1e-12
    return {"t_s": mids.tolist(),
            "nodes": {b: per_bin[i].tolist() for i, b in enumerate(cp.bounds) if per_bin[i].any()}}


def switch_pipes(pipes: dict[str, list[int]], switch_ghz: float, prs_per_cycle: int = 1) -> dict:
    """The ``switch_pipes`` block: per ToR middle pipe the PRs arriving per switch cycle (mean from its
    first to its last arrival, and peak over 1024-cycle windows; the pipe takes ``prs_per_cycle``,
    ``switch.middle_pipe_prs_per_cycle``), its occupancy (busy fraction from first arrival to last PR
    done), queue (mean PRs waiting by Little's law, longest wait, deepest queue), cache hits and misses
    and the concatenation wait, and a summary of the busiest pipe and the totals."""
    rows = [dict(zip(pipes, v, strict=True)) for v in zip(*pipes.values(), strict=True)]
    out = [_pipe_row(r, switch_ghz, prs_per_cycle) for r in rows]
    used = [r for r in out if r["prs"]]
    busiest = max(used, key=lambda r: r["prs"]) if used else None
    hits, misses = sum(r["hits"] for r in out), sum(r["misses"] for r in out)
    return {"pipes": out, "summary": {
        "pipes": len(out), "pipes_used": len(used),
        "busiest": {k: busiest[k] for k in ("switch", "pipe", "prs")} if busiest else None,
        "max_prs_per_cycle_mean": max((r["prs_per_cycle_mean"] for r in used), default=None),
        "max_prs_per_cycle_peak": max((r["prs_per_cycle_peak"] for r in used), default=None),
        "max_occupancy": max((r["occupancy"] for r in used), default=None),
        "max_queue_cycles": max((r["max_queue_cycles"] for r in used), default=None),
        "cache_hits": hits, "cache_misses": misses,
        "cache_hit_rate": hits / (hits + misses) if hits + misses else None,
    }}


def _pipe_row(r: dict, switch_ghz: float, prs_per_cycle: int) -> dict:
    span = r["last_cycle"] - r["first_cycle"] + 1 if r["packets"] else 0
    arriving = r["last_in_cycle"] - r["first_cycle"] + 1 if r["packets"] else 0
    return {
        "switch": r["switch_id"], "pipe": r["pipe"], "packets": r["packets"], "prs": r["prs"],
        "prs_per_cycle_mean": r["prs"] / arriving if arriving else None,  # offered: capacity prs_per_cycle
        "prs_per_cycle_peak": r["peak_window_prs"] / 1024,
        "occupancy": r["prs"] / (prs_per_cycle * span) if span else None,  # the pipe's busy fraction
        "mean_queue_prs": r["pr_wait_cycles"] / span if span else None,  # Little's law
        "mean_queue_cycles": r["wait_cycles"] / r["packets"] if r["packets"] else None,
        "max_queue_cycles": r["max_wait_cycles"], "max_queue_prs": r["max_backlog"],
        "hits": r["hits"], "misses": r["misses"], "inserts": r["inserts"],
        "concat_wait_mean_ns": r["concat_wait_ps"] / r["concat_prs"] * 1e-3 if r["concat_prs"] else None,
        "active_s": span / (switch_ghz * 1e9),
    }


def in_words(breakdown_s: dict[str, float], node: int, top: int = 3) -> str:
    """"tail node 77 is bound by the RIG client idx scan (47 %), then ..." with the groups of
    :data:`GROUPS` summed."""
    total = sum(breakdown_s.values())
    if total <= 0:
        return f"node {node} had nothing to gather"
    named: dict[str, float] = {}
    grouped = {r: g for g, rs in GROUPS.items() for r in rs}
    for r, s in breakdown_s.items():
        key = grouped.get(r, WORDS[r])
        named[key] = named.get(key, 0.0) + s
    order = sorted(named, key=named.__getitem__, reverse=True)[:top]
    parts = [f"{name} ({100 * named[name] / total:.0f} %)" for name in order if named[name] > 0]
    return f"tail node {node} is bound by {parts[0]}" + "".join(f", then {p}" for p in parts[1:])


def shares_in_words(seconds: dict[str, float], top: int = 4) -> str:
    """The largest of ``seconds`` in words with their shares: "the ToR middle pipes 41 %, ..."."""
    total = sum(seconds.values())
    order = sorted(seconds, key=seconds.__getitem__, reverse=True)[:top]
    return ", ".join(f"{WORDS[b]} {100 * seconds[b] / total:.0f} %" for b in order) if total > 0 else "n/a"


def scan_in_words(breakdown_s: dict[str, float]) -> str:
    """The tail's idx scan by idx kind, as shares of its time."""
    total = sum(breakdown_s.values())
    kinds = GROUPS["the RIG client idx scan"]
    return ", ".join(f"{k.removeprefix('scan_')} {100 * breakdown_s[k] / total:.0f} %" for k in kinds) \
        if total > 0 else "n/a"

"""Load of the leaf-spine's ToR <-> spine links in one modeled gather (all values modeled), for
``topology.leafspine_spine_choice`` (docs/simulator.md, "Which spine a pair's packets cross").

    python benchmarks/spine_links.py --matrix paper:arabic --choice per_packet [--k 16]

The report has no per-link counter, so this runs ``hw_models.simulator.simulate`` with the simulator's hop
log on (``log_hops=True``; the times are the same as without it) and reduces the log at
once: wire bytes per link over the run, and per 10 us window by when each packet started on the link.
Prints one JSON line: NetSparse time and tail node, each spine link's utilisation over the run (max, mean,
min, coefficient of variation), idle links, and the busiest 10 us windows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models import analogs, definitions  # noqa: E402
from hw_models.params import HardwareParams  # noqa: E402
from hw_models.simulator import simulate  # noqa: E402
from hw_models.topology import build_topology  # noqa: E402

WINDOW_PS = 10_000_000  # 10 us
HOP = 1  # hop-log row kind of a link crossing (csrc/sim/types.h HopRow)


def link_load(log: np.ndarray, spine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wire bytes per spine link ``[links]`` and per spine link and 10 us window ``[links, windows]``."""
    hop = log[log[:, 0] == HOP]
    link, wire, start = hop[:, 2], hop[:, 3], hop[:, 5]
    on = spine[link]
    ids = np.searchsorted(np.flatnonzero(spine), link[on])
    win = start[on] // WINDOW_PS
    grid = np.zeros((int(spine.sum()), int(win.max(initial=0)) + 1))
    np.add.at(grid, (ids, win), wire[on])
    return grid.sum(axis=1), grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matrix", default="paper:arabic")
    ap.add_argument("--choice", default="pair", help="topology.leafspine_spine_choice")
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--analog-cache", default="outputs/analog_cache")
    args = ap.parse_args()
    a, _ = analogs.load(args.matrix, seed=0, cache_dir=args.analog_cache)
    hw = HardwareParams.from_dict({"topology": {"leafspine_spine_choice": args.choice}})
    topo = build_topology(hw)
    n = hw.cluster.nodes
    spine = (topo.link_src >= n) & (topo.link_dst >= n)
    r = simulate(a, definitions.workload(a, n), hw, args.k, "spmm", topo=topo, log_hops=True)
    link_bytes, windows = link_load(r.hops, spine)
    t = float(r.node_time_s.max())
    util = link_bytes / (hw.link.bytes_per_s * t)
    grid = windows / (hw.link.bytes_per_s * WINDOW_PS * 1e-12)
    print(json.dumps({
        "matrix": args.matrix, "choice": args.choice, "k": args.k, "comm_time_us": t * 1e6,
        "tail": int(np.argmax(r.node_time_s)), "spine_links": int(spine.sum()),
        "util_over_run": {"max": float(util.max()), "mean": float(util.mean()), "min": float(util.min()),
                          "cv": float(util.std() / util.mean())},
        "idle_links": int((link_bytes == 0).sum()),
        "util_10us_windows": {"max": float(grid.max()), "link_windows_over_90pct": int((grid > 0.9).sum()),
                              "links_ever_over_90pct": int((grid > 0.9).any(axis=1).sum())},
    }))


if __name__ == "__main__":
    main()

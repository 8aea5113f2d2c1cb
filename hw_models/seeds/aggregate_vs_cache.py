"""SmartFuse-style in-switch aggregation (push) against NetSparse's ToR property cache (pull): the
rows of ``B`` (or partial sums of ``C``) that cross the spine in one SpMM, per mechanism. All modeled.

    python -m hw_models.seeds.aggregate_vs_cache [--graphs ego-twitter ...] [--nodes 128] [--rack-size 16]

* ``pull``: sparsity-aware gather with perfect filtering, one row per distinct (node, remote column);
* ``pull + cache``: an infinite ToR property cache, one row per distinct (rack, column) fetched from
  another rack (a 32 MB cache can only do worse; the simulator gives its real hit rate);
* ``push``: each owner of a ``B`` row sends one partial-sum row per distinct (node, output row);
* ``push + ToR sums`` (``switch_aggregate``): one row per distinct (source rack, output row).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hw_models.definitions import workload
from hw_models.seeds.smartfuse import push_traffic

GRAPHS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "graphs"
DEFAULT_GRAPHS = ("ego-twitter", "soc-slashdot0902", "delaunay_n16", "luxembourg_osm", "cage11")


def pull_spine_rows(w, rack_size: int) -> tuple[int, int]:
    """(rows crossing the spine without a cache, with an infinite ToR property cache)."""
    node_rack, dest_rack = w.remote_node // rack_size, w.remote_dest // rack_size
    cross = node_rack != dest_rack
    per_node = np.unique(w.remote_node[cross] * w.n_cols + w.remote_col[cross]).size
    per_rack = np.unique(node_rack[cross] * w.n_cols + w.remote_col[cross]).size
    return int(per_node), int(per_rack)


def compare(a, nodes: int, rack_size: int) -> dict:
    """Spine rows of the four mechanisms for ``a`` on ``nodes`` nodes in racks of ``rack_size``."""
    w = workload(a, nodes)
    pull, cached = pull_spine_rows(w, rack_size)
    push = push_traffic(a, w, rack_size)
    return {"pull": pull, "pull_cache_inf": cached, "push": push.spine_rows,
            "push_switch_aggregate": push.spine_rows_aggregated}


def main(argv: list[str] | None = None) -> None:
    from netsparse_torch.graph import read_mtx

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", nargs="+", default=list(DEFAULT_GRAPHS))
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--rack-size", type=int, default=16)
    args = ap.parse_args(argv)
    print(f"Rows crossing the spine in one SpMM, {args.nodes} nodes, racks of {args.rack_size} (modeled)\n")
    print("| graph | pull (SA) | pull + ToR cache (inf) | push | push + ToR sums |")
    print("|---|---:|---:|---:|---:|")
    for name in args.graphs:
        r = compare(read_mtx(GRAPHS / f"{name}.mtx.gz"), args.nodes, args.rack_size)
        print(f"| {name} | {r['pull']:,} | {r['pull_cache_inf']:,} | {r['push']:,} | {r['push_switch_aggregate']:,} |")


if __name__ == "__main__":
    main()

"""SmartFuse-style in-switch aggregation (push) against NetSparse's ToR property cache (pull): the
rows of ``B`` (or partial sums of ``C``) that cross the spine in one SpMM, per mechanism. All modeled.

    python -m netsparse_torch.cli.aggregate_vs_cache [--graphs ego-twitter ...] [--nodes 128] [--rack-size 16]

* ``pull``: sparsity-aware gather with perfect filtering, one row per distinct (node, remote column);
* ``pull + cache``: an infinite ToR property cache, one row per distinct (rack, column) fetched from
  another rack (a 32 MB cache can only do worse; the simulator gives its real hit rate);
* ``push``: each owner of a ``B`` row sends one partial-sum row per distinct (node, output row);
* ``push + ToR sums`` (``switch_aggregate``): one row per distinct (source rack, output row).
"""

from __future__ import annotations

import numpy as np

from hw_models.bounds import owner_of
from hw_models.definitions import workload
from hw_models.pattern import as_pattern
from hw_models.seeds.smartfuse import push_traffic

DEFAULT_GRAPHS = ("ego-twitter", "soc-slashdot0902", "delaunay_n16", "luxembourg_osm", "cage11")


def pull_spine_rows(a, w, rack_size: int) -> tuple[int, int]:
    """(rows crossing the spine without a cache, with an infinite ToR property cache), rack by rack."""
    a = as_pattern(a)
    per_node = per_rack = 0
    for first in range(0, w.nodes, rack_size):
        nodes = range(first, min(first + rack_size, w.nodes))
        lo, hi = a.indptr[w.row_bounds[nodes[0]]], a.indptr[w.row_bounds[nodes[-1] + 1]]
        cols = a.indices[lo:hi]
        cross = owner_of(cols, w.col_bounds) // rack_size != first // rack_size
        per_rack += np.unique(cols[cross]).size
        for p in nodes:
            s, e = a.indptr[w.row_bounds[p]] - lo, a.indptr[w.row_bounds[p + 1]] - lo
            per_node += np.unique(cols[s:e][cross[s:e]]).size
    return int(per_node), int(per_rack)


def compare(a, nodes: int, rack_size: int) -> dict:
    """Spine rows of the four mechanisms for ``a`` on ``nodes`` nodes in racks of ``rack_size``."""
    w = workload(a, nodes)
    pull, cached = pull_spine_rows(a, w, rack_size)
    push = push_traffic(a, w, rack_size)
    return {"pull": pull, "pull_cache_inf": cached, "push": push.spine_rows,
            "push_switch_aggregate": push.spine_rows_aggregated}

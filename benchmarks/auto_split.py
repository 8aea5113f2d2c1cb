"""``snic.rig_auto_split``: how ``batch_size=auto`` cuts each node's stream (by idx count, ``idxs``, or by
remote idx count, ``remote_idxs``; docs/simulator.md) on graphs whose remote idxs sit in a few heavy
rows. Every number printed is *modeled* (128 nodes, K=16, all mechanisms, Table 5), not wall clock.

    .venv/bin/python benchmarks/auto_split.py                 # the web-like graph and the powerlaw synthetic

``web``: our web-like graph after issue 26's (400k rows, strong host locality, power-law global links,
hub rows up to 160k nonzeros), built by :func:`web_like` (seeded, numpy, no loop per nonzero).
``powerlaw``: ``netsparse_torch.graph.generate("powerlaw", 400_000, seed=0)`` (docs/experiments.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from hw_models import breakdown, definitions
from hw_models.params import HardwareParams
from hw_models.simulator import simulate

NODES, K = 128, 16


def web_like(n: int = 400_000, seed: int = 0) -> sp.csr_matrix:
    """Rows of Pareto degree (xm 18, exponent 2.1, 90 % of links inside the row's own host block of
    n / 128 rows), plus 48 hub rows of log-uniform degree 8k-160k drawn with 98 % of their links global;
    a global link goes to a column of power-law popularity (rank u^2 n, ranks placed by a random
    permutation). Duplicates within a row collapse (seed 0: 15.75M nonzeros, largest row 117,577, 77 %
    of the idxs local at 128 nodes)."""
    rng = np.random.default_rng(seed)
    deg = np.minimum(np.floor(18 * rng.random(n) ** (-1 / 2.1)), 160_000).astype(np.int64)
    hubs = rng.choice(n, 48, replace=False)
    deg[hubs] = np.exp(rng.uniform(np.log(8_000), np.log(160_000), 48)).astype(np.int64)
    p_local = np.full(n, 0.9)
    p_local[hubs] = 0.02
    rows = np.repeat(np.arange(n, dtype=np.int64), deg)
    block = n // NODES
    start = np.minimum(rows // block, NODES - 1) * block
    size = np.where(start + block >= block * NODES, n - start, block)
    local = rng.random(len(rows)) < p_local[rows]
    cols = np.empty(len(rows), dtype=np.int64)
    cols[local] = start[local] + (rng.random(int(local.sum())) * size[local]).astype(np.int64)
    ranks = (rng.random(int((~local).sum())) ** 2 * n).astype(np.int64)
    cols[~local] = rng.permutation(n)[ranks]
    a = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def graph(name: str) -> sp.csr_matrix:
    if name == "web":
        return web_like()
    from netsparse_torch import graph as g

    return sp.csr_matrix(g.generate("powerlaw", 400_000, seed=0))


def row(a, split: str) -> dict:
    w = definitions.workload(a, NODES)
    params = HardwareParams.from_dict({"snic": {"rig_auto_split": split}})
    r = simulate(a, w, params, K, "spmm")
    tail = int(np.argmax(r.node_time_s))
    block = breakdown.tail_block(r.critical_path, tail)
    nodes = r.counters["nodes"]
    return {"split": split, "time_us": float(r.node_time_s.max() * 1e6), "tail": tail, "bound": block["bound"],
            "bound_share": block["breakdown_s"][block["bound"]] / float(r.node_time_s[tail]),
            "line_util": r.tail["line_util"], "tail_commands": nodes["commands"][tail],
            "tail_batch": nodes["batch"][tail], "tail_idxs": nodes["idxs"][tail], "tail_local": nodes["local"][tail],
            "tail_read_prs": nodes["read_prs"][tail], "tail_stalls": nodes["stalls"][tail],
            "median_us": float(np.median(r.node_time_s) * 1e6)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default="web,powerlaw")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "auto_split.json"))
    args = ap.parse_args()
    out = {}
    for name in args.graphs.split(","):
        a = graph(name)
        d = np.diff(a.indptr)
        print(f"{name}: {a.shape[0]} rows, {a.nnz} nonzeros, largest row {d.max()}", flush=True)
        out[name] = [row(a, s) for s in ("idxs", "remote_idxs")]
        for x in out[name]:
            print("  " + json.dumps(x), flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

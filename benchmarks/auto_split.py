"""``snic.rig_auto_split``: how ``batch_size=auto`` cuts each node's stream (by idx count, ``idxs``, or by
remote idx count, ``remote_idxs``; docs/simulator.md) on graphs whose remote idxs sit in a few heavy
rows. Every number printed is *modeled* (128 nodes, K=16, all mechanisms, Table 5), not wall clock.

    .venv/bin/python benchmarks/auto_split.py                 # the web-like graph and the powerlaw synthetic
    .venv/bin/python benchmarks/auto_split.py --split-stats paper:arabic:77,85 --analog-cache outputs/analog_cache

``web``: our web-like graph, the sensitivity study's (400k rows, strong host locality, power-law global links,
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
from hw_models.native import sim as _sim
from hw_models.params import HardwareParams
from hw_models.simulator import simulate
from hw_models.unit_args import auto_batch_size

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


def remote_per_command(a, w, node: int, batch: int, split: str) -> list[int]:
    """Remote idxs in each of ``node``'s commands (cut as the simulator cuts them)."""
    lo, hi = int(w.col_bounds[node]), int(w.col_bounds[node + 1])
    idx = np.asarray(a.indices[a.indptr[w.row_bounds[node]]:a.indptr[w.row_bounds[node + 1]]], np.int64)
    ends = (_sim.remote_command_ends(idx, lo, hi, batch) if split == "remote_idxs"
            else [*range(batch, len(idx), batch), len(idx)])
    remote = np.r_[0, np.cumsum((idx < lo) | (idx >= hi))]
    return np.diff(remote[[0, *ends]]).tolist()


def row(a, split: str, watch: int | None) -> dict:
    """One run; ``watch``: a node whose time and per-command remote idxs are reported too."""
    w = definitions.workload(a, NODES)
    params = HardwareParams.from_dict({"snic": {"rig_auto_split": split}})
    r = simulate(a, w, params, K, "spmm")
    tail = int(np.argmax(r.node_time_s))
    watch = tail if watch is None else watch
    block = breakdown.tail_block(r.critical_path, tail)
    nodes = r.counters["nodes"]
    return {"split": split, "watch": watch, "watch_us": float(r.node_time_s[watch] * 1e6),
            "watch_remote_per_command": remote_per_command(a, w, watch, nodes["batch"][watch], split),
            "time_us": float(r.node_time_s.max() * 1e6), "tail": tail, "bound": block["bound"],
            "bound_share": block["breakdown_s"][block["bound"]] / float(r.node_time_s[tail]),
            "line_util": r.tail["line_util"], "tail_commands": nodes["commands"][tail],
            "tail_batch": nodes["batch"][tail], "tail_idxs": nodes["idxs"][tail], "tail_local": nodes["local"][tail],
            "tail_read_prs": nodes["read_prs"][tail], "tail_stalls": nodes["stalls"][tail],
            "median_us": float(np.median(r.node_time_s) * 1e6), "node_us": (r.node_time_s * 1e6).round(3).tolist()}


def split_stats(spec: str, nodes: list[int], cache: str | None) -> dict:
    """Without simulating: each listed node's idxs, remote idxs, and under each split its batch, command
    count and largest command (idxs carried), as the simulator's workload cuts them (128 nodes)."""
    from hw_models import analogs

    a, _ = analogs.load(spec, cache_dir=cache)
    rb, cb = definitions.bounds(a, NODES, "rows")
    total = np.diff(np.asarray(a.indptr)[rb])
    remote = np.array([int(np.count_nonzero((c < cb[q]) | (c >= cb[q + 1])))
                       for q in range(NODES) for c in [np.asarray(a.indices[a.indptr[rb[q]]:a.indptr[rb[q + 1]]])]])
    params = HardwareParams()
    out = {"idxs_median": int(np.median(total)), "idxs_max": int(total.max()),
           "remote_median": int(np.median(remote)), "remote_max": int(remote.max())}
    for q in nodes:
        idx = np.asarray(a.indices[a.indptr[rb[q]]:a.indptr[rb[q + 1]]], np.int64)
        b_idx = auto_batch_size(int(total[q]), int(total.max()), params)
        b_rem = auto_batch_size(int(remote[q]), int(remote.max()), params)
        ends = _sim.remote_command_ends(idx, int(cb[q]), int(cb[q + 1]), b_rem)
        n = int(total[q])
        out[q] = {"idxs": n, "remote": int(remote[q]),
                  "idxs_split": {"batch": b_idx, "commands": -(-n // b_idx), "largest": min(b_idx, n)},
                  "remote_split": {"batch": b_rem, "commands": len(ends), "largest": int(np.diff([0, *ends]).max())}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default="web,powerlaw")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "auto_split.json"))
    ap.add_argument("--split-stats", default="", help="paper:NAME:node,node,...; no simulation")
    ap.add_argument("--analog-cache", default=None)
    args = ap.parse_args()
    if args.split_stats:
        spec, nodes = args.split_stats.rsplit(":", 1)
        print(json.dumps(split_stats(spec, [int(x) for x in nodes.split(",")], args.analog_cache), indent=1))
        return
    out = {}
    for name in args.graphs.split(","):
        a = graph(name)
        d = np.diff(a.indptr)
        print(f"{name}: {a.shape[0]} rows, {a.nnz} nonzeros, largest row {d.max()}", flush=True)
        first = row(a, "idxs", None)
        out[name] = [first, row(a, "remote_idxs", first["tail"])]
        for x in out[name]:
            print("  " + json.dumps({k: v for k, v in x.items() if k != "node_us"}), flush=True)
        tails = sorted({x["tail"] for x in out[name]})
        print("  node times (us) of the tails, idxs / remote_idxs: " + ", ".join(
            f"{t}: {out[name][0]['node_us'][t]} / {out[name][1]['node_us'][t]}" for t in tails), flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""``batch_size=auto`` against every fixed power-of-two RIG batch size (NetSparse §9.3,
Fig. 15: the best batch is input-sensitive).

For each matrix: one NetSparse simulation (all mechanisms, NetSparse Table 5 cluster, 128 nodes,
K=16) per fixed batch size and one with ``auto``; prints the modeled kernel time of each, the best
fixed size and auto's ratio to it (target: auto within 10 % of the best). Everything printed is
*modeled* time, not wall clock. Writes ``benchmarks/results/batch_size_sweep.json``.

    .venv/bin/python benchmarks/batch_size_sweep.py                     # the six shared graphs
    .venv/bin/python benchmarks/batch_size_sweep.py --paper arabic@0.05,europe@0.05

``--paper`` uses the paper-scale analog generators (``hw_models.analogs``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hw_models import definitions
from hw_models.mtx import default_data_root, read_mtx
from hw_models.params import HardwareParams
from hw_models.pattern import as_pattern
from hw_models.simulator import simulate
from hw_models.unit_args import auto_batch_size
from netsparse_torch.malloc import keep_freed_memory

GRAPHS = ("ego-twitter", "soc-slashdot0902", "cage11", "delaunay_n16", "ct2010", "luxembourg_osm")
BATCHES = tuple(2**i for i in range(8, 17))  # 256 .. 65536


def paper_matrix(spec: str):
    """A paper analog ``NAME@scale`` (a share of the rows of a NetSparse Table 6 analog)."""
    from hw_models import analogs

    return analogs.generate(spec)


def sweep(name: str, a, params: HardwareParams, k: int) -> dict:
    pat = as_pattern(a)
    w = definitions.workload(a, params.cluster.nodes)  # a Pattern once the streaming definitions merge
    node_nnz = np.diff(pat.indptr[w.row_bounds])
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    for b in [*BATCHES, "auto"]:
        p = params.replace(snic={"rig_batch_size": b})
        times[str(b)] = float(simulate(pat, w, p, k).node_time_s.max())
    best = min(BATCHES, key=lambda b: times[str(b)])
    autos = [auto_batch_size(int(n), int(node_nnz.max()), params) for n in node_nnz]
    autos = [min(autos), int(np.median(autos)), max(autos)]  # min, median, max over nodes
    row = {"matrix": name, "nnz": int(pat.nnz), "nnz_per_node_median": float(np.median(node_nnz)),
           "auto_batches": autos, "times_s": times, "best_fixed": best, "best_fixed_s": times[str(best)],
           "auto_s": times["auto"], "auto_over_best": times["auto"] / times[str(best)],
           "sweep_wall_s": time.perf_counter() - t0}
    print(f"{name:18s} nnz/node {row['nnz_per_node_median']:>10,.0f}  auto min/med/max {autos}  best {best:>6}  "
          f"auto/best {row['auto_over_best']:.3f}  " + " ".join(f"{b}:{t * 1e6:.1f}" for b, t in times.items()),
          flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", default=",".join(GRAPHS), help="shared graphs (names in data/graphs), '' for none")
    ap.add_argument("--paper", default="", help="paper analogs NAME@scale, comma separated")
    ap.add_argument("--k", type=int, default=16)
    args = ap.parse_args()
    keep_freed_memory()  # as netsparse-simulate does
    params = HardwareParams()
    rows = []
    for g in filter(None, args.graphs.split(",")):
        rows.append(sweep(g, read_mtx(default_data_root() / "graphs" / f"{g}.mtx.gz"), params, args.k))
    for spec in filter(None, args.paper.split(",")):
        rows.append(sweep(f"paper:{spec}", paper_matrix(spec), params, args.k))
    worst = max(r["auto_over_best"] for r in rows)
    print(f"auto is within {100 * (worst - 1):.1f} % of the best fixed power of two on every matrix (target 10 %)")
    out = Path(__file__).parent / "results" / "batch_size_sweep.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"k": args.k, "nodes": params.cluster.nodes, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

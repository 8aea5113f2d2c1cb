"""Benchmark of the C++ discrete-event simulator (issue 4 point 10).

Default: a 128-node NetSparse simulation (all mechanisms, NetSparse Table 5 cluster) of
ego-twitter at K=16; target <= 10 s. ``--large`` adds a 50M-nnz synthetic matrix (target <= 5 min
within 24 GiB). Prints wall time, events/s and PRs/s; writes benchmarks/results/simulator.json.

    .venv/bin/python benchmarks/simulator.py [--large] [--nnz 50000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from hw_models import definitions
from hw_models.params import HardwareParams
from hw_models.simulator import simulate

GRAPH = Path("/work/shared/data/graphs/ego-twitter.mtx.gz")


def bench(name: str, a: sp.csr_matrix, k: int = 16) -> dict:
    """One full-mechanism NetSparse simulation on the default 128-node cluster."""
    params = HardwareParams()
    t0 = time.perf_counter()
    w = definitions.workload(a, params.cluster.nodes)
    t1 = time.perf_counter()
    r = simulate(a, w, params, k, "spmm", None)
    t2 = time.perf_counter()
    events = r.counters["events"]
    prs = r.counters["read_prs_total"]
    remote = int(w.sa_prs_per_node.sum())
    out = {
        "case": name, "rows": a.shape[0], "nnz": int(a.nnz), "k": k, "nodes": params.cluster.nodes,
        "workload_s": t1 - t0, "simulate_wall_s": t2 - t1, "core_wall_s": r.counters["wall_clock_s"],
        "events": events, "events_per_s": events / r.counters["wall_clock_s"],
        "read_prs": prs, "remote_idxs": remote, "prs_per_s": prs / r.counters["wall_clock_s"],
        "remote_idxs_per_s": remote / r.counters["wall_clock_s"],
        "modeled_comm_time_s": float(r.node_time_s.max()),
        "max_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    print(json.dumps(out, indent=1))
    return out


def synthetic(nnz: int, seed: int = 0) -> sp.csr_matrix:
    """Power-law-free uniform random square matrix with ``nnz`` nonzeros and nnz/10 rows (ours)."""
    n = max(1000, nnz // 10)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.integers(0, n, nnz))
    cols = rng.integers(0, n, nnz)
    a = sp.csr_matrix((np.ones(nnz, np.float32), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--large", action="store_true", help="also run the 50M-nnz synthetic case")
    ap.add_argument("--nnz", type=int, default=50_000_000)
    args = ap.parse_args()
    results = [bench("ego-twitter", sp.csr_matrix(scipy.io.mmread(GRAPH)))]
    if args.large:
        results.append(bench(f"synthetic-{args.nnz}", synthetic(args.nnz)))
    out = Path(__file__).parent / "results" / "simulator.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

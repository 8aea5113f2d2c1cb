"""Benchmark of the C++ discrete-event simulator (numbers: docs/benchmarks.md, Simulator).

Default: a 128-node NetSparse simulation (all mechanisms, NetSparse Table 5 cluster) of ego-twitter
at K=16. ``--large`` adds a synthetic matrix of ``--nnz`` nonzeros (power-law by default: the
``netsparse_torch.graph`` Chung-Lu generator; ``--shape uniform``: uniform random columns, the worst
case for filtering, coalescing and the cache). ``--paper`` runs the full-size analogs of NetSparse
Table 6 (``matrix=paper:NAME``), target <= 10 min wall with generation and
<= 16 GiB peak RSS each.

Every case runs in its own process, so its peak RSS (``resource.getrusage``) is its own. Prints, per
case, the wall and CPU time of each phase (generation, workload definitions, simulation; on a shared
machine the CPU time is the load-independent number), peak RSS, events/s and PRs/s of the C++ event
loop and the load average. Writes ``benchmarks/results/simulator.json``.

    nice -n 5 .venv/bin/python benchmarks/simulator.py [--large] [--nnz 50e6] [--shape powerlaw|uniform]
    nice -n 5 .venv/bin/python benchmarks/simulator.py --paper arabic,europe,queen,stokes,uk --no-ego
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

POWERLAW_NNZ_PER_ROW = 13.0
"""Nonzeros per row the power-law generator gives at its default average degree 16 once
duplicate edges and self loops are merged (measured: 13.5 at 3.8M rows); ours, to size ``n``."""


def peak_rss_gib() -> float:
    """Peak resident set of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def make_matrix(case: str):
    """The matrix of ``case``: ``ego-twitter``, ``synthetic:SHAPE:NNZ`` or ``paper:NAME[@scale]``."""
    if case == "ego-twitter":
        from hw_models.mtx import default_data_root, read_mtx

        return read_mtx(default_data_root() / "graphs" / "ego-twitter.mtx.gz")
    if case.startswith("synthetic:"):
        _, shape, nnz = case.split(":")
        return synthetic(int(float(nnz)), shape)
    if case.startswith("paper:"):
        from hw_models import analogs

        return analogs.generate(case)
    raise SystemExit(f"unknown case {case!r}")


def synthetic(nnz: int, shape: str = "powerlaw", seed: int = 0):
    """A square matrix of about ``nnz`` nonzeros. ``powerlaw``: the Chung-Lu generator of
    ``netsparse_torch.graph`` (hubs spread over the row blocks), ``nnz / POWERLAW_NNZ_PER_ROW`` rows.
    ``uniform``: nnz/10 rows, uniform random columns (ours)."""
    import numpy as np
    import scipy.sparse as sp

    from hw_models.synthetic import generate

    if shape == "powerlaw":
        return generate("powerlaw", max(1000, int(nnz / POWERLAW_NNZ_PER_ROW)), seed=seed)
    if shape != "uniform":
        raise SystemExit(f"unknown shape {shape!r}; choose powerlaw or uniform")
    n = max(1000, nnz // 10)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.integers(0, n, nnz))
    cols = rng.integers(0, n, nnz)
    a = sp.csr_matrix((np.ones(nnz, np.float32), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def bench(case: str, k: int = 16) -> dict:
    """One full-mechanism NetSparse simulation of ``case`` on the default 128-node cluster."""
    from hw_models import definitions
    from hw_models.params import HardwareParams
    from hw_models.pattern import as_pattern
    from hw_models.simulator import simulate

    params = HardwareParams()
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    a = make_matrix(case)
    t1, c1 = time.perf_counter(), time.process_time()
    w = definitions.workload(a, params.cluster.nodes)
    pat = as_pattern(a)
    t2, c2 = time.perf_counter(), time.process_time()
    r = simulate(pat, w, params, k, "spmm", None)
    t3, c3 = time.perf_counter(), time.process_time()
    core = r.counters["wall_clock_s"]
    events, prs = r.counters["events"], r.counters["read_prs_total"]
    return {
        "case": case, "rows": pat.n_rows, "nnz": pat.nnz, "k": k, "nodes": params.cluster.nodes,
        "generate_s": t1 - t0, "workload_s": t2 - t1, "simulate_wall_s": t3 - t2, "core_wall_s": core,
        "total_s": t3 - t0, "generate_cpu_s": c1 - c0, "workload_cpu_s": c2 - c1, "simulate_cpu_s": c3 - c2,
        "total_cpu_s": c3 - c0, "events": events, "events_per_s": events / core,
        "events_per_cpu_s": events / (c3 - c2), "read_prs": prs, "prs_per_s": prs / core,
        "prs_per_cpu_s": prs / (c3 - c2), "events_by_kind": r.counters["events_by_kind"],
        "max_queued_events": r.counters["max_queued_events"],
        "modeled_comm_time_s": float(r.node_time_s.max()), "max_rss_gib": peak_rss_gib(),
        "loadavg_1min": [load0, os.getloadavg()[0]], "cpus": os.cpu_count(),
    }


def run_case(case: str) -> dict:
    """``bench(case)`` in a child process (its own peak RSS)."""
    out = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{case}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--large", action="store_true", help="also run the synthetic case of --nnz nonzeros")
    ap.add_argument("--nnz", type=float, default=50e6, help="nonzeros of the synthetic case (50e6 is fine)")
    ap.add_argument("--shape", choices=("powerlaw", "uniform"), default="powerlaw")
    ap.add_argument("--paper", default="", help="paper analogs at full size, e.g. arabic,europe (or arabic@0.05)")
    ap.add_argument("--no-ego", action="store_true", help="skip the ego-twitter case")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one case, JSON on stdout
    args = ap.parse_args()
    if args.one:
        from netsparse_torch.malloc import keep_freed_memory

        keep_freed_memory()  # as netsparse-simulate does (page faults of re-allocated memory otherwise)
        print(json.dumps(bench(args.one)))
        return
    cases = [] if args.no_ego else ["ego-twitter"]
    if args.large:
        cases.append(f"synthetic:{args.shape}:{args.nnz:g}")
    cases += [f"paper:{name}" for name in filter(None, args.paper.split(","))]
    results = []
    for case in cases:
        results.append(run_case(case))
        print(json.dumps(results[-1], indent=1), flush=True)
    out = Path(__file__).parent / "results" / "simulator.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

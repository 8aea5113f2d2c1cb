"""Peak memory and wall time of the analysis pipeline of ``netsparse-simulate`` (everything except the
C++ event loop) on a paper-scale analog.

    python benchmarks/analysis_memory.py --matrix paper:arabic [--k 16] [--nodes 128]

Generates the analog (a Pattern: 8 B per row + 4 B per nonzero), then runs ``hw_models.analysis.analyze``
with every modeled strategy (SUOpt, SAOpt, Two-Face, snic_sw, switch_aggregate) and no simulator, and
``compute.node_work``. Prints each stage's wall time, the peak RSS of the process (``getrusage``), the
pattern's own bytes and the peak over them, and writes JSON to ``benchmarks/results/``. The peak is
measured, not asserted; ``/usr/bin/time -v`` around the command gives the same number.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hw_models import (  # noqa: E402
    analogs,  # noqa: E402
    analysis,
    compute,
)
from hw_models.params import HardwareParams  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrix", default="paper:arabic")
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--nodes", type=int, default=128)
    args = ap.parse_args(argv)
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    p, name = analogs.load(args.matrix)
    stages["generate_s"] = time.perf_counter() - t0
    pattern_bytes = p.indptr.nbytes + p.indices.nbytes
    rss_after_generate = peak_rss_bytes()
    params = HardwareParams().replace(cluster={"nodes": args.nodes})
    t0 = time.perf_counter()
    report = analysis.analyze(p, params, k=args.k, simulator=None, ablation=False)
    stages["analyze_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    compute.node_work(p, args.nodes)
    stages["node_work_s"] = time.perf_counter() - t0
    peak = peak_rss_bytes()
    out = {"matrix": name, "rows": p.n_rows, "nnz": p.nnz, "k": args.k, "nodes": args.nodes, **stages,
           "pattern_bytes": pattern_bytes, "peak_rss_after_generate_bytes": rss_after_generate,
           "peak_rss_bytes": peak, "peak_over_pattern": peak / pattern_bytes,
           "strategies": {s: ("comm_time_s" in b) or b.get("status") for s, b in report["strategies"].items()}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"analysis_memory_{name}.json"
    path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    print(f"peak RSS {peak / 2**30:.2f} GiB = {out['peak_over_pattern']:.2f} x the pattern "
          f"({pattern_bytes / 2**30:.2f} GiB); written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Training at the paper's scale on this machine: epoch time and peak RSS per rank, and where a large epoch's
time goes (docs/benchmarks.md, "Training at the paper's scale").

    python benchmarks/paper_scale.py runs [--analogs europe@0.1,arabic@0.02] [--world-sizes 1,2,4]
                                          [--strategies sa,netsparse] [--epochs 2]
    python benchmarks/paper_scale.py breakdown [--analog europe@0.1] [--world-size 4] [--strategy netsparse]
    python benchmarks/paper_scale.py self_loops [--analogs europe@0.01,arabic@0.01,...]

``runs`` trains each case with ``netsparse-train dataset=paper`` (GCN, hidden 16, K=16 features, partition=rows,
no modeled block) in a fresh process, and prints the median epoch time, the largest and smallest rank's peak
RSS (getrusage) and the run's wall time, with the load average before and after (the host is shared: times
are upper bounds; peaks do not depend on the load). ``floor`` is a rank's peak on a 2,546-row analog: torch,
PyG and the package, before any graph data. ``breakdown`` starts the ranks itself and times, per rank (the
largest over ranks is shown), the generation of its shard, the plan, the normalised adjacency, and then per
gather of one epoch: the strategy's exchange alone (the RIG path for ``netsparse``, one all_to_all for
``sa``), the local SpMM alone, and whole epochs. ``self_loops`` models one GCN epoch (gathers K = 16, 4,
4, 16; 128 nodes, Table 5) on the raw analog, what the modeled block and ``netsparse-simulate`` model, and on
``A + I``, the pattern GCN aggregates over, and prints how much the self loops move each number (all modeled).
JSON: benchmarks/results/paper_scale-<kind>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, write_result  # noqa: E402

FLOOR = "europe@5e-05"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def train(analog: str, world_size: int, strategy: str, epochs: int) -> dict:
    matrix, scale = analog.split("@")
    with tempfile.TemporaryDirectory(prefix="paper-scale-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "netsparse_torch.cli.train", "dataset=paper", f"dataset.matrix={matrix}",
               f"dataset.scale={scale}", f"world_size={world_size}", f"strategy={strategy}", f"epochs={epochs}",
               "hidden=16", f"report_path={report}", f"hydra.run.dir={tmp}/run"]
        before, t0 = load(), time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        r = json.loads(report.read_text())
    peaks = [p["peak_rss_bytes"] / 2**30 for p in r["per_rank"]]
    return {"analog": analog, "world_size": world_size, "strategy": strategy, "rows": r["dataset"]["nodes"],
            "nnz": r["dataset"]["nnz"], "epoch_s": r["epoch_time_s"]["median"], "peak_gib_max": max(peaks),
            "peak_gib_min": min(peaks), "wall_s": wall, "load_before": before, "load_after": load(),
            "feature_bytes_per_epoch": r["comm"]["feature_bytes_per_epoch"], "command": " ".join(cmd[1:-2])}


def runs(args) -> None:
    rows = [train(FLOOR, 1, "sa", 1) | {"floor": True}]
    print(f"floor (a rank on {FLOOR}): {rows[0]['peak_gib_max']:.3f} GiB", flush=True)
    for analog in args.analogs.split(","):
        for ws in (int(w) for w in args.world_sizes.split(",")):
            for strategy in args.strategies.split(","):
                row = train(analog, ws, strategy, args.epochs)
                rows.append(row)
                print(f"{analog:14s} ws={ws} {strategy:9s} epoch {row['epoch_s']:7.2f} s  peak/rank "
                      f"{row['peak_gib_min']:.3f}-{row['peak_gib_max']:.3f} GiB  wall {row['wall_s']:6.1f} s  "
                      f"load {row['load_before']} -> {row['load_after']}", flush=True)
    print(f"JSON: {write_result('paper_scale-runs', {'rows': rows})}")


def timed_rank(rank, world_size, data, strategy, epochs):
    """One rank's phases, in seconds (see the module docstring)."""
    import torch
    import torch.distributed as dist

    from netsparse_torch.kernels import spmm
    from netsparse_torch.nn import DistGNN, DistGraph
    from netsparse_torch.partition import partition_dataset

    t = {}

    def clock(name, fn):
        dist.barrier()
        t0 = time.perf_counter()
        out = fn()
        t[name] = t.get(name, 0.0) + time.perf_counter() - t0
        return out

    _, p = partition_dataset(data, world_size)
    shard = clock("generate shard", lambda: data.shard(rank, p))
    dg = clock("plan", lambda: DistGraph(shard, rank, world_size, p, strategy))
    adj = clock("normalised adjacency", lambda: dg.adjacency("gcn"))
    model = DistGNN("gcn", data.num_features, 16, data.num_classes, 2, 0.5, seed=0)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    own = adj.split_columns(dg.plan.n_local)[0] if world_size > 1 else adj
    for k in (16, data.num_classes):  # one epoch's gathers: K=16 and K=classes, each forward and backward
        x = torch.randn(dg.plan.n_local, k)
        for _ in range(2):
            clock("exchange alone (x2 per K)", lambda x=x: _exchange(dg, x))
            clock("local SpMM alone (x2 per K)", lambda x=x: spmm(own, x))
    for e in range(epochs):
        def step(e=e):
            opt.zero_grad()
            out = model(dg.x, dg, epoch=e)
            dg.loss(out).backward()
            dg.sync_gradients(model)
            opt.step()
        clock("epoch", step)
    t["epoch"] /= epochs
    peak = torch.tensor([v for v in t.values()], dtype=torch.float64)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    return dict(zip(t, peak.tolist(), strict=True))


def _exchange(dg, x):
    if dg.world_size == 1:
        return None
    halo = x.new_empty(dg.plan.n_halo, x.size(1))
    dg.strategy.transport.start(x, halo, "bench").wait()
    return halo


def breakdown(args) -> None:
    from netsparse_torch.partition import AnalogDataset
    from netsparse_torch.run.launch import launch

    matrix, scale = args.analog.split("@")
    data = AnalogDataset(matrix, float(scale))
    before = load()
    times = launch(timed_rank, args.world_size, (data, args.strategy, args.epochs), timeout_s=3600)
    for name, s in times.items():
        print(f"  {name:28s} {s:8.3f} s")
    print(f"load {before} -> {load()}")
    print(f"JSON: {write_result('paper_scale-breakdown', {'case': vars(args), 'seconds': times})}")


def self_loops(args) -> None:
    import numpy as np
    import scipy.sparse as sp

    from hw_models import analogs
    from hw_models.analysis import default_simulator, modeled_training
    from hw_models.params import HardwareParams
    from hw_models.pattern import as_pattern

    gathers, out = [16, 4, 4, 16], []
    for analog in args.analogs.split(","):
        a, _ = analogs.load(f"paper:{analog}")
        n = a.n_rows
        with_loops = as_pattern(a.to_scipy() + sp.identity(n, dtype=np.float32, format="csr"))
        blocks = {name: modeled_training(p, HardwareParams(), gathers, simulator=default_simulator())
                  for name, p in (("A", a), ("A+I", with_loops))}
        row = {"analog": analog, "nnz": a.nnz, "nnz_with_loops": with_loops.nnz}
        for key in ("su_opt", "sa_opt", "netsparse"):
            row[f"{key}_comm_change"] = blocks["A+I"]["comm_time_s"][key] / blocks["A"]["comm_time_s"][key] - 1
        row["compute_change"] = blocks["A+I"]["compute"]["time_s"] / blocks["A"]["compute"]["time_s"] - 1
        for key in ("netsparse_vs_su_opt", "netsparse_vs_sa_opt"):
            for scope, path in (("comm", ("comm_speedup",)), ("end_to_end", ("end_to_end_speedup", "none"))):
                values = []
                for name in ("A", "A+I"):
                    node = blocks[name]
                    for part in path:
                        node = node[part]
                    values.append(node[key])
                row[f"{scope}_{key}"] = values
        out.append(row)
        print(f"{analog:14s} nnz {a.nnz:,} -> {with_loops.nnz:,}: comm SUOpt {row['su_opt_comm_change']:+.2%}, "
              f"SAOpt {row['sa_opt_comm_change']:+.2%}, NetSparse {row['netsparse_comm_change']:+.2%}; compute "
              f"{row['compute_change']:+.1%}; gathers vs SUOpt {row['comm_netsparse_vs_su_opt'][0]:.4g}x -> "
              f"{row['comm_netsparse_vs_su_opt'][1]:.4g}x, vs SAOpt {row['comm_netsparse_vs_sa_opt'][0]:.4g}x -> "
              f"{row['comm_netsparse_vs_sa_opt'][1]:.4g}x; end to end vs SUOpt "
              f"{row['end_to_end_netsparse_vs_su_opt'][0]:.4g}x -> {row['end_to_end_netsparse_vs_su_opt'][1]:.4g}x, "
              f"vs SAOpt {row['end_to_end_netsparse_vs_sa_opt'][0]:.4g}x -> "
              f"{row['end_to_end_netsparse_vs_sa_opt'][1]:.4g}x", flush=True)
    print(f"JSON: {write_result('paper_scale-self_loops', {'gathers': gathers, 'rows': out})}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    r = sub.add_parser("runs")
    r.add_argument("--analogs", default="europe@0.1,arabic@0.02")
    r.add_argument("--world-sizes", default="1,2,4")
    r.add_argument("--strategies", default="sa,netsparse")
    r.add_argument("--epochs", type=int, default=2)
    b = sub.add_parser("breakdown")
    b.add_argument("--analog", default="europe@0.1")
    b.add_argument("--world-size", type=int, default=4)
    b.add_argument("--strategy", default="netsparse")
    b.add_argument("--epochs", type=int, default=2)
    s = sub.add_parser("self_loops")
    s.add_argument("--analogs", default="europe@0.01,arabic@0.01,queen@0.01,stokes@0.01,uk@0.01")
    args = ap.parse_args()
    os.environ.setdefault("NETSPARSE_DEVICE", "cpu")
    {"runs": runs, "breakdown": breakdown, "self_loops": self_loops}[args.kind](args)


if __name__ == "__main__":
    main()

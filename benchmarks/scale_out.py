"""Memory at scale: peak RSS per rank and epoch time when every rank reads only its own shard.

    python benchmarks/scale_out.py [--nodes 4000000] [--avg-degree 8] [--parts 1,2,4] [--partitions rows,metis]
                                   [--epochs 3] [--workdir /tmp/netsparse-scale-out]

Generates a seeded synthetic power-law graph (``hw_models.synthetic``, features and labels
as ``dataset=synthetic`` makes them), writes it as partitioned datasets with the code behind
``netsparse-partition`` (every partitioner x every part count), and trains each with ``netsparse-train
dataset=partitioned`` (GCN, ``strategy=sa``, ``--epochs`` epochs, world_size = parts). Per run it prints
the peak RSS of every rank (getrusage, measured) and the median epoch time, and the ratio of the largest
rank's peak to the single-rank peak (target at 4 parts: <= 0.4). A rank forked from the launcher's
forkserver shares torch's and the package's pages with it; ``baseline`` is a rank's peak on a
1,000-node graph, what a rank holds before any graph data. JSON: benchmarks/results/scale_out-<nodes>.json.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_result  # noqa: E402

from netsparse_torch.graph import generate, with_generated_features  # noqa: E402
from netsparse_torch.partition import partition_graph, write_partitioned  # noqa: E402

TARGET = 0.4  # our target: peak RSS per rank at 4 parts <= 0.4x the single-rank peak


def make_graph(nodes: int, avg_degree: float, features: int, seed: int):
    t0 = time.perf_counter()
    adj = generate("powerlaw", nodes, seed=seed, avg_degree=avg_degree)
    graph = with_generated_features(f"powerlaw-{nodes}", adj, features, 4, seed)
    print(f"graph: {nodes:,} nodes, {adj.nnz:,} nnz, {features} features ({time.perf_counter() - t0:.1f} s)",
          flush=True)
    return graph


def write_datasets(graph, partitions: list[str], parts: list[int], workdir: Path) -> dict:
    """Every (partitioner, parts) dataset; returns their directories and partition/write times."""
    out = {}
    for mode in partitions:
        for p in parts:
            d = workdir / f"{mode}-{p}"
            t0 = time.perf_counter()
            partitioning = partition_graph(graph.adj, p, mode)
            t1 = time.perf_counter()
            manifest = write_partitioned(graph, partitioning, d, {"benchmark": "scale_out"})
            t2 = time.perf_counter()
            out[(mode, p)] = {"path": d, "partition_s": t1 - t0, "write_s": t2 - t1,
                              "edge_cut": manifest["edge_cut"], "halo": [q["halo"] for q in manifest["per_part"]]}
            print(f"  {mode:5s} {p} parts: partition {t1 - t0:6.1f} s, write {t2 - t1:6.1f} s, "
                  f"edge cut {manifest['edge_cut']:,}", flush=True)
    return out


def train(path: Path, world_size: int, epochs: int, hidden: int) -> dict:
    from hydra import compose, initialize_config_dir

    from netsparse_torch.config_check import config_dir
    from netsparse_torch.run.job import run

    overrides = ["dataset=partitioned", f"dataset.path={path}", f"world_size={world_size}", f"epochs={epochs}",
                 "strategy=sa", f"hidden={hidden}", "timeout_s=1800"]
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        report = run(compose(config_name="train", overrides=overrides))
    rss = [r["peak_rss_bytes"] for r in report["per_rank"]]
    times = [e["time_s"] for e in report["epochs"]]
    return {"peak_rss_bytes": rss, "max_peak_rss_bytes": max(rss), "epoch_time_s": times,
            "median_epoch_s": sorted(times)[len(times) // 2], "halo": report["partition"]["halo"],
            "edge_cut": report["partition"]["edge_cut_total"], "rows": report["partition"]["rows"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=4_000_000)
    ap.add_argument("--avg-degree", type=float, default=8.0)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--parts", default="1,2,4")
    ap.add_argument("--partitions", default="rows,metis")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default="/tmp/netsparse-scale-out", help="partitioned datasets (removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the partitioned datasets")
    args = ap.parse_args()
    parts = [int(p) for p in args.parts.split(",")]
    partitions = args.partitions.split(",")
    workdir = Path(args.workdir) / f"n{args.nodes}"

    tiny = make_graph(1000, args.avg_degree, args.features, args.seed)
    write_partitioned(tiny, partition_graph(tiny.adj, 1, "rows"), workdir / "baseline", progress=False)
    graph = make_graph(args.nodes, args.avg_degree, args.features, args.seed)
    meta = {"nodes": graph.num_nodes, "nnz": graph.nnz, "features": graph.num_features}
    datasets = write_datasets(graph, partitions, parts, workdir)
    del graph, tiny
    gc.collect()  # the launcher's copy is not the ranks' memory, but the machine is shared

    baseline = train(workdir / "baseline", 1, args.epochs, args.hidden)["max_peak_rss_bytes"]
    runs = []
    for (mode, p), d in datasets.items():
        r = train(d["path"], p, args.epochs, args.hidden)
        runs.append({"partition": mode, "parts": p, **{k: v for k, v in d.items() if k != "path"}, **r})
    single = {r["partition"]: r["max_peak_rss_bytes"] for r in runs if r["parts"] == 1}
    print(f"\n{meta['nodes']:,} nodes, {meta['nnz']:,} nnz; baseline rank (1,000-node graph) "
          f"{baseline / 2**20:,.0f} MiB")
    print("partition parts   peak RSS per rank (MiB)                 vs 1 rank   median epoch")
    for r in runs:
        r["ratio_vs_single"] = r["max_peak_rss_bytes"] / single[r["partition"]] if r["partition"] in single else None
        per = ", ".join(f"{b / 2**20:,.0f}" for b in r["peak_rss_bytes"])
        ratio = f"{r['ratio_vs_single']:.2f}x" if r["ratio_vs_single"] is not None else "n/a"
        print(f"{r['partition']:9s} {r['parts']:5d}   [{per}]".ljust(62) + f"{ratio:>9s}   "
              f"{r['median_epoch_s'] * 1e3:9.0f} ms")
    targets = {}
    for mode in partitions:
        four = [r for r in runs if r["partition"] == mode and r["parts"] == 4]
        if four and four[0]["ratio_vs_single"] is not None:
            ratio = four[0]["ratio_vs_single"]
            targets[mode] = {"ratio": ratio, "met": ratio <= TARGET}
            print(f"target {mode}: peak RSS per rank at 4 parts {ratio:.2f}x the single-rank peak "
                  f"({'met' if ratio <= TARGET else 'missed'}, target <= {TARGET}x)")
    path = write_result(f"scale_out-{args.nodes}", {**meta, "avg_degree": args.avg_degree, "hidden": args.hidden,
                                                    "epochs": args.epochs, "strategy": "sa", "model": "gcn",
                                                    "baseline_rank_rss_bytes": baseline, "runs": runs,
                                                    "targets": targets})
    print(f"wrote {path}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

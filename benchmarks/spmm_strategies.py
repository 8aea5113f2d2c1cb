"""Distributed SpMM forward + backward per strategy, and the local C++ kernel vs torch.sparse.mm.

    python benchmarks/spmm_strategies.py [--graph ego-twitter] [--k 128] [--ranks 4] [--repeats 5] [--partition rows]
    python benchmarks/spmm_strategies.py --graph ego-twitter,luxembourg_osm --k 32,128 \
        --strategies su,sa,ds2,ds4,twoface
    python benchmarks/spmm_strategies.py --partition rows,metis      # both partitions in the same launch
    python benchmarks/spmm_strategies.py --strategies su,sa,twoface,twoface_max,twoface_defaults \
        --twoface-profile P.json

``dsC`` is dense shifting with replication C; several graphs/Ks run one after the other. Each
partition (``rows``, ``nnz``, ``metis``: computed once, before the launch) gets its own DistGraphs.

All strategies (and partitions) run in one launch, called in alternation round after round, so that
load from other processes hits them alike. Prints the median time and the payload bytes per strategy
and the ratio su/sa (of the medians, and the median of the per-round ratios) per partition, plus the
local kernel comparison, and writes benchmarks/results/spmm_strategies-<graph>-k<K>[-<partitions>].json
(no suffix for rows alone). Times are measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, median_time, write_result  # noqa: E402

from netsparse_torch.graph import gcn_norm, read_mtx, with_generated_features  # noqa: E402
from netsparse_torch.kernels import CSR, spmm  # noqa: E402
from netsparse_torch.nn import DistGraph  # noqa: E402
from netsparse_torch.partition import PARTITIONERS, partition_graph  # noqa: E402
from netsparse_torch.run.launch import launch  # noqa: E402


def strategy_options(name: str, profile: str | None = None) -> tuple[str, dict]:
    """``ds2`` -> ("ds", {"replication": 2}); ``twoface`` gets the calibration ``profile`` (None: its
    documented defaults), ``twoface_defaults`` always the defaults, ``twoface_max`` the profile with
    ``overlap=max``, ``netsparse_inline`` the RIG gather before the own-block SpMM instead of
    overlapping it; other names have no options."""
    if name.startswith("ds") and name[2:].isdigit():
        return "ds", {"replication": int(name[2:])}
    if name == "twoface":
        return name, {"profile": profile}
    if name == "twoface_defaults":  # Table 3 and overlap=max, beside a profiled twoface in the same run
        return "twoface", {"profile": None}
    if name == "twoface_max":  # the profile's coefficients with overlap=max: the overlap rule alone changed
        return "twoface", {"profile": str(with_overlap(profile, "max"))}
    if name == "netsparse_inline":
        return "netsparse", {"overlap": False}
    return name, {}


def with_overlap(profile: str | None, overlap: str) -> Path:
    """A copy of ``profile`` beside it with ``overlap`` replaced."""
    if profile is None:
        raise SystemExit("twoface_max needs --twoface-profile")
    data = json.loads(Path(profile).read_text())
    out = Path(profile).with_suffix(f".{overlap}.json")
    out.write_text(json.dumps({**data, "overlap": overlap}, indent=2))
    return out


def time_strategies(rank, world_size, graph, strategies, k, repeats, partitionings, profile=None):
    """Every (partition, strategy)'s fwd+bwd, called in alternation round after round (paired timing),
    so load from other processes on the machine hits all of them alike. Keys are ``partition/strategy``."""
    graphs = {f"{name}/{s}": DistGraph(graph, rank, world_size, p, *strategy_options(s, profile))
              for name, p in partitionings.items() for s in strategies}
    for dg in graphs.values():
        dg.adjacency("gcn")  # normalisation and plan are one-off costs, not part of the timing
    gen = torch.Generator().manual_seed(rank)
    inputs = {}
    for name in partitionings:
        n_local = graphs[f"{name}/{strategies[0]}"].plan.n_local
        inputs[name] = (torch.randn(n_local, k, generator=gen, requires_grad=True),
                        torch.randn(n_local, k, generator=gen))
    times: dict[str, list[float]] = {key: [] for key in graphs}
    for i in range(repeats + 1):
        for key, dg in graphs.items():
            x, grad = inputs[key.split("/")[0]]
            dist.barrier()
            t0 = time.perf_counter()
            dg.propagate(x, "gcn").backward(grad)
            dist.barrier()
            if i:  # the first round is a warm-up
                times[key].append(time.perf_counter() - t0)
    out = {}
    for key, dg in graphs.items():
        moved = torch.tensor([dg.strategy.traffic.total_bytes // (repeats + 1)])
        dist.all_reduce(moved)
        stats = [None] * world_size
        dist.all_gather_object(stats, dg.strategy.stats())
        out[key] = {"median_s": statistics.median(times[key]), "times_s": times[key], "bytes_per_call": int(moved),
                    "halo_rows": int(_sum(dg.plan.n_halo)), "strategy_stats": stats}
    return out


def _sum(value: int) -> int:
    t = torch.tensor([value])
    dist.all_reduce(t)
    return int(t)


def distributed(graph, strategies, ranks, k, repeats, partitionings, profile=None) -> dict:
    out = launch(time_strategies, ranks, (graph, strategies, k, repeats, partitionings, profile), timeout_s=1200)
    for key, r in out.items():
        print(f"  {key:14s} fwd+bwd median {r['median_s'] * 1e3:9.1f} ms   "
              f"payload {r['bytes_per_call'] / 1e6:9.1f} MB   halo rows (all ranks) {r['halo_rows']:,}", flush=True)
    return out


def su_sa_ratios(res: dict, part: str) -> dict:
    """su over sa: time (medians and median of per-round ratios), bytes, and time over bytes."""
    su, sa = res[f"{part}/su"], res[f"{part}/sa"]
    r = {"su_over_sa_time": su["median_s"] / sa["median_s"],
         "su_over_sa_time_paired_median": statistics.median(
             [u / a for u, a in zip(su["times_s"], sa["times_s"], strict=True)]),
         "su_over_sa_bytes": su["bytes_per_call"] / sa["bytes_per_call"]}
    r["time_advantage_over_bytes_advantage"] = r["su_over_sa_time"] / r["su_over_sa_bytes"]
    print(f"  {part}: ratio su/sa: time {r['su_over_sa_time']:.2f}x (median of per-round ratios "
          f"{r['su_over_sa_time_paired_median']:.2f}x), bytes {r['su_over_sa_bytes']:.2f}x, time/bytes "
          f"{r['time_advantage_over_bytes_advantage']:.2f} (targets: time >= 3x, time/bytes >= 0.8)")
    return r


def local_kernel(adj, k, repeats) -> dict:
    a = gcn_norm(adj)
    csr = CSR(torch.from_numpy(a.indptr.astype("int64")), torch.from_numpy(a.indices.astype("int64")),
              torch.from_numpy(a.data), a.shape[1])
    b = torch.randn(a.shape[1], k)
    ref = csr.to_torch()
    torch.testing.assert_close(spmm(csr, b), torch.sparse.mm(ref, b), atol=1e-4, rtol=1e-4)
    ours = median_time(lambda: spmm(csr, b), repeats)
    theirs = median_time(lambda: torch.sparse.mm(ref, b), repeats)
    print(f"  local SpMM K={k}: C++ {ours * 1e3:.1f} ms, torch.sparse.mm {theirs * 1e3:.1f} ms, "
          f"speedup {theirs / ours:.2f}x ({torch.get_num_threads()} threads)")
    return {"cpp_median_s": ours, "torch_sparse_median_s": theirs, "speedup": theirs / ours,
            "threads": torch.get_num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="ego-twitter", help="name(s) of .mtx.gz in ../shared/data/graphs, comma-sep.")
    ap.add_argument("--k", default="128", help="feature width(s), comma-separated")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--strategies", default="su,sa")
    ap.add_argument("--partition", default="rows", help=f"comma-separated, of {', '.join(PARTITIONERS)}")
    ap.add_argument("--twoface-profile", default=None,
                    help="netsparse-calibrate profile for twoface (default: Table 3 coefficients, overlap=max)")
    args = ap.parse_args()
    for graph_name in args.graph.split(","):
        for k in (int(v) for v in args.k.split(",")):
            run(argparse.Namespace(**{**vars(args), "graph": graph_name, "k": k}))


def run(args: argparse.Namespace) -> None:
    adj = read_mtx(GRAPHS / f"{args.graph}.mtx.gz")
    graph = with_generated_features(args.graph, adj, num_features=1, num_classes=2, seed=0)
    print(f"{args.graph}: {adj.shape[0]:,} rows, {adj.nnz:,} nnz, K={args.k}, {args.ranks} ranks")
    strategies = args.strategies.split(",")
    parts = args.partition.split(",")
    partitionings = {}
    for name in parts:
        t0 = time.perf_counter()
        partitionings[name] = partition_graph(adj, args.ranks, name)
        print(f"  partition {name}: {time.perf_counter() - t0:.1f} s")
    dist_res = distributed(graph, strategies, args.ranks, args.k, args.repeats, partitionings, args.twoface_profile)
    ratios = {}
    for part in parts:
        if f"{part}/su" in dist_res and f"{part}/sa" in dist_res:
            ratios[part] = su_sa_ratios(dist_res, part)
        keys = [f"{part}/{s}" for s in ("twoface", "su", "sa")]
        if all(key in dist_res for key in keys):
            best = min(dist_res[keys[1]]["median_s"], dist_res[keys[2]]["median_s"])
            ratios.setdefault(part, {})["twoface_over_best_su_sa_time"] = dist_res[keys[0]]["median_s"] / best
            print(f"  {part}: ratio twoface/best(su,sa): time {dist_res[keys[0]]['median_s'] / best:.2f}x"
                  " (target: <= 1.10x everywhere, < 1 somewhere)")
    local = local_kernel(adj, args.k, args.repeats)
    suffix = "" if parts == ["rows"] else "-" + "-".join(parts)
    path = write_result(f"spmm_strategies-{args.graph}-k{args.k}{suffix}", {
                                            "graph": args.graph, "k": args.k, "ranks": args.ranks,
                                            "partitions": parts, "strategies": dist_res, "ratios": ratios,
                                            "twoface_profile": args.twoface_profile,
                                            "local_spmm": local})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

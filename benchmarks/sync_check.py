"""What the aggregation's gradient-sync check costs (netsparse_torch/nn/training.py, ``check_aggregation``).

    python benchmarks/sync_check.py [--graph cora] [--ranks 2] [--epochs 200] [--rounds 5]

A port's loop (a 2-layer GCN, ``strategy=sa``, ``dg.loss``, ``dg.sync_gradients``, Adam, an evaluation
under no_grad every epoch: 4 aggregations an epoch) runs ``--epochs`` epochs on ``--ranks`` local ranks,
with the checks on (the default ``check_steps=3``) and off (``check_steps=0``), in alternation round after
round (paired timing). Also times one checked aggregation's check alone (the parameter walk, the
checksum and the all-gather of three numbers). Prints the medians and the ratio on/off, and writes
benchmarks/results/sync_check.json. Times are measured.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_result  # noqa: E402

from netsparse_torch.graph import load_dataset  # noqa: E402
from netsparse_torch.nn import DistGCNConv, DistGraph  # noqa: E402
from netsparse_torch.nn.training import DENSE_CHECKS, check_in_sync, output_parameters  # noqa: E402
from netsparse_torch.run.launch import launch  # noqa: E402


class GCN(torch.nn.Module):
    def __init__(self, fin: int, hidden: int, classes: int):
        super().__init__()
        self.conv1, self.conv2 = DistGCNConv(fin, hidden), DistGCNConv(hidden, classes)

    def forward(self, x, dg):
        return self.conv2(self.conv1(x, dg).relu(), dg)


def run(dg: DistGraph, classes: int, epochs: int) -> float:
    """Seconds of ``epochs`` epochs of the port's loop on ``dg`` (a fresh model and counter each time)."""
    dg._aggregations, dg._aggregation_in_sync, dg._loss_calls = 0, False, 0
    torch.manual_seed(0)
    model = GCN(dg.x.size(1), 16, classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    t0 = time.perf_counter()
    for _ in range(epochs):
        opt.zero_grad()
        loss = dg.loss(model(dg.x, dg))
        loss.backward()
        dg.sync_gradients(model)
        opt.step()
        with torch.no_grad():
            model(dg.x, dg)
    return time.perf_counter() - t0


def one_check(dg: DistGraph, classes: int, repeats: int) -> float:
    """Median seconds of the check at one checked aggregation: the second layer's input (every parameter
    of the first layer and the second's weight behind it)."""
    torch.manual_seed(0)
    model = GCN(dg.x.size(1), 16, classes)
    x = model.conv2.lin(model.conv1(dg.x, dg).relu())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        check_in_sync(dg, output_parameters(x))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(rank, world_size, graph, epochs: int, rounds: int) -> dict:
    on, off = DistGraph(graph), DistGraph(graph, check_steps=0)
    run(on, graph.num_classes, 3), run(off, graph.num_classes, 3)  # warm-up: plans, adjacencies, allocator
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(rounds):
        times["on"].append(run(on, graph.num_classes, epochs))
        times["off"].append(run(off, graph.num_classes, epochs))
    return {"times_s": times, "one_check_s": one_check(on, graph.num_classes, 200),
            "checked_calls": _checked_calls(4 * epochs)}


def _checked_calls(aggregations: int) -> int:
    return sum(1 for n in range(1, aggregations + 1) if n <= DENSE_CHECKS or not n & (n - 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="cora")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    graph = load_dataset(OmegaConf.create({"name": args.graph}))
    got = launch(worker, args.ranks, (graph, args.epochs, args.rounds), timeout_s=600)
    med = {k: statistics.median(v) for k, v in got["times_s"].items()}
    ratios = [a / b for a, b in zip(got["times_s"]["on"], got["times_s"]["off"], strict=True)]
    print(f"{args.graph}, {args.ranks} ranks, {args.epochs} epochs x {args.rounds} rounds (rank 0, measured):")
    print(f"  checks on   median {med['on']:.3f} s   ({1e3 * med['on'] / args.epochs:.3f} ms/epoch)")
    print(f"  checks off  median {med['off']:.3f} s   ({1e3 * med['off'] / args.epochs:.3f} ms/epoch)")
    print(f"  on/off      {med['on'] / med['off']:.4f} "
          f"(median of the per-round ratios {statistics.median(ratios):.4f})")
    print(f"  one check   {1e6 * got['one_check_s']:.1f} us; {got['checked_calls']} checked aggregations in "
          f"{4 * args.epochs}")
    path = write_result("sync_check", {"args": vars(args), **got, "median_s": med,
                                       "ratio_on_off": med["on"] / med["off"],
                                       "median_round_ratio": statistics.median(ratios)})
    print(f"  written {path}")


if __name__ == "__main__":
    main()

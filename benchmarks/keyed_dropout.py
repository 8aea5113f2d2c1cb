"""Counter-based dropout (docs/invariance.md) against torch's dropout: the op alone and a training epoch.

    python benchmarks/keyed_dropout.py [--graph ego-twitter] [--ranks 2] [--hidden 64] [--repeats 15]

1. The op: forward + backward of ``keyed_dropout`` (SplitMix64 mask from the C++ kernel, then
   ``x * mask``) and of ``torch.nn.functional.dropout`` on float32 (N, K) tensors, p = 0.5, in one
   process with all its threads and the ranks' malloc settings, called in alternation (paired timing).
2. The epoch: ``Trainer.train_epoch`` of a 2-layer GCN (``strategy=sa``, ``dropout=0.5``) on the
   graph with ``--ranks`` local ranks; the model's dropout is switched between the two functions
   round after round (paired timing), so the ratio is what the keyed masks cost an epoch.

Prints the median times and the ratios keyed/torch; writes benchmarks/results/keyed_dropout.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from hydra import compose, initialize_config_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, paired, write_result  # noqa: E402

import netsparse_torch.nn.models as models  # noqa: E402
from netsparse_torch.config_check import config_dir  # noqa: E402
from netsparse_torch.graph import load_dataset  # noqa: E402
from netsparse_torch.malloc import keep_freed_memory  # noqa: E402
from netsparse_torch.nn.dropout import keyed_dropout  # noqa: E402
from netsparse_torch.run.launch import launch  # noqa: E402
from netsparse_torch.run.training import Trainer  # noqa: E402


def torch_dropout(x, node_ids, p, *, seed, epoch, layer, training=True):
    """The baseline with keyed_dropout's signature: torch's global-RNG dropout."""
    return F.dropout(x, p, training)


VARIANTS = {"keyed": keyed_dropout, "torch": torch_dropout}


def op_times(n: int, k: int, repeats: int) -> dict[str, list[float]]:
    x = torch.randn(n, k, requires_grad=True)
    ids, grad = torch.arange(n), torch.randn(n, k)

    def step(fn):
        return lambda: fn(x, ids, 0.5, seed=0, epoch=1, layer=0).backward(grad)

    return paired({name: step(fn) for name, fn in VARIANTS.items()}, repeats)


def epoch_times(rank, world_size, graph, cfg, repeats):
    trainer = Trainer(rank, world_size, graph, cfg)

    def step(name):
        def run():
            models.keyed_dropout = VARIANTS[name]
            trainer.train_epoch(0)
        return run

    try:
        return paired({name: step(name) for name in VARIANTS}, repeats, dist.barrier)
    finally:
        models.keyed_dropout = keyed_dropout


def summary(times: dict[str, list[float]]) -> dict:
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = [a / b for a, b in zip(times["keyed"], times["torch"], strict=True)]
    return {"median_s": med, "keyed_over_torch": med["keyed"] / med["torch"],
            "median_of_round_ratios": statistics.median(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="ego-twitter")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    keep_freed_memory()  # as the training ranks do: the op timings are not page faults of fresh buffers

    ops = {}
    for n, k in [(2708, 16), (81306, 64), (1_000_000, 64)]:
        ops[f"{n}x{k}"] = s = summary(op_times(n, k, args.repeats))
        print(f"op  {n:>9,} x {k:<4} keyed {s['median_s']['keyed'] * 1e3:8.3f} ms  torch "
              f"{s['median_s']['torch'] * 1e3:8.3f} ms  keyed/torch {s['keyed_over_torch']:.2f}x")

    path = GRAPHS / f"{args.graph}.mtx.gz"
    overrides = ["dataset=mtx", f"dataset.path={path}", f"hidden={args.hidden}", "dropout=0.5", "strategy=sa",
                 f"world_size={args.ranks}", "checkpoint_dir=/tmp/netsparse-bench-ckpt"]
    with initialize_config_dir(config_dir(), version_base="1.3"):
        cfg = compose("train", overrides)
    graph = load_dataset(cfg.dataset)
    epoch = summary(launch(epoch_times, args.ranks, (graph, cfg, args.repeats), timeout_s=600))
    print(f"epoch {args.graph} ({graph.num_nodes:,} nodes, hidden {args.hidden}, {args.ranks} ranks, sa): keyed "
          f"{epoch['median_s']['keyed'] * 1e3:.1f} ms  torch {epoch['median_s']['torch'] * 1e3:.1f} ms  "
          f"keyed/torch {epoch['keyed_over_torch']:.3f}x (median of per-round ratios "
          f"{epoch['median_of_round_ratios']:.3f}x)")
    out = write_result("keyed_dropout", {"args": vars(args), "op": ops, "epoch": epoch, "overrides": overrides})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

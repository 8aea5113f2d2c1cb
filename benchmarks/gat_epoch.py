"""GAT training epoch: ``DistGATConv`` at 1 and ``--ranks`` ranks against PyG's ``GATConv``.

    python benchmarks/gat_epoch.py [--graph ego-twitter] [--ranks 4] [--repeats 7]

The model is ``model=gat`` of ``netsparse-train`` (PyG's Cora GAT example: input dropout, GATConv of
8 heads x 8 channels, ELU, dropout, GATConv of 1 head; dropout 0.6 on features and attention; Adam
with lr 0.005). One epoch = forward, cross-entropy on the training rows, backward, optimiser step.

1. Paired, in one process: our 1-rank ``Trainer.train_epoch`` (``strategy=sa``; with one rank no
   gather runs) and the same model built from PyG's ``GATConv`` on the graph's ``edge_index``, called
   in alternation, median of ``--repeats`` rounds after a warm-up. The ratio ours/PyG is the result.
2. Ours at ``--ranks`` local ranks (``strategy=sa``), median epoch time of rank 0 (a barrier before
   and after each epoch). On a machine with fewer cores than ranks this measures oversubscription,
   not scaling: the number is recorded, not a target.

Prints the medians and ratios; writes benchmarks/results/gat_epoch.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from hydra import compose, initialize_config_dir
from torch_geometric.nn import GATConv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, paired, write_result  # noqa: E402

from netsparse_torch.config_check import config_dir  # noqa: E402
from netsparse_torch.graph import load_dataset  # noqa: E402
from netsparse_torch.run.launch import launch  # noqa: E402
from netsparse_torch.run.training import Trainer, normalize_features  # noqa: E402


class PyGGAT(torch.nn.Module):
    """PyG's examples/gat.py model, with the same sizes and dropout as ``model=gat``."""

    def __init__(self, cfg, in_channels: int, out_channels: int):
        super().__init__()
        heads, hidden, p = int(cfg.model.heads), int(cfg.hidden), float(cfg.dropout)
        self.p = p
        self.conv1 = GATConv(in_channels, hidden, heads=heads, dropout=float(cfg.model.attention_dropout))
        self.conv2 = GATConv(hidden * heads, out_channels, heads=int(cfg.model.out_heads), concat=False,
                             dropout=float(cfg.model.attention_dropout))

    def forward(self, x, edge_index):
        x = F.dropout(x, self.p, self.training)
        x = F.elu(self.conv1(x, edge_index))
        x = F.dropout(x, self.p, self.training)
        return self.conv2(x, edge_index)


def edge_index(adj) -> torch.Tensor:
    """PyG's (source, target) pairs of ``adj`` (row = target), one column per edge."""
    coo = adj.tocoo()
    reps = coo.data.astype(np.int64)
    return torch.from_numpy(np.vstack([np.repeat(coo.col, reps), np.repeat(coo.row, reps)]).astype(np.int64))


def one_rank_vs_pyg(rank, world_size, graph, cfg, repeats):
    ours = Trainer(rank, world_size, graph, cfg)
    torch.manual_seed(int(cfg.seed))
    model = PyGGAT(cfg, graph.num_features, graph.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=float(cfg.lr), weight_decay=float(cfg.weight_decay))
    x = normalize_features(graph.x) if cfg.normalize_features else graph.x  # as ours (one rank: all rows)
    ei, y, mask = edge_index(graph.adj), graph.y, graph.train_mask

    def pyg_epoch():
        model.train()
        opt.zero_grad()
        out = model(x, ei)
        F.cross_entropy(out[mask], y[mask]).backward()
        opt.step()

    epoch = iter(range(10**9))
    return paired({"ours": lambda: ours.train_epoch(next(epoch)), "pyg": pyg_epoch}, repeats)


def ours_only(rank, world_size, graph, cfg, repeats):
    trainer = Trainer(rank, world_size, graph, cfg)
    epoch = iter(range(10**9))
    return paired({"ours": lambda: trainer.train_epoch(next(epoch))}, repeats, dist.barrier)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="ego-twitter")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    path = GRAPHS / f"{args.graph}.mtx.gz"
    overrides = ["model=gat", "dataset=mtx", f"dataset.path={path}", "strategy=sa", "world_size=1",
                 "checkpoint_dir=/tmp/netsparse-bench-ckpt"]
    with initialize_config_dir(config_dir(), version_base="1.3"):
        cfg = compose("train", overrides)
    graph = load_dataset(cfg.dataset)
    print(f"{args.graph}: {graph.num_nodes:,} nodes, {graph.adj.nnz:,} nonzeros, {graph.num_features} features; "
          f"GAT {cfg.model.heads} heads x {cfg.hidden}, torch threads {torch.get_num_threads()}")

    one = launch(one_rank_vs_pyg, 1, (graph, cfg, args.repeats), timeout_s=3600)
    med = {k: statistics.median(v) for k, v in one.items()}
    per_round = statistics.median(a / b for a, b in zip(one["ours"], one["pyg"], strict=True))
    print(f"1 rank  ours {med['ours'] * 1e3:9.1f} ms   PyG GATConv {med['pyg'] * 1e3:9.1f} ms   "
          f"ours/PyG {med['ours'] / med['pyg']:.3f}x (median of per-round ratios {per_round:.3f}x)")

    many = launch(ours_only, args.ranks, (graph, cfg, args.repeats), timeout_s=3600)
    med_many = statistics.median(many["ours"])
    print(f"{args.ranks} ranks ours {med_many * 1e3:9.1f} ms   ({med_many / med['pyg']:.3f}x PyG's 1-process epoch)")

    out = write_result("gat_epoch", {
        "args": vars(args), "overrides": overrides,
        "one_rank": {"times_s": one, "median_s": med, "ours_over_pyg": med["ours"] / med["pyg"],
                     "median_of_round_ratios": per_round},
        "ranks": {"n": args.ranks, "times_s": many["ours"], "median_s": med_many},
    })
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

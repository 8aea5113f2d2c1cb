"""Training epochs on a GPU, each a ratio measured in one run.

    python benchmarks/gpu_epoch.py [--device cuda] [--repeats 20] [--out FILE]
    python benchmarks/gpu_epoch.py --device cpu --small      # the CPU twin: same code, Cora, 2 repeats

1. GCN, 1 rank, ego-twitter, hidden 16 and 128: our ``Trainer.train_epoch`` against PyG's
   ``GCNConv(cached=True)`` on a CSR adjacency (``torch.sparse_csr_tensor``), called in alternation.
2. GAT, 1 rank, Cora and ego-twitter: ours against PyG's ``GATConv`` (the model of
   benchmarks/gat_epoch.py).
3. 2 ranks sharing one GPU (their collectives go through gloo): the epoch with su, sa and netsparse
   on ego-twitter, with the feature bytes each moves.

Every time is the median over ``--repeats`` rounds after a warm-up, with the device synchronised
around each call. Writes one JSON (default benchmarks/results/gpu_epoch.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from hydra import compose, initialize_config_dir
from torch_geometric.nn import GCNConv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GRAPHS, RESULTS, machine, paired  # noqa: E402
from gat_epoch import PyGGAT, edge_index  # noqa: E402

from netsparse_torch.config_check import config_dir  # noqa: E402
from netsparse_torch.graph import load_dataset  # noqa: E402
from netsparse_torch.run.launch import launch  # noqa: E402
from netsparse_torch.run.training import Trainer  # noqa: E402


class PyGGCN(torch.nn.Module):
    """The 2-layer GCN of ``model=gcn`` with PyG's cached ``GCNConv`` on a CSR adjacency."""

    def __init__(self, cfg, in_channels: int, out_channels: int):
        super().__init__()
        self.p = float(cfg.dropout)
        self.conv1 = GCNConv(in_channels, int(cfg.hidden), cached=True)
        self.conv2 = GCNConv(int(cfg.hidden), out_channels, cached=True)

    def forward(self, x, adj_t):
        x = F.dropout(F.relu(self.conv1(x, adj_t)), self.p, self.training)
        return self.conv2(x, adj_t)


def csr_adjacency(graph, device) -> torch.Tensor:
    """PyG's ``adj_t`` (row = target) as a float32 CSR tensor with the edge multiplicities as values."""
    warnings.filterwarnings("ignore", message="Sparse")  # torch's "beta" and invariant-check notices
    adj = graph.adj.tocsr()
    return torch.sparse_csr_tensor(torch.from_numpy(adj.indptr).long(), torch.from_numpy(adj.indices).long(),
                                   torch.from_numpy(adj.data).float(), adj.shape).to(device)


def sync(device: str):
    return torch.cuda.synchronize if device == "cuda" else (lambda: None)


def one_rank_vs_pyg(rank, world_size, graph, cfg, repeats):
    ours = Trainer(rank, world_size, graph, cfg)
    device = ours.device
    torch.manual_seed(int(cfg.seed))
    kind = str(cfg.model.name)
    model = (PyGGAT if kind == "gat" else PyGGCN)(cfg, graph.num_features, graph.num_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=float(cfg.lr), weight_decay=float(cfg.weight_decay))
    x, y, mask = graph.x.to(device), graph.y.to(device), graph.train_mask.to(device)
    structure = edge_index(graph.adj).to(device) if kind == "gat" else csr_adjacency(graph, device)

    def pyg_epoch():
        model.train()
        opt.zero_grad()
        F.cross_entropy(model(x, structure)[mask], y[mask]).backward()
        opt.step()

    epoch = iter(range(10**9))
    times = paired({"ours": lambda: ours.train_epoch(next(epoch)), "pyg": pyg_epoch}, repeats, sync(device.type))
    return {"times_s": times, "device": str(device), "device_name": _device_name(device)}


def ranks_epoch(rank, world_size, graph, cfg, repeats):
    trainer = Trainer(rank, world_size, graph, cfg)
    traffic = trainer.dg.strategy.traffic
    epoch = iter(range(10**9))
    cuda = trainer.device.type == "cuda"

    def barrier():
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()

    times = paired({"ours": lambda: trainer.train_epoch(next(epoch))}, repeats, barrier)["ours"]
    moved = torch.tensor([traffic.total_bytes / (repeats + 1)], dtype=torch.float64)
    dist.all_reduce(moved)
    from netsparse_torch.backend import comm_stats

    return {"times_s": times, "feature_bytes_per_epoch": int(moved.item()), "collectives": comm_stats(),
            "strategy_stats": trainer.dg.strategy.stats()}


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def compose_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir(), version_base="1.3"):
        return compose("train", overrides)


def ratio_case(name: str, overrides: list[str], repeats: int) -> dict:
    cfg = compose_cfg(overrides)
    graph = load_dataset(cfg.dataset)
    got = launch(one_rank_vs_pyg, 1, (graph, cfg, repeats), timeout_s=1800)
    med = {k: statistics.median(v) for k, v in got["times_s"].items()}
    ratio = med["ours"] / med["pyg"]
    print(f"{name:28s} ours {med['ours'] * 1e3:8.2f} ms   PyG {med['pyg'] * 1e3:8.2f} ms   ours/PyG {ratio:.3f}x")
    return {"overrides": overrides, "median_s": med, "ours_over_pyg": ratio, **got}


def sharing_case(name: str, overrides: list[str], repeats: int) -> dict:
    cfg = compose_cfg(overrides)
    graph = load_dataset(cfg.dataset)
    got = launch(ranks_epoch, 2, (graph, cfg, repeats), timeout_s=1800)
    med = statistics.median(got["times_s"])
    print(f"{name:28s} 2 ranks {med * 1e3:8.2f} ms   feature bytes/epoch {got['feature_bytes_per_epoch']:,}")
    return {"overrides": overrides, "median_s": med, **got}


def cases(device: str, small: bool) -> list[tuple[str, str, list[str]]]:
    """(kind, name, overrides): the ratio cases at 1 rank, then the 2-rank cases."""
    twitter = ["dataset=mtx", f"dataset.path={GRAPHS / 'ego-twitter.mtx.gz'}"]
    big = ["dataset=cora"] if small else twitter
    common = [f"device={device}", "world_size=1"]
    out = [("ratio", f"gcn hidden={h} {big[0]}", [*big, "model=gcn", f"hidden={h}", *common]) for h in (16, 128)]
    for graph in ([["dataset=cora"]] if small else [["dataset=cora"], twitter]):
        out.append(("ratio", f"gat {graph[0]}", [*graph, "model=gat", *common]))
    for s in ("su", "sa", "netsparse"):
        out.append(("sharing", f"2 ranks {s}", [*big, f"strategy={s}", f"device={device}", "world_size=2"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--small", action="store_true", help="Cora only (the CPU twin's plumbing check)")
    ap.add_argument("--out", type=Path, default=RESULTS / "gpu_epoch.json")
    args = ap.parse_args()
    result = {"benchmark": "gpu_epoch", "machine": machine(), "args": {k: str(v) for k, v in vars(args).items()}}
    if args.device == "cuda" and not torch.cuda.is_available():
        result["skipped"] = "no CUDA device (torch.cuda.is_available() is False)"
        print(f"skipped: {result['skipped']}")
    else:
        result["device_name"] = _device_name(torch.device(args.device))
        for kind, name, overrides in cases(args.device, args.small):
            run = ratio_case if kind == "ratio" else sharing_case
            result.setdefault(kind, {})[name] = run(name, overrides, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

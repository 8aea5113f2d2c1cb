"""Counter-based dropout (docs/invariance.md) against torch's dropout: the op alone and a training epoch.

    python benchmarks/keyed_dropout.py [--graph ego-twitter] [--ranks 2] [--hidden 64] [--repeats 15]
                                       [--sizes 2708x16,81306x64,1000000x64] [--no-epoch]

1. The op: forward + backward of ``keyed_dropout`` with its two mask implementations, ``keyed``
   (the C++ kernel) and ``keyed-torch`` (the int64 torch ops that CUDA tensors use, here on CPU),
   and of ``torch.nn.functional.dropout`` on float32 (N, K) CPU tensors, p = 0.5, in one process with
   all its threads and the ranks' malloc settings, called in alternation (paired timing). With a GPU,
   the same on CUDA tensors: ``keyed-torch`` (the mask built on the GPU), ``keyed-host`` (the C++
   mask on the host, then copied: what CUDA tensors did before) and torch's dropout.
2. The epoch (unless ``--no-epoch``): ``Trainer.train_epoch`` of a 2-layer GCN (``strategy=sa``,
   ``dropout=0.5``) on the graph with ``--ranks`` local ranks; the model's dropout is switched between
   ``keyed`` and torch's round after round (paired timing), so the ratio is what the keyed masks cost an
   epoch.

Prints the median times and the ratios against torch's dropout and keyed-torch/keyed; writes
benchmarks/results/keyed_dropout.json.
"""

from __future__ import annotations

import argparse
import functools
import os
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
OP_VARIANTS = {
    "cpu": {"keyed": functools.partial(keyed_dropout, impl="cpp"),
            "keyed-torch": functools.partial(keyed_dropout, impl="torch"), "torch": torch_dropout},
    "cuda": {"keyed-torch": functools.partial(keyed_dropout, impl="torch"),
             "keyed-host": functools.partial(keyed_dropout, impl="cpp"), "torch": torch_dropout},
}


def op_times(n: int, k: int, repeats: int, device: str = "cpu") -> dict[str, list[float]]:
    x = torch.randn(n, k, device=device, requires_grad=True)
    ids, grad = torch.arange(n, device=device), torch.randn(n, k, device=device)

    def step(fn):
        return lambda: fn(x, ids, 0.5, seed=0, epoch=1, layer=0).backward(grad)

    sync = torch.cuda.synchronize if device == "cuda" else lambda: None
    return paired({name: step(fn) for name, fn in OP_VARIANTS[device].items()}, repeats, sync)


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


def summary(times: dict[str, list[float]], first: str = "keyed") -> dict:
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = [a / b for a, b in zip(times[first], times["torch"], strict=True)]
    out = {"median_s": med, "median_of_round_ratios": statistics.median(ratios)}
    out.update({f"{k}_over_torch": med[k] / med["torch"] for k in med if k != "torch"})
    if "keyed-torch" in med and "keyed" in med:
        out["keyed-torch_over_keyed"] = med["keyed-torch"] / med["keyed"]
    if "keyed-torch" in med and "keyed-host" in med:
        out["keyed-torch_over_keyed-host"] = med["keyed-torch"] / med["keyed-host"]
    return out


def print_op(device: str, n: int, k: int, s: dict) -> None:
    times = "  ".join(f"{name} {t * 1e3:8.3f} ms" for name, t in s["median_s"].items())
    ratios = "  ".join(f"{name.replace('_over_', '/')} {r:.2f}x" for name, r in s.items() if "_over_" in name)
    print(f"op {device:<4} {n:>9,} x {k:<4} {times}  {ratios}")


def sizes(text: str) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in item.split("x")) for item in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="ego-twitter")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--sizes", type=sizes, default=sizes("2708x16,81306x64,1000000x64"), help="NxK,NxK,...")
    ap.add_argument("--no-epoch", action="store_true", help="time the op only")
    args = ap.parse_args()
    keep_freed_memory()  # as the training ranks do: the op timings are not page faults of fresh buffers
    gpu = f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""
    print(f"host {os.uname().nodename}, {os.cpu_count()} cores, {torch.get_num_threads()} threads{gpu}, "
          f"load average {os.getloadavg()}")

    ops = {}
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        for n, k in args.sizes:
            ops[f"{device} {n}x{k}"] = s = summary(op_times(n, k, args.repeats, device),
                                                  "keyed" if device == "cpu" else "keyed-torch")
            print_op(device, n, k, s)
    if args.no_epoch:
        out = write_result("keyed_dropout", {"args": vars(args), "op": ops, "load_average": os.getloadavg()})
        print(f"wrote {out}")
        return

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
    out = write_result("keyed_dropout", {"args": vars(args), "op": ops, "epoch": epoch, "overrides": overrides,
                                         "load_average": os.getloadavg()})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

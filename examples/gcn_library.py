"""Full-graph GCN on Cora with the library API (no Hydra), under torchrun:

    torchrun --nproc-per-node=2 examples/gcn_library.py
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from omegaconf import OmegaConf

import netsparse_torch.backend  # registers the "netsparse" backend
from netsparse_torch.graph import load_dataset
from netsparse_torch.nn import DistGNN, DistGraph


def main() -> None:
    # A GPU per rank when there are GPUs (ranks sharing one exchange through gloo), else the CPU.
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group("netsparse")
    rank, world = dist.get_rank(), dist.get_world_size()
    graph = load_dataset(OmegaConf.create({"name": "cora"}))
    dg = DistGraph(graph, rank, world, partition="rows", strategy="sa", device=device)
    torch.manual_seed(0)
    model = DistGNN("gcn", graph.num_features, 16, graph.num_classes, dropout=0.5, seed=0).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    n_train = int(graph.train_mask.sum())
    mask = dg.mask("train")
    for epoch in range(200):
        opt.zero_grad()
        out = model(dg.x, dg, epoch=epoch)  # dropout keyed on (seed, epoch, layer, node, feature)
        (F.cross_entropy(out[mask], dg.y[mask], reduction="sum") / n_train).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(dg.x, dg).argmax(1)
    test = dg.mask("test")
    counts = torch.tensor([(pred[test] == dg.y[test]).sum().item(), test.sum().item()])  # on CPU: gloo
    dist.all_reduce(counts)
    if rank == 0:
        print(f"test accuracy {counts[0] / counts[1]:.4f}; traffic {netsparse_torch.comm_stats()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
